#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Bad input: every error is `file:line:col: error: text` on stderr, nothing on stdout, exit 2.
# The schedules under tests/cli/bad/ each break one rule; the goldens hold the exact messages.
. "$(dirname "$0")/lib.bash"

for f in tests/cli/bad/*.yaml; do
    name=$(basename "$f" .yaml)
    run predict "$f"
    why=""
    [ "$RC" -eq 2 ] || why="exit $RC, want 2"
    [ -s "$TMP/out" ] && why="${why:+$why; }stdout not empty"
    head -1 "$TMP/err" | grep -Eq "^$f:[0-9]+:[0-9]+: error: " ||
        why="${why:+$why; }first line is not '$f:line:col: error: ...': $(head -1 "$TMP/err")"
    golden "bad_$name.err" "$TMP/err" || why="${why:+$why; }stderr differs from golden/bad_$name.err"
    if [ -z "$why" ]; then ok "bad input $name"; else not_ok "bad input $name" "$why"; fi
done

expect_case "missing file" 2 empty.out missing_file.err -- predict tests/cli/bad/no-such-file.yaml
# check reports bad input the same way, exit 2 (not 1: nothing was predicted).
expect_case "check on a lint error" 2 empty.out bad_nondivisible_rs.err -- check tests/cli/bad/nondivisible_rs.yaml
# One bad file among good ones: nothing is reported, the error is, exit 2.
expect_case "one bad file stops the report" 2 empty.out bad_unknown_step.err -- \
    predict schedules/seed/01_allreduce_full.yaml tests/cli/bad/unknown_step.yaml

# One limit for the world, from the file or --world: SCHED_WORLD_MAX = 2^20 = 1048576 ranks.
sed 's/^world: .*/world: 1048577/' schedules/seed/01_allreduce_full.yaml >"$TMP/w_over.yaml"
run predict "$TMP/w_over.yaml"
a=$RC
grep -q "error: 'world' must be between 1 and 1048576" "$TMP/err"
fa=$?
run predict schedules/seed/01_allreduce_full.yaml --world 1048577
b=$RC
grep -q "option '--world' needs an integer in \[1, 1048576\], not '1048577'" "$TMP/err"
fb=$?
# 1048576 itself passes the option (the error that follows is the missing file's, not the
# range's; predicting a million ranks is tests/cli/scale.sh's, too slow under the sanitizers)
run predict tests/cli/bad/no-such-file.yaml --world 1048576
grep -q "needs an integer" "$TMP/err" && RC=9
if [ "$a$fa$b$fb$RC" = 20202 ]; then ok "world: and --world share one limit, 1048576 ranks (both refuse 1048577)"
else not_ok "world: and --world share one limit" "exits $a $b $RC, messages $fa $fb"; fi

# --ranks and --world that disagree: one error, before any rank starts (not one per rank, not
# the launcher's fault).
run run schedules/seed/01_allreduce_full.yaml --backend host --ranks 4 --world 2
if [ "$RC" -eq 2 ] && [ "$(grep -c 'error:' "$TMP/err")" -eq 1 ] &&
    grep -qx "error: --ranks 4 and --world 2 disagree (one process per rank)" "$TMP/err"; then
    ok "run --ranks 4 --world 2: one usage error before launching"
else
    not_ok "run --ranks 4 --world 2: one usage error before launching" "exit $RC: $(tr '\n' '|' <"$TMP/err")"
fi
