#!/usr/bin/env python3
"""Start-up timer for bench/startup.sh: runs commands alternately and times each run.

Each run is one posix_spawn (glibc: clone(CLONE_VM|CLONE_VFORK), so this interpreter's size
does not matter) + wait4, timed with clock_gettime(CLOCK_MONOTONIC) in nanoseconds. stdin and
stdout are /dev/null (no terminal: stockade would allocate a pty), stderr goes to a log that is
shown if a run fails; any non-zero exit aborts the benchmark.

Commands come from files of NUL-separated arguments (one file per command). An entry
"@fd=N=PATH" is not an argument: PATH is opened read-only on descriptor N in the child of each
run (bwrap reads and consumes its --file and --seccomp descriptors). An entry "@env=NAME=VALUE"
sets a variable for that command only (to compare variants of one binary).

  startup_timer.py --pairs 50 --warmup 5 --rss-runs 5 --cwd DIR --summary OUT \\
      NAME=ARGFILE NAME=ARGFILE [...]

The commands run round-robin in the order given (A, B, A, B, ...; a third, e.g. the bare
fork+exec floor, runs after each pair). Then each runs --rss-runs times under
/usr/bin/time -v for its peak RSS ("Maximum resident set size"). A table goes to stdout and
"NAME.key value" lines to --summary.
"""

import argparse
import gc
import math
import os
import statistics
import sys
import tempfile
import time


class Command:
    def __init__(self, name, path):
        self.name = name
        self.argv = []
        self.fds = []  # (fd, path)
        self.env = dict(os.environ)
        with open(path, "rb") as f:
            items = f.read().split(b"\0")
        if items and items[-1] == b"":
            items.pop()
        for item in items:
            text = item.decode()
            if text.startswith("@fd="):
                _, fd, fpath = text.split("=", 2)
                self.fds.append((int(fd), fpath))
            elif text.startswith("@env="):
                name, _, value = text[len("@env="):].partition("=")
                self.env[name] = value
            else:
                self.argv.append(text)
        if not self.argv:
            sys.exit(f"startup_timer: {path}: no command")
        self.times_ns = []
        self.rss_kb = []


def spawn_and_wait(argv, fds, env, err_path):
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
    ]
    for fd, path in fds:
        actions.append((os.POSIX_SPAWN_OPEN, fd, path, os.O_RDONLY, 0))
    # The working directory is the benchmark's own (main() chdirs once, before the loop).
    t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
    _, status, _ = os.wait4(pid, 0)
    t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    return t1 - t0, status


def check(cmd, status, err_path, what):
    if status != 0:
        code = os.waitstatus_to_exitcode(status)
        with open(err_path, errors="replace") as f:
            err = f.read().strip()
        sys.exit(f"startup_timer: {cmd.name} failed ({what}, exit {code}):\n"
                 f"  command: {' '.join(cmd.argv)}\n  stderr: {err or '(empty)'}")


def percentile(sorted_values, p):
    """Nearest-rank percentile."""
    k = max(1, math.ceil(p / 100.0 * len(sorted_values)))
    return sorted_values[k - 1]


def parse_max_rss(path):
    with open(path, errors="replace") as f:
        for line in f:
            if "Maximum resident set size" in line:
                return int(line.rsplit(":", 1)[1])
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rss-runs", type=int, default=5)
    ap.add_argument("--cwd", required=True)
    ap.add_argument("--summary", required=True)
    ap.add_argument("--time-bin", default="/usr/bin/time")
    ap.add_argument("commands", nargs="+", metavar="NAME=ARGFILE")
    args = ap.parse_args()

    cmds = []
    for spec in args.commands:
        name, _, path = spec.partition("=")
        cmds.append(Command(name, path))
    os.chdir(args.cwd)
    tmp = tempfile.mkdtemp(prefix="stockade-bench-timer.")
    err_path = os.path.join(tmp, "stderr")

    gc.disable()
    for i in range(args.warmup + args.pairs):
        for cmd in cmds:
            ns, status = spawn_and_wait(cmd.argv, cmd.fds, cmd.env, err_path)
            check(cmd, status, err_path, "warm-up" if i < args.warmup else f"run {i - args.warmup + 1}")
            if i >= args.warmup:
                cmd.times_ns.append(ns)
    gc.enable()

    time_out = os.path.join(tmp, "time-v")
    for _ in range(args.rss_runs):
        for cmd in cmds:
            argv = [args.time_bin, "-v", "-o", time_out] + cmd.argv
            _, status = spawn_and_wait(argv, cmd.fds, cmd.env, err_path)
            check(cmd, status, err_path, "under /usr/bin/time -v")
            rss = parse_max_rss(time_out)
            if rss is None:
                sys.exit(f"startup_timer: no 'Maximum resident set size' in {args.time_bin} -v output")
            cmd.rss_kb.append(rss)

    print(f"  {'':28} {'median':>8} {'p95':>8} {'min':>8} {'mean':>8} {'stdev':>7}  ms "
          f"| peak RSS, median of {args.rss_runs} (min-max)")
    lines = []
    for cmd in cmds:
        ms = sorted(t / 1e6 for t in cmd.times_ns)
        med, p95 = statistics.median(ms), percentile(ms, 95)
        mean = statistics.fmean(ms)
        sd = statistics.stdev(ms) if len(ms) > 1 else 0.0
        rss = statistics.median(cmd.rss_kb)
        print(f"  {cmd.name:28} {med:8.2f} {p95:8.2f} {ms[0]:8.2f} {mean:8.2f} {sd:7.2f}     "
              f"| {rss / 1024:6.2f} MiB ({rss:.0f} KB; {min(cmd.rss_kb)}-{max(cmd.rss_kb)} KB)")
        lines += [f"{cmd.name}.median_ms {med:.4f}", f"{cmd.name}.p95_ms {p95:.4f}",
                  f"{cmd.name}.rss_kb {rss:.0f}", f"{cmd.name}.n {len(ms)}"]
    if len(cmds) >= 2:
        a, b = cmds[0], cmds[1]
        pair_ratios = sorted(x / y for x, y in zip(a.times_ns, b.times_ns))
        lines.append(f"pair_ratio_median {statistics.median(pair_ratios):.4f}")
    with open(args.summary, "w") as f:
        f.write("\n".join(lines) + "\n")
    for name in os.listdir(tmp):
        os.unlink(os.path.join(tmp, name))
    os.rmdir(tmp)


if __name__ == "__main__":
    main()
