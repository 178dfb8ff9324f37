#!/usr/bin/env bash
# Cold start of Stockade's image in podman to a first answered tools/call, next to `podman run`
# of the plain Debian minbase image running `true`, in one run; and the image's size next to
# that minbase's (docs/kubernetes.md, "Figures").
#
#   bench/pod.sh [-n RUNS] [-i IMAGE]      (as root; BUILD_DIR, default build/)
#
# What is compared, alternating (stockade, anchor, stockade, ...):
#   stockade  `podman run -d` of the image as a pod runs it — uid 1000, read-only root, the
#             shipped seccomp profile, an unmasked /proc, a user namespace of its own, its port
#             published on 127.0.0.1 — in pod mode bound at start by its bind file; the clock
#             stops when a bash `true` called over MCP (initialize, initialized, tools/call) has
#             answered. The container is removed after, untimed.
#   anchor    `podman run --rm --network none MINBASE true`: the same podman and runtime
#             creating, starting and ending a container of the Debian root the image is made on.
#   warm      a pod of a warm pool: started unbound and ready beforehand (untimed); the clock
#             runs from POST /admin/bind to the answer of the first bash `true` (what a claimed
#             session waits for). Then the pod's memory (its cgroup's, `podman stats`) with that
#             session open and its sandbox idle.
# IMAGE defaults to localhost/stockade:bench, built by packaging/oci/build.sh from BUILD_DIR when
# podman lacks it; the minbase is made by mmdebstrap once and kept as localhost/debian-minbase:bench.
# It is a report: it prints p50 and p95 of each and their ratio, and exits 0.
set -euo pipefail

RUNS=20
IMAGE=localhost/stockade:bench
while getopts "n:i:h" opt; do
    case "$opt" in
    n) RUNS=$OPTARG ;;
    i) IMAGE=$OPTARG ;;
    *)
        sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    esac
done
[[ $RUNS =~ ^[0-9]+$ ]] && ((RUNS >= 5)) || { echo "pod.sh: -n must be 5 or more" >&2; exit 2; }
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
source "$ROOT/tests/podman/common.sh"
die() { echo "pod.sh: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run as root: podman's rootful storage and mmdebstrap"
command -v podman >/dev/null || die "podman is missing: apt-get install podman runc"
MINBASE=localhost/debian-minbase:bench
work="$(mktemp -d)"
cleanup() {
    podman_host rm -f -t 0 stockade-bench-pod >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

if ! podman image exists "$IMAGE"; then
    echo "building $IMAGE from $BUILD_DIR ..." >&2
    "$ROOT/packaging/oci/build.sh" --build-dir "$BUILD_DIR" --out "$work/oci" --tag bench >/dev/null
    skopeo copy -q "oci:$work/oci:bench" "containers-storage:$IMAGE" >/dev/null 2>&1
fi
if ! podman image exists "$MINBASE"; then
    echo "making $MINBASE with mmdebstrap ..." >&2
    SOURCE_DATE_EPOCH=1767225600 mmdebstrap --quiet --variant=minbase --format=tar bookworm \
        "$work/minbase.tar" >&2
    podman import -q "$work/minbase.tar" "$MINBASE" >/dev/null
fi

# The pod's files: the admin token's hash, the tenant bound at start, its workspace.
token="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
mkdir -p "$work/admin" "$work/bind" "$work/empty" "$work/state" "$work/workspace"
chown 201000:201000 "$work/state" "$work/workspace"  # the pod's uid 1000 under its --uidmap
stockade_bin="$BUILD_DIR/stockade"
"$stockade_bin" token hash <<<"admin-$token" >"$work/admin/token-sha256"
hash="$("$stockade_bin" token hash <<<"$token")"
cat >"$work/bind/tenant.json" <<JSON
{"tenant": {"name": "bench", "token_sha256": ["$hash"], "workspace_root": "/workspace"}}
JSON
chmod -R a+rX "$work/admin" "$work/bind" "$work/empty"

python3 - "$RUNS" "$IMAGE" "$MINBASE" "$token" "$work" "$PODMAN_PROFILE" \
    "$(stat -fc %T /sys/fs/cgroup)" "$ROOT/tests/podman" <<'PY'
import json, socket, statistics, subprocess, sys, time
runs, image, minbase, token, work, profile, cgroupfs, tests = sys.argv[1:]
sys.path.insert(0, tests)
import mcp_http

podman = ["podman"] + (["--runtime", "runc", "--cgroup-manager=cgroupfs"]
                       if cgroupfs != "cgroup2fs" else [])
limits = ["--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096"]
def free_port():
    # A port of its own for each container: a published port just released may still answer
    # from the last one's forwarding for a moment.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


port = 0
pod = podman + ["run", "-d", "--name", "stockade-bench-pod"] + limits + [
    "--read-only", "--security-opt", "unmask=ALL", "--security-opt", "seccomp=" + profile,
    "--cap-drop", "ALL", "--uidmap", "0:200000:65536", "--gidmap", "0:200000:65536",
    "-p", "PUBLISH",
    "-v", f"{work}/admin:/etc/stockade/admin:ro", "-v", f"{work}/bind:/etc/stockade/bind:ro",
    "-v", f"{work}/workspace:/workspace", "-v", f"{work}/state:/var/lib/stockade",
    image, "--pod", "--admin-token-file", "/etc/stockade/admin/token-sha256",
    "--bind-file", "/etc/stockade/bind/tenant.json"]
anchor = podman + ["run", "--rm", "--network", "none"] + limits + [minbase, "true"]


def started(command):
    """Starts a pod of `command` on a port of its own; its URL base."""
    global port
    port = free_port()
    subprocess.run([f"127.0.0.1:{port}:8888" if a == "PUBLISH" else a for a in command],
                   check=True, stdout=subprocess.DEVNULL)
    return f"http://127.0.0.1:{port}"



def stockade_once():
    start = time.monotonic_ns()
    url = started(pod) + "/mcp"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                session = mcp_http.Session(url, {"Stockade-Token": token})
                break
            except (mcp_http.Failed, OSError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.005)
        result = session.call("bash", {"command": "true"})
        took = time.monotonic_ns() - start
        if result.get("isError"):
            sys.exit(f"pod.sh: bash true failed in the pod: {result}")
        return took
    finally:
        subprocess.run(podman + ["rm", "-f", "-t", "0", "stockade-bench-pod"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


warm_pod = [a if a != f"{work}/bind:/etc/stockade/bind:ro" else f"{work}/empty:/etc/stockade/bind:ro"
            for a in pod]
warm_pod = warm_pod[:warm_pod.index("--bind-file")]


memory = []


def to_mib(text):
    units = {"B": 1 / 1048576, "kB": 1000 / 1048576, "KB": 1000 / 1048576, "MB": 1e6 / 1048576,
             "GB": 1e9 / 1048576, "KiB": 1 / 1024, "MiB": 1, "GiB": 1024}
    for unit in sorted(units, key=len, reverse=True):
        if text.endswith(unit):
            return float(text[:-len(unit)]) * units[unit]
    raise ValueError(f"pod.sh: podman stats said {text!r}")


def warm_once():
    base = started(warm_pod)
    url = base + "/mcp"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                status, _, _ = mcp_http.request(base + "/readyz", "GET")
                if status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                sys.exit("pod.sh: the warm pod never became ready")
            time.sleep(0.005)
        binding = json.load(open(f"{work}/bind/tenant.json"))
        start = time.monotonic_ns()
        status, _, body = mcp_http.request(base + "/admin/bind", "POST", binding,
                                           {"Stockade-Token": "admin-" + token})
        if status != 200:
            sys.exit(f"pod.sh: POST /admin/bind: {status} {body!r}")
        session = mcp_http.Session(url, {"Stockade-Token": token})
        result = session.call("bash", {"command": "true"})
        took = time.monotonic_ns() - start
        if result.get("isError"):
            sys.exit(f"pod.sh: bash true failed in the warm pod: {result}")
        # The pod's memory (its cgroup's) with that session open and its sandbox idle.
        usage = subprocess.run(podman + ["stats", "--no-stream", "--format", "{{.MemUsage}}",
                                         "stockade-bench-pod"],
                               capture_output=True, text=True, check=True).stdout.split("/")[0]
        memory.append(to_mib(usage.strip()))
        return took
    finally:
        subprocess.run(podman + ["rm", "-f", "-t", "0", "stockade-bench-pod"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def anchor_once():
    start = time.monotonic_ns()
    subprocess.run(anchor, check=True)
    return time.monotonic_ns() - start


stockade_once(), anchor_once()  # warm-up: the images' layers into the page cache
ours, theirs, warm = [], [], []
for _ in range(int(runs)):
    ours.append(stockade_once())
    theirs.append(anchor_once())
    warm.append(warm_once())


def p(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] / 1e6


print(f"cold start, {runs} runs each (ms)        p50       p95")
print(f"  stockade pod to first tools/call  {p(ours, .5):8.1f}  {p(ours, .95):8.1f}")
print(f"  podman run minbase true           {p(theirs, .5):8.1f}  {p(theirs, .95):8.1f}")
print(f"  ratio (p50)                       {statistics.median(ours) / statistics.median(theirs):8.2f}x")
print(f"warm pod, bind to first tools/call  {p(warm, .5):8.1f}  {p(warm, .95):8.1f}")
print(f"bound pod's memory, one session open (MiB, podman stats): "
      f"median {statistics.median(memory):.1f}, max {max(memory):.1f}")
PY

size() { podman image inspect --format '{{.Size}}' "$1"; }
ours=$(size "$IMAGE")
base=$(size "$MINBASE")
awk -v ours="$ours" -v base="$base" 'BEGIN {
    printf "image size (uncompressed, podman)   %8.1f MiB   minbase %8.1f MiB   ratio %.2fx\n",
        ours / 1048576, base / 1048576, ours / base }'
