#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The time model (analyzer/predict/timemodel.h): `predict --format json` gives every
# rank time.{step_us, comm_us, exposed_comm_us}; the table a `time:` line. Expected numbers, by
# the model's definition (alpha + factor * bytes / busbw, busbw fitted to the 2 x H200 64 MiB
# measurements with alpha 10 us):
#   seed 01 (256 MiB AllReduce, world 4): 10 + 1.5 * 268435456 / (67108864 / 240) = 1450 us;
#   tests/time/h200_64mib.yaml: the measurements themselves, 250 + 161 + 158 = 569 us;
#   tests/time/overlap.yaml: 1300 us, 158 us communication, 0 exposed (the files say why);
#   tests/time/serial.yaml: 1458 us, 158 exposed; tests/time/link_copy.yaml: 1000 / 500 us;
#   --link alpha_us=5,busbw_gbps=100 on seed 01: 5 + 402653184 / 100e3 = 4031.53184 us;
#   --link alpha_us=10,busbw_gbps=10000 on link_copy: the all_reduce 10 + 1e8 / 1e7 = 20 us
#   under the 500 us copy: step 500, none exposed.
. "$(dirname "$0")/lib.bash"

# time_case NAME WANT FILE ARGS...: WANT is "step comm exposed", rounded to 0.001 us
time_case() {
    local name=$1 want=$2 file=$3
    shift 3
    run predict --format json "$file" "$@"
    local got
    got=$(jq -r '.schedules[0].ranks[0].time | [.step_us, .comm_us, .exposed_comm_us] |
                 map(. * 1000 | round / 1000 | tostring) | join(" ")' "$TMP/out" 2>/dev/null)
    if [ "$RC" -eq 0 ] && [ "$got" = "$want" ]; then ok "$name"; else
        not_ok "$name" "exit $RC, got '$got', want '$want': $(head -1 "$TMP/err")"; fi
}

time_case "time: seed allreduce 256 MiB at world 4" "1450 1450 1450" schedules/seed/01_allreduce_full.yaml
time_case "time: the H200 64 MiB measurements" "569 569 569" tests/time/h200_64mib.yaml
time_case "time: prefetch overlaps compute" "1300 158 0" tests/time/overlap.yaml
time_case "time: serialized gather is exposed" "1458 158 158" tests/time/serial.yaml
time_case "time: schedule link and copy bandwidth" "1000 1000 500" tests/time/link_copy.yaml
time_case "time: --link overrides" "4031.532 4031.532 4031.532" schedules/seed/01_allreduce_full.yaml \
    --link alpha_us=5,busbw_gbps=100
time_case "time: --link beats the schedule's link" "500 20 0" tests/time/link_copy.yaml \
    --link alpha_us=10,busbw_gbps=10000

run predict tests/time/overlap.yaml
if [ "$RC" -eq 0 ] && grep -qx "  time: step 1300.0 us, communication 158.0 us, exposed 0.0 us (rank 0)" "$TMP/out"; then
    ok "time: table line"
else
    not_ok "time: table line" "exit $RC: $(grep time "$TMP/out")"
fi

run predict schedules/seed/01_allreduce_full.yaml --link alpha_us=1,beta=2
if [ "$RC" -eq 2 ] && grep -q "^error: --link: unknown key 'beta' (alpha_us, busbw_gbps)" "$TMP/err"; then
    ok "time: bad --link is a usage error"
else
    not_ok "time: bad --link is a usage error" "exit $RC: $(head -1 "$TMP/err")"
fi

printf 'world: 2\nsteps:\n  - alloc: {buf: x, bytes: 4}\n  - compute: {reads: [x], time: 5, flops: 9}\n' >"$TMP/both.yaml"
run predict "$TMP/both.yaml"
if [ "$RC" -eq 2 ] && grep -q "^$TMP/both.yaml:4:36: error: 'time' and 'flops' cannot both be given" "$TMP/err"; then
    ok "time: time and flops together are an error"
else
    not_ok "time: time and flops together are an error" "exit $RC: $(head -1 "$TMP/err")"
fi
