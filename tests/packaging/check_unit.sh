#!/usr/bin/env bash
# ctest entry: packaging/stockade-http.service passes `systemd-analyze verify`, with its
# ExecStart pointed at the binary just built, and that binary accepts the unit's flags.
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
echo "ok: the unit verifies and its flags exist"
