#!/usr/bin/env bash
# Stockade's container image, built reproducibly: a Debian root made by mmdebstrap (minbase, what
# agents expect to find, and Stockade's own Debian package with what it depends on), turned into
# an OCI image layout by umoci. The same inputs — the package, the suite's packages on the
# mirror, SOURCE_DATE_EPOCH — give the same manifest digest.
#
#   packaging/oci/build.sh --out DIR [--deb FILE | --build-dir DIR] [--tag TAG]
#                          [--suite bookworm] [--mirror LINE]... [--epoch SECONDS]
#
#   --out DIR        the OCI image layout to write (replaced); the tag is TAG (default: the
#                    package's version)
#   --deb FILE       the stockade_*.deb to install; without it, cpack packages --build-dir's
#                    build (default build-release/, else build/) as `make deb` would
#   --mirror LINE    an apt sources line, e.g. "deb http://mirror.example/debian bookworm main"
#                    (repeat it for more); default: deb.debian.org's SUITE, SUITE-updates and
#                    SUITE-security, so that the image has the suite's security fixes
#   --epoch SECONDS  SOURCE_DATE_EPOCH: every timestamp in the image (default: the environment's
#                    SOURCE_DATE_EPOCH, else the commit time of the source tree's HEAD)
#
# It prints the manifest's digest last, alone on its line. Load the image into podman with
#   skopeo copy oci:DIR:TAG containers-storage:localhost/stockade:TAG
# and push it with `skopeo copy oci:DIR:TAG docker://REGISTRY/stockade:TAG`.
#
# The image runs as user 1000 (stockade), in /workspace, with
#   ENTRYPOINT stockade serve --http 0.0.0.0:8888 --state-dir /var/lib/stockade
#   CMD        --pod --admin-token-file /etc/stockade/admin/token-sha256
#              --bind-file /etc/stockade/bind/tenant.json
# (a pod waiting to be bound to one tenant: docs/kubernetes.md); give other arguments to serve
# otherwise, e.g. `--tenants FILE` or `--token-file FILE --workspace /workspace`.
# Needs root (mmdebstrap's root mode), mmdebstrap, umoci and dpkg-deb; reads Debian's archive.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source_dir="$(cd "$here/../.." && pwd)"
out="" deb="" build_dir="" tag="" suite="bookworm" epoch="${SOURCE_DATE_EPOCH:-}"
mirrors=()

die() {
    echo "build.sh: $*" >&2
    exit 1
}
while [ $# -gt 0 ]; do
    case "$1" in
    --out) out="$2" ;;
    --deb) deb="$2" ;;
    --build-dir) build_dir="$2" ;;
    --tag) tag="$2" ;;
    --suite) suite="$2" ;;
    --mirror) mirrors+=("$2") ;;
    --epoch) epoch="$2" ;;
    -h | --help)
        sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    *) die "unknown argument \"$1\" (see --help)" ;;
    esac
    [ $# -ge 2 ] || die "$1 needs a value"
    shift 2
done
[ -n "$out" ] || die "give --out DIR, the OCI image layout to write"
if [ ${#mirrors[@]} -eq 0 ]; then
    mirrors=("deb http://deb.debian.org/debian $suite main"
        "deb http://deb.debian.org/debian $suite-updates main"
        "deb http://deb.debian.org/debian-security $suite-security main")
fi
[ "$(id -u)" -eq 0 ] || die "run as root: mmdebstrap builds the root in its root mode"
for tool in mmdebstrap umoci dpkg-deb; do
    command -v "$tool" >/dev/null || die "$tool is missing: apt-get install $tool"
done
if [ -z "$epoch" ]; then
    epoch="$(git -C "$source_dir" log -1 --format=%ct 2>/dev/null)" ||
        die "no SOURCE_DATE_EPOCH and no git history: give --epoch SECONDS"
fi
[[ "$epoch" =~ ^[0-9]+$ ]] || die "--epoch \"$epoch\" is not a number of seconds"
export SOURCE_DATE_EPOCH="$epoch"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The package: the one given, or this tree's build packaged as `make deb` packages it.
if [ -z "$deb" ]; then
    if [ -z "$build_dir" ]; then
        build_dir="$source_dir/build-release"
        [ -f "$build_dir/CPackConfig.cmake" ] || build_dir="$source_dir/build"
    fi
    [ -f "$build_dir/CPackConfig.cmake" ] ||
        die "no --deb and no build in $build_dir: run \`make build\` or \`make deb\` first"
    (cd "$work" && cpack -G DEB --config "$build_dir/CPackConfig.cmake" -B "$work/deb") \
        >"$work/cpack.log" 2>&1 || die "cpack failed: $(cat "$work/cpack.log")"
    deb="$(ls "$work"/deb/stockade_*.deb)"
fi
[ -f "$deb" ] || die "no package at $deb"
deb="$(realpath "$deb")"
version="$(dpkg-deb -f "$deb" Version)"
tag="${tag:-$version}"

# The root. minbase, plus what agents run and what the package depends on (its Depends, names
# only: the suite's versions satisfy them); then the package itself, installed by dpkg inside
# the root. mmdebstrap clamps every timestamp to SOURCE_DATE_EPOCH and leaves no machine-id,
# caches or logs that differ between two runs; the hooks remove what useradd leaves behind.
depends="$(dpkg-deb -f "$deb" Depends | sed -e 's/([^)]*)//g' -e 's/|[^,]*//g' -e 's/[[:space:]]//g')"
cp "$deb" "$work/stockade.deb"
mmdebstrap --quiet --mode=root --variant=minbase --format=tar \
    --include="bash,coreutils,git,python3,ca-certificates,ripgrep,$depends" \
    --customize-hook="copy-in $work/stockade.deb /tmp" \
    --customize-hook='chroot "$1" dpkg --install /tmp/stockade.deb && rm "$1/tmp/stockade.deb"' \
    --customize-hook='chroot "$1" useradd --uid 1000 --user-group --create-home --home-dir /home/stockade --shell /bin/bash stockade' \
    --customize-hook='install -d -o 1000 -g 1000 -m 0755 "$1/workspace" "$1/var/lib/stockade"' \
    --customize-hook='install -d -m 0755 "$1/etc/stockade/admin" "$1/etc/stockade/bind"' \
    --customize-hook='rm -f "$1/var/log/lastlog" "$1/var/log/faillog" "$1"/etc/*- "$1/var/log/dpkg.log" "$1/var/log/alternatives.log"' \
    "$suite" "$work/root.tar" "${mirrors[@]}" >&2 ||
    die "mmdebstrap failed (is Debian's archive reachable? give --mirror LINE otherwise)"

# The layout: one layer, the root as it is; the config names the user, the entry point and the
# time, which is SOURCE_DATE_EPOCH's.
created="$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)"
rm -rf "$out"
{
    umoci init --layout "$out"
    umoci new --image "$out:$tag"
    umoci raw add-layer --image "$out:$tag" --history.created "$created" \
        --history.created_by "packaging/oci/build.sh (mmdebstrap $suite minbase + stockade $version)" \
        "$work/root.tar"
    umoci config --image "$out:$tag" --created "$created" --history.created "$created" \
        --history.created_by "packaging/oci/build.sh: user, entry point and environment" \
        --author "Stockade" --architecture "$(dpkg --print-architecture)" --os linux \
        --config.user 1000:1000 --config.workingdir /workspace \
        --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        --config.env HOME=/home/stockade --config.env LANG=C.UTF-8 \
        --config.exposedports 8888/tcp --config.stopsignal SIGTERM \
        --config.entrypoint stockade --config.entrypoint serve --config.entrypoint --http \
        --config.entrypoint 0.0.0.0:8888 --config.entrypoint --state-dir \
        --config.entrypoint /var/lib/stockade \
        --config.cmd --pod --config.cmd --admin-token-file \
        --config.cmd /etc/stockade/admin/token-sha256 --config.cmd --bind-file \
        --config.cmd /etc/stockade/bind/tenant.json \
        --config.label "org.opencontainers.image.title=stockade" \
        --config.label "org.opencontainers.image.version=$version" \
        --config.label "org.opencontainers.image.created=$created" \
        --manifest.annotation "org.opencontainers.image.version=$version" \
        --manifest.annotation "org.opencontainers.image.created=$created"
    umoci gc --layout "$out"
} >&2
python3 - "$out" "$tag" <<'PY'
import json, sys
index = json.load(open(sys.argv[1] + "/index.json"))
for m in index["manifests"]:
    if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == sys.argv[2]:
        print(m["digest"])
        break
else:
    sys.exit("build.sh: the layout has no tag " + sys.argv[2])
PY
