#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# World 1 (one GPU, one rank): what every file of schedules/ predicts there, and the files that
# say they need more ranks. Expected numbers: the seed at M = 256 MiB on N ranks is AllReduce M/M,
# RS only M/N / M+M/N, naive RS+AG M / 2M+M/N, optimized M / M+M/N, so at N = 1 256/256,
# 256/512, 256/768, 256/512 MiB (measured so on one H200); chunked_rs_only is one
# chunk of M: steady = peak = 256 MiB, its release keeps everything.
. "$(dirname "$0")/lib.bash"

run check --world 1 schedules/seed/0[1-4]*.yaml schedules/chunked_rs_only.yaml
want='pass  allreduce-full            world 1  requested 256 MiB / 256 MiB  device 256 MiB / 256 MiB  (4 expectations)
pass  reduce-scatter-shard      world 1  requested 256 MiB / 512 MiB  device 256 MiB / 512 MiB  (4 expectations)
pass  rs-ag-naive-lifetime      world 1  requested 256 MiB / 768 MiB  device 256 MiB / 768 MiB  (4 expectations)
pass  rs-ag-optimized-lifetime  world 1  requested 256 MiB / 512 MiB  device 256 MiB / 512 MiB  (4 expectations)
pass  chunked-rs-only           world 1  requested 256 MiB / 256 MiB  device 256 MiB / 256 MiB  (4 expectations)'
if [ "$RC" -eq 0 ] && [ "$(cat "$TMP/out")" = "$want" ]; then
    ok "world 1: seed 256/256, 256/512, 256/768, 256/512 MiB; chunked_rs_only 256/256 (one chunk)"
else
    not_ok "world 1 seed and chunked_rs_only" "exit $RC: $(head -3 "$TMP/err" "$TMP/out" | tr '\n' '|')"
fi

# The three contracts that need two ranks or a world not dividing 1003 say so (requires:), exit 2;
# the other two pass.
run check --world 1 schedules/seed/05_*.yaml
want='schedules/seed/05_contract_nondivisible.yaml:14:19: error: schedule needs L % world != 0 (world is 1)
schedules/seed/05_contract_wrong_op.yaml:14:19: error: schedule needs world >= 2 (world is 1)
schedules/seed/05_contract_wrong_shard_order.yaml:15:19: error: schedule needs world >= 2 (world is 1)'
if [ "$RC" -eq 2 ] && [ "$(cat "$TMP/err")" = "$want" ] && [ ! -s "$TMP/out" ]; then
    ok "world 1: three contracts refused with 'schedule needs ... (world is 1)', exit 2"
else
    not_ok "world 1 contracts refused" "exit $RC: $(head -4 "$TMP/err" | tr '\n' '|')"
fi
run check --world 1 schedules/seed/05_contract_exact_sum.yaml schedules/seed/05_contract_padding_trim.yaml
if [ "$RC" -eq 0 ]; then ok "world 1: exact-sum and padding contracts pass"
else not_ok "world 1 exact-sum and padding" "exit $RC: $(head -2 "$TMP/err" | tr '\n' '|')"; fi
# 1003 = 17 * 59: world 17 is refused too, world 4 is not.
run check --world 17 schedules/seed/05_contract_nondivisible.yaml
if [ "$RC" -eq 2 ] && grep -q ':14:19: error: schedule needs L % world != 0 (world is 17)$' "$TMP/err"; then
    ok "world 17: nondivisible contract refused (17 divides 1003)"
else not_ok "world 17 nondivisible" "exit $RC: $(head -2 "$TMP/err")"; fi
run check --world 4 schedules/seed/05_contract_nondivisible.yaml
if [ "$RC" -eq 0 ]; then ok "world 4: nondivisible contract runs"; else not_ok "world 4 nondivisible" "exit $RC"; fi
