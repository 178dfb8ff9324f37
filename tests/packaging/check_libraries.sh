#!/usr/bin/env bash
# ctest entry: the shared objects the stockade binary maps at every start, whatever the verb.
#   check_libraries.sh STOCKADE
# `run` and `serve` start-up time and RSS are benchmarked against bubblewrap (bench/startup.sh),
# and every library linked is mapped and relocated at each start. libarchive and what it brings
# (libxml2, ICU, nettle, the compressors) are loaded by `image import|pull|build` on first use
# (images/libarchive.h), never linked; libstdc++, libgcc, libseccomp and OpenSSL are linked
# statically where their archives exist, so they are not checked here.
set -euo pipefail
stockade="$1"
fail() {
    echo "FAIL: $*"
    exit 1
}

command -v readelf >/dev/null || { echo "SKIP: readelf is not installed (binutils)"; exit 77; }
needed="$(readelf -d "$stockade" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p')"
[ -n "$needed" ] || fail "readelf -d $stockade lists no NEEDED library"
linked="$(grep -E '^lib(archive|xml2|icu[a-z]*|nettle|lzma|zstd|lz4|bz2|acl|stdc\+\+|gcc_s)\.' <<<"$needed" || true)"
[ -z "$linked" ] || fail "$stockade links $(echo "$linked" | paste -sd' ') (NEEDED):"$'\n'"$needed"
echo "ok: $stockade needs $(echo "$needed" | paste -sd' ')"
