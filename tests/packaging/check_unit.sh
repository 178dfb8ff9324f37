#!/usr/bin/env bash
# ctest entry: packaging/stockade-http.service passes `systemd-analyze verify`, with its
# ExecStart pointed at the binary just built, and that binary accepts the unit's flags; then
# the install steps its header documents, followed in a scratch directory (/etc/stockade and
# /var/lib/stockade moved there, another port), make its ExecStart serve: it refuses to start
# without the admin token's hash, naming the file, and with it answers /healthz and
# `stockade sessions list`, and drains on SIGTERM.
#   check_unit.sh STOCKADE
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
stockade="$1"
unit="$here/../../packaging/stockade-http.service"
if ! command -v systemd-analyze >/dev/null 2>&1; then
    echo "SKIP: systemd-analyze is not installed (package systemd)"
    exit 77
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
sed "s|/usr/local/bin/stockade|$stockade|" "$unit" > "$work/stockade-http.service"
systemd-analyze verify "$work/stockade-http.service"
# The flags of ExecStart, minus the files it names, are ones serve knows: --help lists them.
help="$("$stockade" serve --help)"
exec_start="$(awk '/^ExecStart=/{on=1} on{print} on && !/\\$/{on=0}' "$unit")"
for flag in $(grep -o -- '--[a-z-]*' <<< "$exec_start" | sort -u); do
    grep -q -- "$flag" <<< "$help" || { echo "serve does not know $flag"; exit 1; }
done

# The documented steps. Tenants: the example with its placeholders replaced (a token hash each)
# and its workspace roots made, owned by a uid of each tenant's range as serve wants as root.
etc="$work/etc/stockade"
mkdir -p "$etc" "$work/srv/acme" "$work/srv/globex"
chmod 0750 "$work/srv/acme" "$work/srv/globex"
if [ "$(id -u)" -eq 0 ]; then
    chown 1600000000:1600000000 "$work/srv/acme"
    chown 1600100000:1600100000 "$work/srv/globex"
fi
awk '/"REPLACE[^"]*"/ { n++; cmd = "printf token-" n " | sha256sum"; cmd | getline h; close(cmd)
                       sub(/"REPLACE[^"]*"/, "\"" substr(h, 1, 64) "\"") } { print }' \
    "$here/../../packaging/tenants.example.json" |
    sed "s|/srv/stockade/|$work/srv/|" >"$etc/tenants.json"
chmod 0600 "$etc/tenants.json"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
cmd="$(sed -e 's/\\$//' <<< "$exec_start" | tr '\n' ' ' | sed -e 's/^ExecStart=//' \
    -e "s|/usr/local/bin/stockade|$stockade|" -e "s|/etc/stockade|$etc|g" \
    -e "s|/var/lib/stockade|$work/state|g" -e "s|127.0.0.1:8787|127.0.0.1:$port|")"
export STOCKADE_MANAGED_SETTINGS="$work/no-managed-settings.json"
export XDG_CONFIG_HOME="$work/config"

# Without the admin token's hash: exit 2, naming the file (what the header warns of).
set +e
bash -c "$cmd" >"$work/out" 2>"$work/err"
status=$?
set -e
[ "$status" -eq 2 ] || { echo "no admin.sha256: exit $status, not 2"; cat "$work/err"; exit 1; }
grep -q "admin.sha256" "$work/err" || { echo "the missing file is not named:"; cat "$work/err"; exit 1; }

# The header's command for the admin token, then ExecStart serves.
(umask 077; openssl rand -hex 32 | tee "$etc/admin.token" | "$stockade" token hash >"$etc/admin.sha256")
bash -c "exec $cmd" >"$work/out" 2>"$work/err" &
serve=$!
for _ in $(seq 1 100); do
    curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
    kill -0 "$serve" 2>/dev/null || { echo "serve exited:"; cat "$work/err"; exit 1; }
    sleep 0.1
done
curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null || { echo "no /healthz:"; cat "$work/err"; kill "$serve"; exit 1; }
"$stockade" sessions list --server "http://127.0.0.1:$port" --admin-token-file "$etc/admin.token" \
    >"$work/list" 2>&1 || { echo "sessions list failed:"; cat "$work/list"; kill "$serve"; exit 1; }
kill -TERM "$serve"
set +e
wait "$serve"
status=$?
set -e
[ "$status" -eq 0 ] || { echo "serve did not drain cleanly on SIGTERM: exit $status"; cat "$work/err"; exit 1; }
echo "ok: the unit verifies, its flags exist, and its documented steps make it serve"
