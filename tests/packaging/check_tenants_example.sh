#!/usr/bin/env bash
# ctest entry: `stockade doctor --tenants` on packaging/tenants.example.json.
#   check_tenants_example.sh STOCKADE
# As shipped, the example's token_sha256 entries are placeholders, so doctor refuses it with the
# tenants parser's message (exit 2). With hashes put in, each tenant gets its block and a
# verdict; its workspace roots (/srv/stockade/...) missing here is an error the report names
# (exit 1); with the roots made, no tenant has an error (exit 0).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
stockade="$1"
example="$here/../../packaging/tenants.example.json"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Neither this host's managed settings nor the user's: only the tenants' own policy.
export STOCKADE_MANAGED_SETTINGS="$work/no-managed-settings.json"
export XDG_CONFIG_HOME="$work/config"
fail() {
    echo "FAIL: $*"
    exit 1
}

set +e
"$stockade" doctor --tenants "$example" >"$work/out" 2>"$work/err"
status=$?
set -e
[ "$status" -eq 2 ] || fail "the example as shipped: exit $status, not 2"$'\n'"$(cat "$work/out" "$work/err")"
grep -q 'tenant "acme": token_sha256\[0\]: not a SHA-256' "$work/err" ||
    fail "no parser message: $(cat "$work/err")"

# The placeholders replaced by hashes of made-up tokens, one per tenant.
awk '/"REPLACE[^"]*"/ { n++; cmd = "printf token-" n " | sha256sum"; cmd | getline h; close(cmd)
                       sub(/"REPLACE[^"]*"/, "\"" substr(h, 1, 64) "\"") } { print }' \
    "$example" >"$work/tenants.json"
set +e
"$stockade" doctor --tenants "$work/tenants.json" >"$work/out" 2>"$work/err"
status=$?
set -e
cat "$work/out"
if grep -q "isolation  ERROR: none available" "$work/out"; then
    echo "SKIP: no isolation level is available to this caller here"
    exit 77
fi
for tenant in acme globex; do
    grep -q "^tenant $tenant\$" "$work/out" || fail "no block for tenant $tenant"
done
[ "$(grep -c '^  verdict ' "$work/out")" -eq 2 ] || fail "not one verdict per tenant"
grep -q '^  quotas     32 sessions at once, 4 calls at once per session, 20 calls/s' "$work/out" ||
    fail "acme's quotas are not reported"
# Root with CAP_SYS_ADMIN leases from the range; any other caller is one host uid, its own.
if [ "$(id -u)" -eq 0 ]; then
    grep -Eq '^  host uids  (1600000000-1600065535 \(65536 ids\): one leased per session|one host uid: yours)' \
        "$work/out" || fail "acme's host uids are not reported"
else
    grep -q '^  host uids  one host uid: yours' "$work/out" || fail "no 'one host uid: yours'"
fi
if [ ! -e /srv/stockade/acme ]; then
    [ "$status" -eq 1 ] || fail "missing workspace roots: exit $status, not 1"
    grep -q '^  workspace  ERROR: /srv/stockade/acme does not exist: create it' "$work/out" ||
        fail "the missing workspace root is not named"
    grep -q '^  verdict    error' "$work/out" || fail "no error verdict"
fi

# The same tenants with their workspace roots made: no errors.
mkdir -p "$work/srv/acme" "$work/srv/globex"
chmod 0750 "$work/srv/acme" "$work/srv/globex"
# As root, serve refuses a root that no uid of its tenant's range owns; say so before chown.
if [ "$(id -u)" -eq 0 ]; then
    sed "s|/srv/stockade/|$work/srv/|" "$work/tenants.json" >"$work/made.json"
    set +e
    "$stockade" doctor --tenants "$work/made.json" >"$work/out" 2>"$work/err"
    status=$?
    set -e
    [ "$status" -eq 1 ] || fail "root-owned roots: exit $status, not 1"
    grep -q "serve refuses it as root: $work/srv/acme is owned by uid 0 (root)" "$work/out" ||
        fail "the root-owned root is not reported"$'\n'"$(cat "$work/out")"
    chown 1600000000:1600000000 "$work/srv/acme"
    chown 1600100000:1600100000 "$work/srv/globex"
fi
sed "s|/srv/stockade/|$work/srv/|" "$work/tenants.json" >"$work/made.json"
set +e
"$stockade" doctor --tenants "$work/made.json" >"$work/out" 2>"$work/err"
status=$?
set -e
[ "$status" -eq 0 ] || fail "workspace roots made: exit $status, not 0"$'\n'"$(cat "$work/out" "$work/err")"
grep -q "^  workspace  $work/srv/acme: a directory" "$work/out" || fail "the made root is not reported"
grep -q '^tenants: 2 checked' "$work/out" || fail "no summary line"
echo "ok: doctor --tenants reports the example's tenants"
