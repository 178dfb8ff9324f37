#!/usr/bin/env bash
# ctest entry: the image in pod mode (docs/kubernetes.md), run by podman as Kubernetes runs the
# pod — uid 1000, read-only root, every capability dropped, the shipped seccomp profile, an
# unmasked /proc, a user namespace of its own — with its port published on 127.0.0.1:
#   bind       unbound: /readyz 200 "unbound", /mcp 503; POST /admin/bind refuses a wrong admin
#              token (401) and a bad binding (400), binds (200), takes the same binding again
#              (200) and refuses another (409); the tenant's bash runs at namespaces with the
#              token in Stockade-Token and writes into the pod's workspace volume; then, idle
#              past --pod-idle-ttl, the pod exits 0 by itself and says why
#   drain      bound at start by its bind file; SIGTERM (podman stop) while a call runs: the call
#              is answered, and the pod exits 0 within --drain
set -euo pipefail
source "$(dirname "$0")/common.sh"
require_image
work="$(mktemp -d)"
prefix="stockade-pod-test-$$"
name="$prefix-bind"
cleanup() {
    podman_host rm -f -t 0 "$prefix-bind" "$prefix-drain" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
client() { python3 "$PODMAN_TESTS/mcp_http.py" "http://127.0.0.1:$port" "$@"; }
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_ready() {
    for _ in $(seq 200); do
        client get /readyz >"$work/readyz" 2>/dev/null && return 0
        sleep 0.1
    done
    fail "the pod never answered /readyz: $(podman_host logs "$name" 2>&1 | tail -20)"
}
expect_status() { # WHAT STATUS OUTPUT
    [ "$(head -1 <<<"$3")" = "$2" ] || fail "$1: wanted HTTP $2, got: $3"
}

token="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
admin="admin-$token"
hash_of() { python3 -c 'import hashlib, sys; print(hashlib.sha256(sys.argv[1].encode()).hexdigest())' "$1"; }
mkdir -p "$work/admin" "$work/bind" "$work/workspace" "$work/state"
hash_of "$admin" >"$work/admin/token-sha256"
chmod -R a+rX "$work/admin" "$work/bind"
# The pod's emptyDirs, owned by its uid 1000: host uid 201000 under --uidmap 0:200000:65536.
chown 201000:201000 "$work/workspace" "$work/state"
binding() { # TENANT
    printf '{"tenant": {"name": "%s", "token_sha256": ["%s"], "workspace_root": "/workspace"}}' \
        "$1" "$(hash_of "$token")"
}
pod() { # SERVE ARGUMENTS...
    port="$(free_port)"
    podman_host run -d --name "$name" --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 \
        --read-only --cap-drop ALL --security-opt unmask=ALL \
        --security-opt "seccomp=$PODMAN_PROFILE" --uidmap 0:200000:65536 --gidmap 0:200000:65536 \
        -p "127.0.0.1:$port:8888" -v "$work/admin:/etc/stockade/admin:ro" \
        -v "$work/bind:/etc/stockade/bind:ro" -v "$work/workspace:/workspace" \
        -v "$work/state:/var/lib/stockade" "$PODMAN_IMAGE" \
        --pod --admin-token-file /etc/stockade/admin/token-sha256 "$@" >/dev/null
    wait_ready
}

echo "=== bind"
pod --pod-idle-ttl 4s
[[ "$(cat "$work/readyz")" =~ ^200.ready,\ unbound ]] || fail "unbound /readyz: $(cat "$work/readyz")"
out="$(client --token "$token" --token-header Stockade-Token call bash '{"command": "true"}' 2>&1)" &&
    fail "an unbound pod ran a call: $out"
[[ "$out" =~ HTTP\ 503.*not\ bound ]] || fail "an unbound pod's /mcp: $out"
expect_status "a wrong admin token" 401 "$(client --token "not-$admin" post /admin/bind "$(binding acme)")"
out="$(client --token "$admin" post /admin/bind '{"tenant": {"name": "acme", "workspace_root": "/workspace", "colour": "red"}}')"
expect_status "a bad binding" 400 "$out"
[[ "$out" =~ colour ]] || fail "the 400 does not name the bad key: $out"
expect_status "the binding" 200 "$(client --token "$admin" post /admin/bind "$(binding acme)")"
expect_status "the same binding again" 200 "$(client --token "$admin" post /admin/bind "$(binding acme)")"
expect_status "another tenant" 409 "$(client --token "$admin" post /admin/bind "$(binding beta)")"
client get /readyz >"$work/readyz"
[[ "$(cat "$work/readyz")" =~ bound\ to\ tenant\ acme ]] || fail "bound /readyz: $(cat "$work/readyz")"
out="$(client --token "$token" --token-header Stockade-Token call bash \
    '{"command": "echo pod-call > made-in-pod; cat made-in-pod; id -u; stockade doctor 2>&1 | grep chooses"}')" ||
    fail "the tenant's bash: $out"
[[ "$out" =~ pod-call.*1000 ]] || fail "the tenant's bash said: $out"
[ "$(cat "$work/workspace/made-in-pod" 2>&1)" = pod-call ] ||
    fail "the call's file is not in the workspace volume: $(ls -la "$work/workspace")"
[ "$(stat -c %u "$work/workspace/made-in-pod")" = 201000 ] ||
    fail "the call's file is host uid $(stat -c %u "$work/workspace/made-in-pod"), not the pod user's 201000"
level="$(podman_host exec "$name" stockade doctor 2>&1 | sed -n 's/^isolation: --isolation auto chooses "\(.*\)"$/\1/p')"
[ "$level" = namespaces ] || fail "the pod's level is \"$level\", not namespaces"
echo "bound; the tenant's bash ran at $level"
exit_code="$(timeout 30 "${PODMAN[@]}" wait "$name")" || fail "the idle pod did not exit within 30 s"
[ "$exit_code" = 0 ] || fail "the idle pod exited $exit_code: $(podman_host logs "$name" 2>&1 | tail)"
log="$(podman_host logs "$name" 2>&1)"
[[ "$log" == *"draining: pod of tenant acme idle"* ]] || fail "the pod's log does not say it was idle: $log"
echo "idle past --pod-idle-ttl: exited 0, saying why"

echo "=== drain"
name="$prefix-drain"
binding acme >"$work/bind/tenant.json"
chmod a+r "$work/bind/tenant.json"
pod --bind-file /etc/stockade/bind/tenant.json --drain 6
[[ "$(cat "$work/readyz")" =~ bound\ to\ tenant\ acme ]] || fail "the bind file did not bind: $(cat "$work/readyz")"
client --token "$token" --token-header Stockade-Token call bash '{"command": "sleep 60"}' \
    >"$work/call" 2>&1 &
call=$!
sleep 2
start=$SECONDS
podman_host stop -t 30 "$name" >/dev/null
took=$((SECONDS - start))
wait "$call" || true
exit_code="$(podman_host inspect --format '{{.State.ExitCode}}' "$name")"
[ "$exit_code" = 0 ] || fail "the drained pod exited $exit_code: $(podman_host logs "$name" 2>&1 | tail)"
((took <= 9)) || fail "the drain took $took s, more than --drain 6 and a margin"
[[ "$(cat "$work/call")" =~ stopped|drain|ran\ out ]] || fail "the running call's answer: $(cat "$work/call")"
echo "SIGTERM with a call running: answered, exited 0 in $took s"
echo "PASS"
