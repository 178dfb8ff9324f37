# What the podman tests share (sourced): how this host runs a container, and the image the
# podman_image fixture built and loaded.
PODMAN_IMAGE="localhost/stockade:ctest"
PODMAN_TESTS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PODMAN_PROFILE="$(cd "$PODMAN_TESTS/../../packaging/kubernetes" && pwd)/seccomp-stockade-nested.json"

fail() {
    echo "FAIL: $*"
    exit 1
}
skip() {
    echo "SKIP: $*"
    exit 77
}

# podman with what this host needs: on a cgroup v1 host runc and the cgroupfs manager (crun and
# systemd's need v2), and explicit nofile/nproc limits (runc cannot raise them past the
# caller's, which podman's defaults ask for).
PODMAN=(podman)
if [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" != cgroup2fs ]; then
    PODMAN+=(--runtime runc --cgroup-manager=cgroupfs)
fi
podman_host() {
    "${PODMAN[@]}" "$@"
}
podman_run() {
    podman_host run --rm --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 "$@"
}

require_podman() {
    [ "$(id -u)" -eq 0 ] || skip "the podman tests run containers as root"
    command -v podman >/dev/null || skip "podman is not installed (debian-packages.txt lists it)"
}

require_image() {
    require_podman
    podman image exists "$PODMAN_IMAGE" ||
        skip "no $PODMAN_IMAGE: the podman_image test builds it (ctest -L podman runs both)"
}

# The value of NAME in inside.sh's findings.
finding() {
    sed -n "s/^$1=//p" <<<"$2" | head -1
}
