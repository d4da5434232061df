#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# memlife capture --worlds on this machine's CPU PyTorch: captures at several worlds as one
# schedule whose sizes are expressions of world. The truth is the plain capture at each world:
# at a captured world `predict --world W` must give its numbers exactly, in every view.
#
# tests/capture/programs/linear.py (tests/capture/capture.sh works it out): one 64 x 64 fp32
# weight, 64 rows of 256 B, sharded by FSDP2 on dim 0 padded to a multiple of the world: its
# shard (and its grad's, Adam's two states') is 256*ceil(64/W) B, the all-gathered buffer
# 256*ceil(64/W)*W B. At worlds 2, 3, 8 the shard is 8192, 5632, 2048 B: their gcd is 512, the
# largest slope with a c through all three (1024 would need ceil(c/3) = 5.5), and c lies in
# (30, 32] from world 2, (30, 33] from 3, (24, 32] from 8: 31 or 32, so the fit writes
# 512*ceil_div(32, world) (the largest c) and says the size is ambiguous. It equals the truth,
# 256*ceil(64/W), wherever W divides 32 (4 and 16 here); at world 5 it is 512*7 = 3584 B for
# 256*13 = 3328: 256 B over on each of the three shards that live after the step (the weight,
# exp_avg, exp_avg_sq), so requested steady is the plain capture's + 768 B.
. "$(dirname "$0")/../cli/lib.bash"

py=$(command -v python3)
if [ -z "$py" ] || ! "$py" -c 'import torch' 2>/dev/null; then
    for n in linear-form linear-equal linear-between gpt-equal gpt-uncaptured world-one \
        gpt-sums bad-usage; do
        echo "skip - capture worlds $n: no python3 with torch (make deps)"
    done
    exit 0
fi
L=tests/capture/programs/linear.py
G=tests/capture/programs/gpt.py
GSET=(--set D=256 --set L=1 --set S=64 --set MBS=1 --set H=4)

# row FILE [ARGS...]: rank 0's numbers from predict: requested steady and peak, device steady,
# peak and its bounds, torch allocated and reserved steady and peak, the floor (CSV columns 6-9,
# 11-16 and 21), as tests/capture/vary.sh reads them.
row() {
    "$MEMLIFE" predict "$@" --format csv 2>"$TMP/err" | awk -F, 'NR == 2 { print $6, $7, $8, $9, $11, $12, $13, $14, $15, $16, $21 }'
}

# ---- linear.py: the forms worked out by hand ---------------------------------------------------
run capture "$L" --worlds 2,3,8 -o "$TMP/lin.yaml" -q
if [ "$RC" = 0 ] && grep -qx -- '- alloc: {buf: model.0.weight, bytes: "512\*ceil_div(32, world)"}' "$TMP/lin.yaml" &&
    grep -q -- '- alloc: {buf: all_gather/model, bytes: "512\*ceil_div(32, world)\*world", stream: s1}' "$TMP/lin.yaml" &&
    grep -qx 'world: 2' "$TMP/lin.yaml" && grep -q '^# [0-9]* sizes fit other forms too' "$TMP/lin.yaml"; then
    ok "capture worlds linear-form: the shard 512*ceil_div(32, world), gathered *world, world: 2, ambiguity said"
else
    not_ok "capture worlds linear-form" "exit $RC: $(head -c 300 "$TMP/err"); $(grep -E 'model.0.weight,|all_gather/model,|^world|^# [0-9]' "$TMP/lin.yaml" 2>/dev/null)"
fi

bad=""
for w in 2 3 8 4 16; do   # captured, then where 512*ceil(32/W) = 256*ceil(64/W)
    "$MEMLIFE" capture "$L" --world $w -o "$TMP/l$w.yaml" -q 2>>"$TMP/err"
    a=$(row "$TMP/lin.yaml" --world $w) b=$(row "$TMP/l$w.yaml")
    [ -n "$b" ] && [ "$a" = "$b" ] || bad="$bad world $w: worlds '$a', capture '$b';"
done
if [ -z "$bad" ]; then ok "capture worlds linear-equal: at worlds 2, 3, 8 (captured) and 4, 16 every view as the capture there"
else not_ok "capture worlds linear-equal" "$bad"; fi

"$MEMLIFE" capture "$L" --world 5 -o "$TMP/l5.yaml" -q 2>>"$TMP/err"
a=$(row "$TMP/lin.yaml" --world 5 | cut -d' ' -f1) b=$(row "$TMP/l5.yaml" | cut -d' ' -f1)
if [ -n "$b" ] && [ "$a" = "$((b + 768))" ]; then
    ok "capture worlds linear-between: at world 5 requested steady $a = the capture's $b + 3 x 256 B (c = 32 for 64 rows of 256 B)"
else not_ok "capture worlds linear-between" "worlds '$a', capture '$b' + 768"; fi

# ---- gpt.py: every captured world gives its capture's numbers ----------------------------------
# At worlds 2, 4, 8 every dim divides: an all-gathered buffer is the same at each and alone would
# fit as a constant; it is written as world times its shard, so that the all_gather holds at
# world 16 too (predict refuses a recv that is not world times the send).
run capture "$G" "${GSET[@]}" --worlds 2,4,8 -o "$TMP/gpt.yaml" -q
bad=""
for w in 2 4 8; do
    "$MEMLIFE" capture "$G" "${GSET[@]}" --world $w -o "$TMP/g$w.yaml" -q 2>>"$TMP/err"
    a=$(row "$TMP/gpt.yaml" --world $w) b=$(row "$TMP/g$w.yaml")
    [ -n "$b" ] && [ "$a" = "$b" ] || bad="$bad world $w: worlds '$a', capture '$b';"
done
if [ "$RC" = 0 ] && [ -z "$bad" ]; then
    ok "capture worlds gpt-equal: at worlds 2, 4, 8 requested, device, torch and floor as each capture"
else not_ok "capture worlds gpt-equal" "exit $RC: $(head -c 300 "$TMP/err") $bad"; fi

# World 16 was not captured: the largest slope through 2, 4, 8 makes each shard b*ceil_div(c, W)
# with c <= 8, so at 16 it is the shard at 8 (the truth halves it): the schedule predicts, over
# the capture at 16 (requested steady and peak not below it), and the header says so.
"$MEMLIFE" capture "$G" "${GSET[@]}" --world 16 -o "$TMP/g16.yaml" -q 2>>"$TMP/err"
a=$(row "$TMP/gpt.yaml" --world 16) b=$(row "$TMP/g16.yaml")
read -r as ap _ <<<"$a"
read -r bs bp _ <<<"$b"
if [ -n "$as" ] && [ -n "$bs" ] && [ "$as" -gt "$bs" ] && [ "$ap" -ge "$bp" ] &&
    grep -q '^# [0-9]* sizes fit other forms too' "$TMP/gpt.yaml"; then
    ok "capture worlds gpt-uncaptured: at world 16 requested steady $as > the capture's $bs (ambiguous, said in the header)"
else not_ok "capture worlds gpt-uncaptured" "worlds '$a', capture '$b'"; fi

# ---- what makes no one schedule ----------------------------------------------------------------
# FSDP2 at world 1 gathers nothing (no all_gather, another stream's events): the captures at 1
# and 2 do not line up, and capture says where.
run capture "$L" --worlds 1,2,8 -o "$TMP/one.yaml"
if [ "$RC" = 2 ] && [ ! -e "$TMP/one.yaml" ] && grep -q 'the captures do not line up: .* at world 1 but .* at world 2' "$TMP/err"; then
    ok "capture worlds world-one: FSDP2 at world 1 takes another path, exit 2, nothing written"
else not_ok "capture worlds world-one" "exit $RC: $(head -c 300 "$TMP/err")"; fi

# At world 3 gpt's rows (256, 768, 1024) do not all divide: FSDP2's all-gather input of a block
# is the sum of its parameters' padded shards, of several row sizes: no one b*ceil_div(c, world).
run capture "$G" "${GSET[@]}" --worlds 2,3,8 -o "$TMP/g3.yaml"
if [ "$RC" = 2 ] && [ ! -e "$TMP/g3.yaml" ] &&
    grep -q "its bytes are [0-9]* at world 2, [0-9]* at world 3, [0-9]* at world 8: not constant, b\*ceil_div(c, world) nor" "$TMP/err"; then
    ok "capture worlds gpt-sums: a sum of shards at world 3 is refused, naming the step and its sizes"
else not_ok "capture worlds gpt-sums" "exit $RC: $(head -c 400 "$TMP/err")"; fi

bad_usage=""
for args in "--worlds 2,8" "--worlds 2,4,8 --vary MBS=1,2" "--worlds 2,4,2" "--worlds 2,4,8 --on cuda" \
    "--worlds 2,4,0" "--worlds 2,4,8 --world 4" "--worlds 2,4,8 --rank 2"; do
    # shellcheck disable=SC2086
    "$MEMLIFE" capture "$L" $args -o "$TMP/u.yaml" 2>"$TMP/uerr"
    rc=$?
    [ "$rc" = 2 ] && [ ! -e "$TMP/u.yaml" ] || bad_usage="$bad_usage '$args': exit $rc;"
done
"$MEMLIFE" capture "$L" --worlds 2,4,8 --vary MBS=1,2 2>"$TMP/uerr"
grep -q -- '--worlds and --vary together are not supported yet' "$TMP/uerr" ||
    bad_usage="$bad_usage with --vary: $(head -c 200 "$TMP/uerr");"
if [ -z "$bad_usage" ]; then ok "capture worlds bad-usage: two worlds, with --vary, a world twice, --on cuda, world 0, --world, a rank past a world"
else not_ok "capture worlds bad-usage" "$bad_usage"; fi
