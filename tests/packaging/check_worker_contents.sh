#!/usr/bin/env bash
# ctest entry: what the session worker, the one program of ours inside every sandbox, holds.
#   check_worker_contents.sh STOCKADE_WORKER
# docs/threat-model.md ("What runs inside") says the worker carries none of the supervisor's
# front ends, parsers, cryptography or logging: no symbol of theirs may be linked into it. A
# dependency that pulls one in (a workspace file logging through common/log.h, a tools header)
# fails here with the symbols it brought.
set -euo pipefail
worker="$1"
fail() {
    echo "FAIL: $*"
    exit 1
}

command -v nm >/dev/null || { echo "SKIP: nm is not installed (binutils)"; exit 77; }
symbols="$(nm -C "$worker")" || fail "nm -C $worker failed"
[ -n "$symbols" ] || { echo "SKIP: $worker has no symbol table (stripped)"; exit 77; }
# spdlog: logging formats; boost: Beast and Asio (HTTP); CLI: CLI11; toml; OpenSSL; libseccomp
# (the filter is compiled by the supervisor); Stockade's own front ends, policy, images, tools.
pattern='spdlog::|boost::|CLI::|toml::|EVP_|OPENSSL_|SSL_CTX|seccomp_rule|stockade::(mcp|policy|images|tools|network|runner)::'
found="$(grep -E "$pattern" <<<"$symbols" | awk '{ $1 = ""; $2 = ""; print }' | sort -u | head -5 || true)"
[ -z "$found" ] || fail "$worker links what must stay outside the sandbox, e.g.:"$'\n'"$found"
echo "ok: $worker links none of: $pattern"
