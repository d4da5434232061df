#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# memlife capture of collectives on sub-groups, on this machine's CPU PyTorch: a DeviceMesh's
# dimensions become `mesh:` and `comms: {NAME: {mesh_dim: ...}}`, new_group partitions colors,
# any other group rank R's rank list; each collective gets `comm:`, its counts are the group's
# and an in-place view stands at the rank's slot within its group. Every number below is worked
# out from the program (the sizes from the let defaults), tests/capture/colls.py lists the
# recorded step's collectives as KIND COMM SEND_BYTES RECV_BYTES SEND.
#
# tests/capture/programs/gpt_tp.py (MBS 2, S 64, D 64, L 2 blocks, H 4, TP 2, bf16 compute, fp32
# shards), MODE fsdp_tp at world 8: mesh dp 4 x tp 2.
# - tp, sequence parallel: each block all-gathers its attention's and its MLP's input, the
#   sequence's S/TP = 32 rows of the residual stream, MBS*32*D*2 = 8192 B, into 2 x 8192 =
#   16384 B, and reduce-scatters their outputs back, 16384 B into 8192; the backward does the
#   reverse: per step 2 blocks x 4 = 8 all_gathers 8192 -> 16384 and 8 reduce_scatters
#   16384 -> 8192 on tp; and 5 all_reduces of 128 B (a norm weight's gradient, D bf16, of the
#   two sequence-parallel norms of each block and the final one).
# - dp: a block's parameters after tensor parallelism are q, k, v, proj (4 D^2 / TP = 8192
#   elements), fc1, fc2 (8 D^2 / TP = 16384) and two norms (2 D = 128): 24704 elements. FSDP2
#   all-gathers them in bf16, 49408 B from 49408 / 4 = 12352 in place at the rank's slot in dp
#   (rank / 2: tp is innermost), twice a block a step (forward, backward); the root's final
#   norm, 128 B from 32, once; and reduce-scatters the fp32 gradients, 98816 B into 24704 (a
#   block), 256 into 64 (the root).
# At world 4 (dp 2 x tp 2) dp's numbers halve their factor: all_gather 24704 -> 49408,
# reduce_scatter 98816 -> 49408; tp's are the same.
. "$(dirname "$0")/../cli/lib.bash"

py=$(command -v python3)
if [ -z "$py" ] || ! "$py" -c 'import torch' 2>/dev/null; then
    for n in mesh-w8 mesh-w4 mesh-rank5 mesh-3d hsdp groups groups-rank3 vary bad-input; do
        echo "skip - capture comms $n: no python3 with torch (make deps)"
    done
    exit 0
fi
P=tests/capture/programs/gpt_tp.py
G=tests/capture/programs/groups.py

# colls FILE: the step's collectives, counted: COUNT KIND COMM SEND RECV
colls() { "$py" tests/capture/colls.py "$1" | cut -d' ' -f1-4 | LC_ALL=C sort | uniq -c | sed 's/^ *//'; }
# views KIND COMM FILE: the distinct send views of those collectives, from their '['
views() { "$py" tests/capture/colls.py "$3" | awk -v k="$1" -v c="$2" '$1 == k && $2 == c' | cut -d' ' -f5- | sed 's/^"[^[]*//' | LC_ALL=C sort -u; }
# same NAME GOT WANT: one ok / not ok on a multi-line value
same() {
    if [ "$2" = "$3" ]; then ok "capture comms $1"
    else not_ok "capture comms $1" "got:$(printf '\n%s' "$2" | sed 's/^/    /') want:$(printf '\n%s' "$3" | sed 's/^/    /')"; fi
}
# captured NAME OUT ARGS...: capture, then memlife check (lint clean, the expectations met)
captured() {
    local name=$1 out=$2
    shift 2
    run capture "$@" -o "$out" -q
    if [ "$RC" != 0 ]; then not_ok "capture comms $name" "capture exit $RC: $(head -c 400 "$TMP/err")"; return 1; fi
    run check "$out"
    if [ "$RC" != 0 ]; then not_ok "capture comms $name" "check exit $RC: $(head -c 600 "$TMP/err")"; return 1; fi
    return 0
}
header() { sed -n '/^mesh:/,/^dtype:/p; /^comms:/,/^dtype:/p' "$1" | grep -v '^dtype:' | uniq; }

if captured mesh-w8 "$TMP/w8.yaml" "$P" --world 8; then
    same "mesh-w8: mesh dp 4 x tp 2, a communicator each; check passes" "$(header "$TMP/w8.yaml")" \
"mesh: {dp: 4, tp: 2}
comms:
  dp: {mesh_dim: dp}
  tp: {mesh_dim: tp}"
    same "mesh-w8: the step's collectives, counts of their group's size" "$(colls "$TMP/w8.yaml")" \
"4 all_gather dp 12352 49408
1 all_gather dp 32 128
8 all_gather tp 8192 16384
5 all_reduce tp 128 128
1 reduce_scatter dp 256 64
2 reduce_scatter dp 98816 24704
8 reduce_scatter tp 16384 8192"
    got=$(views all_gather dp "$TMP/w8.yaml")
    same "mesh-w8: FSDP2's all-gathers in place at the rank's slot in dp" "$got" \
"[(rank / 2)*12352 : 12352]\"
[(rank / 2)*32 : 32]\""
fi

if captured mesh-w4 "$TMP/w4.yaml" "$P" --world 4; then
    same "mesh-w4: sizes from the program at world 4 (dp 2 x tp 2)" "$(header "$TMP/w4.yaml"; colls "$TMP/w4.yaml")" \
"mesh: {dp: 2, tp: 2}
comms:
  dp: {mesh_dim: dp}
  tp: {mesh_dim: tp}
4 all_gather dp 24704 49408
1 all_gather dp 64 128
8 all_gather tp 8192 16384
5 all_reduce tp 128 128
1 reduce_scatter dp 256 128
2 reduce_scatter dp 98816 49408
8 reduce_scatter tp 16384 8192"
fi

# Rank 5 is (dp 2, tp 1): its all-gathers were recorded at offset 2 x 12352 of their buffer,
# which is its slot in dp (rank / 2 = 2): the schedule is rank 0's, step for step.
if [ -s "$TMP/w8.yaml" ] && captured mesh-rank5 "$TMP/r5.yaml" "$P" --world 8 --rank 5; then
    same "mesh-rank5: rank 5's schedule is rank 0's (its in-place offsets at its slot in dp)" \
        "$(sed -n '/^mesh:/,$p' "$TMP/r5.yaml")" "$(sed -n '/^mesh:/,$p' "$TMP/w8.yaml")"
fi

# fsdp_tp_3d: mesh (dp_out 2, dp_in 2, tp 2), FSDP2 on the flattening of dp_out and dp_in named
# dp by the program: the same group sizes as fsdp_tp's dp, a communicator over two dimensions.
# Rank 5 is (1, 0, 1): its slot in its dp group {1, 3, 5, 7} is 1*2 + 0 = 2.
if captured mesh-3d "$TMP/m3.yaml" "$P" --world 8 --rank 5 --set MODE=fsdp_tp_3d; then
    got=$(header "$TMP/m3.yaml"; colls "$TMP/m3.yaml"
          views all_gather dp "$TMP/m3.yaml")
    same "mesh-3d: a flattened sub-mesh's communicator, the rank's slot over two dimensions" "$got" \
"mesh: {dp_out: 2, dp_in: 2, tp: 2}
comms:
  dp: {mesh_dim: [dp_out, dp_in]}
  tp: {mesh_dim: tp}
4 all_gather dp 12352 49408
1 all_gather dp 32 128
8 all_gather tp 8192 16384
5 all_reduce tp 128 128
1 reduce_scatter dp 256 64
2 reduce_scatter dp 98816 24704
8 reduce_scatter tp 16384 8192
[((rank / 4) * 2 + rank / 2 % 2)*12352 : 12352]\"
[((rank / 4) * 2 + rank / 2 % 2)*32 : 32]\""
fi

# HSDP at world 8 on the mesh (replicate 4, shard 2), no tensor parallelism: a block is
# 12 D^2 + 2 D = 49280 elements, all-gathered in bf16 over shard, 49280 B into 98560 (twice a
# step), its fp32 gradient reduce-scattered over shard, 197120 B into 98560, and that shard
# all-reduced over replicate (98560 B); the root's norm (64 elements): 64 -> 128 B, 256 -> 128,
# 128.
if captured hsdp "$TMP/h.yaml" "$P" --world 8 --set MODE=hsdp; then
    same "hsdp: reduce-scatter over shard, all-reduce over replicate" "$(header "$TMP/h.yaml"; colls "$TMP/h.yaml")" \
"mesh: {replicate: 4, shard: 2}
comms:
  shard: {mesh_dim: shard}
  replicate: {mesh_dim: replicate}
4 all_gather shard 49280 98560
1 all_gather shard 64 128
1 all_reduce replicate 128 128
2 all_reduce replicate 98560 98560
2 reduce_scatter shard 197120 98560
1 reduce_scatter shard 256 128"
fi

# tests/capture/programs/groups.py at world 8, K 2, D 64: the gradient is 64 x 64 fp32 = 16384 B,
# reduce-scattered over the block of rank / 2 into 8192 B, all-reduced over the ranks of one
# rank % 2, all-gathered back in place at the rank's slot in its block (rank % 2), and a 4-byte
# flag broadcast over ranks {0, 7}, which only they issue, from rank 7: root 1 in that group.
if captured groups "$TMP/g0.yaml" "$G" --world 8 --raw "$TMP/g0.json"; then
    same "groups: new_group partitions as colors, a lone group as rank 0's rank list" \
        "$(header "$TMP/g0.yaml"; "$py" tests/capture/colls.py "$TMP/g0.yaml")" \
"comms:
  rank_div_2: {color: rank / 2}
  rank_mod_2: {color: rank % 2}
  group1: {ranks: [0, 7]}
reduce_scatter rank_div_2 16384 8192 model.weight/grad_2
all_reduce rank_mod_2 8192 8192 reduce_scatter_2
all_gather rank_div_2 8192 16384 \"model.weight/grad_2[(rank % 2)*8192 : 8192]\"
broadcast group1 4 4 flag when: \"rank == 0 || rank == 7\""
    if grep -q "^# Communicator group1 is rank 0's group" "$TMP/g0.yaml"; then ok "capture comms groups: the header says the rank list is rank 0's view"
    else not_ok "capture comms groups: the header says the rank list is rank 0's view" "$(head -8 "$TMP/g0.yaml")"; fi
    got=$(grep -c -- '- broadcast: {buf: flag, root: 1, comm: group1}$' "$TMP/g0.yaml")
    if [ "$got" = 2 ]; then ok "capture comms groups: the broadcast's root is rank 7's rank in its group, 1 (warm-up and step)"
    else not_ok "capture comms groups: the broadcast's root" "$got lines of root 1, want 2: $(grep broadcast "$TMP/g0.yaml")"; fi
fi
# Rank 3 is in neither end: the same steps without the broadcast (its all-gather was recorded at
# its block slot 1, 8192 B in: the same view).
if captured groups-rank3 "$TMP/g3.yaml" "$G" --world 8 --rank 3; then
    same "groups-rank3: rank 0's steps less the broadcast it does not issue" \
        "$(sed -n '/^steps:/,$p' "$TMP/g3.yaml")" \
        "$(sed -n '/^steps:/,$p' "$TMP/g0.yaml" | grep -v -e '- broadcast:' -e 'when: "rank == 0 || rank == 7"')"
fi

# A parametric capture carries the communicators: x is MBS x 64 fp32, the rest does not vary.
run capture "$G" --world 8 --vary MBS=1,2,4 -o "$TMP/v.yaml" -q
if [ "$RC" = 0 ] && grep -q '^  rank_div_2: {color: rank / 2}$' "$TMP/v.yaml" &&
    grep -q 'buf: x, bytes: "256\*MBS"' "$TMP/v.yaml" && "$MEMLIFE" check "$TMP/v.yaml" --set MBS=2 >/dev/null 2>"$TMP/verr"; then
    ok "capture comms vary: --vary keeps the communicators, x is 256*MBS, check passes at MBS=2"
else
    not_ok "capture comms vary" "exit $RC: $(head -c 300 "$TMP/err") $(head -c 300 "$TMP/verr" 2>/dev/null)"
fi

# bad input: a recording whose groups do not say what its collectives ran on, or say it wrongly,
# is refused (exit 2, nothing written)
bad() {
    local name=$1 want=$2 edit=$3
    "$py" -c "import json, sys
d = json.load(open(sys.argv[1])); g = d['memlife_capture']['groups']
$edit
json.dump(d, open(sys.argv[2], 'w'))" "$TMP/g0.json" "$TMP/bad.json" || { not_ok "capture comms bad: $name" "edit failed"; return; }
    rm -f "$TMP/bad.yaml"
    run import "$TMP/bad.json" -o "$TMP/bad.yaml"
    if [ "$RC" = 2 ] && grep -qF -- "$want" "$TMP/err" && [ ! -e "$TMP/bad.yaml" ]; then ok "capture comms bad: $name"
    else not_ok "capture comms bad: $name" "exit $RC: $(head -c 300 "$TMP/err")"; fi
}
if [ -s "$TMP/g0.json" ]; then
    bad "a collective's group not described" "a reduce_scatter on process group '1', which memlife_capture's groups do not describe" "del g['1']"
    bad "a partition that misses ranks" "groups['1']: the partition does not hold every rank of the world once" "g['1']['partition'].pop()"
    bad "a mesh dimension that is not the group's" "groups['1']: its ranks are not those of rank 0's sub-mesh over its mesh_dims, in row-major order" \
        "d['memlife_capture']['mesh'] = {'dims': ['a', 'b'], 'shape': [2, 4]}; g['1'] = {'ranks': [0, 1], 'mesh_dims': ['a']}"
    bad "a mesh that is not the world" "the mesh's sizes multiply to 4, not the world, 8" \
        "d['memlife_capture']['mesh'] = {'dims': ['a'], 'shape': [4]}"
    bad "the captured rank not in its group" "groups['7']: rank 0 (the captured one) is not in the group" "g['7']['ranks'] = [6, 7]"
fi
