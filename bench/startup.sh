#!/usr/bin/env bash
# Start-up cost of `stockade run -- /bin/true` next to bubblewrap giving /bin/true the same
# sandbox, in one run (DESIGN.md §4; the "side by side with the anchor" habit).
#
#   bench/startup.sh [-n PAIRS] [-w WARMUP] [-r RSS_RUNS]      (BUILD_DIR, default build/)
#
# What is compared:
#   stockade   stockade run --workspace W -- /bin/true: user/mount/pid/net/ipc/uts/cgroup
#              namespaces, the host image read-only, /etc generated + host files, W read-write,
#              /tmp and /dev/shm tmpfs, /proc with masks, /dev, seccomp, Landlock, rlimits,
#              cgroups (at --isolation full), pid-1 init that forks the command.
#   bwrap      the same namespaces, binds, symlinks, generated files, tmpfs, /dev, /proc masks,
#              read-only root, uid/gid 1000, hostname, cwd, environment and OUR seccomp filter
#              (exported by stockade-bench-seccomp), with bwrap's own pid-1 reaper. The command
#              line is derived from stockade's mount plan by stockade-bench-bwrap-args. bwrap
#              has no Landlock, cgroups or rlimits.
#   bwrap-user bwrap as a user would type it, the anchor of the start-up target: --ro-bind of
#              /usr /bin /lib /lib64 /etc, the workspace read-write, tmpfs /tmp, --proc, --dev,
#              all namespaces (--unshare-all --unshare-user), our seccomp filter.
#   floor      posix_spawn + wait of /bin/true.
# The comparison at `full` runs three times (the target: ratio <= 1.0 to bwrap-user in each of
# the three). The pairs alternate (stockade, bwrap, bwrap-user, floor, stockade, ...); each run is timed in
# nanoseconds with CLOCK_MONOTONIC by bench/startup_timer.py. Peak RSS is "Maximum resident set
# size" of /usr/bin/time -v (the largest of the launcher and its waited-for descendants; the
# launcher itself here, its init being a copy-on-write clone of it).
# It is a report: a missed target prints MISS and the script still exits 0.
set -euo pipefail

usage() {
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
    exit "${1:-0}"
}

PAIRS=50
WARMUP=5
RSS_RUNS=5
while getopts "n:w:r:h" opt; do
    case "$opt" in
        n) PAIRS=$OPTARG ;;
        w) WARMUP=$OPTARG ;;
        r) RSS_RUNS=$OPTARG ;;
        h) usage 0 ;;
        *) usage 2 ;;
    esac
done
for v in PAIRS WARMUP RSS_RUNS; do
    [[ ${!v} =~ ^[0-9]+$ ]] || { echo "startup.sh: $v must be a number, not '${!v}'" >&2; exit 2; }
done
if (( PAIRS < 30 )); then
    echo "startup.sh: -n $PAIRS is too few pairs for a median and a p95: use 30 or more" >&2
    exit 2
fi
(( RSS_RUNS >= 1 )) || { echo "startup.sh: -r must be at least 1" >&2; exit 2; }

here=${BASH_SOURCE[0]%/*}
[[ $here == "${BASH_SOURCE[0]}" ]] && here=.
ROOT=$(cd "$here/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
die() { echo "startup.sh: $*" >&2; exit 1; }

# ---- Prerequisites ------------------------------------------------------------------------
BWRAP=$(command -v bwrap || true)
[[ -n $BWRAP ]] || die "bwrap not found: install bubblewrap (apt-get install bubblewrap)"
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found: install GNU time (apt-get install time)"
PYTHON=$(command -v python3 || true)
[[ -n $PYTHON ]] || die "python3 not found: install python3 (apt-get install python3)"
"$PYTHON" -c 'import os, sys; sys.exit(0 if hasattr(os, "posix_spawn") and hasattr(os, "waitstatus_to_exitcode") else 1)' ||
    die "python3 >= 3.9 is needed (os.posix_spawn, os.waitstatus_to_exitcode)"

STOCKADE=$BUILD_DIR/stockade
EXPORT_SECCOMP=$BUILD_DIR/bench/stockade-bench-seccomp
BWRAP_ARGS=$BUILD_DIR/bench/stockade-bench-bwrap-args
if [[ ! -x $STOCKADE || ! -x $EXPORT_SECCOMP || ! -x $BWRAP_ARGS ]]; then
    echo "== building stockade and the bench helpers in $BUILD_DIR"
    if [[ ! -f $BUILD_DIR/CMakeCache.txt ]]; then
        cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    else
        cmake -S "$ROOT" -B "$BUILD_DIR" >/dev/null  # picks up bench/ targets added since
    fi
    cmake --build "$BUILD_DIR" -j2 --target stockade stockade-bench-seccomp stockade-bench-bwrap-args
fi
BUILD_TYPE=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null || true)

WORK=$(mktemp -d "${TMPDIR:-/tmp}/stockade-bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
WS=$WORK/workspace
mkdir -p "$WS" "$WORK/files"

# ---- bwrap as this user ----------------------------------------------------------------------
echo "== Stockade start-up benchmark ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
echo "host: $(uname -sr), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); uid $(id -u)"
echo "stockade: $STOCKADE (build type ${BUILD_TYPE:-unknown})"
echo "bwrap: $BWRAP ($("$BWRAP" --version 2>&1 | head -1)); floor: posix_spawn /bin/true"
[[ ${BUILD_TYPE:-} == Debug ]] && echo "WARNING: a Debug build: timings are not representative"
if awk -v n="$(nproc)" '{ exit !($1 > n / 2) }' /proc/loadavg; then
    echo "WARNING: the host is busy (load $(cut -d' ' -f1 /proc/loadavg) on $(nproc) CPUs): the pairs alternate, so"
    echo "         the ratio holds up better than the absolute figures, but expect wide p95s"
fi
if ! probe=$("$BWRAP" --unshare-all --ro-bind / / true 2>&1); then
    die "bwrap --unshare-all --ro-bind / / true fails here: $probe
  (user namespaces disabled? check sysctl user.max_user_namespaces / kernel.unprivileged_userns_clone)"
fi
if ! probe=$("$BWRAP" --unshare-all --unshare-user --uid 1000 --gid 1000 --cap-drop ALL \
        --ro-bind / / true 2>&1); then
    die "bwrap refuses --unshare-user --uid 1000 --gid 1000 --cap-drop ALL: $probe"
fi
if [[ $(id -u) == 0 ]]; then
    echo "note: as root, bwrap works unprivileged-style here: --unshare-all alone only *tries* a user"
    echo "      namespace, so --unshare-user is passed explicitly (needed for --uid/--gid); bwrap maps"
    echo "      sandbox uid 1000 to host uid 0, while stockade maps it to an unprivileged host id and"
    echo "      presents the workspace through an idmapped mount (extra work bwrap does not do)."
fi

# ---- Command lines --------------------------------------------------------------------------
"$EXPORT_SECCOMP" -o "$WORK/seccomp.bpf" 2>"$WORK/export.log" ||
    die "stockade-bench-seccomp failed: $(cat "$WORK/export.log")"
"$BWRAP_ARGS" --workspace "$WS" --files-dir "$WORK/files" --seccomp-file "$WORK/seccomp.bpf" \
    --bwrap "$BWRAP" -- /bin/true >"$WORK/bwrap.args" 2>"$WORK/bwrap-args.log" ||
    die "stockade-bench-bwrap-args failed: $(cat "$WORK/bwrap-args.log")"
echo "seccomp: $(sed 's/^stockade-bench-seccomp: //' "$WORK/export.log"), given to bwrap --seccomp"
echo "bwrap: $(cat "$WORK/bwrap-args.log")"

# argv files: NUL-separated (see startup_timer.py).
argfile() { local out=$1; shift; printf '%s\0' "$@" >"$out"; }
argfile "$WORK/floor.args" /bin/true
user_binds=()
for d in /usr /bin /lib /lib64 /etc; do
    [[ -e $d ]] && user_binds+=(--ro-bind "$d" "$d")
done
# The workspace after the tmpfs: it is beneath /tmp here.
argfile "$WORK/bwrap-user.args" "$BWRAP" "${user_binds[@]}" --tmpfs /tmp --bind "$WS" "$WS" \
    --proc /proc --dev /dev --unshare-all --unshare-user --die-with-parent --chdir "$WS" \
    "@fd=3=$WORK/seccomp.bpf" --seccomp 3 -- /bin/true

FULL_LEVEL=full
set +e
"$STOCKADE" run --isolation full --workspace "$WS" -- /bin/true </dev/null >/dev/null 2>"$WORK/probe.log"
rc=$?
set -e
if (( rc == 77 )); then
    echo "note: --isolation full is not available here ($(head -1 "$WORK/probe.log")); using auto"
    FULL_LEVEL=auto
elif (( rc != 0 )); then
    die "stockade run --isolation full -- /bin/true exits $rc: $(cat "$WORK/probe.log")"
fi
argfile "$WORK/stockade-full.args" "$STOCKADE" run --isolation "$FULL_LEVEL" --workspace "$WS" -- /bin/true
argfile "$WORK/stockade-ns.args" "$STOCKADE" run --isolation namespaces --workspace "$WS" -- /bin/true
echo "bwrap command line:"
tr '\0' '\n' <"$WORK/bwrap.args" | grep -v '^@fd=' | tr '\n' ' ' | fold -s -w 100 | sed 's/^/    /'
echo

run_comparison() {
    local label=$1 stockade_args=$2 summary=$3
    echo
    echo "== $label: $PAIRS pairs after $WARMUP warm-up pairs; peak RSS over $RSS_RUNS runs each"
    "$PYTHON" "$ROOT/bench/startup_timer.py" --pairs "$PAIRS" --warmup "$WARMUP" --rss-runs "$RSS_RUNS" \
        --cwd "$WS" --summary "$summary" \
        "stockade=$stockade_args" "bwrap=$WORK/bwrap.args" "bwrap-user=$WORK/bwrap-user.args" \
        "floor=$WORK/floor.args"
    awk '
        $1 == "stockade.median_ms" { s = $2 } $1 == "bwrap.median_ms" { b = $2 }
        $1 == "bwrap-user.median_ms" { u = $2 }
        $1 == "pair_ratio_median" { p = $2 }
        $1 == "floor.median_ms" { f = $2 }
        END {
            printf "  ratio stockade/bwrap of the medians: %.2f (median of per-pair ratios %.2f)\n", s / b, p
            printf "  ratio stockade/bwrap-user of the medians: %.2f\n", s / u
            printf "  above the floor: stockade %.2f ms, bwrap %.2f ms, bwrap-user %.2f ms\n", s - f, b - f, u - f
        }' "$summary"
}

for run in 1 2 3; do
    run_comparison "run $run of 3: isolation $FULL_LEVEL (stockade: namespaces+seccomp+Landlock+cgroups) vs bwrap+seccomp" \
        "$WORK/stockade-full.args" "$WORK/full$run.summary"
done
cp "$WORK/full1.summary" "$WORK/full.summary"
run_comparison "isolation namespaces (stockade without cgroups: rlimits) vs bwrap+seccomp" \
    "$WORK/stockade-ns.args" "$WORK/ns.summary"

# ---- Targets ------------------------------------------------------------------------------
echo
echo "== targets"
for run in 1 2 3; do
    awk -v level="$FULL_LEVEL" -v run="$run" '
        $1 == "stockade.median_ms" { s = $2 } $1 == "bwrap-user.median_ms" { u = $2 }
        END {
            ratio = s / u
            printf "  %-4s run %d: median ratio stockade/bwrap-user <= 1.00 (isolation %s): %.2f (%.2f ms vs %.2f ms)\n",
                (ratio <= 1.0 ? "PASS" : "MISS"), run, level, ratio, s, u
        }' "$WORK/full$run.summary"
done
awk '
    $1 == "stockade.rss_kb" { sr = $2 } $1 == "bwrap.rss_kb" { br = $2 } $1 == "bwrap-user.rss_kb" { ur = $2 }
    END {
        printf "  %-4s stockade peak RSS <= 1.3x bwrap-user: %.2f MiB (%d KB) against %.2f MiB: %.2fx (bwrap with our binds %.2f MiB)\n",
            (sr <= 1.3 * ur ? "PASS" : "MISS"), sr / 1024, sr, ur / 1024, sr / ur, br / 1024
    }' "$WORK/full1.summary"
