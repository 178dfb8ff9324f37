#!/usr/bin/env bash
# ctest entry: every file the README and docs/ point at is in the repository — relative
# Markdown links ([text](path), anchors dropped) and the .md files they name in backquotes or
# plain text (DESIGN.md, say) — so that no doc sends a reader to a file they cannot open.
#   check_doc_links.sh REPOSITORY
set -euo pipefail
repo="$1"
status=0
for doc in "$repo"/README.md "$repo"/docs/*.md; do
    dir="$(dirname "$doc")"
    # Relative link targets: not URLs, not pure anchors.
    while IFS= read -r target; do
        path="${target%%#*}"
        [ -z "$path" ] && continue
        if [ ! -e "$dir/$path" ]; then
            echo "${doc#"$repo"/}: links to $target, which the repository lacks"
            status=1
        fi
    done < <(grep -o '\]([^)]*)' "$doc" | sed -e 's/^](//' -e 's/)$//' | grep -v -E '^(https?|mailto):' || true)
    # Markdown files named in the text, e.g. "DESIGN.md §3": at the top, in docs/, or beside it.
    while IFS= read -r name; do
        if [ ! -e "$repo/$name" ] && [ ! -e "$repo/docs/$name" ] && [ ! -e "$dir/$name" ]; then
            echo "${doc#"$repo"/}: names $name, which the repository lacks"
            status=1
        fi
    done < <(grep -o -E '(^|[^/A-Za-z0-9_.-])[A-Za-z0-9_-]+\.md\b' "$doc" | grep -o -E '[A-Za-z0-9_-]+\.md' | sort -u || true)
done
[ "$status" -eq 0 ] && echo "ok: every file the docs point at exists"
exit "$status"
