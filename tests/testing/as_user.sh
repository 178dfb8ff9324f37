#!/bin/sh
# as_user.sh MODE BINARY [ARGS...]: runs an integration/security test binary as one kind of caller.
#
#   root  needs euid 0 (else prints "skipped: needs root" and exits 77, ctest's SKIP_RETURN_CODE);
#         execs BINARY as is.
#   user  runs BINARY unprivileged. As root: ensures the system user `stockade-test` exists, copies
#         BINARY, $STOCKADE_BIN and $STOCKADE_PROBE into a fresh 0755 directory (the build tree may
#         sit under /root, which that user cannot reach), and runs the copy with setpriv as that
#         user, with HOME and TMPDIR in a directory it owns; removes everything afterwards and
#         exits with the test's status. Not root: already unprivileged, execs BINARY directly.
#
# ctest runs `.root` and `.user` in parallel: every path here is made by mktemp, so they never meet.
set -eu

usage() {
    echo "usage: as_user.sh root|user BINARY [ARGS...]" >&2
    exit 2
}

[ "$#" -ge 2 ] || usage
mode=$1
binary=$2
shift 2

case "$mode" in
root)
    if [ "$(id -u)" -ne 0 ]; then
        echo "skipped: needs root"
        exit 77
    fi
    exec "$binary" "$@"
    ;;
user)
    if [ "$(id -u)" -ne 0 ]; then
        exec "$binary" "$@"
    fi
    ;;
*)
    usage
    ;;
esac

test_user=stockade-test
if ! id -u "$test_user" >/dev/null 2>&1; then
    # Two tests may race to create the user: the loser's useradd fails, the user exists anyway.
    useradd --system --no-create-home --shell /usr/sbin/nologin "$test_user" 2>/dev/null || true
    id -u "$test_user" >/dev/null 2>&1 || {
        echo "as_user.sh: cannot create the system user $test_user" >&2
        exit 1
    }
fi

: "${STOCKADE_BIN:?as_user.sh: STOCKADE_BIN is not set}"
: "${STOCKADE_PROBE:?as_user.sh: STOCKADE_PROBE is not set}"

# Under /tmp, never under $TMPDIR: that may be inside a directory the test user cannot traverse.
dir=$(mktemp -d /tmp/stockade-as-user.XXXXXXXX)
cleanup() {
    # The test's files belong to the test user; root removes them all.
    rm -rf -- "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
chmod 0755 "$dir"
mkdir "$dir/bin" "$dir/home"
cp -- "$binary" "$dir/bin/test"
cp -- "$STOCKADE_BIN" "$dir/bin/stockade"
cp -- "$STOCKADE_PROBE" "$dir/bin/stockade-probe"
chmod 0755 "$dir/bin"
chmod a+rx "$dir/bin/test" "$dir/bin/stockade" "$dir/bin/stockade-probe"
chown "$test_user:$test_user" "$dir/home"
chmod 0700 "$dir/home"

status=0
(
    cd "$dir/home"
    STOCKADE_BIN="$dir/bin/stockade" STOCKADE_PROBE="$dir/bin/stockade-probe" \
        HOME="$dir/home" TMPDIR="$dir/home" USER="$test_user" LOGNAME="$test_user" \
        setpriv --reuid="$test_user" --regid="$test_user" --clear-groups -- "$dir/bin/test" "$@"
) || status=$?
exit "$status"
