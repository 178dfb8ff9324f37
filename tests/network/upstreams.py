#!/usr/bin/python3
"""Fake internet for the `--network allowlist` tests: one process, stdlib only.

Generates, in --dir DIR, a test CA and a server certificate for the names the
tests pin to 127.0.0.1, a tiny wheel, a tiny npm package and a bare git repo;
then serves HTTPS and plain HTTP on two ephemeral 127.0.0.1 ports, routing on
the Host header, and writes DIR/upstreams.json once both listen:

    {"https_port": P1, "http_port": P2, "ca": "DIR/ca.pem", "pid": PID, ...}

It serves until SIGTERM (or SIGINT), then removes upstreams.json. It listens on
127.0.0.1 only and never connects anywhere. See README.md next to it.
"""

import argparse
import base64
import ctypes
import gzip
import hashlib
import html
import io
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tarfile
import tempfile
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

SAN_DNS = [
    "pypi.org",
    "files.pythonhosted.org",
    "registry.npmjs.org",
    "github.com",
    "codeload.github.com",
    "example.test",
    "allowed.test",
    "denied.test",
    "other.test",
    "*.allowed.test",
    "localhost",
]
SAN_IP = ["127.0.0.1"]

PKG = "tinypkg"
VERSION = "1.0.0"
WHEEL_NAME = f"{PKG}-{VERSION}-py3-none-any.whl"
NPM_TGZ_NAME = f"{PKG}-{VERSION}.tgz"
NPM_TARBALL_URL = f"https://registry.npmjs.org/{PKG}/-/{NPM_TGZ_NAME}"
REPO_NAME = "tinyrepo.git"
CHUNK = 64 * 1024
ZERO_CHUNK = b"\0" * CHUNK
FIXED_DATE = (2024, 1, 1, 0, 0, 0)  # zip/tar timestamps: the artefacts are reproducible
FIXED_EPOCH = 1704067200

VERBOSE = False


def log(msg):
    if VERBOSE:
        sys.stderr.write(f"upstreams: {msg}\n")
        sys.stderr.flush()


def run(cmd, cwd=None, env=None):
    subprocess.run(cmd, cwd=cwd, env=env, check=True,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=None if VERBOSE else subprocess.PIPE)


# ---------------------------------------------------------------- certificates

def make_certs(d):
    """ca.pem (+ca.key) and server.pem/server.key signed by it (EC P-256)."""
    ca_key, ca_pem = os.path.join(d, "ca.key"), os.path.join(d, "ca.pem")
    key, csr, pem = (os.path.join(d, n) for n in ("server.key", "server.csr", "server.pem"))
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run(["openssl", "req", "-x509", *ec, "-keyout", ca_key, "-out", ca_pem,
         "-days", "3650", "-sha256", "-subj", "/O=Stockade tests/CN=Stockade Test CA",
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign",
         "-addext", "subjectKeyIdentifier=hash"])
    run(["openssl", "req", "-new", *ec, "-keyout", key, "-out", csr,
         "-subj", "/O=Stockade tests/CN=stockade-test-upstream"])
    san = ",".join([f"DNS:{n}" for n in SAN_DNS] + [f"IP:{ip}" for ip in SAN_IP])
    ext = os.path.join(d, "server.ext")
    with open(ext, "w") as f:
        f.write("basicConstraints=critical,CA:FALSE\n"
                "keyUsage=critical,digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=serverAuth\n"
                "subjectKeyIdentifier=hash\n"
                "authorityKeyIdentifier=keyid,issuer\n"
                f"subjectAltName={san}\n")
    run(["openssl", "x509", "-req", "-in", csr, "-CA", ca_pem, "-CAkey", ca_key,
         "-set_serial", str(int.from_bytes(os.urandom(8), "big")),
         "-days", "825", "-sha256", "-extfile", ext, "-out", pem])
    os.remove(csr)
    os.remove(ext)
    return ca_pem, pem, key


# ---------------------------------------------------------------- wheel

def _record_hash(data):
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def make_wheel(d):
    info = f"{PKG}-{VERSION}.dist-info"
    files = [
        (f"{PKG}/__init__.py", b"VALUE = 42\n"),
        (f"{info}/METADATA", (f"Metadata-Version: 2.1\nName: {PKG}\nVersion: {VERSION}\n"
                              "Summary: Stockade network test package\n").encode()),
        (f"{info}/WHEEL", (b"Wheel-Version: 1.0\nGenerator: stockade-upstreams\n"
                           b"Root-Is-Purelib: true\nTag: py3-none-any\n")),
    ]
    record = "".join(f"{name},{_record_hash(data)},{len(data)}\n" for name, data in files)
    record += f"{info}/RECORD,,\n"
    files.append((f"{info}/RECORD", record.encode()))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files:
            zi = zipfile.ZipInfo(name, date_time=FIXED_DATE)
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = 0o644 << 16
            z.writestr(zi, data)
    data = buf.getvalue()
    pkgdir = os.path.join(d, "packages")
    os.makedirs(pkgdir, exist_ok=True)
    with open(os.path.join(pkgdir, WHEEL_NAME), "wb") as f:
        f.write(data)
    return data


# ---------------------------------------------------------------- npm

def make_npm(d):
    manifest = {"name": PKG, "version": VERSION, "description": "Stockade network test package",
                "main": "index.js", "license": "MIT"}
    files = [("package/package.json", (json.dumps(manifest, indent=2) + "\n").encode()),
             ("package/index.js", b"module.exports = 42;\n")]
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=FIXED_EPOCH) as gz:
        with tarfile.open(fileobj=gz, mode="w", format=tarfile.USTAR_FORMAT) as tar:
            for name, data in files:
                ti = tarfile.TarInfo(name)
                ti.size, ti.mode, ti.mtime = len(data), 0o644, FIXED_EPOCH
                tar.addfile(ti, io.BytesIO(data))
    tgz = raw.getvalue()
    dist = {
        "tarball": NPM_TARBALL_URL,
        "shasum": hashlib.sha1(tgz).hexdigest(),
        "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode(),
    }
    when = "2024-01-01T00:00:00.000Z"
    packument = {
        "_id": PKG, "name": PKG, "description": manifest["description"],
        "dist-tags": {"latest": VERSION},
        "versions": {VERSION: dict(manifest, _id=f"{PKG}@{VERSION}", dist=dist)},
        "time": {"created": when, "modified": when, VERSION: when},
        "license": "MIT",
    }
    npmdir = os.path.join(d, "npm")
    os.makedirs(npmdir, exist_ok=True)
    with open(os.path.join(npmdir, NPM_TGZ_NAME), "wb") as f:
        f.write(tgz)
    body = json.dumps(packument, indent=2).encode()
    with open(os.path.join(npmdir, f"{PKG}.json"), "wb") as f:
        f.write(body)
    return tgz, body


# ---------------------------------------------------------------- git

def make_repo(d):
    bare = os.path.join(d, REPO_NAME)
    shutil.rmtree(bare, ignore_errors=True)
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull,
               GIT_AUTHOR_DATE=f"{FIXED_EPOCH} +0000", GIT_COMMITTER_DATE=f"{FIXED_EPOCH} +0000",
               GIT_TERMINAL_PROMPT="0")
    ident = ["-c", "user.name=Stockade Tests", "-c", "user.email=tests@stockade.invalid"]
    with tempfile.TemporaryDirectory(dir=d) as work:
        run(["git", "init", "-q", "-b", "main", work], env=env)
        with open(os.path.join(work, "README"), "w") as f:
            f.write("hello from tinyrepo\n")
        run(["git", "add", "README"], cwd=work, env=env)
        run(["git", *ident, "commit", "-q", "-m", "tinyrepo: first commit"], cwd=work, env=env)
        run(["git", "clone", "-q", "--bare", "--no-local", work, bare], env=env)
    run(["git", "update-server-info"], cwd=bare, env=env)
    return bare


# ---------------------------------------------------------------- serving

def normalize(name):  # PEP 503
    return re.sub(r"[-_.]+", "-", name).lower()


class Site:
    def __init__(self, d, wheel, tgz, packument, repo):
        self.wheel = wheel
        self.wheel_sha256 = hashlib.sha256(wheel).hexdigest()
        self.tgz = tgz
        self.packument = packument
        self.repo = os.path.realpath(repo)
        url = f"https://files.pythonhosted.org/packages/{WHEEL_NAME}#sha256={self.wheel_sha256}"
        self.simple_project = (
            "<!DOCTYPE html>\n<html><head><meta name=\"pypi:repository-version\" content=\"1.0\">"
            f"<title>Links for {PKG}</title></head><body><h1>Links for {PKG}</h1>\n"
            f"<a href=\"{html.escape(url)}\">{WHEEL_NAME}</a><br>\n</body></html>\n").encode()
        self.simple_index = (
            "<!DOCTYPE html>\n<html><head><meta name=\"pypi:repository-version\" content=\"1.0\">"
            "<title>Simple index</title></head><body>\n"
            f"<a href=\"/simple/{PKG}/\">{PKG}</a><br>\n</body></html>\n").encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "stockade-upstreams"
    sys_version = ""
    timeout = 120

    def setup(self):
        if isinstance(self.request, ssl.SSLSocket):
            # The handshake runs here, in the connection's thread, not in accept().
            self.request.settimeout(self.timeout)
            self.request.do_handshake()
        super().setup()

    def log_message(self, fmt, *args):
        log(f"{self.server.scheme} {self.address_string()} {fmt % args}")

    def log_request(self, code="-", size="-"):
        if VERBOSE:
            log(f"{self.server.scheme} host={self._host()} {self.requestline!r} {code}")

    def _host(self):
        headers, path = getattr(self, "headers", None), getattr(self, "path", "")
        host = headers.get("Host", "") if headers else ""
        if path.startswith(("http://", "https://")):  # absolute-form, tolerated
            host = urlsplit(path).netloc or host
        host = host.strip().lower()
        if host.startswith("["):
            return host[1:host.index("]")] if "]" in host else host
        return host.rsplit(":", 1)[0] if host.count(":") == 1 else host

    def _path(self):
        p = self.path
        if p.startswith(("http://", "https://")):
            p = urlsplit(p).path or "/"
        return p.split("?", 1)[0].split("#", 1)[0]

    def _send(self, code, body=b"", ctype="text/plain; charset=utf-8", extra=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _not_found(self):
        self._send(404, b"not found\n")

    def _drain_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        while n > 0:
            chunk = self.rfile.read(min(n, CHUNK))
            if not chunk:
                break
            n -= len(chunk)
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            self.close_connection = True  # not worth parsing; just drop the connection

    def do_GET(self):
        host, path = self._host(), self._path()
        site = self.server.site
        if host == "pypi.org":
            return self._pypi(site, path)
        if host == "files.pythonhosted.org":
            if path == f"/packages/{WHEEL_NAME}":
                return self._send(200, site.wheel, "application/octet-stream")
            return self._not_found()
        if host == "registry.npmjs.org":
            if path in (f"/{PKG}", f"/{PKG}/"):
                return self._send(200, site.packument, "application/json")
            if path == f"/{PKG}/-/{NPM_TGZ_NAME}":
                return self._send(200, site.tgz, "application/octet-stream")
            return self._send(404, b'{"error":"Not found"}', "application/json")
        if host == "github.com":
            return self._github(site, path)
        m = re.fullmatch(r"/bytes/(\d{1,15})", path)
        if m:
            return self._bytes(int(m.group(1)))
        self._send(200, f"hello from {host}\n".encode())

    def do_HEAD(self):
        self.do_GET()

    def do_POST(self):
        self._drain_body()
        host = self._host()
        if host in ("pypi.org", "files.pythonhosted.org", "registry.npmjs.org", "github.com"):
            return self._not_found()  # e.g. npm audit; git smart-http POSTs
        self._send(200, f"hello from {host}\n".encode())

    do_PUT = do_POST

    def _pypi(self, site, path):
        if path == "/simple":
            return self._send(301, b"", extra=[("Location", "/simple/")])
        if path == "/simple/":
            return self._send(200, site.simple_index, "text/html; charset=utf-8")
        m = re.fullmatch(r"/simple/([^/]+)(/?)", path)
        if m and normalize(m.group(1)) == PKG:
            if not m.group(2) or m.group(1) != PKG:
                return self._send(301, b"", extra=[("Location", f"/simple/{PKG}/")])
            return self._send(200, site.simple_project, "text/html; charset=utf-8")
        self._not_found()

    def _github(self, site, path):
        m = re.fullmatch(r"/owner/tinyrepo(?:\.git)?/(.+)", path)
        if not m:
            return self._not_found()
        full = os.path.realpath(os.path.join(site.repo, m.group(1)))
        if not full.startswith(site.repo + os.sep) or not os.path.isfile(full):
            return self._not_found()
        with open(full, "rb") as f:
            body = f.read()
        ctype = "application/x-git-loose-object" if "/objects/" in full else "text/plain"
        if full.endswith(".pack"):
            ctype = "application/x-git-packed-objects"
        elif full.endswith(".idx"):
            ctype = "application/x-git-packed-objects-toc"
        self._send(200, body, ctype)

    def _bytes(self, n):
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(n))
        self.end_headers()
        if self.command == "HEAD":
            return
        left = n
        while left >= CHUNK:
            self.wfile.write(ZERO_CHUNK)
            left -= CHUNK
        if left:
            self.wfile.write(ZERO_CHUNK[:left])


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, scheme, site, ctx=None):
        self.scheme, self.site, self.ctx = scheme, site, ctx
        super().__init__(("127.0.0.1", 0), Handler)

    def get_request(self):
        sock, addr = self.socket.accept()
        if self.ctx is not None:
            sock = self.ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, addr

    def handle_error(self, request, client_address):
        if VERBOSE:
            super().handle_error(request, client_address)


def die_with_parent():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def main():
    global VERBOSE
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True, help="where the CA, artefacts and upstreams.json go")
    ap.add_argument("--verbose", action="store_true", help="log requests to stderr")
    ap.add_argument("--die-with-parent", action="store_true",
                    help="get SIGTERM when the parent process exits (PR_SET_PDEATHSIG)")
    args = ap.parse_args()
    VERBOSE = args.verbose
    if args.die_with_parent:
        die_with_parent()

    d = os.path.abspath(args.dir)
    os.makedirs(d, exist_ok=True)
    state = os.path.join(d, "upstreams.json")
    if os.path.exists(state):
        os.remove(state)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    ca, cert, key = make_certs(d)
    wheel = make_wheel(d)
    tgz, packument = make_npm(d)
    repo = make_repo(d)
    site = Site(d, wheel, tgz, packument, repo)

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ctx.set_alpn_protocols(["http/1.1"])
    https = Server("https", site, ctx)
    http = Server("http", site)
    for srv in (https, http):
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.2},
                         daemon=True).start()

    info = {
        "https_port": https.server_address[1],
        "http_port": http.server_address[1],
        "ca": ca,
        "pid": os.getpid(),
        "dir": d,
        "wheel": os.path.join(d, "packages", WHEEL_NAME),
        "wheel_sha256": site.wheel_sha256,
        "npm_tarball": os.path.join(d, "npm", NPM_TGZ_NAME),
        "repo": repo,
    }
    tmp = state + f".tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(info, f, indent=2)
        f.write("\n")
    os.replace(tmp, state)
    log(f"listening: https=127.0.0.1:{info['https_port']} http=127.0.0.1:{info['http_port']}")

    while not stop.wait(3600):
        pass
    for srv in (https, http):
        srv.shutdown()
        srv.server_close()
    try:
        os.remove(state)
    except FileNotFoundError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
