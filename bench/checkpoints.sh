#!/usr/bin/env bash
# Checkpoints and rewind, side by side with git, in one run (issue 27, docs/rewind.md).
#
#   bench/checkpoints.sh     (BUILD_DIR, default build/; FILES, default 10000)
#
# bench/checkpoints_client.py drives `stockade serve` sessions over pipes (round trips timed
# with time.perf_counter_ns); the checkpoint's own time is its Checkpoint event's walk_ms.
#   1  the checkpoint after `bash sh -c true` (a program: it may change files, so it is
#      checkpointed; `true` and `/bin/true` are known to change nothing and are not) in a
#      10,000-file git repository vs
#      `git status --porcelain` on the same tree, alternating: p50 over 100 pairs
#                                                                    (target ratio <= 1.0)
#   2  the `bash sh -c true` round trip, checkpoints on vs off (the checkpoint is taken after
#      the result is sent; the session's next call waits for it), two sessions alternating:
#      p50 over 100 pairs                                            (target ratio <= 1.15)
#   3  rewinding 1,000 files a `sed -i` changed vs `git checkout -- .` of the same change:
#      the rewind's own time (its Rewind event's duration_ms: walk, git cat-file, restore,
#      checkpoint) and `stockade rewind`'s wall time (a worker started for the ended session),
#      median of 5 rounds                                            (target ratio <= 1.5)
#   4  the store's size after a 200-call session on a real project (a clone of this
#      repository): edits, appends, new files, sed over a directory
# It is a report: a missed target prints MISS and the script still exits 0.
set -euo pipefail

here=${BASH_SOURCE[0]%/*}
[[ $here == "${BASH_SOURCE[0]}" ]] && here=.
ROOT=$(cd "$here/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
die() { echo "checkpoints.sh: $*" >&2; exit 1; }

command -v python3 >/dev/null || die "python3 not found"
command -v git >/dev/null || die "git not found"
STOCKADE=$BUILD_DIR/stockade
if [[ ! -x $STOCKADE ]]; then
    echo "building stockade ..." >&2
    cmake --build "$BUILD_DIR" -j2 --target stockade >&2
fi

TMP=$(mktemp -d /tmp/stockade-checkpoints-bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

python3 "$ROOT/bench/checkpoints_client.py" "$STOCKADE" "$TMP" "$ROOT" "${FILES:-10000}" || {
    echo "checkpoints.sh: the client failed" >&2
    for f in "$TMP"/state*/serve.stderr; do
        [[ -f $f ]] && tail -20 "$f" >&2
    done
}
exit 0
