#!/usr/bin/env bash
# `stockade serve --http` under load, side by side with its anchors in one run:
#
#   bench/http.sh [SESSIONS] [SECONDS]      (BUILD_DIR, default build/; 200 sessions, 60 s)
#
# One server with three tenants (bench/http_load.mjs, Node's fetch as the client):
#   1  session creation: 200 initialize requests one after another (each starts a sandbox),
#      each after one `stockade run -- true`: p50 against the runs' p50           (target <= 1.5x)
#   2  memory per idle session: the PSS of its sandbox's processes plus the supervisor's PSS
#      growth with the 200 sessions open, divided by 200, beside 200 bwrap sandboxes running
#      `sleep` measured the same way                                (target <= 1.5 MiB per session)
#   3  200 sessions of tenants alpha and beta at once, each doing read (a 2,000-line file) and
#      `bash true` in a loop for SECONDS: p50 and p99 of each, against the same loop over
#      stdio (200 `stockade serve` processes); every call answered, none an error   (p50 <= 1.3x)
#   4  the loop of 3 again while a third tenant floods (20 sessions x 4 loops of the same
#      calls): alpha's and beta's p99 against 3's                                (target <= 2x)
# The client is Node's fetch (the official TypeScript SDK's); HTTP_CLIENT=http uses node:http
# with a keep-alive agent instead, which costs the two cores less. Both sides' CPU per call is
# printed (the server with its sandboxes, and the client).
# It is a report: a missed target prints **MISS** and the script still exits 0.
set -euo pipefail
here=${BASH_SOURCE[0]%/*}
[[ $here == "${BASH_SOURCE[0]}" ]] && here=.
ROOT=$(cd "$here/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
STOCKADE=$BUILD_DIR/stockade
command -v node >/dev/null || { echo "http.sh: node not found" >&2; exit 1; }
if [[ ! -x $STOCKADE ]]; then
    echo "building stockade ..." >&2
    cmake --build "$BUILD_DIR" -j2 --target stockade >&2
fi
ulimit -n 65536 2>/dev/null || true
exec node "$here/http_load.mjs" --bin "$STOCKADE" --sessions "${1:-200}" --duration "${2:-60}" \
    --client "${HTTP_CLIENT:-fetch}"
