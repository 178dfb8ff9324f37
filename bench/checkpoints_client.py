"""bench/checkpoints.sh's client: checkpoints and rewind next to git, in one run."""
import glob
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcp_client import Server, ms, pct  # noqa: E402

STOCKADE, TMP, ROOT, FILES = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
PAIRS = 100
WARMUP = 10
ROUNDS = 5
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com"]


def run(cmd, cwd, **kw):
    return subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, **kw)


def timed(cmd, cwd):
    t0 = time.perf_counter_ns()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter_ns() - t0


def make_repo(path, files):
    os.makedirs(path)
    per_dir = 50
    for i in range(files):
        d = os.path.join(path, f"d{i // per_dir:03d}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{i % per_dir:02d}.txt"), "w") as f:
            f.write(f"file {i}\n" + "x = 1\n" * 20)
    run(GIT + ["init", "-q", "."], path)
    run(GIT + ["add", "-A"], path)
    run(GIT + ["commit", "-qm", "init"], path)
    time.sleep(1.1)  # the index newer than every file: none of them racily clean
    run(GIT + ["update-index", "--refresh", "-q"], path)


def events(state):
    out = []
    for f in glob.glob(os.path.join(state, "sessions", "*", "events.jsonl")):
        with open(f) as fh:
            out += [json.loads(line) for line in fh if line.strip()]
    return out


def session_id(state):
    return os.path.basename(glob.glob(os.path.join(state, "sessions", "*"))[0])


def du(path):
    total = 0
    for dirpath, _, names in os.walk(path):
        for n in names:
            total += os.lstat(os.path.join(dirpath, n)).st_size
    return total


def main():
    results = []
    repo = os.path.join(TMP, "repo")
    make_repo(repo, FILES)
    print(f"stockade: {STOCKADE}   repository: {FILES} files, git {subprocess.check_output(['git', '--version']).decode().split()[-1]}")
    print()

    # 1, 2. --------------------------------------------------------------------------------------
    st_on, st_off = os.path.join(TMP, "state-on"), os.path.join(TMP, "state-off")
    os.makedirs(st_on)
    os.makedirs(st_off)
    on = Server(STOCKADE, repo, st_on)
    off = Server(STOCKADE, repo, st_off, extra=("--checkpoints", "off"))
    for _ in range(WARMUP):
        on.call("bash", {"command": "sh -c true"})
        off.call("bash", {"command": "sh -c true"})
        timed(["git", "status", "--porcelain"], repo)
    a, b, g = [], [], []
    for _ in range(PAIRS):
        ns, _ = on.call("bash", {"command": "sh -c true"})
        a.append(ns)
        ns, _ = off.call("bash", {"command": "sh -c true"})
        b.append(ns)
        g.append(timed(["git", "status", "--porcelain"], repo))
    walks = [e["walk_ms"] for e in events(st_on) if e.get("type") == "Checkpoint" and e.get("kind") == "call"][-PAIRS:]
    walk_p50 = pct(walks, 50)
    git_p50 = ms(pct(g, 50))
    r1 = walk_p50 / git_p50
    print(f"1 checkpoint after bash sh -c true ({FILES} files) vs git status --porcelain, {PAIRS} alternating")
    print(f"    checkpoint (walk_ms)   p50 {walk_p50:7.3f} ms   p95 {pct(walks, 95):7.3f} ms")
    print(f"    git status --porcelain p50 {git_p50:7.3f} ms   p95 {ms(pct(g, 95)):7.3f} ms")
    print(f"    ratio p50 {r1:.2f}")
    results.append((f"checkpoint vs git status p50 ratio {r1:.2f} <= 1.0", r1 <= 1.0))
    r2 = pct(a, 50) / pct(b, 50)
    print(f"2 bash sh -c true round trip, checkpoints on vs off, {PAIRS} alternating pairs")
    print(f"    on   p50 {ms(pct(a, 50)):7.3f} ms   p95 {ms(pct(a, 95)):7.3f} ms")
    print(f"    off  p50 {ms(pct(b, 50)):7.3f} ms   p95 {ms(pct(b, 95)):7.3f} ms")
    print(f"    ratio p50 {r2:.2f}")
    results.append((f"round trip on/off p50 ratio {r2:.2f} <= 1.15", r2 <= 1.15))
    on.close()
    off.close()

    # 3. -----------------------------------------------------------------------------------------
    sed = "sed -i 's/x = 1/x = 2/' " + " ".join(f"d{d:03d}/*.txt" for d in range(20))
    inner, walls, checkouts, restored, clean = [], [], [], 0, True
    for rnd in range(ROUNDS):
        st_rw = os.path.join(TMP, f"state-rewind-{rnd}")
        os.makedirs(st_rw)
        srv = Server(STOCKADE, repo, st_rw)
        srv.call("bash", {"command": sed})
        srv.close()
        sid = session_id(st_rw)
        call = [e["call"] for e in events(st_rw) if e.get("type") == "ToolRequested"][0]
        t0 = time.perf_counter_ns()
        out = subprocess.run([STOCKADE, "rewind", sid, "--to", call, "--state-dir", st_rw, "--json"],
                             check=True, capture_output=True)
        walls.append(time.perf_counter_ns() - t0)
        restored = len(json.loads(out.stdout)["restored"])
        inner.append([e["duration_ms"] for e in events(st_rw) if e.get("type") == "Rewind"][-1])
        run(["bash", "-c", sed], repo)
        checkouts.append(ms(timed(GIT + ["checkout", "--", "."], repo)))
        clean = clean and not subprocess.check_output(["git", "status", "--porcelain"], cwd=repo).strip()
    r3 = statistics.median(inner) / statistics.median(checkouts)
    print(f"3 rewinding {restored} files sed changed vs git checkout -- . of the same files, median of {ROUNDS}")
    print(f"    rewind (in the session)        {statistics.median(inner):8.1f} ms")
    print(f"    stockade rewind (wall, a worker started for the ended session) {ms(statistics.median(walls)):8.1f} ms")
    print(f"    git checkout -- .              {statistics.median(checkouts):8.1f} ms   (tree clean after: {'yes' if clean else 'no'})")
    print(f"    ratio {r3:.2f}")
    results.append((f"rewind vs git checkout ratio {r3:.2f} <= 1.5", r3 <= 1.5))

    # 4. -----------------------------------------------------------------------------------------
    proj = os.path.join(TMP, "project")
    run(["git", "clone", "-q", "--no-hardlinks", ROOT, proj], TMP)
    st_p = os.path.join(TMP, "state-project")
    os.makedirs(st_p)
    tracked = subprocess.check_output(["git", "ls-files", "*.cc"], cwd=proj).decode().split()
    srv = Server(STOCKADE, proj, st_p)
    for i in range(200):
        f = tracked[(i * 7) % len(tracked)]
        k = i % 4
        if k == 0:
            cmd = f"echo '// note {i}' >> {f}"
        elif k == 1:
            cmd = f"sed -i 's/return /return  /' {f}"
        elif k == 2:
            cmd = f"mkdir -p scratch && seq 1 {100 + i} > scratch/out{i % 20}.txt"
        else:
            cmd = f"cp {f} {f}.bak && rm -f {f}.bak"
        srv.call("bash", {"command": cmd})
    srv.close()
    sid = session_id(st_p)
    store = os.path.join(st_p, "sessions", sid, "checkpoints")
    size = du(store)
    objects = len(os.listdir(os.path.join(store, "objects")))
    tree = sum(1 for _ in subprocess.check_output(["git", "ls-files"], cwd=proj).splitlines())
    print(f"4 store after a 200-call session on a clone of this repository ({tree} files)")
    print(f"    {size / 1024:.0f} KiB ({objects} objects, log {os.path.getsize(os.path.join(store, 'log.jsonl')) / 1024:.0f} KiB); "
          f"the project itself {du(proj) / 1024 / 1024:.1f} MiB with .git")
    print()
    for label, ok in results:
        print(f"{'ok  ' if ok else 'MISS'} {label}")


main()
