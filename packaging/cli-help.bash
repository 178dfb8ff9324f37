# Sourced by gen-man.sh and gen-completions.sh: what the CLI's own --help says, in lines a
# script can read. The man pages and completions are made from the built binary, so a flag or
# verb added to the CLI reaches them at the next build, and none can name one it lacks.

# cli_entries STOCKADE [WORD...]: the entries of `STOCKADE WORD... --help` (CLI11's layout), one
# a line, fields separated by tabs:
#   sub  NAME   -      DESCRIPTION      a subcommand
#   opt  NAMES  ARG    DESCRIPTION      an option; NAMES like -h,--help; ARG - for a flag, else
#                                       CLI11's type, e.g. TEXT, UINT, TEXT:{text,json}
# (never an empty field: `read` with IFS=$'\t' would fold two tabs into one)
#   pos  NAME   ARG    DESCRIPTION      a positional
cli_entries() {
    local stockade="$1"
    shift
    "$stockade" "$@" --help | awk '
        function flush() {
            if (name != "") printf "%s\t%s\t%s\t%s\n", kind, name, arg == "" ? "-" : arg, desc
            name = ""
        }
        /^[A-Za-z]+:$/ { flush(); section = $0; next }
        /^$/ { next }
        # A description CLI11 put on the next line: its left column was too wide.
        /^      +[^ ]/ && name != "" && desc == "" { sub(/^ +/, ""); desc = $0; next }
        /^  [^ ]/ && section != "" {
            flush()
            line = substr($0, 3)
            if (match(line, /   */)) {
                left = substr(line, 1, RSTART - 1); desc = substr(line, RSTART + RLENGTH)
            } else {
                left = line; desc = ""
            }
            split(left, words, " ")
            name = words[1]
            arg = substr(left, length(name) + 2)
            if (section == "Subcommands:") { kind = "sub"; arg = "-" }
            else if (section == "Positionals:") kind = "pos"
            else kind = "opt"
            next
        }
        # Any other line at column 0 (a usage or an epilogue) ends the section.
        /^[^ ]/ { flush(); section = "" }
        END { flush() }'
}

# cli_subcommands STOCKADE [WORD...]: the subcommands' names, one a line.
cli_subcommands() {
    cli_entries "$@" | awk -F'\t' '$1 == "sub" { print $2 }'
}

# cli_paths STOCKADE: every command path, one a line, the root first as an empty line:
# "", "run", ..., "policy", "policy check", ...
cli_paths() {
    local stockade="$1" verb sub
    echo ""
    for verb in $(cli_subcommands "$stockade"); do
        echo "$verb"
        for sub in $(cli_subcommands "$stockade" "$verb"); do
            echo "$verb $sub"
        done
    done
}
