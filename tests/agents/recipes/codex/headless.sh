#!/bin/sh
# Codex without a terminal, in the project: sh headless.sh "the task" (with ~/.codex/config.toml
# as above). Its last message goes to stdout.
exec codex exec --skip-git-repo-check "$@"
