#!/usr/bin/env bash
# ctest entry: the Debian package of the build tree it is given (cpack -G DEB, packaging what
# that tree built: no second build), checked as a user would meet it.
#   check_deb.sh BUILD_DIR
# - its files are exactly what ships: the binary, a man page per verb of `stockade --help`, the
#   three completions, the unit, the example, copyright and changelog;
# - its control names ripgrep and the shared libraries among its Depends;
# - lintian has nothing to say at warning level or above (the info tags are printed);
# - it installs into a throwaway root with a dpkg database of its own (--force-depends: that
#   root has no libc6 recorded), where the binary answers --version, every man page renders
#   without a warning, the unit starts the installed binary and the bash completion loads; then
#   it is purged, and nothing of it is left.
set -euo pipefail
build="$(realpath "$1")"
stockade="$build/stockade"
if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: dpkg --root installs as root"
    exit 77
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() {
    echo "FAIL: $*"
    exit 1
}

cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/out" >"$work/cpack.log" 2>&1 ||
    fail "cpack:"$'\n'"$(cat "$work/cpack.log")"
debs=("$work"/out/stockade_*.deb)
if [ "${#debs[@]}" -ne 1 ] || [ ! -f "${debs[0]}" ]; then
    fail "cpack made no stockade_*.deb: $(ls "$work/out")"
fi
deb="${debs[0]}"
read -r _ version < <("$stockade" --version)
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "version $(dpkg-deb -f "$deb" Version), not $version"

# The files, against the list the binary implies.
verbs=$("$stockade" --help | sed -n '/^Subcommands:$/,/^$/p' | grep -oE '^  [a-z]+' | sed 's/^  //')
{
    echo ./usr/bin/stockade
    echo ./usr/share/man/man1/stockade.1.gz
    for verb in $verbs; do echo "./usr/share/man/man1/stockade-$verb.1.gz"; done
    echo ./usr/share/bash-completion/completions/stockade
    echo ./usr/share/zsh/vendor-completions/_stockade
    echo ./usr/share/fish/vendor_completions.d/stockade.fish
    echo ./lib/systemd/system/stockade-http.service
    echo ./usr/share/doc/stockade/examples/tenants.example.json
    echo ./usr/share/stockade/seccomp-stockade-nested.json
    echo ./usr/share/doc/stockade/copyright
    echo ./usr/share/doc/stockade/changelog.gz
    echo ./usr/share/lintian/overrides/stockade
} | sort >"$work/expected"
dpkg-deb -c "$deb" | awk '$1 !~ /^d/ { print $6 }' | sort >"$work/files"
diff "$work/expected" "$work/files" >"$work/diff" ||
    fail "the package's files (< expected, > packaged):"$'\n'"$(cat "$work/diff")"
dpkg-deb -c "$deb" | awk '$2 != "root/root" { bad = 1; print } END { exit bad }' ||
    fail "files not owned by root/root"
depends="$(dpkg-deb -f "$deb" Depends)"
for dep in ripgrep libc6 libarchive13; do
    grep -Eq "(^|, )$dep( |,|$)" <<<"$depends" || fail "Depends lacks $dep: $depends"
done

if command -v lintian >/dev/null; then
    lintian --fail-on error,warning --display-info "$deb" >"$work/lintian" 2>&1 ||
        fail "lintian:"$'\n'"$(cat "$work/lintian")"
    sed 's/^/lintian: /' "$work/lintian"
else
    echo "note: lintian is not installed: the package is not linted"
fi

root="$work/root"
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
touch "$root/var/lib/dpkg/status" "$root/var/lib/dpkg/available"
dpkg --root="$root" --force-depends -i "$deb" >"$work/dpkg.log" 2>&1 ||
    fail "dpkg -i:"$'\n'"$(cat "$work/dpkg.log")"
dpkg --root="$root" -s stockade | grep -q '^Status: install ok installed$' || fail "not installed"
[ "$("$root/usr/bin/stockade" --version)" = "stockade $version" ] || fail "the installed binary's --version"
for page in "$root"/usr/share/man/man1/*.1.gz; do
    out="$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)"
    [ -z "$out" ] || fail "man -l $(basename "$page") warns:"$'\n'"$out"
    MANWIDTH=80 man -l "$page" 2>/dev/null | grep -q '^NAME' || fail "$(basename "$page") has no NAME"
done
# A verb's page names each of its options.
for flag in $("$stockade" serve --help | grep -oE '^  --[a-z-]+'); do
    zcat "$root/usr/share/man/man1/stockade-serve.1.gz" | grep -qF -- "${flag//-/\\-}" ||
        fail "stockade-serve.1 does not name $flag"
done
grep -q '^ExecStart=/usr/bin/stockade serve --http ' "$root/lib/systemd/system/stockade-http.service" ||
    fail "the unit does not start /usr/bin/stockade"
bash -c 'source "$1"; complete -p stockade' _ "$root/usr/share/bash-completion/completions/stockade" |
    grep -q -- '-F _stockade stockade$' || fail "the installed bash completion does not load"

dpkg --root="$root" --purge stockade >>"$work/dpkg.log" 2>&1 || fail "dpkg --purge:"$'\n'"$(cat "$work/dpkg.log")"
left="$(find "$root" -path "$root/var" -prune -o ! -type d -print)"
[ -z "$left" ] || fail "left after --purge: $left"
! dpkg --root="$root" -s stockade >/dev/null 2>&1 || fail "still known to dpkg after --purge"
echo "ok: $(basename "$deb"): $(wc -l <"$work/files") files; installs, runs and purges cleanly"
