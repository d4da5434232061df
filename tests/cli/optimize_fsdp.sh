#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# memlife optimize on the FSDP-style example: before, after and floor.
# schedules/fsdp_naive.yaml is schedules/fsdp_layers.yaml's step written naively (every layer's
# gathered params, full gradient and gradient shard allocated up front, all freed at the end).
# At world 4, L = 4 layers of P = 64 MiB, s = P/4 = 16 MiB (the file's header derives them):
#   before = kept flat shards 2*L*s + pool L*P + L*P + L*s = 128 + 256 + 256 + 64 = 704 MiB
#   floor  = at a backward compute: 2*L*s + params P + grads P          = 128 + 64 + 64 = 256 MiB
#   after  = lifetimes (params0..2 split at their backward re-gather): 256 MiB, the floor,
#            which is fsdp_layers.yaml's peak; steady 2*L*s = 128 MiB before and after.
#   lifetimes without the split would stop at param_shards + L*P + grads P = 64 + 256 + 64 =
#   384 MiB: the forward's params live until the backward's check reads them.
#   in place is valid (the ReduceScatter into its gradient's rank slice) but not kept: the peak
#   is at the compute, where the shard does not exist.
# At --set P=8MiB (s = 2 MiB): 88 MiB before (12*2 + 8*8), 32 MiB after and floor (8*2 + 2*8).
. "$(dirname "$0")/lib.bash"

NAIVE=schedules/fsdp_naive.yaml

if ! command -v python3 >/dev/null 2>&1; then
    echo "skip - optimize-fsdp: python3 not found (reads the JSON reports)"
    exit 0
fi

check_case() {   # NAME WANT GOT
    if [ "$2" = "$3" ]; then ok "$1: $2"; else not_ok "$1" "got '$3', want '$2'"; fi
}

# on_ranks JSON EXPR: EXPR over one rank `k` of the first plan, when it is the same on every rank.
on_ranks() {
    python3 - "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
vals = {str(eval(sys.argv[2], {}, {"k": k, "M": 1048576})) for k in r["plans"][0]["ranks"]}
print(vals.pop() if len(vals) == 1 else "differs: %s" % sorted(vals))
PY
}

# predicted FILE ARGS...: "steady/peak/floor" requested MiB of every rank by `memlife predict`.
predicted() {
    local f=$1
    shift
    run predict --format json "$f" "$@"
    [ "$RC" -le 1 ] || { echo "predict exit $RC: $(head -1 "$TMP/err")"; return; }
    python3 -c '
import json, sys
M = 1048576
v = {"%d/%d/%d" % (k["requested"]["steady"] // M, k["requested"]["peak"] // M, k["floor"] // M)
     for k in json.load(open(sys.argv[1]))["schedules"][0]["ranks"]}
print(v.pop() if len(v) == 1 else "differs: %s" % sorted(v))' "$TMP/out"
}

check_case "fsdp naive: the original predicts steady/peak/floor (MiB)" "128/704/256" "$(predicted "$NAIVE")"

run optimize "$NAIVE" --format json -o "$TMP/opt.yaml"
check_case "fsdp naive: optimize exit" 0 "$RC"
cp "$TMP/out" "$TMP/opt.json"
check_case "fsdp naive: before, after, floor (MiB)" "704 256 256" \
    "$(on_ranks "$TMP/opt.json" '"%d %d %d" % (k["before"]["requested"]["peak"] // M, k["after"]["requested"]["peak"] // M, k["floor"] // M)')"
check_case "fsdp naive: steady before and after (MiB)" "128 128" \
    "$(on_ranks "$TMP/opt.json" '"%d %d" % (k["before"]["requested"]["steady"] // M, k["after"]["requested"]["steady"] // M)')"
check_case "fsdp naive: device peak after (MiB)" "256" \
    "$(on_ranks "$TMP/opt.json" '"%d" % (k["after"]["device"]["peak"] // M)')"
check_case "fsdp naive: lifetimes kept, in place not (no saving at the compute)" "lifetimes:yes inplace:no" \
    "$(on_ranks "$TMP/opt.json" '" ".join("%s:%s" % (s["stage"], "yes" if s["kept"] else "no") for s in k["stages"] if s["stage"] in ("lifetimes", "inplace"))')"
check_case "fsdp naive: the rewrite predicts steady/peak/floor (MiB)" "128/256/256" "$(predicted "$TMP/opt.yaml")"

# the split: params0..2 are allocated twice in the rewrite (forward, backward); params3 once,
# since its backward gather follows its forward compute with nothing allocated between
n=$(grep -c '^  - alloc: {buf: params[0-3], count: world \* q}$' "$TMP/opt.yaml")
check_case "fsdp naive: params0..2 allocated for the forward and again for the backward, params3 once" 7 "$n"
between=$(sed -n '/reads: \[params0\]}$/,/free: params0$/p' "$TMP/opt.yaml" | head -5 | grep -v '^ *#')
if grep -q "^  # memlife optimize (added): lifetimes: 'params0' allocated again for the all_gather at line " "$TMP/opt.yaml" &&
   [ "$between" = "$(printf '  - compute: {reads: [params0]}\n  - free: params0')" ]; then
    ok "fsdp naive: params0 freed right after its forward compute (stream order, no host sync), said in a comment"
else not_ok "fsdp naive: split comments" "$(grep -n 'params0' "$TMP/opt.yaml" | head -6 | tr '\n' '|')"; fi

# small sizes: the same shape at P = 8 MiB
run optimize "$NAIVE" --set P=8MiB --format json -o "$TMP/small.yaml"
check_case "fsdp naive --set P=8MiB: before, after, floor (MiB)" "88 32 32" \
    "$(on_ranks "$TMP/out" '"%d %d %d" % (k["before"]["requested"]["peak"] // M, k["after"]["requested"]["peak"] // M, k["floor"] // M)')"

# the rewrite is a fixed point: optimizing it again keeps no stage
run optimize "$TMP/opt.yaml" --format json -o "$TMP/again.yaml"
check_case "fsdp naive: optimizing the rewrite again keeps no stage" 0 \
    "$(python3 -c 'import json,sys; print(sum(s["kept"] for p in json.load(open(sys.argv[1]))["plans"] for s in p["stages"]))' "$TMP/out")"
