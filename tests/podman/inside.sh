#!/bin/bash
# What the podman tests run inside Stockade's image (mounted at /tests): one line per finding,
# "NAME=VALUE", for tests/podman/matrix.sh to assert. Never fails itself: a finding says what
# happened.
#   inside.sh basics     the level doctor reports and why, `stockade run`, a serve --http session
#   inside.sh escapes    a sandbox at this level tries to leave it (run from the container)
#   inside.sh ids        what a root caller's sandbox maps to: its uid_map line
cd /workspace 2>/dev/null || cd /tmp
say() { printf '%s=%s\n' "$1" "$2"; }

basics() {
    local doctor
    doctor="$(stockade doctor 2>&1)"
    say level "$(sed -n 's/^isolation: --isolation auto chooses "\(.*\)"$/\1/p' <<<"$doctor")"
    say shortfall "$(sed -n 's/^isolation: not stronger because //p' <<<"$doctor")"
    say cgroups "$(grep -E '^(ok|no) +cgroups' <<<"$doctor" | head -1)"
    local out rc
    out="$(stockade run -- sh -c 'echo ran-inside; id -u' 2>/tmp/run.err)"
    rc=$?
    say run_rc "$rc"
    say run_out "$(tr '\n' ' ' <<<"$out")"
    say run_err "$(tr '\n' ' ' </tmp/run.err)"

    # A serve --http session, with a token, on the container's loopback.
    local token
    token="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
    stockade token hash <<<"$token" >/tmp/token-sha256
    mkdir -p /workspace/served
    stockade serve --http 127.0.0.1:8888 --token-file /tmp/token-sha256 --workspace /workspace/served \
        --state-dir /tmp/state >/tmp/serve.log 2>&1 &
    local serve=$!
    for _ in $(seq 100); do
        grep -q "listening on" /tmp/serve.log && break
        sleep 0.1
    done
    out="$(python3 /tests/mcp_http.py http://127.0.0.1:8888 --token "$token" call bash \
        '{"command": "echo served-inside > made-by-bash; cat made-by-bash; id -u"}' 2>&1)"
    say serve_rc "$?"
    say serve_out "$(tr '\n' ' ' <<<"$out")"
    say serve_file "$(cat /workspace/served/made-by-bash 2>&1)"
    kill -TERM "$serve" 2>/dev/null
    wait "$serve"
    say serve_exit "$?"
    say serve_log "$(grep -v 'listening on' /tmp/serve.log | tr '\n' ' ' | head -c 600)"
}

# Each probe prints one word: what the sandbox got.
escapes() {
    echo "container-secret" >"$HOME/secret.txt"
    probe() {
        say "$1" "$(stockade run -- sh -c "$2" 2>/dev/null | tail -1)"
    }
    probe host_file 'cat '"$HOME"'/secret.txt 2>/dev/null || echo unreadable'
    probe proc_pid1 'tr "\0" " " </proc/1/cmdline | grep -q inside.sh && echo container-pid1 || echo own-pid1'
    probe proc_count 'ls /proc | grep -c "^[0-9]"'
    probe mount 'mount -t tmpfs none /tmp 2>/dev/null && echo mounted || echo refused'
    probe ptrace 'python3 -c "import ctypes; print(\"attached\" if ctypes.CDLL(None).ptrace(16, 1, 0, 0) == 0 else \"refused\")"'
    # Python 3.11 has no os.unshare or os.setns: libc's, through ctypes.
    probe userns 'python3 -c "import ctypes; print(\"made\" if ctypes.CDLL(None).unshare(0x10000000) == 0 else \"refused\")"'
    probe setns 'python3 -c "import ctypes, os; print(\"joined\" if ctypes.CDLL(None).setns(os.open(\"/proc/self/ns/net\", os.O_RDONLY), 0) == 0 else \"refused\")"'
    # The container reaches its gateway (connection refused there, or accepted); the sandbox,
    # with no network of its own, does not reach it at all.
    local gateway
    gateway="$(python3 -c 'import socket,struct
for line in open("/proc/net/route").readlines()[1:]:
    f = line.split()
    if f[1] == "00000000": print(socket.inet_ntoa(struct.pack("<L", int(f[2], 16))))' | head -1)"
    say gateway "${gateway:-none}"
    local connect='import socket, sys
s = socket.socket(); s.settimeout(3)
try:
    s.connect((sys.argv[1], 9)); print("reached")
except ConnectionRefusedError: print("reached")
except OSError as e: print("unreached")'
    say container_net "$(python3 -c "$connect" "${gateway:-10.88.0.1}")"
    say sandbox_net "$(stockade run -- python3 -c "$connect" "${gateway:-10.88.0.1}" 2>/dev/null)"
}

ids() {
    say caller_map "$(head -1 /proc/self/uid_map | tr -s ' ' | sed 's/^ //')"
    say sandbox_map "$(stockade run -- sh -c 'head -1 /proc/self/uid_map' 2>/tmp/ids.err | tr -s ' ' | sed 's/^ //')"
    say ids_err "$(tr '\n' ' ' </tmp/ids.err)"
    stockade run -- sh -c 'echo x > written' 2>/dev/null
    say written_owner "$(stat -c %u written 2>&1)"
}

"$@"
