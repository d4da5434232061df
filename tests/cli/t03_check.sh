#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check, the CI gate: exit 0 with one summary line per schedule when every expectation holds,
# exit 1 with file:line:col errors when one fails, 2 on bad input; --quiet.
. "$(dirname "$0")/lib.bash"

SEED=(schedules/seed/*.yaml)
MORE=(schedules/*.yaml)

expect_case "check seed schedules, world 4" 0 check_seed_w4.out empty.err -- check "${SEED[@]}"
for w in 2 8; do
    expect_case "check seed schedules, world $w" 0 "check_seed_w$w.out" empty.err -- \
        check --world "$w" "${SEED[@]}"
done
expect_case "check schedules beyond the seed" 0 check_more.out empty.err -- check "${MORE[@]}"
# The lifetimes hold at any world size, not only powers of two (the tensor is padded).
expect_case "check seed lifetimes, world 3" 0 "" empty.err -- \
    check --world 3 schedules/seed/0[1-4]_*.yaml

expect_case "--quiet success prints nothing" 0 empty.out empty.err -- \
    check --quiet "${SEED[@]}"

# An expectation edited through --set: SHARD (a let only the expectations use) is claimed to be
# 1 MiB while the buffers, sized by q, stay as they are: every rank's peak expectations fail.
expect_case "check fails when an expectation does" 1 check_fail.out check_fail.err -- \
    check --set SHARD=1MiB schedules/seed/03_rs_ag_naive.yaml
run check --set SHARD=1MiB schedules/seed/03_rs_ag_naive.yaml
line=$(grep -n 'peak:' schedules/seed/03_rs_ag_naive.yaml | head -1 | cut -d: -f1)
# seed: naive peak 2M + M/N = 576 MiB at world 4; the edited expectation says 2M + 1 MiB = 513 MiB.
if [ "$RC" -eq 1 ] && grep -Eq "^schedules/seed/03_rs_ag_naive.yaml:$line:[0-9]+: error: expected requested peak 513 MiB on ranks 0-3, predicted 576 MiB\$" "$TMP/err"; then
    ok "failure names file:line:col, view, the ranks (folded: 0-3), expected and predicted"
else
    not_ok "failure line" "exit $RC, stderr: $(head -3 "$TMP/err" | tr '\n' '|')"
fi
expect_case "--quiet failure still prints the errors" 1 empty.out check_fail_quiet.err -- \
    check --quiet --set SHARD=1MiB schedules/seed/03_rs_ag_naive.yaml

# --format on check prints the full report (expect: fail) instead of the summary.
run check --format json --set SHARD=1MiB schedules/seed/03_rs_ag_naive.yaml
if [ "$RC" -eq 1 ] && grep -q '"expect": "fail"' "$TMP/out"; then ok "check --format json reports expect: fail"
else not_ok "check --format json" "exit $RC"; fi

# predict shows the failed expectation but does not gate on it.
expect_case "predict does not gate on expectations" 0 predict_fail.out empty.err -- \
    predict --set SHARD=1MiB schedules/seed/03_rs_ag_naive.yaml
