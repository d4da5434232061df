#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# memlife capture --on fake, on this machine's CPU PyTorch: the schedule of a real FSDP2 step,
# checked against numbers worked out by hand, and the bad inputs.
#
# tests/capture/programs/linear.py: one 64 x 64 fp32 linear layer without bias (16384 B),
# fully_shard, Adam, an input x of 2 x 64 fp32 (512 B). At world W, rank 0 holds a shard of
# 16384/W B; after the step (zero_grad(set_to_none=True)) what is live is the shard, Adam's
# exp_avg and exp_avg_sq of the shard's size, and x:
#   world 4: 3 x 4096 + 512 = 12800 B; world 8: 3 x 2048 + 512 = 6656 B;
#   MODE=plain (no FSDP) at world 1: 3 x 16384 + 512 = 49664 B;
# plus the cuBLAS workspaces PyTorch keeps from the first matmul of the program's thread and of
# autograd's device thread, 2 x 33554432 B on the default virtual H100 (CUBLAS_WORKSPACE_CONFIG
# :4096:8 from sm90 on; measured on an H100, docs/capture.md): 67108864 B more in each.
# Each step all-gathers the shard in place into the full weight (send = recv[rank*S : S]) and
# reduce-scatters the full gradient (16384 B) into a gradient shard (S).
. "$(dirname "$0")/../cli/lib.bash"

py=$(command -v python3)
if [ -z "$py" ] || ! "$py" -c 'import torch' 2>/dev/null; then
    for n in steady-w4 steady-w8 plain workspace-config collectives names check bad-input; do
        echo "skip - capture $n: no python3 with torch (make deps)"
    done
    exit 0
fi
P=tests/capture/programs/linear.py

# steady WORLD WANT [ARGS...]
steady() {
    local w=$1 want=$2 name=$3
    shift 3
    run capture "$P" --world "$w" -o "$TMP/c$w.yaml" -q "$@"
    local got
    got=$(sed -n 's/^  requested: {steady: \([0-9]*\),.*/\1/p' "$TMP/c$w.yaml" 2>/dev/null)
    if [ "$RC" = 0 ] && [ "$got" = "$want" ]; then ok "capture $name: requested steady $want B"
    else not_ok "capture $name" "exit $RC, steady '$got', want $want: $(head -c 300 "$TMP/err")"; fi
}
WS=67108864
steady 4 $((WS + 12800)) steady-w4
steady 8 $((WS + 6656)) steady-w8
steady 1 $((WS + 49664)) plain --set MODE=plain
# CUBLAS_WORKSPACE_CONFIG=:64:2 makes each workspace 2 x 64 KiB = 131072 B
CUBLAS_WORKSPACE_CONFIG=:64:2 steady 4 $((2 * 131072 + 12800)) workspace-config

# the collectives of the recorded step at world 4
coll=$(sed -n '/name: step$/,$p' "$TMP/c4.yaml" | grep -E '^ *- (all_gather|reduce_scatter):' | sed 's/^ *- //')
if grep -qE '^all_gather: \{send: "(all_gather/model[_0-9]*)\[rank\*4096 : 4096\]", recv: \1, stream: s3\}$' <<<"$coll" &&
    grep -qE '^reduce_scatter: \{send: reduce_scatter.send[_0-9]*, recv: model.0.weight/grad[_0-9]*, op: sum, stream: s2\}$' <<<"$coll" &&
    [ "$(wc -l <<<"$coll")" = 2 ]; then
    ok "capture collectives: the step all-gathers in place and reduce-scatters into the grad shard"
else
    not_ok "capture collectives" "got: $coll"
fi

# names from the program's own objects: the shard, its gradient, Adam's state
names=$(grep -oE 'buf: [^,}]+' "$TMP/c4.yaml" | sort -u)
miss=""
for n in model.0.weight model.0.weight/grad adam.exp_avg/model.0.weight adam.exp_avg_sq/model.0.weight x; do
    grep -qx "buf: $n" <<<"$names" || miss="$miss $n"
done
if [ -z "$miss" ]; then ok "capture names: parameter, gradient, optimizer state and input by name"
else not_ok "capture names" "missing:$miss"; fi

# the schedule is one memlife's commands take as it is: check holds its own expectations
run check "$TMP/c4.yaml"
if [ "$RC" = 0 ]; then ok "capture check: the captured schedule lints clean and meets its expect"
else not_ok "capture check" "exit $RC: $(head -c 400 "$TMP/err")"; fi

# bad input: exit 2 for what is wrong with the call, 3 for the program's own failure; the message
# names the place in the user's file; nothing is written.
bad() {
    local name=$1 want=$2 where=$3
    shift 3
    rm -f "$TMP/bad.yaml"
    run capture "$@" --world 2 -o "$TMP/bad.yaml"
    if [ "$RC" = "$want" ] && grep -q -- "$where" "$TMP/err" && [ ! -e "$TMP/bad.yaml" ]; then
        ok "capture bad: $name (exit $want at $where)"
    else
        not_ok "capture bad: $name" "exit $RC (want $want), stderr: $(head -c 300 "$TMP/err")"
    fi
}
B=tests/capture/bad
bad "no such function" 2 "$P:1:1: error: the program defines no function 'nobuild'" "$P:nobuild"
bad "a --set the program does not take" 2 "unexpected keyword argument 'NOPE'" "$P" --set NOPE=1
bad "a step that raises" 3 "$B/raises.py:9: error: the program raised RuntimeError: the step failed" "$B/raises.py"
bad "a value read off the device" 3 "$B/item.py:9: error:" "$B/item.py"
bad "a process group of its own" 3 "$B/own_group.py:6: error:" "$B/own_group.py"
bad "a real group under fake tensors" 2 "error: --group gloo needs --on cuda" "$P" --group gloo
bad "no step returned" 2 "returned int, not a training step" "$B/not_callable.py"
bad "a syntax error" 2 "$B/syntax.py:1:" "$B/syntax.py"
bad "no such file" 2 "no such file" "$B/none.py"
run capture "$P" --world 2 --rank 2
if [ "$RC" = 2 ] && grep -q "rank 2 is not a rank of world 2" "$TMP/err"; then ok "capture bad: --rank outside the world"
else not_ok "capture bad: --rank outside the world" "exit $RC: $(cat "$TMP/err")"; fi

# the torch backend re-runs a captured step: 2 ranks over gloo, measured = predicted on each
if command -v mpirun >/dev/null && "$MEMLIFE" --version | grep -q '^backends:.*torch'; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
    run capture "$P" --world 2 -o "$TMP/c2.yaml" -q
    run run "$TMP/c2.yaml" --backend torch --ranks 2 --format json -o "$TMP/r2.json"
    m=$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(sum(1 for s in d["schedules"] for r in s["ranks"] if r.get("match")))' "$TMP/r2.json" 2>/dev/null)
    if [ "$RC" = 0 ] && [ "$m" = 2 ]; then ok "capture re-run: the torch backend runs the captured step, measured = predicted on both ranks"
    else not_ok "capture re-run" "exit $RC, $m ranks matched: $(head -c 300 "$TMP/err")"; fi
else
    echo "skip - capture re-run: no mpirun or no torch backend here"
fi
