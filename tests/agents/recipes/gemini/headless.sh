#!/bin/sh
# Gemini CLI without a terminal, in the project: sh headless.sh "the task". The folder must be
# trusted for its .gemini/settings.json to load (--skip-trust does not load it).
GEMINI_CLI_TRUST_WORKSPACE=true exec gemini --prompt "$1" --output-format json
