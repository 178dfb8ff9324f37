#!/usr/bin/env bash
# ctest entry of the HTTP end-to-end suite (tests/e2e/http/{http,quota,drain,pod,oauth}.test.mjs):
# `stockade serve --http` with its tenants, as a pod (--pod), and as an OAuth resource server
# (--oauth), driven by the official MCP TypeScript SDK and raw HTTP.
#   run_http.sh root|user|load STOCKADE
# load: bench/http_load.mjs --check (120 sessions of two tenants calling in a loop, over HTTP
# and stdio, then beside a flooding third tenant): fails on a failed or unanswered call.
# root: as is (skipped, 77, unless run as root). user: as root, runs the suite as the
# unprivileged `stockade-test` user (created when missing), with a copy of STOCKADE it can
# execute; every session then runs as that one host uid (no uid range without privilege).
# Exits 77 with the reason when node or tests/e2e/node_modules is missing.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mode="$1"
stockade="$2"
suites=("$here/http.test.mjs" "$here/quota.test.mjs" "$here/drain.test.mjs" "$here/pod.test.mjs"
    "$here/oauth.test.mjs")
if ! command -v node >/dev/null 2>&1; then
    echo "SKIP: node is not installed (apt-get install nodejs)"
    exit 77
fi
if [[ ! -d "$here/../node_modules/@modelcontextprotocol/sdk" ]]; then
    echo "SKIP: tests/e2e/node_modules is missing; run 'npm ci' in tests/e2e"
    exit 77
fi
if [[ "$mode" == load ]]; then
    exec node "$here/../../../bench/http_load.mjs" --bin "$stockade" --sessions 120 --duration 5 \
        --flood-sessions 10 --check 1
fi
if [[ "$mode" == root ]]; then
    if [[ "$(id -u)" -ne 0 ]]; then
        echo "SKIP: needs root"
        exit 77
    fi
    STOCKADE_BIN="$stockade" exec node --test "${suites[@]}"
fi
if [[ "$(id -u)" -ne 0 ]]; then
    STOCKADE_BIN="$stockade" exec node --test "${suites[@]}"
fi
id stockade-test >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin stockade-test
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
chmod 0755 "$work"
install -m 0755 "$stockade" "$work/stockade"
mkdir "$work/home"
chown stockade-test: "$work/home"
# The suite and the SDK are read where they are: the user needs only to traverse to them.
for d in "$here" "$here/.." "$here/../node_modules"; do
    if ! setpriv --reuid stockade-test --regid stockade-test --clear-groups test -r "$d"; then
        echo "SKIP: the unprivileged user cannot read $d"
        exit 77
    fi
done
cd "$work/home"
HOME="$work/home" TMPDIR="$work/home" STOCKADE_BIN="$work/stockade" \
    setpriv --reuid stockade-test --regid stockade-test --clear-groups --reset-env \
    env HOME="$work/home" TMPDIR="$work/home" STOCKADE_BIN="$work/stockade" PATH="$PATH" \
    node --test "${suites[@]}"
