#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The bash completion that 'memlife help --bash-completion' generates (and make install puts in
# share/bash-completion/completions/memlife), driven by plain COMP_WORDS/COMP_CWORD emulation:
# commands, each command's options from its option rows, the values of enumerated options
# (--format: table json csv md, as args.c's table; --backend: the backend table's host and
# cuda), and file names elsewhere.
. "$(dirname "$0")/lib.bash"

"$MEMLIFE" help --bash-completion >"$TMP/memlife.bash"
# shellcheck disable=SC1090
. "$TMP/memlife.bash"
if complete -p memlife 2>/dev/null | grep -q -- '-F _memlife memlife'; then ok "completion registers _memlife"; else not_ok "completion registers _memlife" "$(complete -p memlife 2>&1)"; fi

# complete WORD...: the candidates for the last word of "memlife WORD...", sorted, one line.
complete_words() {
    COMP_WORDS=(memlife "$@")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMPREPLY=()
    _memlife
    printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ' | sed 's/ $//'
}

case_is() {   # NAME WANT WORD...
    local name=$1 want=$2 got
    shift 2
    got=$(complete_words "$@")
    if [ "$got" = "$want" ]; then ok "$name"; else not_ok "$name" "got '$got', want '$want'"; fi
}

case_is "commands starting with p" "plot predict" p
# Every command is a row of cli/commands.def, the table the completion is generated from: the
# completion offers exactly those names, plus memlife's two global options.
commands=$(sed -n 's/^ML_COMMAND(\([a-z_]*\),.*/\1/p' cli/commands.def | sort | tr '\n' ' ')
case_is "every command of cli/commands.def" "--help --version ${commands% }" ""
case_is "check's --w options" "--wide --world" check --w
case_is "run has the backend options" "--backend" run --back
case_is "predict has no backend options" "" predict --back
case_is "--format values" "csv json md table" predict --format ""
case_is "--color values" "always auto never" predict --color ""
case_is "-f values" "json" check -f j
case_is "--backend values" "cuda host torch" run --backend ""
case_is "--allocator values (run only)" "async chunked cuda" run --allocator ""
case_is "help completes command names" "equiv" help eq
case_is "file names after a command" "schedules/seed/03_rs_ag_naive.yaml" predict schedules/seed/03_rs_ag_n
case_is "-o completes file names (a folder; readline adds the slash)" "schedules/seed" check -o schedules/se
case_is "a value that is a number offers nothing" "" predict --world ""

# An option that does not apply to a command (cli/args.h ML_OPT_NA: plot writes SVG, trace
# trace-event JSON, neither takes --format) is not offered: not completed, not in --help, not in
# the man page's section of the command; given anyway, the command refuses it by name (exit 2).
case_is "trace: --format is not offered" "" trace --form
case_is "plot: --format is not offered" "" plot --form
case_is "predict: --format is offered" "--format" predict --form
for c in trace plot; do
    if "$MEMLIFE" $c --help | grep -q -- '--format'; then
        not_ok "$c --help does not list --format" "$("$MEMLIFE" $c --help | grep -- '--format')"
    else ok "$c --help does not list --format"; fi
    n=$("$MEMLIFE" help --man | awk -v c="$c" '$0 == ".SS \"memlife " c "\"" {on = 1; next} /^\.SS / {on = 0} on' |
        grep -c 'format')
    if [ "$n" -eq 0 ]; then ok "the man page's $c section has no --format"; else
        not_ok "the man page's $c section has no --format" "$n lines"; fi
    "$MEMLIFE" $c --format json schedules/seed/01_allreduce_full.yaml >/dev/null 2>"$TMP/na.err"
    rc=$?
    if [ $rc -eq 2 ] && grep -q "'--format' does not apply" "$TMP/na.err"; then
        ok "$c --format json: refused by name (exit 2)"; else
        not_ok "$c --format json: refused by name (exit 2)" "exit $rc: $(head -1 "$TMP/na.err")"; fi
done

# import reads one device's snapshot: the options that size or format a schedule's report do not
# apply, and export writes the one format there is; each is refused by name, not ignored.
for args in "import --world 2" "import --set P=1" "import --format json" "import --torch-limit 80GiB" \
    "import --plan x" "export --memory-viz --format json"; do
    set -- $args
    cmd=$1 opt=$2
    [ "$opt" = --memory-viz ] && opt=$3
    "$MEMLIFE" "$@" tests/torch/fixtures/snapshots/a_train.pickle -o "$TMP/na.out" >/dev/null 2>"$TMP/na.err"
    rc=$?
    if [ $rc -eq 2 ] && grep -q "^error: option '$opt' does not apply to '$cmd'" "$TMP/na.err" && [ ! -e "$TMP/na.out" ]; then
        ok "$args: refused by name (exit 2), nothing written"; else
        not_ok "$args: refused by name (exit 2)" "exit $rc: $(head -1 "$TMP/na.err")"; fi
done
case_is "import: --world is not offered" "" import --wor
case_is "plot --view values: every view of the table" "device requested torch torch.allocated torch.reserved" plot --view ""
if "$MEMLIFE" plot --help | tr -s ' \n' ' ' | grep -q "torch, torch.allocated, torch.reserved"; then
    ok "plot --help lists the torch views"; else not_ok "plot --help lists the torch views" "$("$MEMLIFE" plot --help | grep -A2 -- --view)"; fi

# The man page's ENVIRONMENT is the table every variable is checked by (runtime/exec/env.c): each
# variable the sources read with getenv is there, except those memlife or the MPI launcher sets
# for the ranks (MEMLIFE_LAUNCHED and the like, OMPI_*) and PATH.
"$MEMLIFE" help --man | sed -n '/^\.SH ENVIRONMENT/,/^\.SH FILES/p' | sed -n 's/^\.B //p' >"$TMP/env_man"
missing=""
for v in $( (grep -rhoE 'getenv\("[A-Z_0-9]+"\)' runtime analyzer cli | sed 's/getenv("\(.*\)")/\1/'
    grep -hoE '#define ML_INPUT_MAX_ENV "[A-Z_]+"' runtime/base/input.h | sed 's/.*"\(.*\)"/\1/') | sort -u); do
    case $v in MEMLIFE_LAUNCHED | MEMLIFE_PARENT_PID | MEMLIFE_RESULT_TMP | MEMLIFE_TERM | OMPI_* | PATH) continue ;; esac
    grep -qx "$v" "$TMP/env_man" || missing="$missing $v"
done
n=$(wc -l <"$TMP/env_man")
if [ -z "$missing" ] && [ "$n" -ge 18 ]; then ok "the man page's ENVIRONMENT lists every variable a user sets ($n)"; else
    not_ok "the man page's ENVIRONMENT lists every variable a user sets" "missing:$missing ($n listed)"; fi

# Values from the tables they are checked against: --no-lint's lint classes
# (analyzer/lint/lint_classes.c), --stream-order's orders (backends/host_streams.c hs_parse),
# --dtype's dtypes (runtime/ir/coll.c).
case_is "--no-lint values: the lint classes" "cross-rank" run --no-lint cr
case_is "--no-lint values: every class" "cross-rank double-alloc double-free double-release hazards inplace-offsets races use-after-free" run --no-lint ""
case_is "--stream-order values" "program reverse shuffle" run --stream-order ""
case_is "--dtype values" "bfloat16" predict --dtype bf
