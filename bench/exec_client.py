#!/usr/bin/env python3
"""Command execution through MCP (`bash`, `process`), side by side with its anchors (driven by
bench/exec.sh).

    exec_client.py STOCKADE WORKSPACE STATE_DIR
"""
import os
import statistics
import subprocess
import sys
import time

from mcp_client import Server, ms, pct, rss_tree

STOCKADE, WS, STATE = sys.argv[1:4]
TRUE_WARMUP, TRUE_CALLS = 30, 300
BIG_BYTES = 1 << 30
BIG_COMMAND = f"head -c {BIG_BYTES} /dev/zero | base64 -w 76"
BACKGROUND = 64
LIST_CALLS = 200


def fork_exec_true():
    """A bare fork+exec of /bin/true and its reaping, timed here (the anchor)."""
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn("/bin/true", ["true"], {})
    os.waitpid(pid, 0)
    return time.perf_counter_ns() - t0


def peak_kib(pid, field="VmHWM"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def main():
    results = []
    srv = Server(STOCKADE, WS, STATE)
    print(f"stockade: {STOCKADE}   workspace: {WS}")
    print()

    # 1. bash true vs fork+exec -----------------------------------------------------------------
    # `true` changes nothing (the bash analysis sees only a builtin): no durable event and no
    # checkpoint; `echo` runs a program, which may change files: its completion is durable
    # (synced off the call's path) and a checkpoint follows it. Measured in the same loop.
    for _ in range(TRUE_WARMUP):
        srv.call("bash", {"command": "true"})
        srv.call("bash", {"command": "echo"})
        fork_exec_true()
    a, b, c = [], [], []
    for _ in range(TRUE_CALLS):
        ns, res = srv.call("bash", {"command": "true"})
        a.append(ns)
        b.append(fork_exec_true())
        ns, _ = srv.call("bash", {"command": "echo"})
        c.append(ns)
    kind = res.get("_meta", {}).get("dev.stockade/result", {}).get("shell_kind", "?")
    ratio = pct(a, 50) / pct(b, 50)
    print(f"1 bash {{\"command\":\"true\"}} MCP round trip vs fork+exec+wait of /bin/true, "
          f"{TRUE_CALLS} alternating pairs after {TRUE_WARMUP} warm-up (shell_kind {kind})")
    print(f"    stockade bash   p50 {ms(pct(a, 50)):7.3f} ms   p95 {ms(pct(a, 95)):7.3f} ms")
    print(f"    fork+exec       p50 {ms(pct(b, 50)):7.3f} ms   p95 {ms(pct(b, 95)):7.3f} ms")
    print(f"    ratio p50 {ratio:.2f}")
    print(f"    bash {{\"command\":\"echo\"}} (a program: durable completion, a checkpoint)   "
          f"p50 {ms(pct(c, 50)):7.3f} ms   p95 {ms(pct(c, 95)):7.3f} ms   "
          f"ratio {pct(c, 50) / pct(b, 50):.2f}")
    results.append((f"bash true p50 ratio {ratio:.2f} <= 1.3", ratio <= 1.3))

    # 2. 1 GiB of output ------------------------------------------------------------------------
    t0 = time.perf_counter_ns()
    direct = subprocess.run(["bash", "-c", BIG_COMMAND + " | wc -c"], stdout=subprocess.PIPE,
                            check=True)
    direct_ns = time.perf_counter_ns() - t0
    produced = int(direct.stdout)
    ns, res = srv.call("bash", {"command": BIG_COMMAND, "timeout_ms": 300000})
    sc = res.get("_meta", {}).get("dev.stockade/result", {})
    got = sc.get("output_bytes", 0)
    mbps = got / (ns / 1e9) / 1e6
    direct_mbps = produced / (direct_ns / 1e9) / 1e6
    peak = peak_kib(srv.proc.pid)
    print(f"2 {BIG_COMMAND}: {got:,} B through bash into the process log")
    print(f"    stockade bash   {ms(ns) / 1000:6.2f} s   {mbps:7.0f} MB/s   (exit {sc.get('exit_code')},"
          f" shown {len(res['content'][0]['text']):,} B)")
    print(f"    same pipeline into wc -c outside the sandbox   {direct_ns / 1e9:6.2f} s"
          f"   {direct_mbps:7.0f} MB/s")
    print(f"    supervisor peak RSS (VmHWM) {peak / 1024:.1f} MiB")
    results.append((f"1 GiB throughput {mbps:.0f} MB/s >= 300", mbps >= 300 and got == produced))
    results.append((f"1 GiB supervisor peak RSS {peak / 1024:.1f} MiB <= 64", 0 < peak <= 64 * 1024))

    # 3. 64 background processes ----------------------------------------------------------------
    ids = []
    for i in range(BACKGROUND):
        _, res = srv.call("process", {"action": "start",
                                      "command": f"echo ready-{i}; exec sleep 600"})
        ids.append(res.get("_meta", {}).get("dev.stockade/result", {}).get("process_id"))
    lt = []
    for _ in range(LIST_CALLS):
        ns, res = srv.call("process", {"action": "list"})
        lt.append(ns)
    running = res["content"][0]["text"].count(" running ")
    rss = peak_kib(srv.proc.pid, "VmRSS")
    total, parts = rss_tree(srv.proc.pid)
    print(f"3 {BACKGROUND} background processes (process start, each `sleep 600`); {running} running")
    print(f"    process list    p50 {ms(pct(lt, 50)):7.3f} ms   p95 {ms(pct(lt, 95)):7.3f} ms"
          f"   ({LIST_CALLS} calls)")
    print(f"    supervisor RSS {rss / 1024:.1f} MiB   (tree incl. worker and the sleeps "
          f"{total / 1024:.1f} MiB)")
    results.append((f"list p50 {ms(pct(lt, 50)):.3f} ms <= 5 ms", ms(pct(lt, 50)) <= 5.0))
    results.append((f"64 processes supervisor RSS {rss / 1024:.1f} MiB <= 64", rss <= 64 * 1024))

    t0 = time.perf_counter_ns()
    srv.close()
    print(f"    session end (stop all, worker gone) {ms(time.perf_counter_ns() - t0):.0f} ms")
    print()
    for label, ok in results:
        print(f"{'ok  ' if ok else 'MISS'} {label}")


if __name__ == "__main__":
    main()
