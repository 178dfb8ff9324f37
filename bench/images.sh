#!/usr/bin/env bash
# Images (docs/images.md), each figure side by side with its anchor, in one run:
#
#   bench/images.sh [-n PAIRS] [-r ROOT_TAR]       (BUILD_DIR, default build/)
#
#   start      `stockade run --image deb -- /bin/true` against `stockade run -- /bin/true` on
#              the host image, alternating (bench/startup_timer.py). Target: <= 1.05x.
#   import     `stockade image import` of a Debian root as a docker-archive against `bsdtar -x`
#              of the same layer into a directory, alternating, each into a fresh place.
#              Target: <= 1.5x.
#   pull       `stockade image pull` from Debian's docker-registry on 127.0.0.1 against
#              `skopeo copy docker://… oci:…` of the same image followed by `stockade image
#              import` of that layout, alternating, each into a fresh store. Target: <= 1.0x.
#   store      10 images sharing that root as their base layer, each with a small layer of
#              its own: what blobs/ holds against what 10 separate copies of the blobs would.
#
# ROOT_TAR is a Debian root file system tar; without -r one is made with mmdebstrap (minbase
# plus python3, git, ca-certificates: about 250 MiB unpacked), which needs Debian's archive.
# It is a report: a missed target prints MISS and the script still exits 0.
set -euo pipefail

usage() {
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
    exit "${1:-0}"
}

PAIRS=30
ROOT_TAR=
while getopts "n:r:h" opt; do
    case "$opt" in
        n) PAIRS=$OPTARG ;;
        r) ROOT_TAR=$OPTARG ;;
        h) usage 0 ;;
        *) usage 2 ;;
    esac
done
[[ $PAIRS =~ ^[0-9]+$ ]] && (( PAIRS >= 10 )) || { echo "images.sh: -n needs 10 or more" >&2; exit 2; }

here=${BASH_SOURCE[0]%/*}
[[ $here == "${BASH_SOURCE[0]}" ]] && here=.
ROOT=$(cd "$here/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
STOCKADE=$BUILD_DIR/stockade
die() { echo "images.sh: $*" >&2; exit 1; }

[[ -x $STOCKADE ]] || die "$STOCKADE not found: build it first (make build)"
BSDTAR=$(command -v bsdtar || true)
[[ -n $BSDTAR ]] || die "bsdtar not found: install libarchive-tools"
PYTHON=$(command -v python3 || true)
[[ -n $PYTHON ]] || die "python3 not found"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/stockade-bench-images.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
WS=$WORK/workspace
mkdir -p "$WS"
export STOCKADE_IMAGE_STORE=$WORK/store

echo "== Stockade images benchmark ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
echo "host: $(uname -sr), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); uid $(id -u)"

if [[ -z $ROOT_TAR ]]; then
    command -v mmdebstrap >/dev/null || die "mmdebstrap not found: install it, or give -r ROOT_TAR"
    ROOT_TAR=$WORK/debian.tar
    echo "== making a Debian root with mmdebstrap (minbase, python3, git, ca-certificates)"
    SOURCE_DATE_EPOCH=1700000000 mmdebstrap --quiet --variant=minbase \
        --include=python3,git,ca-certificates bookworm "$ROOT_TAR" ||
        die "mmdebstrap failed: is Debian's archive reachable? (or give -r ROOT_TAR)"
fi
echo "root: $ROOT_TAR, $(( $(stat -c %s "$ROOT_TAR") / 1048576 )) MiB as a tar"

# A docker-archive of the root (what `docker save` writes: manifest.json, a config, the layer).
make_docker_archive() {  # ROOT_TAR EXTRA_FILE_OR_EMPTY OUT
    "$PYTHON" - "$@" <<'EOF'
import hashlib, io, json, os, sys, tarfile
root, extra, out = sys.argv[1:4]
def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return "sha256:" + h.hexdigest()
layers = [root] + ([extra] if extra else [])
config = json.dumps({"architecture": "amd64", "os": "linux",
                     "rootfs": {"type": "layers", "diff_ids": [sha(p) for p in layers]}}).encode()
with tarfile.open(out, "w") as t:
    names = []
    for i, path in enumerate(layers):
        names.append(f"{i}/layer.tar")
        t.add(path, arcname=names[-1])
    info = tarfile.TarInfo("config.json"); info.size = len(config)
    t.addfile(info, io.BytesIO(config))
    manifest = json.dumps([{"Config": "config.json", "RepoTags": [], "Layers": names}]).encode()
    info = tarfile.TarInfo("manifest.json"); info.size = len(manifest)
    t.addfile(info, io.BytesIO(manifest))
EOF
}
make_docker_archive "$ROOT_TAR" "" "$WORK/debian-docker.tar"

# Medians of FILE's "ours anchor" microsecond pairs, and of their per-pair ratios, against TARGET.
report_pairs() {  # FILE OURS ANCHOR TARGET CLAIM
    awk -v ours="$2" -v anchor="$3" -v target="$4" -v claim="$5" '
        { s[NR] = $1; b[NR] = $2; r[NR] = $1 / $2 }
        function median(a, n,    i, j, t) {
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        END {
            n = NR; ms = median(s, n) / 1000; mb = median(b, n) / 1000; mr = median(r, n)
            printf "  %s %.0f ms, %s %.0f ms (medians); median per-pair ratio %.2f\n", ours, ms, anchor, mb, mr
            printf "  %-4s %s: %.2f\n", (mr <= target ? "PASS" : "MISS"), claim, mr
        }' "$1"
}

# ---- import against bsdtar -x ---------------------------------------------------------------
echo
echo "== import: $PAIRS alternating runs of each, into fresh places"
: >"$WORK/import.times"
for i in $(seq 1 "$PAIRS"); do
    rm -rf "$STOCKADE_IMAGE_STORE" "$WORK/x"
    sync
    t0=$(date +%s%N)
    "$STOCKADE" image import "$WORK/debian-docker.tar" --name deb >/dev/null
    t1=$(date +%s%N)
    mkdir "$WORK/x"
    t2=$(date +%s%N)
    "$BSDTAR" -xpf "$ROOT_TAR" -C "$WORK/x"
    t3=$(date +%s%N)
    echo "$(( (t1 - t0) / 1000 )) $(( (t3 - t2) / 1000 ))" >>"$WORK/import.times"
done
rm -rf "$WORK/x"
report_pairs "$WORK/import.times" "stockade image import" "bsdtar -x" 1.5 "import <= 1.5x bsdtar -x"

# ---- pull against skopeo copy + import ------------------------------------------------------
echo
echo "== pull: $PAIRS alternating runs of each from docker-registry on 127.0.0.1"
REGISTRY=$(command -v docker-registry || true)
SKOPEO=$(command -v skopeo || true)
if [[ -z $REGISTRY || -z $SKOPEO ]]; then
    echo "  SKIP pull: docker-registry and skopeo are needed (Debian packages)"
else
    PORT=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    printf 'version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: 127.0.0.1:%s\n' \
        "$WORK/registry" "$PORT" >"$WORK/registry.yml"
    "$REGISTRY" serve "$WORK/registry.yml" >"$WORK/registry.log" 2>&1 &
    registry_pid=$!
    trap 'kill "$registry_pid" 2>/dev/null; rm -rf "$WORK"' EXIT
    for _ in $(seq 1 50); do
        "$PYTHON" -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 1)" 2>/dev/null && break
        sleep 0.1
    done
    REF=127.0.0.1:$PORT/bench/deb:1
    "$SKOPEO" copy --quiet --dest-tls-verify=false "docker-archive:$WORK/debian-docker.tar" \
        "docker://$REF" || die "skopeo could not push to the loopback registry"
    : >"$WORK/pull.times"
    for i in $(seq 1 "$PAIRS"); do
        rm -rf "$STOCKADE_IMAGE_STORE" "$WORK/oci"
        sync
        t0=$(date +%s%N)
        "$STOCKADE" image pull "$REF" --insecure-registry "127.0.0.1:$PORT" --name deb >/dev/null
        t1=$(date +%s%N)
        rm -rf "$STOCKADE_IMAGE_STORE"
        sync
        t2=$(date +%s%N)
        "$SKOPEO" copy --quiet --src-tls-verify=false "docker://$REF" "oci:$WORK/oci:deb"
        "$STOCKADE" image import "$WORK/oci:deb" --name deb >/dev/null
        t3=$(date +%s%N)
        echo "$(( (t1 - t0) / 1000 )) $(( (t3 - t2) / 1000 ))" >>"$WORK/pull.times"
    done
    rm -rf "$WORK/oci"
    report_pairs "$WORK/pull.times" "stockade image pull" "skopeo copy + import" 1.0 \
        "pull <= 1.0x skopeo copy + import"
    rm -rf "$STOCKADE_IMAGE_STORE"
    "$STOCKADE" image import "$WORK/debian-docker.tar" --name deb >/dev/null
fi

# ---- run --image against the host image -----------------------------------------------------
echo
echo "== start: run --image deb -- /bin/true against run -- /bin/true, $PAIRS pairs"
"$STOCKADE" run --image deb --workspace "$WS" -- /bin/true ||
    die "run --image deb -- /bin/true failed"
printf '%s\0' "$STOCKADE" run --image deb --workspace "$WS" -- /bin/true >"$WORK/image.args"
printf '%s\0' "$STOCKADE" run --workspace "$WS" -- /bin/true >"$WORK/host.args"
"$PYTHON" "$ROOT/bench/startup_timer.py" --pairs "$PAIRS" --warmup 3 --rss-runs 1 --cwd "$WS" \
    --summary "$WORK/start.summary" "image=$WORK/image.args" "host=$WORK/host.args"
awk '
    $1 == "image.median_ms" { i = $2 } $1 == "host.median_ms" { h = $2 }
    END { printf "  %-4s run --image <= 1.05x the host image: %.2f (%.2f ms vs %.2f ms)\n",
          (i / h <= 1.05 ? "PASS" : "MISS"), i / h, i, h }' "$WORK/start.summary"

# ---- 10 images sharing a base ----------------------------------------------------------------
echo
echo "== store: 10 images sharing the root as their base layer"
rm -rf "$STOCKADE_IMAGE_STORE"
separate=0
for i in $(seq 1 10); do
    mkdir -p "$WORK/extra$i/opt"
    echo "image $i" >"$WORK/extra$i/opt/which"
    tar -C "$WORK/extra$i" -cf "$WORK/extra$i.tar" opt
    make_docker_archive "$ROOT_TAR" "$WORK/extra$i.tar" "$WORK/img$i.tar"
    "$STOCKADE" image import "$WORK/img$i.tar" --name "img$i" >/dev/null
    separate=$(( separate + $(stat -c %s "$ROOT_TAR") + $(stat -c %s "$WORK/extra$i.tar") ))
done
blobs=$(du -sb "$STOCKADE_IMAGE_STORE/blobs" | cut -f1)
trees=$(du -sb "$STOCKADE_IMAGE_STORE/trees" | cut -f1)
awk -v b="$blobs" -v s="$separate" -v t="$trees" 'BEGIN {
    printf "  blobs: %.0f MiB for 10 images whose layers add up to %.0f MiB (%.1fx less)\n", b / 1048576, s / 1048576, s / b
    printf "  trees: %.0f MiB (one flattened tree per image: not shared between images)\n", t / 1048576
}'
