#!/bin/bash
# gen_completion.sh JEPA OUT — write the bash completion of `jepa` to OUT, from the built
# binary: the commands from `jepa --help`, each command's options from its option table
# (`jepa help --options CMD`, the table cli/options.c the parsers are checked against).
# Completes the command, bench's benchmark, `help CMD`, every option (both spellings),
# the choices of an option that has them (--pool mean|cls|lewm|none) and file names for
# the values that are files. Run by meson at build time (tools/meson.build).
set -eu
JEPA=$1 OUT=$2
cmds=$("$JEPA" --help | awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {exit}')
[ -n "$cmds" ] || { echo "gen_completion.sh: no commands in '$JEPA --help'" >&2; exit 1; }
{
    echo "# bash completion for jepa, generated from 'jepa --help' and 'jepa help --options CMD'"
    echo "# by tools/gen_completion.sh; do not edit."
    echo "_jepa() {"
    echo '    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd=${COMP_WORDS[1]:-} opts="" files="" values=""'
    echo '    COMPREPLY=()'
    echo '    if [ "$COMP_CWORD" -eq 1 ]; then'
    echo "        COMPREPLY=(\$(compgen -W \"$(echo $cmds) help -V --version --help\" -- \"\$cur\"))"
    echo '        return'
    echo '    fi'
    echo '    if [ "$cmd" = help ] && [ "$COMP_CWORD" -eq 2 ]; then'
    echo "        COMPREPLY=(\$(compgen -W \"$(echo $cmds)\" -- \"\$cur\"))"
    echo '        return'
    echo '    fi'
    echo '    if [ "$cmd" = bench ] && [ "$COMP_CWORD" -eq 2 ]; then'
    echo '        COMPREPLY=($(compgen -W "kernels gpu world encoder" -- "$cur"))'
    echo '        return'
    echo '    fi'
    echo '    case $cmd in'
    for c in $cmds; do
        names="" files="" choices=""
        while read -r name alias kind meta; do
            spell=$name
            [ "$alias" != - ] && spell="$name $alias"
            names="$names $spell"
            case $kind in
                in | out | file) files="$files $spell" ;;
            esac
            if [ "$kind" = value ] && [[ $meta == *"|"* ]]; then
                for s in $spell; do choices="$choices        $s) values=\"${meta//|/ }\" ;;"$'\n'; done
            fi
        done < <("$JEPA" help --options "$c")
        echo "    $c)"
        echo "        opts=\"--help${names}\""
        echo "        files=\"${files# }\""
        if [ -n "$choices" ]; then
            echo '        case $prev in'
            printf '%s' "$choices"
            echo '        esac'
        fi
        echo '        ;;'
    done
    echo '    esac'
    echo '    if [ -n "$values" ]; then COMPREPLY=($(compgen -W "$values" -- "$cur")); return; fi'
    echo '    case " $files " in *" $prev "*) COMPREPLY=($(compgen -f -- "$cur")); return ;; esac'
    echo '    if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W "$opts" -- "$cur")); return; fi'
    echo '    COMPREPLY=($(compgen -f -- "$cur"))'
    echo "}"
    echo "complete -o filenames -o bashdefault -F _jepa jepa"
} >"$OUT.tmp"
mv "$OUT.tmp" "$OUT"
