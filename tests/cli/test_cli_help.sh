#!/bin/bash
# test_cli_help.sh — every option a command's parser accepts is in its --help and in the
# option table (cli/options.c, `jepa help --options CMD`), and the table has nothing the
# parser refuses. The candidates are every option literal in the CLI's sources, so an
# option added to a parser without help (or without a table row) fails here; "accepted"
# is measured by running the binary: `jepa CMD OPT VALUE` does not answer "unknown option".
# usage: test_cli_help.sh JEPA CLI_SOURCE_DIR
set -u
JEPA=$1 SRC=$2
jepa() { ${MESON_EXE_WRAPPER:-} "$JEPA" "$@"; }
jepa --help >/dev/null 2>&1
[ $? -eq 126 ] && { echo "cannot execute $JEPA here (cross build without an exe wrapper): skipped"; exit 77; }
fails=0
bad() { echo "FAIL $1"; fails=$((fails + 1)); }

# every "-x" / "--name" string literal of the CLI's sources, -h / --help aside
mapfile -t cands < <(grep -ohE '"--?[a-zA-Z][a-zA-Z0-9-]*"' "$SRC"/*.c | tr -d '"' | sort -u |
                     grep -vxE -- '-h|--help|-V|--version')
[ "${#cands[@]}" -gt 80 ] || bad "only ${#cands[@]} option literals found in $SRC"

# accepted CMD OPT: the parser of CMD does not call OPT unknown (forms: the args before OPT)
accepted() {
    local cmd=$1 opt=$2 out
    shift 2
    for pre in "$@"; do
        # shellcheck disable=SC2086
        out=$(timeout 20 ${MESON_EXE_WRAPPER:-} "$JEPA" $cmd $pre "$opt" __v__ 2>&1 </dev/null)
        grep -qF -- "unknown option '$opt'" <<<"$out" || return 0
    done
    return 1
}

check() {   # check CMD FORM...: the accepted options against the help and the table
    local cmd=$1 help table acc=() opt before=$fails
    shift
    help=$(jepa help "$cmd" 2>&1)
    table=$(jepa help --options "$cmd" | awk '{print $1; if ($2 != "-") print $2}' | sort -u)
    for opt in "${cands[@]}"; do
        accepted "$cmd" "$opt" "$@" && acc+=("$opt")
    done
    for opt in "${acc[@]}"; do
        grep -qE -- "(^|[^a-zA-Z0-9-])$opt([^a-zA-Z0-9-]|\$)" <<<"$help" || bad "jepa $cmd accepts $opt; its --help does not say it"
        grep -qxF -- "$opt" <<<"$table" || bad "jepa $cmd accepts $opt; cli/options.c's table has no row for it"
    done
    local accs
    accs=$(printf '%s\n' "${acc[@]}" | sort -u)
    while read -r opt; do
        [ -n "$opt" ] && ! grep -qxF -- "$opt" <<<"$accs" && bad "jepa $cmd: the table has $opt; the parser refuses it"
    done <<<"$table"
    [ "$fails" -eq "$before" ] && echo "ok   jepa $cmd: ${#acc[@]} options, each in its --help and the table"
}

check embed "" "--stream __s__"      # a file's form and a live stream's
check classify ""
check predict "" "--emb __e__"          # the encoder's form and the world model's
check rollout ""
check plan ""
# a command this build leaves out answers every option with that fact: nothing to check
has() { jepa --version | grep -qx "$1: yes" || { echo "skip jepa $2: this build has no $1 (jepa --version)"; return 1; }; }
has server serve && check serve ""
check info ""
check quantize ""
has pull pull && check pull ""
# a model that cannot be opened: tune parses every option, then stops at the model instead
# of running the whole search for `-o __v__` (about 20 s on 2 cores)
check tune "-m /nonexistent/cli-help.gguf"
check synth ""
check cpu ""
check bench kernels gpu world encoder

# jepa help CMD is CMD --help; -V and --version print the version
for cmd in embed predict classify rollout plan serve info quantize synth cpu bench pull tune; do
    { [ $cmd = serve ] && ! has server serve >/dev/null; } && continue
    { [ $cmd = pull ] && ! has pull pull >/dev/null; } && continue
    [ "$(jepa help $cmd 2>&1)" = "$(jepa $cmd --help 2>&1)" ] || bad "jepa help $cmd differs from jepa $cmd --help"
    jepa help "$cmd" >/dev/null 2>&1 || bad "jepa help $cmd exits non-zero"
done
v=$(jepa -V) && [ "$v" = "$(jepa --version)" ] && grep -qE '^jepa\.c [0-9]' <<<"$v" || bad "-V / --version: '$v'"
jepa help nosuch >/dev/null 2>&1; [ $? -eq 2 ] || bad "jepa help nosuch: not a usage error"
# the top-level help: every command, the quantize types the kernels know, bench's four
top=$(jepa --help)
for w in embed predict rollout plan classify serve info quantize synth cpu bench q4_K q6_K q5_1 'kernels|gpu|world|encoder' 'V-JEPA 2-AC'; do
    grep -qF -- "$w" <<<"$top" || bad "the top-level help lacks '$w'"
done
# predict --help shows the world-model forms too
ph=$(jepa predict --help)
for w in --emb --actions --tokens --states --ctx --tgt; do grep -qF -- "$w" <<<"$ph" || bad "predict --help lacks $w"; done

[ "$fails" -eq 0 ] && echo "all cli help checks passed" || { echo "$fails failed"; exit 1; }
