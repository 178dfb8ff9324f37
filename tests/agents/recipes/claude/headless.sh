#!/bin/sh
# Claude Code without a terminal, in the project: sh headless.sh "the task". --tools "" offers
# the model none of Claude Code's own tools; --allowedTools lets Stockade's run without a prompt.
exec claude -p "$1" --tools "" --allowedTools mcp__stockade
