#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# segment_order.sh — the segments' address order, on the CPU: the b_fsdp2 snapshot re-run through
# `--backend torch` on the H200 measured 112456704/197132288 allocated/reserved at op 638 where the
# torch view predicts 111408128/197132288 (docs/evidence/2026-12-01-h200x1-torch-backend.md).
# What is checked (tests/torch/segment_order.py, the reference rules of check_model.py):
#   - with the recording's own segment addresses the rules give every one of the 827 block
#     addresses of b_fsdp2's trace (614 of a_train's), so the rules and the replay are right;
#   - memlife's torch view (`memlife trace` of `memlife import`) equals that replay at every one
#     of the 1534 steps (1108 for a_train): the prediction is the recorded program's;
#   - swapping only the addresses of the first two 20 MiB segments (#10, #18: what cudaMalloc
#     can do in another process) reproduces the GPU re-run exactly: equal to op 637, then
#     112456704/197132288 at op 638, the numbers of the evidence file. The 3 MiB requests of
#     steps 506-537 each find a free 4 MiB block in both segments and take the lower one whole;
#   - of the 120 orders of the five default-stream large segments, #10 against #18 alone decides.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
MEMLIFE=${MEMLIFE:-$ROOT/${BUILD:-build}/memlife}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/memlife-segorder.XXXXXX")
# At the end every memlife JSON left in $TMP validates against schemas/ (tests/json.bash).
. "$ROOT/tests/json.bash"
trap 'json_collect "$TMP"; rm -rf "$TMP"' EXIT
if ! command -v python3 >/dev/null; then
    echo "skip - torch segment order: python3 not found"
    exit 0
fi
ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1: $2"; }
SNAP=tests/torch/fixtures/snapshots
ORDER=tests/torch/segment_order.py

# The torch view's allocated/reserved after every op against the replay's --values file.
same_as_view() {   # NAME YAML VALUES: prints "N of N" or the first difference
    python3 - "$2" "$3" "$MEMLIFE" "$TMP" <<'PY'
import json, subprocess, sys
sys.path.insert(0, "tests/torch")
import trace_counters as tc
yaml_path, values, memlife, tmp = sys.argv[1:]
r = subprocess.run([memlife, "trace", yaml_path, "-o", tmp + "/t.json"], capture_output=True,
                   text=True)
if r.returncode:
    sys.exit("memlife trace exit %d: %s" % (r.returncode, r.stderr[:200]))
ev = json.load(open(tmp + "/t.json"))["traceEvents"]
a, res = tc.per_op(ev, "torch allocated bytes"), tc.per_op(ev, "torch reserved bytes")
want = json.load(open(values))
bad = [k for k, v in enumerate(want) if [tc.value_after(a, k), tc.value_after(res, k)] != v]
print("%d of %d" % (len(want) - len(bad), len(want)) if not bad else
      "op %d: view %d/%d, replay %d/%d" % (bad[0], a[bad[0]], res[bad[0]], *want[bad[0]]))
PY
}

for case in "b_fsdp2 827 1534" "a_train 614 1108"; do
    set -- $case
    python3 $ORDER $SNAP/$1.pickle --values "$TMP/$1.json" >"$TMP/$1.out" 2>&1
    if [ $? -eq 0 ] && grep -qxF "$1.pickle: $2 allocs, 0 block addresses differ from the trace" "$TMP/$1.out"; then
        ok "segment order $1: the recorded segment addresses give all $2 block addresses of the trace"
    else
        not_ok "segment order $1: block addresses" "$(head -2 "$TMP/$1.out" | tr '\n' ' ')"
    fi
    "$MEMLIFE" import $SNAP/$1.pickle -o "$TMP/$1.yaml" -q
    got=$(same_as_view "$1" "$TMP/$1.yaml" "$TMP/$1.json" 2>&1)
    if [ "$got" = "$3 of $3" ]; then
        ok "segment order $1: the torch view = the recorded program's replay at all $3 steps"
    else
        not_ok "segment order $1: the torch view against the replay" "$got"
    fi
done

python3 $ORDER $SNAP/b_fsdp2.pickle --swap 10,18 >"$TMP/swap.out" 2>&1
if grep -qxF "memlife's order: allocated first differs at step 638: 111408128 vs 112456704 (reserved 197132288 vs 197132288)" "$TMP/swap.out" &&
    grep -qxF "tie at step 506 (3145728 B, 4194304 B free in #10 and #18): the swapped addresses take #10, memlife's #18" "$TMP/swap.out" &&
    grep -qxF "large segments on stream 0 by creation: #10 20 MiB at 0x7f3154000000, #11 32 MiB at 0x7f3158000000, #18 20 MiB at 0x7f3176000000, #23 20 MiB at 0x7f314a000000, #24 32 MiB at 0x7f3144000000" "$TMP/swap.out"; then
    ok "segment order b_fsdp2 with #10 below #18: the GPU re-run's 112456704/197132288 at op 638, equal before; the tie at step 506"
else
    not_ok "segment order b_fsdp2 --swap 10,18" "$(grep -v '^tie' "$TMP/swap.out" | tr '\n' ' ' | head -c 400)"
fi
# Every order of the five default-stream large segments at the same addresses: two outcomes, and
# only #10's place against #18's decides; a_train's 120 orders all give its trace's numbers.
python3 $ORDER $SNAP/b_fsdp2.pickle --orders | grep '^orders' >"$TMP/orders.out"
python3 $ORDER $SNAP/a_train.pickle --orders | grep '^orders' >>"$TMP/orders.out"
cat >"$TMP/orders.want" <<'EOF'
orders: 60 of 120 equal to the trace's
orders: 60 of 120 step 638: 112456704/197132288
orders: #10 below #18 decides: step 638: 112456704/197132288
orders: 120 of 120 equal to the trace's
EOF
if cmp -s "$TMP/orders.out" "$TMP/orders.want"; then
    ok "segment orders: b_fsdp2 60/60 split by #10 against #18 alone; a_train 120 of 120 as recorded"
else
    not_ok "segment orders" "$(tr '\n' '|' <"$TMP/orders.out")"
fi
# --measured against a stand-in for the GPU run (its timeline made from the swapped replay, as
# `memlife run --backend torch --format json` writes pool_used / pool_reserved after op k): the
# recording's order differs at op 638 with the evidence file's numbers, the swapped one nowhere.
python3 $ORDER $SNAP/b_fsdp2.pickle --swap 10,18 --values "$TMP/swapped.json" >/dev/null
python3 - "$TMP/swapped.json" "$TMP/run.json" <<'PY'
import json, sys
vals = json.load(open(sys.argv[1]))
tl = [{"op": "baseline", "index": None}] + [
    {"index": k, "pool_used": a, "pool_reserved": r} for k, (a, r) in enumerate(vals)]
json.dump({"schedules": [{"ranks": [{"measured": {"timeline": tl}}]}]}, open(sys.argv[2], "w"))
PY
got1=$(python3 $ORDER $SNAP/b_fsdp2.pickle --measured "$TMP/run.json" | tail -1; echo "rc=${PIPESTATUS[0]}")
got2=$(python3 $ORDER $SNAP/b_fsdp2.pickle --swap 10,18 --measured "$TMP/run.json" | tail -1; echo "rc=${PIPESTATUS[0]}")
if [ "$got1" = "measured: op 638 differs: measured 112456704/197132288, this replay 111408128/197132288
rc=1" ] && [ "$got2" = "measured: allocated and reserved equal to this replay at all 1534 ops
rc=0" ]; then
    ok "segment order --measured: the recorded order differs at op 638 (exit 1), the swapped one at none of 1534 ops"
else
    not_ok "segment order --measured" "$(echo "$got1 / $got2" | tr '\n' ' ')"
fi
# memlife's own report of it (docs/torch.md, segment order): the torch view's second model, new
# segments above the old, differs first at op 638 with the GPU re-run's 112456704; the first tie
# is op 111; the peak (166820352) is the same. a_train: no difference, null. The import writes
# the recording's segment addresses (torch: {addresses:}), which make the order known and the
# note null; without them the model places the segments itself (analyzer/torch/torchplace.c),
# as for a schedule written by hand.
"$MEMLIFE" import $SNAP/b_fsdp2.pickle -o "$TMP/b_addr.yaml" -q
"$MEMLIFE" import $SNAP/a_train.pickle -o "$TMP/a_addr.yaml" -q
sed 's/^torch: {addresses: \[[0-9, ]*\]}$/torch: {}/' "$TMP/b_addr.yaml" >"$TMP/b.yaml"
sed 's/^torch: {addresses: \[[0-9, ]*\]}$/torch: {}/' "$TMP/a_addr.yaml" >"$TMP/a.yaml"
"$MEMLIFE" predict -f json "$TMP/b_addr.yaml" >"$TMP/b_addr_pred.json"
if grep -q '^torch: {}$' "$TMP/b.yaml" &&
    [ "$(jq -c '.schedules[0].ranks[0].torch.segment_order' "$TMP/b_addr_pred.json")" = null ]; then
    ok "segment order in memlife predict: b_fsdp2 with the recorded addresses, null (the order is known)"
else
    not_ok "segment order with the recorded addresses" "$(grep -m1 '^torch' "$TMP/b_addr.yaml" | cut -c1-80)"
fi
"$MEMLIFE" predict -f json "$TMP/b.yaml" >"$TMP/b_pred.json"
"$MEMLIFE" predict -f json "$TMP/a.yaml" >"$TMP/a_pred.json"
got=$(jq -c '.schedules[0].ranks[0].torch.segment_order | [.tie_step.index, .first_difference_step.index, .allocated.predicted, .allocated.other_order, .peak_allocated.predicted, .peak_allocated.other_order]' "$TMP/b_pred.json" 2>/dev/null)
got_a=$(jq -c '.schedules[0].ranks[0].torch.segment_order' "$TMP/a_pred.json" 2>/dev/null)
if [ "$got" = "[111,638,111408128,112456704,166820352,166820352]" ] && [ "$got_a" = null ]; then
    ok "segment order in memlife predict: b_fsdp2 differs at op 638 (111408128 vs 112456704), a_train null"
else
    not_ok "segment order in memlife predict" "b_fsdp2 $got, a_train $got_a"
fi
# what the replay does not cover is said, not guessed
python3 $ORDER $SNAP/d_late.pickle >"$TMP/late.out" 2>&1
rc=$?
if [ "$rc" -eq 1 ] && grep -qF "d_late.pickle: 12582912 bytes of segments were not made in the trace (recording began late): not covered" "$TMP/late.out"; then
    ok "segment order d_late: recording began late, refused (exit 1)"
else
    not_ok "segment order d_late" "exit $rc: $(head -1 "$TMP/late.out")"
fi
exit 0
