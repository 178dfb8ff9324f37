#!/usr/bin/env bash
# ctest entry of the agents suite: one real agent CLI against `stockade serve`, in a network
# namespace of its own with only loopback (the scripted model and the fake package registries
# listen on 127.0.0.1 there), so nothing the CLI or the sandbox tries can leave the machine.
#   run_agent.sh CLIENT STOCKADE_BIN
# Exits 77 (ctest: skipped) with the reason when a prerequisite is missing.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
client="$1"
export STOCKADE_BIN="$2"
if ! command -v node >/dev/null 2>&1; then
    echo "SKIP: node is not installed (apt-get install nodejs)"; exit 77
fi
if [[ ! -d "$here/node_modules" ]]; then
    echo "SKIP: $here/node_modules is missing; run 'npm ci' in tests/agents (make agents-deps)"; exit 77
fi
if ! unshare --net true 2>/dev/null; then
    # Unprivileged: a user namespace that keeps the caller's uid (--map-current-user) and, for
    # `ip link`, the namespace's capabilities (--keep-caps). Not --map-root-user: Stockade would
    # take itself for root and give its sandbox a uid of its own, which that namespace cannot map.
    userns=(unshare --user --map-current-user --keep-caps --net)
    if ! "${userns[@]}" true 2>/dev/null; then
        echo "SKIP: cannot create a network namespace (unshare --user --map-current-user --net): the CLIs must not reach the network"; exit 77
    fi
    exec "${userns[@]}" sh -c 'ip link set lo up && exec node "$0" "$1"' "$here/run.mjs" "$client"
fi
exec unshare --net sh -c 'ip link set lo up && exec node "$0" "$1"' "$here/run.mjs" "$client"
