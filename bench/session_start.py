"""Session start of `stockade serve` and its worker's RSS: two stockade binaries side by side.

   python3 bench/session_start.py BEFORE AFTER [PAIRS] [SERVE ARGS...]

Each run spawns `BEFORE|AFTER serve --workspace W [SERVE ARGS...]` with a fresh state directory,
initializes and makes one `read`: the time from the spawn to the read's answer is the session
start (serve starts its worker at start-up). Then VmRSS of the worker (every descendant of
serve) and of serve itself. Runs alternate, after two warm-up pairs; medians are printed."""
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcp_client import Server, descendants, status  # noqa: E402


def one(binary, ws, extra):
    state = tempfile.mkdtemp(prefix="stockade-session-bench-state.")
    t0 = time.perf_counter_ns()
    s = Server(binary, ws, state, extra)
    s.call("read", {"file_path": "a.txt"})
    elapsed_ms = (time.perf_counter_ns() - t0) / 1e6
    kids = descendants(s.proc.pid)
    worker_kb = sum(status(p)[1] for p in kids)
    serve_kb = status(s.proc.pid)[1]
    s.close()
    shutil.rmtree(state, ignore_errors=True)
    return elapsed_ms, worker_kb, serve_kb


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    before, after = sys.argv[1], sys.argv[2]
    pairs = int(sys.argv[3]) if len(sys.argv) > 3 else 15
    extra = sys.argv[4:]
    ws = tempfile.mkdtemp(prefix="stockade-session-bench-ws.")
    os.chmod(ws, 0o755)
    with open(os.path.join(ws, "a.txt"), "w") as f:
        f.write("alpha\n")
    runs = {before: [], after: []}
    for _ in range(2):
        one(before, ws, extra)
        one(after, ws, extra)
    for _ in range(pairs):
        for binary in (before, after):
            runs[binary].append(one(binary, ws, extra))
    shutil.rmtree(ws, ignore_errors=True)
    med = {b: [statistics.median(r[i] for r in runs[b]) for i in range(3)] for b in runs}
    for label, b in (("before", before), ("after", after)):
        m = med[b]
        print(f"{label:6} {b}: session start p50 {m[0]:.1f} ms (min {min(r[0] for r in runs[b]):.1f}),"
              f" worker VmRSS {m[1] / 1024:.2f} MiB, serve VmRSS {m[2] / 1024:.2f} MiB")
    print(f"after/before: session start {med[after][0] / med[before][0]:.3f}, "
          f"worker RSS {med[after][1] / med[before][1]:.3f}, serve RSS {med[after][2] / med[before][2]:.3f}")


main()
