#!/usr/bin/env bash
# ctest entry: Stockade's image in podman, the ways a platform runs a container, each row
# asserting the level `stockade doctor` reports and that `stockade run` and a `serve --http`
# session's bash work inside:
#   default      podman's defaults, uid 1000: landlock, and the reason names the fix
#   nested       --security-opt unmask=ALL and the shipped seccomp profile: namespaces; a
#                subset of the escape tests runs there
#   hostusers    the same in a user namespace of its own (--uidmap: Kubernetes' hostUsers:
#                false): namespaces
#   root-mapped  root of such a namespace, with CAP_SYS_ADMIN: its sandbox user maps to an id
#                inside the container's own map, not the host default outside it
#   privileged   --privileged, the workspace on a volume: full
#   overlay-root --privileged with the workspace on the container's overlay root: a refusal
#                that says why and what to do
#   matrix.sh [ROW...]
set -euo pipefail
source "$(dirname "$0")/common.sh"
require_image
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
rows=("$@")
[ ${#rows[@]} -gt 0 ] || rows=(default nested hostusers root-mapped privileged overlay-root)

nested=(--security-opt unmask=ALL --security-opt "seccomp=$PODMAN_PROFILE")
usermap=(--uidmap 0:200000:65536 --gidmap 0:200000:65536)
inside() { # OPTIONS... -- MODE
    local opts=()
    while [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    podman_run "${opts[@]}" -v "$PODMAN_TESTS:/tests:ro" --entrypoint /tests/inside.sh \
        "$PODMAN_IMAGE" "$@" 2>&1
}
expect() { # ROW NAME FINDINGS PATTERN
    local got
    got="$(finding "$2" "$3")"
    [[ "$got" =~ $4 ]] || fail "$1: $2 is \"$got\", not /$4/; every finding:"$'\n'"$3"
}
# The level, and that run and a served session work, in row ROW with OPTIONS.
basics() { # ROW LEVEL OPTIONS...
    local row="$1" level="$2" out
    shift 2
    out="$(inside "$@" -- basics)"
    expect "$row" level "$out" "^$level\$"
    expect "$row" run_rc "$out" '^0$'
    expect "$row" run_out "$out" '^ran-inside 1000 $'
    expect "$row" serve_rc "$out" '^0$'
    expect "$row" serve_out "$out" '^served-inside 1000 '
    expect "$row" serve_file "$out" '^served-inside$'
    expect "$row" serve_exit "$out" '^0$'
    echo "$row: level $level, run and a served session's bash work"
    printf '%s\n' "$out"
}

for row in "${rows[@]}"; do
    echo "=== $row"
    case "$row" in
    default)
        out="$(basics default landlock --network none)"
        echo "$out" | sed -n '1p'
        expect default shortfall "$out" 'seccomp-stockade-nested\.json.*procMount: Unmasked'
        expect default run_err "$out" 'falls back to "landlock"'
        expect default serve_log "$out" 'falls back to "landlock": .*seccomp-stockade-nested\.json'
        ;;
    nested)
        basics nested namespaces --network none "${nested[@]}" | sed -n '1p'
        # Out of a sandbox at this level: the container's files, its processes, mounts,
        # ptrace, namespaces and its network stay out of reach.
        out="$(inside "${nested[@]}" -- escapes)"
        expect nested host_file "$out" '^unreadable$'
        expect nested proc_pid1 "$out" '^own-pid1$'
        expect nested proc_count "$out" '^[1-9]$'
        expect nested mount "$out" '^refused$'
        expect nested ptrace "$out" '^refused$'
        expect nested userns "$out" '^refused$'
        expect nested setns "$out" '^refused$'
        expect nested container_net "$out" '^reached$'
        expect nested sandbox_net "$out" '^unreached$'
        echo "nested: the escape probes are all refused"
        printf '%s\n' "$out"
        ;;
    hostusers)
        basics hostusers namespaces --network none "${nested[@]}" "${usermap[@]}" | sed -n '1p'
        ;;
    root-mapped)
        # Workspaces on volumes (the kernel idmaps no mount a container's namespace did not
        # make): one of the container's root (host uid 200000), one of its uid 1000 (201000).
        mkdir -p "$work/root-owned" "$work/user-owned"
        chown 200000:200000 "$work/root-owned"
        chown 201000:201000 "$work/user-owned"
        opts=(--network none --user 0:0 --cap-add SYS_ADMIN "${nested[@]}" "${usermap[@]}")
        out="$(inside "${opts[@]}" -v "$work/root-owned:/workspace" -- ids)"
        expect root-mapped caller_map "$out" '^0 200000 65536$'
        map="$(finding sandbox_map "$out")"
        [[ "$map" =~ ^1000\ ([0-9]+)\ 1$ ]] ||
            fail "root-mapped: the sandbox's uid_map is \"$map\": $out"
        id="${BASH_REMATCH[1]}"
        [ "$id" -ge 32767 ] && [ "$id" -le 65533 ] ||
            fail "root-mapped: the sandbox user maps to $id, outside the container's spare ids 32767-65533"
        out="$(inside "${opts[@]}" -v "$work/user-owned:/workspace" -- ids)"
        expect root-mapped sandbox_map "$out" '^1000 1000 1$'
        [ "$(stat -c %u "$work/user-owned/written")" = 201000 ] ||
            fail "root-mapped: a file the sandbox wrote is host uid $(stat -c %u "$work/user-owned/written" 2>&1), not the workspace owner's 201000: $out"
        echo "root-mapped: the sandbox user maps to $id, inside the container's map; with a workspace of uid 1000 it is that owner, and its files are"
        ;;
    privileged)
        mkdir -p "$work/volume"
        chown 1000:1000 "$work/volume"
        basics privileged full --network none --privileged --user 0:0 -v "$work/volume:/workspace" |
            sed -n '1p'
        ;;
    overlay-root)
        out="$(podman_run --network none --privileged --user 0:0 --entrypoint stockade \
            "$PODMAN_IMAGE" run -- true 2>&1)" && fail "overlay-root: run succeeded on the overlay: $out"
        [[ "$out" =~ overlayfs.*refuses\ idmapped\ mounts.*emptyDir ]] ||
            fail "overlay-root: the refusal does not say why: $out"
        echo "overlay-root: refused, saying why: $out"
        ;;
    *) fail "no row $row" ;;
    esac
done
echo "PASS: ${rows[*]}"
