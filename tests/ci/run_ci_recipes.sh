#!/usr/bin/env bash
# ctest entry of the CI recipes test: runs docs/ci.md's GitHub Actions workflow and GitLab CI job
# (run_ci_recipes.py says how) in a network namespace of its own with only loopback, where the
# scripted model listens on 127.0.0.1: nothing the steps, Claude Code or Stockade try can leave
# the machine.
#   run_ci_recipes.sh root|user STOCKADE_BIN
#     root  as root (GitLab's Docker executor runs the job as the container's root); skipped
#           unless the caller is root
#     user  as an unprivileged user (GitHub runs its steps as the user `runner`): as root, as the
#           system user stockade-test (made if missing, as tests/testing/as_user.sh does); else
#           as the caller
# Exits 77 (ctest: skipped) with the reason when a prerequisite is missing (node, Claude Code in
# tests/agents/node_modules, python3-yaml, a network namespace, isolation full or namespaces).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mode="${1:?usage: run_ci_recipes.sh root|user STOCKADE_BIN}"
stockade_bin="$(realpath "${2:?usage: run_ci_recipes.sh root|user STOCKADE_BIN}")"
agents="$here/../agents"

skip() { echo "SKIP: $*"; exit 77; }
case "$mode" in
root) [ "$(id -u)" -eq 0 ] || skip "the .root variant needs root" ;;
user) ;;
*) echo "usage: run_ci_recipes.sh root|user STOCKADE_BIN" >&2; exit 2 ;;
esac
command -v node >/dev/null 2>&1 || skip "node is not installed (apt-get install nodejs)"
[ -d "$agents/node_modules" ] || \
    skip "$agents/node_modules is missing; run 'make agents-deps' (Claude Code, pinned in tests/agents/package-lock.json)"
[ -x "$agents/node_modules/.bin/claude" ] || skip "$agents/node_modules/.bin/claude is missing; run 'make agents-deps'"
# The YAML parser: Debian's python3-yaml, with the system's python3 (a python3 of the caller's
# PATH, such as pyenv's under /root, may lack it, and the unprivileged user cannot run it).
python=""
for p in /usr/bin/python3 "$(command -v python3 || true)"; do
    if [ -n "$p" ] && "$p" -c 'import yaml' 2>/dev/null; then python="$p"; break; fi
done
[ -n "$python" ] || skip "python3 with the yaml module is missing (apt-get install python3-yaml)"

runner=("$python" "$here/run_ci_recipes.py" "$stockade_bin")
if [ "$mode" = user ] && [ "$(id -u)" -eq 0 ]; then
    test_user=stockade-test
    if ! id -u "$test_user" >/dev/null 2>&1; then
        useradd --system --no-create-home --shell /usr/sbin/nologin "$test_user" 2>/dev/null || true
        id -u "$test_user" >/dev/null 2>&1 || { echo "cannot create the system user $test_user" >&2; exit 1; }
    fi
    for f in "$stockade_bin" "$here/run_ci_recipes.py" "$here/../../docs/ci.md" "$agents/node_modules/.bin/claude"; do
        setpriv --reuid="$test_user" --regid="$test_user" --clear-groups -- test -r "$f" || \
            skip "$test_user cannot read $f (the build or source tree is not readable by other users)"
    done
    runner=(setpriv --reuid="$test_user" --regid="$test_user" --clear-groups --
            env HOME=/nonexistent USER="$test_user" LOGNAME="$test_user" TMPDIR=/tmp "${runner[@]}")
fi

if unshare --net true 2>/dev/null; then
    exec unshare --net sh -c 'ip link set lo up && exec "$@"' sh "${runner[@]}"
fi
# Not root: a user namespace in which to own the network namespace and bring loopback up, then a
# second one in which the caller is itself again (root of the first would make stockade take
# the paths of a root caller).
if [ "$(id -u)" -ne 0 ] && unshare --user --map-root-user --net true 2>/dev/null; then
    exec unshare --user --map-root-user --net sh -c \
        'ip link set lo up && gid=$1 && shift && exec unshare --user --map-user="$0" --map-group="$gid" "$@"' \
        "$(id -u)" "$(id -g)" "${runner[@]}"
fi
skip "cannot create a network namespace (unshare --net): the recipes must not reach the network"
