#!/usr/bin/env python3
"""MCP round-trip timings of stockade's file tools (driven by bench/tools.sh).

One persistent `stockade serve` process; every request/response round trip is timed with
time.perf_counter_ns from just before the request line is written to just after the response
line is read. Baselines (plain rg outside the sandbox) run with the same arguments the tools
give rg, in the same directory, with their whole output read, alternating with the MCP calls.
Section 7 pipelines several calls on the one connection (the server runs up to 8 at once) and
matches the responses by id. The anchors of sections 1, 2 and 4 (a fork+exec+wait of /bin/true;
rg under `stockade run`; GNU `sed -i` then `sync FILE`) alternate with the calls they anchor.

    tools_client.py STOCKADE WORKSPACE STATE_DIR TREE_LABEL
"""
import errno
import json
import os
import statistics
import subprocess
import sys
import threading
import time

from mcp_client import Server, check_result, ms, pct, rss_tree

STOCKADE, WS, STATE, TREE_LABEL = sys.argv[1:5]
os.environ["STOCKADE_STATE_DIR"] = STATE  # for `stockade run` (the sandboxed rg anchor)
READ_WARMUP, READ_CALLS = 30, 300
PAIRS, PAIR_WARMUP = 21, 3
EDIT_WARMUP, EDIT_CALLS = 3, 15
FUZZY_WARMUP, FUZZY_CALLS = 2, 11
CONC_LANES = 7       # reads kept in flight; with the slow grep, 8 calls at once
CONC_WARMUP_S = 0.5
SLOW_GREP_S = 2.0
GREP_PATTERN = "struct stat"
GLOB_PATTERN = "**/*.h"
RG = "rg"

# The arguments grep_tool.cc / glob_tool.cc / tool_support.cc give rg for these calls (no
# .stockadeignore in the workspace, no path argument, so the search path is ".").
RG_GREP = [RG, "--json", "--smart-case", "--no-require-git", "--no-config",
           "-e", GREP_PATTERN, "--", "."]
RG_GLOB = [RG, "--files", "--no-require-git", "--no-config", "--glob=" + GLOB_PATTERN,
           "--glob=!node_modules/", "--glob=!.git/", "--glob=!dist/", "--", "."]


def run_rg(argv):
    t0 = time.perf_counter_ns()
    p = subprocess.run(argv, cwd=WS, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    ns = time.perf_counter_ns() - t0
    return ns, p.stdout


def sandboxed(argv):
    """The same rg in a sandbox of its own: `stockade run` (its defaults: isolation auto, the
    workspace the current directory) starts one, runs rg in it, and tears it down."""
    return [STOCKADE, "run", "--", *argv]


def fork_exec_true():
    """A bare fork+exec of /bin/true and its reaping, timed here (the anchor of bench/exec.sh)."""
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn("/bin/true", ["true"], {})
    os.waitpid(pid, 0)
    return time.perf_counter_ns() - t0


def sed_and_sync(path, old, new):
    """GNU sed -i of the substitution, then sync of the file: a new file written, renamed over
    the old one and flushed, as an edit does (the anchor of the 10 MB edit)."""
    t0 = time.perf_counter_ns()
    subprocess.run(["sed", "-i", f"s/{old}/{new}/", path], check=True)
    subprocess.run(["sync", path], check=True)
    return time.perf_counter_ns() - t0


def tool_ms(res):
    return float(res.get("_meta", {}).get("dev.stockade/result", {}).get("duration_ms", float("nan")))


def hold_fifo(path, hold_s, opened):
    """Opens the FIFO for writing as soon as a reader (the grep's rg) has it open, holds it
    for hold_s seconds, then writes one matching line and closes it: rg ends then."""
    give_up = time.monotonic() + 30
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as e:
            if e.errno != errno.ENXIO or time.monotonic() > give_up:
                raise
            time.sleep(0.0005)
    opened.set()
    time.sleep(hold_s)
    os.write(fd, b"release the grep\n")
    os.close(fd)


def concurrent_reads(srv, seconds, slow_grep=None):
    """Keeps CONC_LANES reads of big.txt in flight: a new one goes as each is answered.
    Without slow_grep, for `seconds`. With slow_grep (the FIFO's path in the workspace), a
    grep of the FIFO goes first; its rg blocks in open() until hold_fifo writes, SLOW_GREP_S
    after rg opened it; reads are sent from then until the grep is answered. Returns (round
    trips of the reads answered in the window, the grep's round trip or None)."""
    args = {"file_path": "big.txt"}
    grep_id = grep_t0 = grep_ns = None
    if slow_grep:
        opened = threading.Event()
        writer = threading.Thread(target=hold_fifo, daemon=True,
                                  args=(os.path.join(WS, slow_grep), SLOW_GREP_S, opened))
        writer.start()
        grep_id, grep_t0 = srv.send_call("grep", {"pattern": "release", "path": slow_grep})
        if not opened.wait(30):
            raise SystemExit("the slow grep's rg never opened its FIFO")
    end = time.perf_counter_ns() + int(seconds * 1e9)

    def window_open(now):
        return grep_ns is None if slow_grep else now < end

    inflight, lat, checked = {}, [], 0
    for _ in range(CONC_LANES):
        rid, t0 = srv.send_call("read", args)
        inflight[rid] = t0
    while inflight or (slow_grep and grep_ns is None):
        t, rid, raw = srv.next_response()
        if rid == grep_id:
            grep_ns = t - grep_t0
            res = check_result("grep", raw)
            if "release the grep" not in res["content"][0]["text"]:
                raise SystemExit(f"the slow grep found nothing: {res['content'][0]['text'][:300]}")
            continue
        t0 = inflight.pop(rid)
        if window_open(t):
            lat.append(t - t0)
            rid, t0 = srv.send_call("read", args)
            inflight[rid] = t0
        if checked < 3:  # parsing every 140 KB result would slow the client down
            check_result("read", raw)
            checked += 1
    if slow_grep:
        writer.join()
    return lat, grep_ns


def main():
    results = []  # (label, ok)
    # STOCKADE_SERVE_ARGS: extra `serve` options, e.g. "--checkpoints off" to tell a feature's
    # cost apart from the rest (the report prints them).
    serve_args = os.environ.get("STOCKADE_SERVE_ARGS", "").split()
    srv = Server(STOCKADE, WS, STATE, serve_args)
    time.sleep(0.5)
    rss_start = rss_tree(srv.proc.pid)
    print(f"stockade: {STOCKADE}   workspace: {WS}   grep/glob tree: {TREE_LABEL}"
          + (f"   serve options: {' '.join(serve_args)}" if serve_args else ""))
    print()

    # 1. read of a 2,000-line file --------------------------------------------------------
    for _ in range(READ_WARMUP):
        srv.call("read", {"file_path": "big.txt"})
        fork_exec_true()
    rt, tm, fe = [], [], []
    for _ in range(READ_CALLS):
        ns, res = srv.call("read", {"file_path": "big.txt"})
        rt.append(ns)
        tm.append(tool_ms(res))
        fe.append(fork_exec_true())
    p50, p95 = ms(pct(rt, 50)), ms(pct(rt, 95))
    ratio = pct(rt, 50) / pct(fe, 50)
    print(f"1 read big.txt (2,000 lines, {os.path.getsize(os.path.join(WS, 'big.txt')):,} B), "
          f"{READ_CALLS} calls alternating with fork+exec+wait of /bin/true, after {READ_WARMUP} warm-up")
    print(f"    round trip   p50 {p50:8.3f} ms   p95 {p95:8.3f} ms   min {ms(min(rt)):8.3f} ms")
    print(f"    fork+exec    p50 {ms(pct(fe, 50)):8.3f} ms   p95 {ms(pct(fe, 95)):8.3f} ms")
    print(f"    ratio p50 {ratio:.2f}   tool (duration_ms, 1 ms resolution) median "
          f"{statistics.median(tm):.0f} ms")
    results.append((f"read p50 {p50:.3f} ms = {ratio:.2f}x fork+exec <= 0.7x", ratio <= 0.7))

    # 2. grep vs rg ---------------------------------------------------------------------------
    def pairs(label, mcp_args, tool, rg_argv, target, sandboxed_target=None):
        for _ in range(PAIR_WARMUP):
            srv.call(tool, mcp_args)
            run_rg(rg_argv)
            if sandboxed_target is not None:
                run_rg(sandboxed(rg_argv))
        a, b, c, tm = [], [], [], []
        last_res, last_out = None, b""
        for _ in range(PAIRS):
            ns, last_res = srv.call(tool, mcp_args)
            a.append(ns)
            tm.append(tool_ms(last_res))
            ns, last_out = run_rg(rg_argv)
            b.append(ns)
            if sandboxed_target is not None:
                c.append(run_rg(sandboxed(rg_argv))[0])
        ma, mb = statistics.median(a), statistics.median(b)
        ratio = ma / mb
        nlines = last_out.count(b"\n")
        sc = last_res.get("_meta", {}).get("dev.stockade/result", {})
        meta = {k: v for k, v in sc.items() if not isinstance(v, (list, dict)) and k != "title"}
        print(f"{label}  ({PAIRS} alternating {'triples' if c else 'pairs'} after {PAIR_WARMUP} warm-up)")
        print(f"    stockade MCP {tool:<5} median {ms(ma):8.1f} ms   p95 {ms(pct(a, 95)):8.1f} ms"
              f"   tool duration_ms median {statistics.median(tm):.0f} ms")
        print(f"    rg direct        median {ms(mb):8.1f} ms   p95 {ms(pct(b, 95)):8.1f} ms"
              f"   ({len(last_out):,} B of output, {nlines:,} lines)")
        if c:
            mc = statistics.median(c)
            print(f"    rg in `stockade run` median {ms(mc):8.1f} ms   p95 {ms(pct(c, 95)):8.1f} ms"
                  f"   (a sandbox started, rg run in it, the sandbox torn down)")
        print(f"    ratio {ratio:.3f}" + (f"   against rg in `stockade run` {ma / mc:.3f}" if c else "")
              + f"   rg: {' '.join(rg_argv[1:])}")
        print(f"    metadata: {json.dumps(meta)[:300]}")
        results.append((f"{tool} ratio {ratio:.3f} <= {target}", ratio <= target))
        if c:
            results.append((f"{tool} against rg in `stockade run` {ma / mc:.3f} <= {sandboxed_target}",
                            ma / mc <= sandboxed_target))

    print()
    pairs(f'2 grep "{GREP_PATTERN}" over the workspace', {"pattern": GREP_PATTERN}, "grep", RG_GREP, 1.05, 1.0)
    print()
    pairs(f'3 glob "{GLOB_PATTERN}" over the workspace', {"pattern": GLOB_PATTERN}, "glob", RG_GLOB, 1.2)

    # 4. exact edit in a ~9.9 MB file --------------------------------------------------------
    print()
    huge = "huge.txt"
    srv.call("read", {"file_path": huge, "limit": 1})
    marks = ["MARKER_ALPHA_0001", "MARKER_BRAVO_0002"]
    # The anchor edits its own copy, on the same file system (the workspace is under TMP too).
    sed_copy = os.path.join(os.path.dirname(WS), "sed-" + huge)
    with open(os.path.join(WS, huge), "rb") as src, open(sed_copy, "wb") as dst:
        dst.write(src.read())
    rt, tm, sd = [], [], []
    for i in range(EDIT_WARMUP + EDIT_CALLS):
        ns, res = srv.call("edit", {"file_path": huge, "old_string": marks[i % 2],
                                    "new_string": marks[(i + 1) % 2]})
        strategy = res.get("_meta", {}).get("dev.stockade/result", {}).get("strategy")
        sed_ns = sed_and_sync(sed_copy, marks[i % 2], marks[(i + 1) % 2])
        if i >= EDIT_WARMUP:
            rt.append(ns)
            tm.append(tool_ms(res))
            sd.append(sed_ns)
    with open(os.path.join(WS, huge), "rb") as f:
        data = f.read()
    assert data.count(marks[(EDIT_WARMUP + EDIT_CALLS) % 2].encode()) == 1, "edit did not land"
    with open(sed_copy, "rb") as f:
        assert f.read() == data, "sed's copy differs from the edited file"
    os.unlink(sed_copy)
    med = ms(statistics.median(rt))
    sed_med = ms(statistics.median(sd))
    ratio = med / sed_med
    print(f"4 exact edit in {huge} ({len(data):,} B — just under read's 10 MiB limit), "
          f"{EDIT_CALLS} edits alternating with sed -i + sync after {EDIT_WARMUP} warm-up, "
          f"strategy={strategy}")
    print(f"    round trip   median {med:8.1f} ms   p95 {ms(pct(rt, 95)):8.1f} ms   min {ms(min(rt)):8.1f} ms"
          f"   tool duration_ms median {statistics.median(tm):.0f} ms")
    print(f"    sed -i + sync median {sed_med:8.1f} ms   p95 {ms(pct(sd, 95)):8.1f} ms   "
          f"min {ms(min(sd)):8.1f} ms")
    print(f"    ratio {ratio:.2f}")
    results.append((f"exact edit 9.9 MB median {med:.1f} ms = {ratio:.2f}x sed -i + sync <= 1.5x",
                    ratio <= 1.5))

    # 5. block-anchor edit in a 10,000-line file -----------------------------------------------
    print()
    fz = "fuzzy.txt"
    with open(os.path.join(WS, fz)) as f:
        lines = f.read().split("\n")
    first = 4000
    block = lines[first:first + 200]
    srv.call("read", {"file_path": fz, "limit": 1})

    def perturb(blk):
        out = list(blk)
        for j in range(10, 190, 10):  # 18 middle lines, ~10% of the block: a few characters each
            s = out[j]
            out[j] = s[:4] + s[4:8].swapcase().replace("a", "@").replace("e", "3") + s[8:] + "x"
        return out

    rt, tm, strategies = [], [], set()
    for i in range(FUZZY_WARMUP + FUZZY_CALLS):
        new = list(block)
        new[100] = block[100].split(" //")[0] + f" // v{i}"
        ns, res = srv.call("edit", {"file_path": fz, "old_string": "\n".join(perturb(block)),
                                    "new_string": "\n".join(new)})
        strategies.add(res.get("_meta", {}).get("dev.stockade/result", {}).get("strategy"))
        block = new
        if i >= FUZZY_WARMUP:
            rt.append(ns)
            tm.append(tool_ms(res))
    with open(os.path.join(WS, fz)) as f:
        assert f.read().split("\n")[first + 100] == block[100], "fuzzy edit did not land"
    med = ms(statistics.median(rt))
    ok_strategy = strategies == {"block-anchor"}
    print(f"5 block-anchor edit in {fz} (10,000 lines), 200-line old_string with 18 middle lines "
          f"perturbed, {FUZZY_CALLS} edits after {FUZZY_WARMUP} warm-up")
    print(f"    round trip   median {med:8.1f} ms   p95 {ms(pct(rt, 95)):8.1f} ms   min {ms(min(rt)):8.1f} ms"
          f"   tool duration_ms median {statistics.median(tm):.0f} ms   strategy={sorted(map(str, strategies))}")
    results.append((f"block-anchor edit median {med:.1f} ms <= 200 ms (strategy block-anchor: {ok_strategy})",
                    med <= 200.0 and ok_strategy))

    # 6. idle RSS ------------------------------------------------------------------------------
    print()
    time.sleep(1.0)
    total, parts = rss_tree(srv.proc.pid)
    print(f"6 idle RSS after the calls (VmRSS, serve + its descendants): {total / 1024:.1f} MiB")
    print("    " + ", ".join(parts))
    print(f"    (right after the handshake, before any call: {rss_start[0] / 1024:.1f} MiB — "
          + ", ".join(rss_start[1]) + ")")
    results.append((f"idle RSS {total / 1024:.1f} MiB <= 24 MiB", total / 1024 <= 24.0))

    # 7. reads beside a slow grep ------------------------------------------------------------
    print()
    fifo_dir = os.path.join(WS, "slowgrep")
    os.mkdir(fifo_dir)
    os.mkfifo(os.path.join(fifo_dir, "fifo"))
    concurrent_reads(srv, CONC_WARMUP_S)
    alone, _ = concurrent_reads(srv, SLOW_GREP_S)
    beside, grep_ns = concurrent_reads(srv, SLOW_GREP_S, slow_grep="slowgrep/fifo")
    os.unlink(os.path.join(fifo_dir, "fifo"))
    os.rmdir(fifo_dir)
    a50, b50 = ms(pct(alone, 50)), ms(pct(beside, 50))
    print(f"7 read big.txt with {CONC_LANES} reads in flight (each answered one is replaced at once)")
    print(f"    beside a {SLOW_GREP_S:.0f} s grep (8 calls at once; grep round trip {ms(grep_ns) / 1000:.2f} s, "
          f"{len(beside)} reads answered while it ran)")
    print(f"        round trip   p50 {b50:8.3f} ms   p95 {ms(pct(beside, 95)):8.3f} ms   max {ms(max(beside)):8.3f} ms")
    print(f"    without the grep ({SLOW_GREP_S:.0f} s, {len(alone)} reads)")
    print(f"        round trip   p50 {a50:8.3f} ms   p95 {ms(pct(alone, 95)):8.3f} ms   max {ms(max(alone)):8.3f} ms")
    results.append((f"read p50 beside a 2 s grep {b50:.3f} ms = {b50 / a50:.2f}x the same 7 without "
                    f"it ({a50:.3f} ms) <= 1.2x", b50 <= 1.2 * a50))

    srv.close()
    print()
    for label, ok in results:
        print(f"{'PASS' if ok else 'MISS'}  {label}")


if __name__ == "__main__":
    main()
