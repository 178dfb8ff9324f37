#!/usr/bin/env bash
# ctest entry (fixture podman_image): packaging/oci/build.sh makes Stockade's image twice from
# the same inputs — this tree's package, Debian's archive, one SOURCE_DATE_EPOCH — and both
# times to the same manifest digest; umoci and skopeo, the OCI oracles, read the layout; the
# image's config is what docs/kubernetes.md says; skopeo pushes it to a real registry
# (docker-registry on 127.0.0.1), which then serves the same digest; it loads into podman as
# localhost/stockade:ctest for the podman tests that follow.
#   image_build.sh BUILD_DIR
set -euo pipefail
source "$(dirname "$0")/common.sh"
require_podman
build="$(realpath "$1")"
for tool in mmdebstrap umoci skopeo cpack; do
    command -v "$tool" >/dev/null || skip "$tool is not installed"
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if ! curl -fsS -m 20 -o /dev/null http://deb.debian.org/debian/dists/bookworm/InRelease; then
    skip "Debian's archive (deb.debian.org) is unreachable: the image is made from it"
fi

cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/deb" >"$work/cpack.log" 2>&1 ||
    fail "cpack: $(cat "$work/cpack.log")"
deb="$(ls "$work"/deb/stockade_*.deb)"
build_sh="$PODMAN_TESTS/../../packaging/oci/build.sh"
epoch=1767225600
for n in 1 2; do
    start=$SECONDS
    "$build_sh" --out "$work/oci$n" --deb "$deb" --tag ctest --epoch "$epoch" \
        >"$work/digest$n" 2>"$work/build$n.log" || fail "build.sh (run $n): $(tail -20 "$work/build$n.log")"
    echo "build $n: $(tail -1 "$work/digest$n") in $((SECONDS - start)) s"
done
digest="$(tail -1 "$work/digest1")"
[[ "$digest" =~ ^sha256:[0-9a-f]{64}$ ]] || fail "build.sh printed no digest: $(cat "$work/digest1")"
[ "$digest" = "$(tail -1 "$work/digest2")" ] ||
    fail "two builds of the same inputs differ: $digest and $(tail -1 "$work/digest2")"

# The oracles: umoci unpacks it, skopeo reads its config.
umoci unpack --rootless --image "$work/oci1:ctest" "$work/bundle" >/dev/null 2>&1 ||
    fail "umoci cannot unpack the layout"
[ -x "$work/bundle/rootfs/usr/bin/stockade" ] || fail "the image has no /usr/bin/stockade"
[ -f "$work/bundle/rootfs/usr/share/stockade/seccomp-stockade-nested.json" ] ||
    fail "the image lacks the seccomp profile"
for tool in bash git python3 rg; do
    [ -e "$work/bundle/rootfs/usr/bin/$tool" ] || fail "the image lacks $tool"
done
skopeo inspect --config "oci:$work/oci1:ctest" >"$work/config.json"
python3 - "$work/config.json" <<'PY' || fail "the image's config: $(cat "$work/config.json")"
import json, sys
config = json.load(open(sys.argv[1]))["config"]
assert config["User"] == "1000:1000", config["User"]
assert config["Entrypoint"][:4] == ["stockade", "serve", "--http", "0.0.0.0:8888"], config
assert config["WorkingDir"] == "/workspace", config
assert "8888/tcp" in config["ExposedPorts"], config
PY

# To a registry and back: the digest is the layout's.
if command -v docker-registry >/dev/null; then
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    printf 'version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: 127.0.0.1:%s\n' \
        "$work/registry" "$port" >"$work/registry.yml"
    docker-registry serve "$work/registry.yml" >"$work/registry.log" 2>&1 &
    registry=$!
    trap 'kill $registry 2>/dev/null; rm -rf "$work"' EXIT
    for _ in $(seq 100); do
        curl -fsS -o /dev/null "http://127.0.0.1:$port/v2/" 2>/dev/null && break
        sleep 0.1
    done
    skopeo copy -q --dest-tls-verify=false "oci:$work/oci1:ctest" \
        "docker://127.0.0.1:$port/stockade:ctest" >/dev/null 2>"$work/push.log" ||
        fail "skopeo copy to the registry: $(cat "$work/push.log" "$work/registry.log")"
    pushed="$(skopeo inspect --tls-verify=false --format '{{.Digest}}' "docker://127.0.0.1:$port/stockade:ctest")"
    [ "$pushed" = "$digest" ] || fail "the registry serves $pushed, not the layout's $digest"
    echo "pushed to a registry on 127.0.0.1:$port, which serves $pushed"
else
    echo "note: docker-registry is not installed: the push to a registry is not tried"
fi

podman rmi -f "$PODMAN_IMAGE" >/dev/null 2>&1 || true
skopeo copy -q "oci:$work/oci1:ctest" "containers-storage:$PODMAN_IMAGE" >/dev/null 2>"$work/copy.log" ||
    fail "skopeo copy into podman's storage: $(cat "$work/copy.log")"
size="$(du -sb "$work/oci1/blobs" | cut -f1)"
echo "PASS: image $digest ($((size / 1048576)) MiB compressed) built twice alike and loaded as $PODMAN_IMAGE"
