#!/usr/bin/env bash
# `stockade run --network allowlist` (the supervisor's HTTP proxy) next to the same traffic sent
# directly to the same upstream on the host, in one run.
#
#   bench/network.sh [-b STOCKADE] [-n PAIRS] [-r REPEAT] [-c CONNECTIONS]
#                                        (default STOCKADE: $BUILD_DIR/stockade, BUILD_DIR=build)
#
# Upstream: `network_client.py upstream` on an ephemeral 127.0.0.1 port (one thread per
# connection; GET /bytes/N is sendfile(2) of a 1 GiB sparse file, anything else answers
# "hello from <Host>"), used by both sides. One `stockade run --network allowlist
# --no-user-settings --allow 'network.access(example.test)' --resolve
# example.test:80=127.0.0.1:PORT -- python3 network_client.py agent` lives for the whole run;
# the driver (network_client.py driver) sends the agent one command at a time and does the
# direct counterpart on the host between them, so the two sides alternate.
#   1  1 GiB download, curl -o /dev/null (in the sandbox through http_proxy, on the host with
#      --noproxy '*'), REPEAT (3) pairs, median of curl's speed_download  (target ratio >= 0.8);
#      beside it the CPU seconds each side spent (curl's rusage, the supervisor's and the
#      upstream's utime+stime; softirq work is charged to whichever of them runs) and the
#      host's idle share: with no CPU idle the ratio follows the ratio of the CPU totals
#   2  new TCP connection + plain-HTTP GET http://example.test/ read to EOF, python3 client:
#      to 127.0.0.1:3128 in absolute-form with Proxy-Authorization inside, straight to the
#      upstream outside; PAIRS (500) pairs after 50 warm-up; p50/p90 and
#      p50(proxied) - p50(direct)                                               (target <= 1 ms)
#   3  CONNECTIONS (200) CONNECT tunnels to example.test:80 held open inside, each carrying a
#      GET /bytes/1GiB that was read for 64 KiB and then left stalled: VmRSS / VmHWM of the
#      `stockade run` process (the supervisor, whose thread is the proxy) from
#      /proc/PID/status, next to its idle VmRSS                                (target <= 64 MiB)
# Everything listens on and connects to 127.0.0.1 only. About 20 seconds.
# It is a report: a missed target prints MISS and the script still exits 0.
set -euo pipefail

usage() {
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
    exit "${1:-0}"
}

here=${BASH_SOURCE[0]%/*}
[[ $here == "${BASH_SOURCE[0]}" ]] && here=.
ROOT=$(cd "$here/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
die() { echo "network.sh: $*" >&2; exit 1; }

STOCKADE=
PAIRS=500
REPEAT=3
CONNS=200
while getopts "b:n:r:c:h" opt; do
    case "$opt" in
        b) STOCKADE=$OPTARG ;;
        n) PAIRS=$OPTARG ;;
        r) REPEAT=$OPTARG ;;
        c) CONNS=$OPTARG ;;
        h) usage 0 ;;
        *) usage 2 ;;
    esac
done
for v in PAIRS REPEAT CONNS; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive number, not '${!v}'"
done

command -v python3 >/dev/null || die "python3 not found"
command -v curl >/dev/null || die "curl not found (apt-get install curl)"
if [[ -z $STOCKADE ]]; then
    STOCKADE=$BUILD_DIR/stockade
    if [[ ! -x $STOCKADE ]]; then
        echo "building stockade ..." >&2
        cmake --build "$BUILD_DIR" -j2 --target stockade >&2
    fi
fi
[[ -x $STOCKADE ]] || die "$STOCKADE is not an executable"
STOCKADE=$(cd "${STOCKADE%/*}" && pwd)/${STOCKADE##*/}

TMP=$(mktemp -d "${TMPDIR:-/tmp}/stockade-network-bench.XXXXXX")
UPSTREAM_PID=
DRIVER_PID=
cleanup() {
    set +e
    # the driver kills its `stockade run` (and so the sandbox) on its way out; SIGTERM it first
    if [[ -n $DRIVER_PID ]]; then kill "$DRIVER_PID" 2>/dev/null; wait "$DRIVER_PID" 2>/dev/null; fi
    if [[ -n $UPSTREAM_PID ]]; then kill "$UPSTREAM_PID" 2>/dev/null; wait "$UPSTREAM_PID" 2>/dev/null; fi
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$TMP/ws"
# the sandbox sees the workspace, not this tree: the agent runs from a copy there
cp "$ROOT/bench/network_client.py" "$TMP/ws/"
chmod -R a+rX "$TMP"
truncate -s 1G "$TMP/blob"

python3 "$ROOT/bench/network_client.py" upstream --blob "$TMP/blob" --port-file "$TMP/port" &
UPSTREAM_PID=$!
for _ in $(seq 100); do [[ -s $TMP/port ]] && break; sleep 0.05; done
[[ -s $TMP/port ]] || die "the upstream did not start"
PORT=$(cat "$TMP/port")

echo "== Stockade network proxy benchmark ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
echo "host: $(uname -sr), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); uid $(id -u)"
echo "stockade: $STOCKADE; $(curl --version | head -1 | cut -d' ' -f1-2); $(python3 --version)"
if awk -v n="$(nproc)" '{ exit !($1 > n / 2) }' /proc/loadavg; then
    echo "WARNING: the host is busy (load $(cut -d' ' -f1 /proc/loadavg) on $(nproc) CPUs): the pairs"
    echo "         alternate, so the ratios hold up better than the absolute figures"
fi

python3 "$ROOT/bench/network_client.py" driver "$STOCKADE" "$TMP/ws" "$PORT" \
    --repeat "$REPEAT" -n "$PAIRS" --concurrent "$CONNS" --stderr "$TMP/run.stderr" \
    --upstream-pid "$UPSTREAM_PID" &
DRIVER_PID=$!
if ! wait "$DRIVER_PID"; then
    echo "network.sh: the driver failed; stockade run's stderr:" >&2
    tail -20 "$TMP/run.stderr" >&2 || true
fi
DRIVER_PID=
exit 0
