#!/usr/bin/env bash
# Shell completions made from the CLI's own --help: OUTDIR/stockade.bash, OUTDIR/_stockade (zsh)
# and OUTDIR/stockade.fish. Each holds, per command path ("", "run", "policy check", ...), its
# subcommands, its options, which options take a value and the values CLI11 lists
# (TEXT:{text,json}); a word that is none of those completes as a file.
#   gen-completions.sh STOCKADE OUTDIR
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=packaging/cli-help.bash
source "$here/cli-help.bash"
stockade="$(realpath "$1")"
out="$2"
mkdir -p "$out"
header="generated from \`stockade --help\` by packaging/gen-completions.sh: do not edit."

# quote STRING: STRING in single quotes for bash and zsh; fish_quote: for fish, where a
# backslash escapes a quote or a backslash inside them.
quote() {
    printf "'%s'" "${1//\'/\'\\\'\'}"
}
fish_quote() {
    local s="${1//\\/\\\\}"
    printf "'%s'" "${s//\'/\\\'}"
}

# Per command path, the variables the generators below read:
#   subs[path]      "name<TAB>description" lines
#   opts[path]      "name<TAB>arg<TAB>description" lines, one per name (-h and --help apart)
declare -A subs opts
paths=()
# shellcheck disable=SC2086 # a path, unquoted below, is its words
while IFS= read -r path; do
    paths+=("$path")
    while IFS=$'\t' read -r kind names arg description; do
        case "$kind" in
            sub) subs["=$path"]+="$names"$'\t'"$description"$'\n' ;;
            opt)
                IFS=, read -ra split <<<"$names"
                for name in "${split[@]}"; do
                    opts["=$path"]+="$name"$'\t'"$arg"$'\t'"$description"$'\n'
                done
                ;;
        esac
    done < <(cli_entries "$stockade" $path)
done < <(cli_paths "$stockade")

# choices ARG: the values of TEXT:{a,b}, space-separated; nothing for any other type.
choices() {
    [[ "$1" =~ :\{([^}]*)\} ]] && echo "${BASH_REMATCH[1]//,/ }"
    return 0
}

# bash: a case per path setting subs, opts, valued (the options that take a value) and values.
{
    echo "# bash completion for stockade, $header"
    echo "_stockade_spec() {"
    echo "    case \"\$1\" in"
    for path in "${paths[@]}"; do
        names=$(cut -f1 <<<"${subs["=$path"]:-}" | xargs)
        flags=$(cut -f1 <<<"${opts["=$path"]:-}" | xargs)
        valued=$(awk -F'\t' '$2 != "-" { print $1 }' <<<"${opts["=$path"]:-}" | xargs)
        echo "        $(quote "$path"))"
        echo "            subs=$(quote "$names") flags=$(quote "$flags") valued=$(quote "$valued") values=''"
        while IFS=$'\t' read -r name arg _; do
            [ -n "$(choices "$arg")" ] && echo "            [[ \$2 == $name ]] && values=$(quote "$(choices "$arg")")"
        done <<<"${opts["=$path"]:-}"
        echo "            ;;"
    done
    echo "    esac"
    echo "}"
    cat <<'EOF'

# The command path is the words before the cursor that name a subcommand of the path so far;
# after `--` (run's command) and for an option's value without listed values, files.
_stockade() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD - 1]}"
    local path="" word i subs flags valued values
    COMPREPLY=()
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${COMP_WORDS[i]}"
        [[ "$word" == -- ]] && return 0
        _stockade_spec "$path" ""
        [[ " $subs " == *" $word "* ]] && path="${path:+$path }$word"
    done
    _stockade_spec "$path" "$prev"
    if [[ " $valued " == *" $prev "* ]]; then
        [[ -n "$values" ]] && mapfile -t COMPREPLY < <(compgen -W "$values" -- "$cur")
    elif [[ "$cur" == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$flags" -- "$cur")
    else
        mapfile -t COMPREPLY < <(compgen -W "$subs" -- "$cur")
    fi
    return 0
}
complete -o default -F _stockade stockade
EOF
} >"$out/stockade.bash"

# zsh: the same walk, with descriptions; arrays of "name:description" for _describe.
{
    echo "#compdef stockade"
    echo "# zsh completion for stockade, $header"
    echo "_stockade_spec() {"
    echo "    case \"\$1\" in"
    for path in "${paths[@]}"; do
        echo "        $(quote "$path"))"
        printf '            subs=('
        while IFS=$'\t' read -r name description; do
            [ -n "$name" ] && printf ' %s' "$(quote "$name:$description")"
        done <<<"${subs["=$path"]:-}"
        printf ' )\n            flags=('
        while IFS=$'\t' read -r name _ description; do
            [ -n "$name" ] && printf ' %s' "$(quote "${name//:/\\:}:$description")"
        done <<<"${opts["=$path"]:-}"
        printf ' )\n            valued=('
        awk -F'\t' '$2 != "-" { printf " %s", $1 }' <<<"${opts["=$path"]:-}"
        printf ' )\n            values=()\n'
        while IFS=$'\t' read -r name arg _; do
            [ -n "$(choices "$arg")" ] && echo "            [[ \$2 == $name ]] && values=($(choices "$arg"))"
        done <<<"${opts["=$path"]:-}"
        echo "            ;;"
    done
    echo "    esac"
    echo "}"
    cat <<'EOF'

_stockade() {
    local path="" word i
    local -a subs flags valued values
    for ((i = 2; i < CURRENT; i++)); do
        word="${words[i]}"
        if [[ "$word" == -- ]]; then
            # run's command: complete it as a command line of its own.
            shift $i words
            (( CURRENT -= i ))
            _normal
            return
        fi
        _stockade_spec "$path" ""
        (( ${subs[(I)$word:*]} )) && path="${path:+$path }$word"
    done
    _stockade_spec "$path" "${words[CURRENT - 1]}"
    if (( ${valued[(Ie)${words[CURRENT - 1]}]} )); then
        if (( $#values )); then
            compadd -a values
        else
            _files
        fi
    elif [[ "${words[CURRENT]}" == -* ]]; then
        _describe -t options 'option' flags
    else
        _describe -t commands 'subcommand' subs || _files
    fi
}

_stockade "$@"
EOF
} >"$out/_stockade"

# fish: one `complete` line per subcommand and option, under a condition on the command path.
{
    echo "# fish completion for stockade, $header"
    cat <<'EOF'
# The command path: the words so far that name a subcommand of the path before them; "--" once
# run's command has begun.
function __stockade_path
    set -l path
    for word in (commandline -opc)[2..-1]
        if test "$word" = --
            echo --
            return
        end
        if contains -- $word (__stockade_subs "$path")
            set path $path $word
        end
    end
    echo "$path"
end

function __stockade_is
    set -l path (__stockade_path)
    test "$path" = "$argv[1]"
end

function __stockade_subs
    switch "$argv[1]"
EOF
    for path in "${paths[@]}"; do
        names=$(cut -f1 <<<"${subs["=$path"]:-}" | xargs)
        [ -n "$names" ] && printf '        case %s\n            printf "%%s\\n" %s\n' "$(fish_quote "$path")" "$names"
    done
    echo "    end"
    echo "end"
    echo
    for path in "${paths[@]}"; do
        condition=$(fish_quote "__stockade_is $(fish_quote "$path")")
        while IFS=$'\t' read -r name description; do
            [ -n "$name" ] &&
                echo "complete -c stockade -f -n $condition -a $name -d $(fish_quote "$description")"
        done <<<"${subs["=$path"]:-}"
        while IFS=$'\t' read -r name arg description; do
            [ -n "$name" ] || continue
            case "$name" in
                --*) line="complete -c stockade -n $condition -l ${name#--}" ;;
                -?) line="complete -c stockade -n $condition -s ${name#-}" ;;
                *) line="complete -c stockade -n $condition -o ${name#-}" ;;
            esac
            if [ -n "$(choices "$arg")" ]; then
                line+=" -x -a $(fish_quote "$(choices "$arg")")"
            elif [ "$arg" != - ]; then
                line+=" -r"
            fi
            echo "$line -d $(fish_quote "$description")"
        done <<<"${opts["=$path"]:-}"
    done
} >"$out/stockade.fish"
