"""The MCP client side of the benchmarks: one `stockade serve` driven over pipes, round trips
timed with time.perf_counter_ns, percentiles, and the RSS of a process tree from /proc.
Used by bench/tools_client.py and bench/exec_client.py."""
import json
import os
import re
import subprocess
import time

# A response line starts {"id":N,... (nlohmann's objects keep their keys sorted).
_ID_AT_START = re.compile(rb'^\{"id":(\d+),')


def check_result(tool, raw):
    """Parses a response line read by next_response; exits on a JSON-RPC error or isError."""
    msg = json.loads(raw)
    if "error" in msg:
        raise SystemExit(f"{tool}: JSON-RPC error {msg['error']}")
    res = msg["result"]
    if res.get("isError"):
        raise SystemExit(f"{tool}: isError: {res['content'][0]['text'][:600]}")
    return res


def ms(ns):
    return ns / 1e6


def pct(values, p):
    s = sorted(values)
    k = (len(s) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


class Server:
    def __init__(self, stockade, workspace, state, extra=()):
        env = dict(os.environ, STOCKADE_STATE_DIR=state)
        self.err = open(os.path.join(state, "serve.stderr"), "wb")
        self.proc = subprocess.Popen([stockade, "serve", "--workspace", workspace, *extra],
                                     stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.err, env=env)
        self.next_id = 1
        self.rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg):
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def rpc(self, method, params):
        """Returns (round-trip ns, response)."""
        rid = self.next_id
        self.next_id += 1
        line = (json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}) + "\n").encode()
        t0 = time.perf_counter_ns()
        self.proc.stdin.write(line)
        self.proc.stdin.flush()
        while True:
            raw = self.proc.stdout.readline()
            if not raw:
                raise SystemExit(f"stockade serve closed stdout (see {self.err.name})")
            msg = json.loads(raw)
            if msg.get("id") == rid and "method" not in msg:
                return time.perf_counter_ns() - t0, msg

    def send_call(self, tool, args):
        """Writes a tools/call request without waiting for its response; returns (id, t0 ns)."""
        rid = self.next_id
        self.next_id += 1
        line = (json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                            "params": {"name": tool, "arguments": args}}) + "\n").encode()
        t0 = time.perf_counter_ns()
        self.proc.stdin.write(line)
        self.proc.stdin.flush()
        return rid, t0

    def next_response(self):
        """Reads the next response line (skipping the server's own requests and notifications);
        returns (arrival ns, id, raw line). The id is taken from the line's start, so a large
        result is not parsed while others wait: parse the line later (check_result)."""
        while True:
            raw = self.proc.stdout.readline()
            t = time.perf_counter_ns()
            if not raw:
                raise SystemExit(f"stockade serve closed stdout (see {self.err.name})")
            m = _ID_AT_START.search(raw[:256])
            if m and b'"method"' not in raw[:256]:
                return t, int(m.group(1)), raw
            msg = json.loads(raw)
            if "method" not in msg and isinstance(msg.get("id"), int):
                return t, msg["id"], raw

    def call(self, tool, args, want_ok=True):
        ns, msg = self.rpc("tools/call", {"name": tool, "arguments": args})
        if "error" in msg:
            raise SystemExit(f"{tool}: JSON-RPC error {msg['error']}")
        res = msg["result"]
        if want_ok and res.get("isError"):
            raise SystemExit(f"{tool} {json.dumps(args)[:200]}: isError: {res['content'][0]['text'][:600]}")
        return ns, res

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def descendants(root):
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
        except OSError:
            continue
        ppid = int(st[st.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        for c in kids.get(p, []):
            out.append(c)
            todo.append(c)
    return out


def status(pid):
    name, rss = "?", 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Name:"):
                name = line.split()[1]
            elif line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    return name, rss


def rss_tree(root):
    total, parts = 0, []
    for pid in [root] + descendants(root):
        try:
            name, rss = status(pid)
        except OSError:
            continue
        total += rss
        parts.append(f"{name}[{pid}] {rss / 1024:.1f} MiB")
    return total, parts
