#!/usr/bin/env python3
"""`stockade run --network allowlist` against a direct connection to the same upstream
(driven by bench/network.sh). Stdlib only; three roles:

    network_client.py upstream --blob FILE --port-file FILE
        A plain-HTTP upstream on an ephemeral 127.0.0.1 port, one thread per connection,
        `Connection: close` on every response: GET /bytes/N sends N bytes of FILE (a sparse
        file of zeros) with sendfile(2); any other path answers "hello from <Host>".
    network_client.py agent
        Runs inside the sandbox (as `python3 network_client.py agent` in the workspace) and
        takes one command per stdin line, answering one stdout line each: `curl URL`,
        `lat URL`, `hold N HOST:PORT`, `release`, `quit`.
    network_client.py driver STOCKADE WORKSPACE UPSTREAM_PORT [options]
        Starts one `stockade run --network allowlist ... -- python3 network_client.py agent`,
        and measures, alternating with the same thing done directly on the host:
          1  1 GiB download by curl (through the proxy / directly), median of R pairs, and
             the CPU each side spent: curl's, the supervisor's, the upstream's (--upstream-pid);
          2  a new connection's plain-HTTP GET, read to EOF, N alternating pairs (p50, p90);
          3  C CONNECT tunnels, each carrying a stalled 1 GiB download: the `stockade run`
             process's VmRSS / VmHWM next to its idle VmRSS.
"""
import argparse
import base64
import os
import re
import resource
import select
import signal
import socket
import subprocess
import sys
import threading
import time

PROXY = ("127.0.0.1", 3128)
PROXY_AUTH = "Basic " + base64.b64encode(b"stockade:run").decode()
NAME = "example.test"
GIB = 1 << 30
CRLF = b"\r\n"


# ---------------------------------------------------------------- shared

def read_to_eof(sock):
    total, first = 0, b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return total, first
        if not first:
            first = chunk[:chunk.find(b"\r\n")] if b"\r\n" in chunk else chunk[:80]
        total += len(chunk)


def one_get(addr, request):
    """Connect, send the request, read to EOF: (ns, bytes, status line)."""
    t0 = time.perf_counter_ns()
    s = socket.create_connection(addr)
    try:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(request)
        n, first = read_to_eof(s)
    finally:
        s.close()
    return time.perf_counter_ns() - t0, n, first.decode("latin-1", "replace")


def get_request(target, host, proxy):
    lines = [f"GET {target} HTTP/1.1", f"Host: {host}", "User-Agent: stockade-bench",
             "Accept: */*", "Connection: close"]
    if proxy:
        lines.append(f"Proxy-Authorization: {PROXY_AUTH}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def curl_cmd(url, direct):
    cmd = ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code} %{size_download} %{speed_download}"]
    if direct:
        cmd += ["--noproxy", "*"]
    return cmd + [url]


def run_curl(cmd):
    """Runs curl to its end: (stdout, stderr, exit status, its CPU time in seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return r.stdout, r.stderr, r.returncode, cpu


def die_with_parent(sig=signal.SIGKILL):
    try:  # PR_SET_PDEATHSIG
        import ctypes
        ctypes.CDLL(None).prctl(1, int(sig))
    except (OSError, AttributeError):
        pass


# ---------------------------------------------------------------- upstream

def upstream(args):
    die_with_parent(signal.SIGTERM)  # go when network.sh goes
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    blob = os.open(args.blob, os.O_RDONLY)
    blob_size = os.fstat(blob).st_size
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(1024)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{ls.getsockname()[1]}\n")
    os.replace(tmp, args.port_file)

    def handle(c):
        try:
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            buf = b""
            while b"\r\n\r\n" not in buf:
                chunk = c.recv(65536)
                if not chunk or len(buf) > 65536:
                    return
                buf += chunk
            head = buf.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
            parts = head[0].split()
            target = parts[1] if len(parts) > 1 else "/"
            host = ""
            for h in head[1:]:
                k, _, v = h.partition(":")
                if k.strip().lower() == "host":
                    host = v.strip()
            m = re.match(r"^(?:https?://[^/]*)?/bytes/(\d{1,15})$", target)
            if m:
                n = int(m.group(1))
                c.sendall(f"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                          f"Content-Length: {n}\r\nConnection: close\r\n\r\n".encode())
                off = 0
                while n > 0:
                    sent = os.sendfile(c.fileno(), blob, off, min(n, blob_size - off))
                    if sent == 0:
                        return
                    n -= sent
                    off = (off + sent) % blob_size
            else:
                body = f"hello from {host.rsplit(':', 1)[0] if host.count(':') == 1 else host}\n"
                c.sendall((f"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                           f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
                           + body).encode())
            c.shutdown(socket.SHUT_WR)
            c.settimeout(5)
            while c.recv(65536):  # let the peer close first: no RST, no TIME_WAIT here
                pass
        except OSError:
            pass
        finally:
            c.close()

    while True:
        c, _ = ls.accept()
        threading.Thread(target=handle, args=(c,), daemon=True).start()


# ---------------------------------------------------------------- agent (in the sandbox)

def agent(_args):
    held = []
    out = sys.stdout
    out.write("ready\n")
    out.flush()
    for line in sys.stdin:
        cmd, *rest = line.split()
        if cmd == "curl":
            stdout, stderr, rc, cpu = run_curl(curl_cmd(rest[0], direct=False))
            out.write(f"curl {stdout.strip()} rc={rc} cpu={cpu:.3f} {stderr.strip()[:200]!r}\n")
        elif cmd == "lat":
            try:
                ns, n, first = one_get(PROXY, get_request(rest[0], NAME, proxy=True))
                out.write(f"lat {ns} {n} {first!r}\n")
            except OSError as e:
                out.write(f"lat -1 0 {str(e)!r}\n")
        elif cmd == "hold":
            count, hostport = int(rest[0]), rest[1]
            errors = []
            for _ in range(count):
                try:
                    s = socket.create_connection(PROXY)
                    s.sendall(f"CONNECT {hostport} HTTP/1.1\r\nHost: {hostport}\r\n"
                              f"Proxy-Authorization: {PROXY_AUTH}\r\n\r\n".encode())
                    buf = b""
                    while b"\r\n\r\n" not in buf:
                        chunk = s.recv(4096)
                        if not chunk:
                            raise OSError(f"proxy closed the tunnel: {buf[:80]!r}")
                        buf += chunk
                    if not buf.startswith(b"HTTP/1.1 200") and not buf.startswith(b"HTTP/1.0 200"):
                        raise OSError(f"CONNECT answered {buf[:buf.find(CRLF)]!r}")
                    # a 1 GiB download through the tunnel, read a little of then left stalled
                    s.sendall(f"GET /bytes/{GIB} HTTP/1.1\r\nHost: {hostport.split(':')[0]}\r\n"
                              f"Connection: close\r\n\r\n".encode())
                    got = len(buf) - buf.find(b"\r\n\r\n") - 4
                    while got < 65536:
                        chunk = s.recv(65536)
                        if not chunk:
                            raise OSError("the download ended early")
                        got += len(chunk)
                    held.append(s)
                except OSError as e:
                    errors.append(str(e))
            time.sleep(0.5)  # let every pipe / socket buffer on the way fill up
            out.write(f"held {len(held)} {errors[0] if errors else ''!r}\n")
        elif cmd == "release":
            for s in held:
                s.close()
            held.clear()
            out.write("released\n")
        elif cmd == "quit":
            out.write("bye\n")
            out.flush()
            return
        out.flush()


# ---------------------------------------------------------------- driver (on the host)

def pct(values, p):
    s = sorted(values)
    k = (len(s) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def median(values):
    return pct(values, 50)


def status_kib(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM", "Threads"):
                fields[k] = int(v.split()[0])
    return fields


def cpu_s(pid):
    """utime + stime of the process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fd_count(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


class Agent:
    def __init__(self, argv, stderr_path):
        self.stderr = open(stderr_path, "w")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, text=True, bufsize=1,
                                     preexec_fn=die_with_parent)
        self.expect("ready", timeout=30)

    def expect(self, prefix, timeout=120):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                raise RuntimeError(f"no '{prefix}' from the sandboxed agent in {timeout} s")
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"the sandboxed agent exited ({self.proc.wait()}) "
                                   f"before '{prefix}'")
            if line.startswith(prefix + " ") or line.strip() == prefix:
                return line.split(" ", 1)[1].strip() if " " in line else ""

    def ask(self, line, prefix, timeout=120):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.expect(prefix, timeout)

    def close(self):
        if self.proc.poll() is None:
            try:
                self.ask("quit", "bye", timeout=10)
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (RuntimeError, OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.stderr.close()


def parse_curl(text):
    """'CODE SIZE SPEED rc=N cpu=S ...' -> (code, size, bytes/s, rc, curl's CPU seconds)."""
    parts = text.split()
    code, size, speed = parts[0], int(float(parts[1])), float(parts[2])
    rc = int(parts[3].split("=")[1]) if len(parts) > 3 and parts[3].startswith("rc=") else 0
    cpu = float(parts[4].split("=")[1]) if len(parts) > 4 and parts[4].startswith("cpu=") else 0.0
    return code, size, speed, rc, cpu


def host_idle():
    """(idle + iowait, all) clock ticks of the host so far, from /proc/stat."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:9]]
    return ticks[3] + ticks[4], sum(ticks)


def idle_share(before, after):
    return (after[0] - before[0]) / max(1, after[1] - before[1])


def driver(args):
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally: below
    results = []
    port = args.port
    argv = [args.stockade, "run", "--workspace", args.workspace, "--network", "allowlist",
            "--no-user-settings", "--allow", f"network.access({NAME})",
            "--resolve", f"{NAME}:80=127.0.0.1:{port}",
            "--", "python3", os.path.join(args.workspace, "network_client.py"), "agent"]
    print("sandbox: " + " ".join(a if re.fullmatch(r"[\w@%+=:,./-]+", a) else f"'{a}'"
                                 for a in argv))
    print(f"upstream: 127.0.0.1:{port} (network_client.py upstream: thread per connection, "
          f"sendfile of a sparse file)")
    t0 = time.perf_counter_ns()
    ag = Agent(argv, args.stderr)
    pid = ag.proc.pid
    try:
        print(f"`stockade run` pid {pid}: agent ready in "
              f"{(time.perf_counter_ns() - t0) / 1e6:.0f} ms")
        time.sleep(0.3)
        idle0 = status_kib(pid)
        print(f"idle: supervisor VmRSS {idle0['VmRSS'] / 1024:.1f} MiB, VmHWM "
              f"{idle0['VmHWM'] / 1024:.1f} MiB, {idle0['Threads']} threads, {fd_count(pid)} fds")
        print()

        # 1. 1 GiB download ------------------------------------------------------------------
        url_proxied = f"http://{NAME}/bytes/{GIB}"
        url_direct = f"http://127.0.0.1:{port}/bytes/{GIB}"
        # warm-up: the sparse file's page cache, and one proxied run
        subprocess.run(curl_cmd(url_direct, True), stdout=subprocess.DEVNULL, check=False)
        ag.ask(f"curl {url_proxied}", "curl", timeout=300)
        prox, dire = [], []
        print(f"1 curl -o /dev/null of {GIB:,} B (GET /bytes/{GIB}), {args.repeat} alternating "
              f"pairs after one warm-up pair; MB/s from curl's speed_download")
        ok_bytes = True
        cpu = []
        # CPU seconds per GiB of everything on the path (curl, the supervisor, the upstream):
        # on a host with no idle CPU the throughput ratio follows the ratio of these totals.
        total_p, total_d = [], []
        up = args.upstream_pid
        for i in range(args.repeat):
            c0, u0, h0 = cpu_s(pid), cpu_s(up) if up else 0.0, host_idle()
            code, size, speed, rc, curl_p = parse_curl(
                ag.ask(f"curl {url_proxied}", "curl", timeout=300))
            cpu.append(cpu_s(pid) - c0)
            up_p, idle_p = (cpu_s(up) - u0 if up else 0.0), idle_share(h0, host_idle())
            ok_bytes &= code == "200" and size == GIB and rc == 0
            prox.append(speed)
            u0, h0 = cpu_s(up) if up else 0.0, host_idle()
            stdout, _, rc, curl_d = run_curl(curl_cmd(url_direct, True))
            code, size, speed, _, _ = parse_curl(stdout + f" rc={rc}")
            up_d, idle_d = (cpu_s(up) - u0 if up else 0.0), idle_share(h0, host_idle())
            ok_bytes &= code == "200" and size == GIB and rc == 0
            dire.append(speed)
            total_p.append(curl_p + cpu[-1] + up_p)
            total_d.append(curl_d + up_d)
            print(f"    pair {i + 1}: proxied {prox[-1] / 1e6:7.0f} MB/s   direct {dire[-1] / 1e6:7.0f} MB/s"
                  f"   ratio {prox[-1] / dire[-1]:.2f}   (supervisor CPU {cpu[-1]:.2f} s)")
            print(f"            CPU s: proxied {total_p[-1]:.2f} = curl {curl_p:.2f} + supervisor "
                  f"{cpu[-1]:.2f} + upstream {up_p:.2f}; direct {total_d[-1]:.2f} = curl "
                  f"{curl_d:.2f} + upstream {up_d:.2f}; host idle {idle_p:.0%} / {idle_d:.0%}")
        mp, md = median(prox), median(dire)
        ratio = mp / md
        after1 = status_kib(pid)
        print(f"    median  proxied {mp / 1e6:7.0f} MB/s   direct {md / 1e6:7.0f} MB/s   "
              f"ratio proxied/direct {ratio:.2f}" + ("" if ok_bytes else "   (SHORT/FAILED DOWNLOADS)"))
        print(f"    supervisor CPU (utime+stime of `stockade run`) per GiB relayed: median "
              f"{median(cpu):.2f} s")
        if up:
            print(f"    CPU per GiB on the path (curl + supervisor + upstream): median proxied "
                  f"{median(total_p):.2f} s, direct {median(total_d):.2f} s, direct/proxied "
                  f"{median(total_d) / max(median(total_p), 1e-9):.2f}")
        print(f"    supervisor after the downloads: VmRSS {after1['VmRSS'] / 1024:.1f} MiB, "
              f"VmHWM {after1['VmHWM'] / 1024:.1f} MiB")
        results.append((f"1 GiB throughput ratio proxied/direct {ratio:.2f} >= 0.80",
                        ratio >= 0.8 and ok_bytes, f"{mp / 1e6:.0f} vs {md / 1e6:.0f} MB/s"))
        print()

        # 2. new-connection latency ----------------------------------------------------------
        req_direct = get_request("/", NAME, proxy=False)
        lp, ld = [], []
        bad = []
        for i in range(args.warmup + args.n):
            r = ag.ask(f"lat http://{NAME}/", "lat").split(" ", 2)
            ns, n, first = int(r[0]), int(r[1]), r[2]
            ns_d, n_d, first_d = one_get(("127.0.0.1", port), req_direct)
            if i < args.warmup:
                continue
            if ns < 0 or "200" not in first:
                bad.append(first)
                continue
            lp.append(ns)
            ld.append(ns_d)
        print(f"2 new connection + plain-HTTP GET http://{NAME}/ read to EOF, {args.n} alternating "
              f"pairs after {args.warmup} warm-up (python3 client, perf_counter_ns)")
        print(f"    proxied  (inside, via 127.0.0.1:3128, absolute-form)  p50 {lp and pct(lp, 50) / 1e6 or 0:7.3f} ms"
              f"   p90 {lp and pct(lp, 90) / 1e6 or 0:7.3f} ms   ({n} B)")
        print(f"    direct   (host, to 127.0.0.1:{port}, origin-form)      p50 {pct(ld, 50) / 1e6:7.3f} ms"
              f"   p90 {pct(ld, 90) / 1e6:7.3f} ms   ({n_d} B)")
        if bad:
            print(f"    {len(bad)} proxied requests failed, e.g. {bad[0]}")
        added = (pct(lp, 50) - pct(ld, 50)) / 1e6 if lp else float("inf")
        diffs = [a - b for a, b in zip(lp, ld)] if not bad else []
        print(f"    added latency p50(proxied) - p50(direct) {added:.3f} ms"
              + (f"   (median of the per-pair differences {median(diffs) / 1e6:.3f} ms)"
                 if diffs else ""))
        results.append((f"added latency p50 {added:.3f} ms <= 1 ms", added <= 1.0 and not bad,
                        f"{pct(lp, 50) / 1e6 if lp else 0:.3f} vs {pct(ld, 50) / 1e6:.3f} ms"))
        print()

        # 3. C concurrent tunnels ------------------------------------------------------------
        idle1 = status_kib(pid)
        t0 = time.perf_counter_ns()
        held = ag.ask(f"hold {args.concurrent} {NAME}:80", "held", timeout=120)
        open_ms = (time.perf_counter_ns() - t0) / 1e6
        n_held = int(held.split()[0])
        busy = status_kib(pid)
        fds = fd_count(pid)
        ag.ask("release", "released")
        time.sleep(0.5)
        after = status_kib(pid)
        print(f"3 {args.concurrent} CONNECT tunnels to {NAME}:80, each with a GET /bytes/{GIB} read "
              f"for 64 KiB then left stalled; {n_held} open ({open_ms:.0f} ms to open)"
              + (f"   first error: {held.split(' ', 1)[1]}" if n_held < args.concurrent else ""))
        print(f"    supervisor idle (before)  VmRSS {idle1['VmRSS'] / 1024:6.1f} MiB   "
              f"{idle1['Threads']} threads")
        print(f"    supervisor with {n_held:3d} open VmRSS {busy['VmRSS'] / 1024:6.1f} MiB   "
              f"VmHWM {busy['VmHWM'] / 1024:6.1f} MiB   {busy['Threads']} threads   {fds} fds")
        print(f"    supervisor after closing  VmRSS {after['VmRSS'] / 1024:6.1f} MiB   "
              f"{after['Threads']} threads   {fd_count(pid)} fds")
        results.append((f"{args.concurrent} tunnels supervisor VmRSS {busy['VmRSS'] / 1024:.1f} MiB <= 64",
                        busy["VmRSS"] <= 64 * 1024 and n_held == args.concurrent,
                        f"idle {idle0['VmRSS'] / 1024:.1f} MiB, VmHWM {busy['VmHWM'] / 1024:.1f} MiB"))
    finally:
        ag.close()
    rc = ag.proc.returncode
    print()
    print(f"`stockade run` exited {rc}")
    print()
    print("== summary")
    for label, ok, extra in results:
        print(f"  {'PASS' if ok else 'MISS'} {label}   ({extra})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="role", required=True)
    u = sub.add_parser("upstream")
    u.add_argument("--blob", required=True)
    u.add_argument("--port-file", required=True)
    sub.add_parser("agent")
    d = sub.add_parser("driver")
    d.add_argument("stockade")
    d.add_argument("workspace")
    d.add_argument("port", type=int)
    d.add_argument("--repeat", type=int, default=3)
    d.add_argument("-n", type=int, default=500)
    d.add_argument("--warmup", type=int, default=50)
    d.add_argument("--concurrent", type=int, default=200)
    d.add_argument("--stderr", default=os.devnull)
    d.add_argument("--upstream-pid", type=int, default=0)
    args = ap.parse_args()
    {"upstream": upstream, "agent": agent, "driver": driver}[args.role](args)


if __name__ == "__main__":
    main()
