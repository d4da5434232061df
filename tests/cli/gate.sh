#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check --baseline / --tolerance / --strict / --annotate github. The numbers are
# examples/ci_gate/README.md's: layers.yaml peaks at 96 MiB on every rank of 4, the prefetch
# change at 160 MiB (+64 MiB, +66.7%), with the new peak at alloc full2 (22:11 there; 20:11 in the
# copy below, which drops the file's two expect: lines).
. "$(dirname "$0")/lib.bash"

G=examples/ci_gate
run check --format json -o "$TMP/base.json" $G/layers.yaml
[ "$RC" -eq 0 ] || not_ok "baseline written" "exit $RC"

run check --baseline "$TMP/base.json" $G/layers.yaml
if [ "$RC" -eq 0 ] && [ ! -s "$TMP/err" ]; then ok "an unchanged schedule passes its baseline"; else not_ok "an unchanged schedule passes its baseline" "exit $RC: $(head -1 "$TMP/err")"; fi

# The prefetch change under the baseline's name (and without its own expect:, so only the gate
# speaks): exit 1, one error per view at the new peak, naming the 4 ranks that grew alike (the
# summary counts 8: 4 ranks, 2 views).
sed -e 's/^name: two-layer-gather-prefetch/name: two-layer-gather/' -e '/^expect:/,/^steps:/{/^steps:/!d}' \
    $G/layers_prefetch.yaml >"$TMP/grown.yaml"
run check --baseline "$TMP/base.json" "$TMP/grown.yaml"
want="$TMP/grown.yaml:20:11: error: requested peak on ranks 0-3 grew from 96 MiB to 160 MiB (+64 MiB, tolerance 0 B) since the baseline; peak now at 20:11 alloc (baseline: 20:11 alloc); live at the new peak, not at the baseline's: full2"
if [ "$RC" -eq 1 ] && grep -qxF "$want" "$TMP/err" && [ "$(grep -c ': error: ' "$TMP/err")" -eq 2 ] &&
    grep -q '^FAIL  two-layer-gather .*(8 above the baseline)$' "$TMP/out"; then
    ok "a grown peak fails the gate, naming the step and the buffer newly live"
else
    not_ok "a grown peak fails the gate" "exit $RC: $(head -2 "$TMP/err" | tr '\n' '|')"
fi

run check --baseline "$TMP/base.json" --tolerance 70% "$TMP/grown.yaml"
a=$RC
run check --baseline "$TMP/base.json" --tolerance 50% "$TMP/grown.yaml"
b=$RC
run check --baseline "$TMP/base.json" --tolerance 64MiB "$TMP/grown.yaml"
c=$RC
run check --baseline "$TMP/base.json" --tolerance 67108863 "$TMP/grown.yaml"
d=$RC
if [ "$a$b$c$d" = 0101 ]; then ok "--tolerance: 70% and 64MiB pass +66.7% / +64 MiB, 50% and 64 MiB - 1 B do not"; else not_ok "--tolerance" "exits $a$b$c$d, want 0101"; fi

run check --baseline "$TMP/base.json" --tolerance 5parsecs $G/layers.yaml
if [ "$RC" -eq 2 ] && grep -q "option '--tolerance' needs PCT% or BYTES" "$TMP/err"; then ok "a bad --tolerance is a usage error"; else not_ok "a bad --tolerance is a usage error" "exit $RC"; fi

printf '{"schedules": [\n  {"name": 1,,}\n]}\n' >"$TMP/bad.json"
run check --baseline "$TMP/bad.json" $G/layers.yaml
if [ "$RC" -eq 2 ] && grep -Eq "^$TMP/bad.json:2:[0-9]+: error: cannot read the baseline" "$TMP/err" && [ ! -s "$TMP/out" ]; then
    ok "a broken baseline is bad input at file:line:col"
else
    not_ok "a broken baseline is bad input at file:line:col" "exit $RC: $(head -1 "$TMP/err")"
fi

run check --baseline "$TMP/base.json" $G/layers_prefetch.yaml
if grep -q "note: 'two-layer-gather-prefetch' is not in the baseline" "$TMP/err"; then ok "a schedule the baseline lacks is noted"; else not_ok "a schedule the baseline lacks is noted" "$(head -1 "$TMP/err")"; fi

run check schedules/equiv/padding.yaml
plain=$RC
run check --strict schedules/equiv/padding.yaml
if [ "$plain" -eq 0 ] && [ "$RC" -eq 1 ] && grep -q 'error: no expectations (--strict)' "$TMP/err"; then
    ok "--strict fails a schedule without expectations"
else
    not_ok "--strict fails a schedule without expectations" "exits $plain, $RC"
fi

run check --annotate github --baseline "$TMP/base.json" "$TMP/grown.yaml"
if [ "$RC" -eq 1 ] && grep -qxF "::error file=$TMP/grown.yaml,line=20,col=11::requested peak on ranks 0-3 grew from 96 MiB to 160 MiB (+64 MiB, tolerance 0 B) since the baseline; peak now at 20:11 alloc (baseline: 20:11 alloc); live at the new peak, not at the baseline's: full2" "$TMP/out"; then
    ok "--annotate github prints ::error file=F,line=L,col=C::message"
else
    not_ok "--annotate github" "exit $RC: $(head -1 "$TMP/out")"
fi

# A file with plans: the result's names are "name/plan" already, and each plan is held to its own
# baseline entry. direct_vs_naive.yaml's direct plan peaks at FULL = 256 MiB (world 4); a copy
# that allocates another FULL buffer after the all_reduce peaks at 2 * FULL = 512 MiB, which
# passes its own (loosened) expect: but not the baseline, even with 1 MiB of tolerance.
E=schedules/equiv/direct_vs_naive.yaml
run check --format json -o "$TMP/plans.json" $E
run check --baseline "$TMP/plans.json" --strict $E
if [ "$RC" -eq 0 ] && [ ! -s "$TMP/err" ]; then ok "every plan of an unchanged file is found in its baseline"; else not_ok "every plan of an unchanged file is found in its baseline" "exit $RC: $(head -1 "$TMP/err")"; fi
sed -e 's|^      - all_reduce: {buf: full, op: sum}|&\n      - alloc: {buf: extra, count: world * q}\n      - free: [extra]|' \
    -e 's|requested: {steady: FULL, peak: FULL} .*|requested: {steady: FULL}|' $E >"$TMP/plans_grown.yaml"
run check --baseline "$TMP/plans.json" --tolerance 1MiB "$TMP/plans_grown.yaml"
want="$TMP/plans_grown.yaml:25:9: error: requested peak on ranks 0-3 grew from 256 MiB to 512 MiB (+256 MiB, tolerance 1 MiB) since the baseline; peak now at 25:9 alloc (baseline: 23:9 alloc); live at the new peak, not at the baseline's: extra"
if [ "$RC" -eq 1 ] && grep -qxF "$want" "$TMP/err" && [ "$(grep -c ': error: ' "$TMP/err")" -eq 2 ] &&
    ! grep -q 'not in the baseline' "$TMP/err" &&
    grep -q '^FAIL  direct-vs-naive/direct .*(8 above the baseline)$' "$TMP/out" &&
    grep -q '^pass  direct-vs-naive/naive ' "$TMP/out"; then
    ok "a multi-plan baseline gate fails when one plan's peak grows past the tolerance"
else
    not_ok "a multi-plan baseline gate fails when one plan's peak grows past the tolerance" "exit $RC: $(head -2 "$TMP/err" | tr '\n' '|')"
fi

# A renamed plan is told apart from a new one; --strict fails what the baseline lacks.
sed 's/^  naive:/  naive2:/' $E >"$TMP/renamed.yaml"
run check --baseline "$TMP/plans.json" "$TMP/renamed.yaml"
a=$RC
grep -qxF "$TMP/renamed.yaml:26:3: note: plan 'naive' is gone; 'naive2' is new: not in the baseline $TMP/plans.json: nothing to compare" "$TMP/err"
na=$?
run check --baseline "$TMP/plans.json" --strict "$TMP/renamed.yaml"
if [ "$a$na" = 00 ] && [ "$RC" -eq 1 ] &&
    grep -qxF "$TMP/renamed.yaml:26:3: error: plan 'naive' is gone; 'naive2' is new: not in the baseline $TMP/plans.json (--strict: every schedule must be in the baseline)" "$TMP/err" &&
    grep -q '^FAIL  direct-vs-naive/naive2 .*(not in the baseline (--strict))$' "$TMP/out" &&
    grep -q '^pass  direct-vs-naive/direct ' "$TMP/out"; then
    ok "a renamed plan is named (gone / new); a note without --strict, an error (exit 1) with it"
else
    not_ok "a renamed plan is named (gone / new)" "exits $a $RC: $(head -1 "$TMP/err")"
fi
run check --baseline "$TMP/plans.json" --strict $G/layers.yaml
if [ "$RC" -eq 1 ] && grep -qxF "$G/layers.yaml:14:1: error: 'two-layer-gather' is not in the baseline $TMP/plans.json (--strict: every schedule must be in the baseline)" "$TMP/err"; then
    ok "--strict fails a schedule the baseline lacks, at file:line"
else
    not_ok "--strict fails a schedule the baseline lacks" "exit $RC: $(grep error "$TMP/err" | head -1)"
fi
