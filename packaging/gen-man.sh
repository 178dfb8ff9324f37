#!/usr/bin/env bash
# Man pages made by help2man from the CLI's own --help: stockade.1, and stockade-VERB.1 for each
# verb `stockade --help` lists, a verb's subcommands in its page. Gzipped -9n, as Debian wants.
#   gen-man.sh STOCKADE OUTDIR CHANGELOG
# OUTDIR is made afresh: a verb the CLI no longer has leaves no page behind.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=packaging/cli-help.bash
source "$here/cli-help.bash"
stockade="$(realpath "$1")"
out="$2"
changelog="$3"

# The pages' date is the changelog's latest entry, not today: a rebuild gives the same bytes.
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
    SOURCE_DATE_EPOCH="$(date -d "$(sed -n 's/^ -- .*>  //p' "$changelog" | head -1)" +%s)"
    export SOURCE_DATE_EPOCH
fi
read -r _ version < <("$stockade" --version)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
rm -rf "$out"
mkdir -p "$out"

# help2man runs PROGRAM --help; ours prints the text made below, whatever it is asked.
printf '#!/bin/sh\nexec cat "%s/help.txt"\n' "$work" >"$work/help"
chmod +x "$work/help"

# page NAME SUMMARY SEE_ALSO: help2man over $work/help.txt into OUTDIR/NAME.1.gz.
page() {
    local name="$1" summary="$2" see_also="$3"
    printf '[SEE ALSO]\n%s\n' "$see_also" >"$work/include"
    help2man --no-info --locale=C.UTF-8 --section=1 --name="$summary" \
        --version-string="$name (stockade) $version" --include="$work/include" \
        --output="$work/$name.1" "$work/help"
    gzip -9n <"$work/$name.1" >"$out/$name.1.gz"
}

verbs=$(cli_subcommands "$stockade")
see_also=""
for verb in $verbs; do
    see_also+="${see_also:+,
}.BR stockade-$verb (1)"
done
"$stockade" --help >"$work/help.txt"
page stockade "a sandboxed tool runner for AI coding agents" "$see_also"

# A verb's page: its help, then each subcommand's under a heading of its usage line (help2man
# makes a line ending in ':' followed by indented ones a subsection), its summary first.
while IFS=$'\t' read -r _ verb _ description; do
    "$stockade" "$verb" --help >"$work/help.txt"
    for sub in $(cli_subcommands "$stockade" "$verb"); do
        "$stockade" "$verb" "$sub" --help | awk '
            NR == 1 { summary = $0; next }
            /^Usage: / { sub(/^Usage: /, ""); print ""; print $0 ":"; print "       " summary; print ""; next }
            /^[A-Za-z]+:$/ || /^$/ { next }
            { print }' >>"$work/help.txt"
    done
    # The NAME line: the description up to its first colon ("The image store: import, ...").
    page "stockade-$verb" "${description%%:*}" ".BR stockade (1)"
done < <(cli_entries "$stockade" | awk -F'\t' '$1 == "sub"')
