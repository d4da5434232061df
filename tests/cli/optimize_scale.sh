#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# memlife optimize on a big schedule: 10,000 steps of the chapter's naive RS+AG with 1000
# cycling buffer names (tests/bench/optimize_gen.awk; every group frees what it allocated), so
# that lifetimes and in place rewrite every group. Checked: it succeeds and every group became
# one in-place buffer, peak M = 4 MiB from 2M + M/4 = 9 MiB (M = 4 MiB, world 4). How its time
# grows with the size (10 k vs 100 k steps) is measured by `make bench` (tests/bench/scale.sh),
# not here: a time ratio on a shared VM is noise in a test.
. "$(dirname "$0")/lib.bash"

awk -v n=10000 -f tests/bench/optimize_gen.awk >"$TMP/s10k.yaml"
run optimize "$TMP/s10k.yaml" -o "$TMP/s10k.out.yaml" --format json
if [ "$RC" -ne 0 ]; then
    not_ok "optimize 10k steps" "exit $RC: $(head -1 "$TMP/err")"
    exit 0
fi
peak=$(jq -r '[.plans[].ranks[].after.requested.peak] | max' "$TMP/out")
if [ "$peak" = $((4 * 1048576)) ]; then
    ok "optimize 10k steps rewrites every group: peak 4 MiB (from 9 MiB)"
else
    not_ok "optimize 10k steps: peak after" "'$peak', want $((4 * 1048576))"
fi
