#!/usr/bin/env bash
# Command execution through MCP, side by side with its anchors, in one run (issue: bash/process).
#
#   bench/exec.sh            (BUILD_DIR, default build/)
#
# One persistent `stockade serve --workspace W` (STOCKADE_STATE_DIR a temp dir) driven by
# bench/exec_client.py; round trips timed with time.perf_counter_ns.
#   1  bash {"command":"true"} vs a bare fork+exec+wait of /bin/true timed in the same loop
#      (and bash {"command":"echo"}, whose completion is durable and checkpointed, beside them):
#      p50 over 300 alternating pairs                                        (target ratio <= 1.3)
#   2  `head -c 1G /dev/zero | base64 -w 76` through bash into the process log: throughput, and
#      the supervisor's peak RSS; the same pipeline into `wc -c` outside for reference
#                                                          (targets >= 300 MB/s, <= 64 MiB)
#   3  64 background processes (process start): supervisor RSS and `process list` p50
#                                                          (targets <= 64 MiB, <= 5 ms)
# It is a report: a missed target prints MISS and the script still exits 0.
set -euo pipefail

here=${BASH_SOURCE[0]%/*}
[[ $here == "${BASH_SOURCE[0]}" ]] && here=.
ROOT=$(cd "$here/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
die() { echo "exec.sh: $*" >&2; exit 1; }

command -v python3 >/dev/null || die "python3 not found"
STOCKADE=$BUILD_DIR/stockade
if [[ ! -x $STOCKADE ]]; then
    echo "building stockade ..." >&2
    cmake --build "$BUILD_DIR" -j2 --target stockade >&2
fi

TMP=$(mktemp -d /tmp/stockade-exec-bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/ws" "$TMP/state"

python3 "$ROOT/bench/exec_client.py" "$STOCKADE" "$TMP/ws" "$TMP/state" || {
    echo "exec.sh: the client failed; serve's stderr:" >&2
    tail -20 "$TMP/state/serve.stderr" >&2 || true
}
exit 0
