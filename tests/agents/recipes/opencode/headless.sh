#!/bin/sh
# OpenCode without its TUI, in the project (the directory holding opencode.json):
# sh headless.sh "the task".
exec opencode run "$@"
