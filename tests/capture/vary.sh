#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# memlife capture --vary on this machine's CPU PyTorch: captures at several values of a let as one
# schedule whose sizes are expressions of it. The truth is the plain capture at each value: at a
# captured value `predict --set` must give its numbers exactly, in every view.
#
# tests/capture/programs/linear.py at world 4 (tests/capture/capture.sh works it out): the input
# x is MBS x 64 fp32, 256*MBS bytes; what lives after the step is the weight's shard, Adam's two
# states of its size (3 x 4096 B) and x, besides the two cuBLAS workspaces (2 x 33554432 B):
# requested steady 67108864 + 12288 + 256*MBS at any MBS, captured or not.
. "$(dirname "$0")/../cli/lib.bash"

py=$(command -v python3)
if [ -z "$py" ] || ! "$py" -c 'import torch' 2>/dev/null; then
    for n in linear-form linear-steady linear-equal gpt-equal gpt-monotone two-lets fit \
        deterministic bad-extra bad-form bad-usage; do
        echo "skip - capture vary $n: no python3 with torch (make deps)"
    done
    exit 0
fi
L=tests/capture/programs/linear.py
G=tests/capture/programs/gpt.py

# row FILE [ARGS...]: rank 0's numbers from predict: requested steady and peak, device steady,
# peak and its bounds, torch allocated and reserved steady and peak, the floor (CSV columns 6-9,
# 11-16 and 21).
row() {
    "$MEMLIFE" predict "$@" --format csv 2>"$TMP/err" | awk -F, 'NR == 2 { print $6, $7, $8, $9, $11, $12, $13, $14, $15, $16, $21 }'
}

# ---- linear.py: the form worked out by hand ----------------------------------------------------
run capture "$L" --world 4 --vary MBS=2,4,8 -o "$TMP/lin.yaml" -q
if [ "$RC" = 0 ] && grep -qx -- '- alloc: {buf: x, bytes: "256\*MBS"}' "$TMP/lin.yaml" &&
    grep -qx 'let: {MBS: 2}' "$TMP/lin.yaml"; then
    ok "capture vary linear-form: x is 256*MBS bytes, MBS defaults to the first value"
else
    not_ok "capture vary linear-form" "exit $RC: $(head -c 300 "$TMP/err"); $(grep -E 'buf: x,|^let' "$TMP/lin.yaml" 2>/dev/null)"
fi

bad=""
for m in 2 4 8 5 100; do   # captured, and not
    got=$(row "$TMP/lin.yaml" --set MBS=$m | cut -d' ' -f1)
    want=$((67108864 + 12288 + 256 * m))
    [ "$got" = "$want" ] || bad="$bad MBS=$m: $got, want $want;"
done
if [ -z "$bad" ]; then ok "capture vary linear-steady: requested steady 67121152 + 256*MBS B at MBS = 2, 4, 8, 5, 100"
else not_ok "capture vary linear-steady" "$bad"; fi

run capture "$L" --world 4 --set MBS=4 -o "$TMP/lin4.yaml" -q
a=$(row "$TMP/lin.yaml" --set MBS=4) b=$(row "$TMP/lin4.yaml")
if [ "$RC" = 0 ] && [ -n "$b" ] && [ "$a" = "$b" ]; then
    ok "capture vary linear-equal: at MBS=4 every view as the capture at MBS=4 ($b)"
else not_ok "capture vary linear-equal" "vary: '$a', capture: '$b'"; fi

# ---- gpt.py: every captured value gives its capture's numbers ----------------------------------
run capture "$G" --world 8 --vary MBS=1,2,4 -o "$TMP/gpt.yaml" -q
bad=""
declare -A peak
for m in 1 2 4; do
    PYTHONHASHSEED=$m "$MEMLIFE" capture "$G" --world 8 --set MBS=$m -o "$TMP/g$m.yaml" -q 2>>"$TMP/err"
    a=$(row "$TMP/gpt.yaml" --set MBS=$m) b=$(row "$TMP/g$m.yaml")
    [ -n "$b" ] && [ "$a" = "$b" ] || bad="$bad MBS=$m: vary '$a', capture '$b';"
    peak[$m]=$b
done
if [ "$RC" = 0 ] && [ -z "$bad" ]; then
    ok "capture vary gpt-equal: at MBS = 1, 2, 4 requested, device, torch and floor as each capture"
else not_ok "capture vary gpt-equal" "exit $RC: $(head -c 300 "$TMP/err") $bad"; fi

# between and past the captured values: every peak grows with MBS (requested, device, torch
# allocated, torch reserved: fields 2, 4, 8, 10 of row)
r3=$(row "$TMP/gpt.yaml" --set MBS=3) r8=$(row "$TMP/gpt.yaml" --set MBS=8)
bad=""
for f in 2 4 8 10; do
    p2=$(cut -d' ' -f$f <<<"${peak[2]}") p3=$(cut -d' ' -f$f <<<"$r3")
    p4=$(cut -d' ' -f$f <<<"${peak[4]}") p8=$(cut -d' ' -f$f <<<"$r8")
    { [ -n "$p3" ] && [ "$p2" -le "$p3" ] && [ "$p3" -le "$p4" ] && [ "$p4" -lt "$p8" ]; } ||
        bad="$bad field $f: $p2 $p3 $p4 $p8;"
done
p2=$(cut -d' ' -f2 <<<"${peak[2]}") p3=$(cut -d' ' -f2 <<<"$r3") p4=$(cut -d' ' -f2 <<<"${peak[4]}")
{ [ -n "$p3" ] && [ "$p2" -lt "$p3" ] && [ "$p3" -lt "$p4" ]; } || bad="$bad requested $p2 $p3 $p4 not strictly;"
if [ -z "$bad" ]; then ok "capture vary gpt-monotone: the peaks at MBS=3 lie between 2's and 4's, MBS=8's above"
else not_ok "capture vary gpt-monotone" "$bad"; fi

# the schedules of two processes (other hash seeds) are the same: names do not follow a set's order
if PYTHONHASHSEED=7 "$MEMLIFE" capture "$G" --world 8 --set MBS=1 -o "$TMP/g1b.yaml" -q 2>>"$TMP/err" &&
    cmp -s "$TMP/g1.yaml" "$TMP/g1b.yaml"; then
    ok "capture vary deterministic: two captures at MBS=1 under other hash seeds write the same schedule"
else not_ok "capture vary deterministic" "$(diff "$TMP/g1.yaml" "$TMP/g1b.yaml" | head -6 | tr '\n' ' ')"; fi

# ---- two lets: products; the corner MBS=2, S=256 is gpt.py's default S ---------------------------
run capture "$G" --world 8 --vary MBS=1,2 --vary S=128,256 -o "$TMP/two.yaml" -q
a=$(row "$TMP/two.yaml" --set MBS=2 --set S=256) b=${peak[2]}
if [ "$RC" = 0 ] && grep -q 'bytes: "[0-9]*\*MBS\*S"' "$TMP/two.yaml" && [ "$a" = "$b" ]; then
    ok "capture vary two-lets: sizes of MBS*S; at MBS=2, S=256 the capture's numbers"
else not_ok "capture vary two-lets" "exit $RC: $(head -c 300 "$TMP/err"); vary '$a', capture '$b'"; fi

# ---- fit: the largest MBS whose requested peak fits the capture's at MBS=4 is 4 ----------------
p4=$(cut -d' ' -f2 <<<"${peak[4]}")
run fit "$TMP/gpt.yaml" --vary MBS --view requested --budget $((p4 + 2)) --reserve 1 --context 1 --format json
got=$(sed -n 's/^  "value": \([0-9]*\),$/\1/p' "$TMP/out")
if [ "$RC" = 0 ] && [ "$got" = 4 ]; then ok "capture vary fit: MBS = 4 at the budget of MBS=4's peak ($p4 B + 2)"
else not_ok "capture vary fit" "exit $RC, value '$got': $(head -c 300 "$TMP/err")"; fi

# ---- captures that do not make one schedule: exit 2, which step and why, nothing written ------
bad() {
    local name=$1 want=$2
    shift 2
    rm -f "$TMP/bad.yaml"
    run capture "$@" -o "$TMP/bad.yaml"
    if [ "$RC" = 2 ] && grep -qF -- "$want" "$TMP/err" && [ ! -e "$TMP/bad.yaml" ]; then
        ok "capture vary $name (exit 2: $want)"
    else
        not_ok "capture vary $name" "exit $RC, stderr: $(head -c 400 "$TMP/err")"
    fi
}
B=tests/capture/bad
bad bad-extra "$B/vary_extra.py: error: the captures do not line up: step 3 is 'free: act' at MBS=1 but 'alloc: {buf: act_2, bytes: 512}' at MBS=2" \
    "$B/vary_extra.py" --vary MBS=1,2
bad bad-form "$B/vary_square.py: error: step 0, alloc 'x': its bytes are 4 at MBS=1, 16 at MBS=2, 64 at MBS=4: not a + b*MBS" \
    "$B/vary_square.py" --vary MBS=1,2,4

bad_usage=""
for args in "--vary MBS=1" "--vary MBS=1,x" "--vary MBS=2,2" "--vary 1B=1,2" "--vary MBS=1,2 --set MBS=3" \
    "--vary MBS=1,2 --on cuda" "--vary MBS=1,2 --vary MBS=3,4" "--vary MBS=1,2 --raw $TMP/r.json"; do
    # shellcheck disable=SC2086
    run capture "$L" $args -o "$TMP/bad.yaml"
    { [ "$RC" = 2 ] && [ ! -e "$TMP/bad.yaml" ]; } || bad_usage="$bad_usage '$args': exit $RC;"
done
if [ -z "$bad_usage" ]; then ok "capture vary bad-usage: one value, not an integer, twice, a bad name, --set too, --on cuda, --raw"
else not_ok "capture vary bad-usage" "$bad_usage"; fi
