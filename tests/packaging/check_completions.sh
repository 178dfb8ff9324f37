#!/usr/bin/env bash
# ctest entry: the shell completions the build made (packaging/gen-completions.sh) offer, for
# every command path of the binary, exactly the subcommands and options its --help lists, read
# here with a plain grep rather than the generator's parser; and an option's listed values.
#   check_completions.sh STOCKADE COMPLETIONS_DIR
# bash always; zsh and fish where installed (debian-packages.txt lists both for the tests).
set -euo pipefail
stockade="$(realpath "$1")"
completions="$(realpath "$2")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir "$work/empty"
cd "$work/empty" # the file names a shell adds to its candidates: none
fail() {
    echo "FAIL: $*"
    exit 1
}

help_flags() { "$stockade" "$@" --help | grep -oE '^  (-[a-zA-Z],)?--?[a-z][a-z-]*' | sed 's/^  //' | tr ',' '\n' | sort; }
help_subs() { "$stockade" "$@" --help | sed -n '/^Subcommands:$/,/^$/p' | grep -oE '^  [a-z]+' | sed 's/^  //' | sort; }
paths=("")
for verb in $(help_subs); do
    paths+=("$verb")
    for sub in $(help_subs "$verb"); do paths+=("$verb $sub"); done
done
[ "${#paths[@]}" -gt 10 ] || fail "only ${#paths[@]} command paths in stockade --help"

# bash: _stockade as bash calls it, COMP_WORDS holding the words up to the cursor.
bash_complete() {
    bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
             _stockade; printf "%s\n" "${COMPREPLY[@]}"' _ "$completions/stockade.bash" "$@" | sed '/^$/d' | sort
}
# zsh: _stockade with zsh's completion functions replaced by ones that print the candidates
# matching the word at the cursor.
zsh_complete() {
    zsh -f -c 'matching() { print -rl -- ${(M)@:#${words[CURRENT]}*} }
               _describe() { local -a c=(${(P)${@[-1]}}); (( $#c )) && matching ${c%%:*} }
               compadd() { matching ${(P)${@[-1]}} }
               _files() { }
               source "$1" >/dev/null; shift; words=("$@"); CURRENT=$#; _stockade' \
        _ "$completions/_stockade" "$@" | sort
}
# fish: its own `complete -C`, on a command line ending where the cursor is.
fish_complete() {
    local line="$*"
    # shellcheck disable=SC2016 # $argv is fish's, expanded by fish
    fish --no-config -c 'source $argv[1]; complete -C$argv[2]' "$completions/stockade.fish" "$line" |
        cut -f1 | sort
}

shells=(bash)
for shell in zsh fish; do
    if command -v "$shell" >/dev/null; then shells+=("$shell"); else echo "note: no $shell here: its completions are not run"; fi
done
bash -c 'source "$1"; complete -p stockade' _ "$completions/stockade.bash" | grep -q -- '-F _stockade stockade$' ||
    fail "bash: sourcing stockade.bash does not register _stockade"

for shell in "${shells[@]}"; do
    for path in "${paths[@]}"; do
        # shellcheck disable=SC2086 # the path is its words
        diff <(help_flags $path) <("${shell}_complete" stockade $path -) >"$work/diff" ||
            fail "$shell: the options of 'stockade $path' (< help, > completion):"$'\n'"$(cat "$work/diff")"
        # shellcheck disable=SC2086
        diff <(help_subs $path) <("${shell}_complete" stockade $path "") >"$work/diff" ||
            fail "$shell: the subcommands of 'stockade $path' (< help, > completion):"$'\n'"$(cat "$work/diff")"
    done
    [ "$("${shell}_complete" stockade --log-format "" | xargs)" = "json text" ] ||
        fail "$shell: --log-format's values are not json and text"
    [ "$("${shell}_complete" stockade pol | xargs)" = policy ] || fail "$shell: 'pol' does not complete to policy"
    echo "ok: $shell completes ${#paths[@]} command paths as their --help lists them"
done
