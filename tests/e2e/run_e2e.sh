#!/usr/bin/env bash
# ctest entry of the e2e suite: `node --test tests/e2e/` (official MCP TypeScript SDK) against
# STOCKADE_SERVE_CMD, or, when that is unset, against the server binary given as arguments.
#   run_e2e.sh SERVER [ARG...]
# Exits 77 (ctest: skipped) with the reason when node or tests/e2e/node_modules is missing.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! command -v node >/dev/null 2>&1; then
    echo "SKIP: node is not installed (apt-get install nodejs)"
    exit 77
fi
if [[ ! -d "$here/node_modules/@modelcontextprotocol/sdk" ]]; then
    echo "SKIP: $here/node_modules is missing; run 'npm ci' in tests/e2e (it needs the npm registry)"
    exit 77
fi
if [[ -z "${STOCKADE_SERVE_CMD:-}" ]]; then
    STOCKADE_SERVE_CMD="$(node -e 'process.stdout.write(JSON.stringify(process.argv.slice(1)))' -- "$@")"
    export STOCKADE_SERVE_CMD
fi
echo "e2e: STOCKADE_SERVE_CMD=$STOCKADE_SERVE_CMD"
cd "$here/../.."
exec node --test tests/e2e/
