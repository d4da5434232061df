#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# people.sh — output for people (base/human.h): sizes as people read them, tables that
# fit the terminal, colour only where asked for.
#
#   widths: predict, check, diff and equiv at COLUMNS=80 and 200: every line of stdout fits;
#     at 80 a note names the dropped columns and --wide; --wide is the pipe's full-width output
#     byte for byte, and that output is wider than 80 (else the fit would prove nothing). The
#     equiv table is 348 columns wide in full (its rows' A and B sides). optimize's table is on
#     stderr (stdout is the rewritten YAML, data not text for people). bench's table is in
#     tests/mpi/bench_host.sh (it needs ranks).
#   sizes: 05_contract_padding_trim at world 4: requested peak 34120 B = 33.32 KiB, shown
#     "~33.3 KiB"; floor 24080 B = 23.52 KiB, "~23.5 KiB"; device peak one 2 MiB page, exact;
#     --bytes gives the exact bytes.
#   colour: --color=always marks check's pass green (ESC[32m), a diagnostic's "error" bold red
#     (ESC[1;31m), a command-line error's too (ml_report: export's --rank, 'cannot write');
#     NO_COLOR (any value, "0" too; empty is unset, no-color.org) overrides it; a pipe,
#     --color=never and -o FILE get none.
#   environment: COLUMNS that is not a width is exit 2 before anything runs (exec/env.c).
. "$(dirname "$0")/lib.bash"

ESC=$'\033'
SEED=(schedules/seed/*.yaml)
NAIVE=schedules/seed/03_rs_ag_naive.yaml
OPT=schedules/seed/04_rs_ag_optimized.yaml
EQ=schedules/equiv/direct_vs_naive.yaml

# longest FILE: the widest line's length.
longest() { awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$1"; }

# The lines of equiv's provenance carry the time: left out where outputs are compared.
no_clock() { grep -v '^memlife [0-9].* | ' "$1" | grep -v '^  [0-9:TZ-]*$'; }

# fits NAME COLS NOTE CMD...: COLUMNS=COLS memlife CMD: exit as without COLUMNS, every line of
# stdout at most COLS, and NOTE (a fixed string; "" for none) among its lines.
fits() {
    local name=$1 cols=$2 note=$3
    shift 3
    "$MEMLIFE" "$@" >"$TMP/full" 2>/dev/null
    local want_rc=$?
    COLUMNS=$cols "$MEMLIFE" "$@" >"$TMP/fit" 2>"$TMP/fit.err"
    local rc=$? w
    w=$(longest "$TMP/fit")
    if [ "$rc" -ne "$want_rc" ]; then
        not_ok "$name" "exit $rc, want $want_rc (as at full width): $(head -c 200 "$TMP/fit.err")"
    elif [ "$w" -gt "$cols" ]; then
        not_ok "$name" "a line of $w columns at COLUMNS=$cols: $(awk -v c="$cols" 'length($0) > c' "$TMP/fit" | head -1)"
    elif [ -n "$note" ] && ! grep -qF -- "$note" "$TMP/fit"; then
        not_ok "$name" "no note '$note' in: $(head -c 400 "$TMP/fit")"
    elif [ -z "$note" ] && grep -q 'not shown to fit' "$TMP/fit"; then
        not_ok "$name" "a column was dropped at $cols: $(grep 'not shown' "$TMP/fit" | head -1)"
    else
        ok "$name"
    fi
}

# wide NAME CMD...: --wide at COLUMNS=80 is the pipe's output byte for byte, wider than 80.
wide() {
    local name=$1
    shift
    "$MEMLIFE" "$@" >"$TMP/full" 2>/dev/null
    COLUMNS=80 "$MEMLIFE" "$@" --wide >"$TMP/wide" 2>/dev/null
    local w
    w=$(longest "$TMP/wide")
    if ! diff -q <(no_clock "$TMP/full") <(no_clock "$TMP/wide") >/dev/null; then
        not_ok "$name" "--wide differs from the full width: $(diff <(no_clock "$TMP/full") <(no_clock "$TMP/wide") | head -4 | tr '\n' ' ')"
    elif [ "$w" -le 80 ]; then
        not_ok "$name" "the full width is only $w columns: the fit at 80 tests nothing"
    else
        ok "$name ($w columns)"
    fi
}

# --- widths ---------------------------------------------------------------------------------
fits "predict fits 80" 80 "  (not shown to fit 80 columns: peak at, live at peak; --wide shows them)" \
    predict "${SEED[@]}" -w 4
fits "predict fits 200" 200 "" predict "${SEED[@]}" -w 4
wide "predict --wide is the full width" predict "${SEED[@]}" -w 4
fits "check fits 80" 80 "(not shown to fit 80 columns: expectations, device, world; --wide shows them)" \
    check "${SEED[@]}" -w 4
fits "check fits 200" 200 "" check "${SEED[@]}" -w 4
wide "check --wide is the full width" check "${SEED[@]}" -w 4
fits "diff fits 80" 80 "(not shown to fit 80 columns: A peak at, B peak at; --wide shows them)" \
    diff "$NAIVE" "$OPT"
fits "diff fits 200" 200 "" diff "$NAIVE" "$OPT"
wide "diff --wide is the full width" diff "$NAIVE" "$OPT"
# equiv: at 80 the sides A and B go (one priority), the detail wraps in what is left
fits "equiv fits 80" 80 "  (not shown to fit 80 columns: A, B; --wide shows them)" \
    equiv "$EQ" --no-data
fits "equiv fits 200" 200 "" equiv "$EQ" --no-data
wide "equiv --wide is the full width" equiv "$EQ" --no-data
COLUMNS=80 "$MEMLIFE" equiv "$EQ" --no-data >"$TMP/eq80" 2>/dev/null
want='  4 state                does not hold  requested peak 256 MiB vs 576 MiB;
                                        device peak 256 MiB vs 576 MiB on every
                                        rank'
if grep -qF -- "$want" "$TMP/eq80" && [ "$(grep -c '^  [1-4] ' "$TMP/eq80")" = 4 ]; then
    ok "equiv at 80: four rows, the detail wrapped under its column"
else
    not_ok "equiv at 80: four rows, the detail wrapped under its column" "$(cat "$TMP/eq80")"
fi
# optimize: the table on stderr fits too
COLUMNS=80 "$MEMLIFE" optimize "$NAIVE" -w 4 >/dev/null 2>"$TMP/opt.err"
w=$(longest "$TMP/opt.err")
if [ "$w" -le 80 ] && grep -qF "(not shown to fit 80 columns: device steady, device peak, floor; --wide" "$TMP/opt.err"; then
    ok "optimize's table fits 80"
else
    not_ok "optimize's table fits 80" "widest $w: $(head -c 400 "$TMP/opt.err")"
fi
# optimize -o FILE: -o names the YAML, the table is on stdout and fits
COLUMNS=80 "$MEMLIFE" optimize "$NAIVE" -w 4 -o "$TMP/opt.yaml" >"$TMP/opt.out" 2>&1
w=$(longest "$TMP/opt.out")
if [ "$w" -le 80 ] && grep -q '^  stage ' "$TMP/opt.out" && grep -q '^name: ' "$TMP/opt.yaml"; then
    ok "optimize -o FILE: the table on stdout fits 80 ($w)"
else
    not_ok "optimize -o FILE: the table on stdout fits 80" "widest $w: $(head -c 300 "$TMP/opt.out")"
fi
# check -o FILE: the report in the file at full width, the summary on stdout fitted
COLUMNS=80 "$MEMLIFE" check "${SEED[@]}" -w 4 -o "$TMP/check.txt" >"$TMP/check.out"
"$MEMLIFE" check "${SEED[@]}" -w 4 -f table >"$TMP/check.full"
w=$(longest "$TMP/check.out")
if [ "$w" -le 80 ] && grep -q '^pass  allreduce-full' "$TMP/check.out" && cmp -s "$TMP/check.txt" "$TMP/check.full"; then
    ok "check -o FILE: summary fits 80 ($w), the file is the full-width report"
else
    not_ok "check -o FILE: summary fits 80, the file is the full-width report" "widest $w; $(diff "$TMP/check.full" "$TMP/check.txt" | head -3 | tr '\n' ' ')"
fi
# a file is read later at any width: -o ignores COLUMNS
COLUMNS=80 "$MEMLIFE" predict "${SEED[@]}" -w 4 -o "$TMP/wide.txt"
"$MEMLIFE" predict "${SEED[@]}" -w 4 >"$TMP/pipe.txt"
if cmp -s "$TMP/wide.txt" "$TMP/pipe.txt"; then ok "-o FILE gets the full width"; else
    not_ok "-o FILE gets the full width" "$(diff "$TMP/pipe.txt" "$TMP/wide.txt" | head -3)"; fi

# --- sizes ----------------------------------------------------------------------------------
P=schedules/seed/05_contract_padding_trim.yaml
run predict "$P" -w 4
row='     0               0 B       ~33.3 KiB            0 B        2 MiB  ~23.5 KiB  30:5 alloc  logical, direct, padded, shard, gathered'
if [ "$RC" = 0 ] && grep -qxF -- "$row" "$TMP/out"; then ok "sizes: ~33.3 KiB, ~23.5 KiB, 2 MiB, 0 B"; else
    not_ok "sizes: ~33.3 KiB, ~23.5 KiB, 2 MiB, 0 B" "exit $RC: $(sed -n 3p "$TMP/out")"; fi
run predict "$P" -w 4 --bytes
row='     0               0 B         34120 B            0 B    2097152 B  24080 B  30:5 alloc  logical, direct, padded, shard, gathered'
if [ "$RC" = 0 ] && grep -qxF -- "$row" "$TMP/out"; then ok "--bytes: 34120 B, 2097152 B, 24080 B"; else
    not_ok "--bytes: 34120 B, 2097152 B, 24080 B" "exit $RC: $(sed -n 3p "$TMP/out")"; fi
# JSON keeps exact bytes, and --bytes does not touch it
run predict "$P" -w 4 -f json
"$MEMLIFE" predict "$P" -w 4 -f json --bytes >"$TMP/bytes.json" 2>/dev/null
if jq -e '.schedules[0].ranks[0].requested.peak == 34120' "$TMP/out" >/dev/null 2>&1 &&
    cmp -s "$TMP/out" "$TMP/bytes.json"; then
    ok "json: requested peak 34120, the same with --bytes"
else
    not_ok "json: requested peak 34120, the same with --bytes" "$(jq -c '.schedules[0].ranks[0].requested' "$TMP/out" 2>&1 | head -c 300)"
fi

# --- colour ---------------------------------------------------------------------------------
run check "$NAIVE" -w 4 --color=always
if [ "$RC" = 0 ] && grep -q "^${ESC}\[32mpass${ESC}\[0m  rs-ag-naive-lifetime" "$TMP/out"; then
    ok "--color=always: pass in green"
else
    not_ok "--color=always: pass in green" "exit $RC: $(head -1 "$TMP/out" | od -c | head -2 | tr '\n' ' ')"
fi
run predict tests/cli/bad/alias.yaml --color=always
if [ "$RC" = 2 ] && grep -qxF "tests/cli/bad/alias.yaml:4:5: ${ESC}[1;31merror${ESC}[0m: yaml anchors are not supported" "$TMP/err"; then
    ok "--color=always: error in bold red, the position plain"
else
    not_ok "--color=always: error in bold red, the position plain" "exit $RC: $(od -c "$TMP/err" | head -3 | tr '\n' ' ')"
fi
# The command line's own errors (not a schedule's: ml_report, not ml_diags) colour the same
# word: export's --rank past the world (4 ranks in $NAIVE), and a file that cannot be written.
"$MEMLIFE" export "$NAIVE" --memory-viz --rank 9 -o "$TMP/x.pickle" --color=always 2>"$TMP/err"
RC=$?
if [ "$RC" = 2 ] && grep -qxF "$NAIVE: ${ESC}[1;31merror${ESC}[0m: --rank 9: the world is 4" "$TMP/err"; then
    ok "--color=always: a command-line error in bold red, the file plain"
else
    not_ok "--color=always: a command-line error in bold red, the file plain" "exit $RC: $(cat -v "$TMP/err" | head -2 | tr '\n' ' ')"
fi
"$MEMLIFE" export "$NAIVE" --memory-viz -o /nonexistent/x.pickle --color=always 2>"$TMP/err"
RC=$?
if [ "$RC" = 3 ] && grep -qxF "${ESC}[1;31merror${ESC}[0m: cannot write '/nonexistent/x.pickle'" "$TMP/err"; then
    ok "--color=always: 'cannot write' in bold red"
else
    not_ok "--color=always: 'cannot write' in bold red" "exit $RC: $(cat -v "$TMP/err" | head -2 | tr '\n' ' ')"
fi
# the same bytes as before the colour, when there is none
NO_COLOR=1 "$MEMLIFE" export "$NAIVE" --memory-viz --rank 9 -o "$TMP/x.pickle" --color=always 2>"$TMP/err"
if [ "$(cat "$TMP/err")" = "$NAIVE: error: --rank 9: the world is 4" ]; then
    ok "NO_COLOR: a command-line error's bytes unchanged"
else
    not_ok "NO_COLOR: a command-line error's bytes unchanged" "$(cat -v "$TMP/err" | head -2 | tr '\n' ' ')"
fi
for how in "NO_COLOR=1" "NO_COLOR=0"; do
    env "$how" "$MEMLIFE" check "$NAIVE" -w 4 --color=always >"$TMP/out" 2>&1
    env "$how" "$MEMLIFE" predict tests/cli/bad/alias.yaml --color=always >>"$TMP/out" 2>&1
    if grep -q "$ESC" "$TMP/out"; then not_ok "$how beats --color=always" "$(grep -c "$ESC" "$TMP/out") lines with ESC"
    else ok "$how beats --color=always"; fi
done
for how in "" "--color=never" "--color=auto"; do
    "$MEMLIFE" check "$NAIVE" -w 4 $how >"$TMP/out" 2>&1
    "$MEMLIFE" predict tests/cli/bad/alias.yaml $how >>"$TMP/out" 2>&1
    if grep -q "$ESC" "$TMP/out"; then not_ok "no colour into a pipe (${how:-default})" "ESC found"
    else ok "no colour into a pipe (${how:-default})"; fi
done
"$MEMLIFE" predict "$NAIVE" -w 4 --color=always -o "$TMP/c.txt"
if [ -s "$TMP/c.txt" ] && ! grep -q "$ESC" "$TMP/c.txt"; then ok "no colour into -o FILE"; else
    not_ok "no colour into -o FILE" "$(grep -c "$ESC" "$TMP/c.txt") lines with ESC"; fi
expect_case "--color=bogus is a usage error" 2 "" "" -- predict "$NAIVE" --color=bogus
if grep -qxF "error: option '--color' must be one of auto, always, never, not 'bogus'" "$TMP/err"; then
    ok "--color=bogus names the values"
else
    not_ok "--color=bogus names the values" "$(head -2 "$TMP/err")"
fi
NO_COLOR= "$MEMLIFE" check "$NAIVE" -w 4 --color=always >"$TMP/out" 2>&1
if grep -q "^${ESC}\[32mpass" "$TMP/out"; then ok "NO_COLOR= (empty) reads as unset"; else
    not_ok "NO_COLOR= (empty) reads as unset" "$(head -1 "$TMP/out")"; fi

# --- environment ----------------------------------------------------------------------------
COLUMNS=wide "$MEMLIFE" predict "$NAIVE" >"$TMP/out" 2>"$TMP/err"
RC=$?
if [ "$RC" = 2 ] && [ "$(cat "$TMP/err")" = "error: environment variable COLUMNS='wide' is not a terminal width (a positive integer of columns)" ]; then
    ok "COLUMNS=wide: exit 2, named"
else
    not_ok "COLUMNS=wide: exit 2, named" "exit $RC: $(head -2 "$TMP/err")"
fi
"$MEMLIFE" predict "$NAIVE" >"$TMP/pipe"
COLUMNS= "$MEMLIFE" predict "$NAIVE" >"$TMP/out" 2>"$TMP/err"
RC=$?
if [ "$RC" = 0 ] && cmp -s "$TMP/out" "$TMP/pipe" && [ "$(longest "$TMP/out")" -gt 80 ]; then
    ok "COLUMNS= (empty) reads as unset: the full width"
else
    not_ok "COLUMNS= (empty) reads as unset: the full width" "exit $RC, widest $(longest "$TMP/out")"
fi
