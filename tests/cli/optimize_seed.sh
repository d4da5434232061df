#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# memlife optimize on the chapter's schedules (world 4, M = 256 MiB): the acceptance numbers
# from the JSON report and from `memlife predict` on the rewritten file, where the outputs go,
# bad options, the floor in predict, and that a rewrite optimizes to itself.
# Numbers:
#   seed (chapter 07): naive RS+AG peak 576 MiB; its optimized plan (free the input before the
#     AllGather output is allocated) 320 MiB; RS-only 64 / 320 MiB steady / peak;
#   docs/design.md beyond the seed: in-place RS then in-place AG on one buffer 256 / 256 MiB; in-place
#     RS on world chunks then release 64 / 256 MiB;
#   schedules/fsdp_layers.yaml's header: 128 / 256 MiB, and 256 MiB is also its floor (params and
#     grads, 64 MiB each, with both kept 64 MiB shard buffers at the backward compute).
. "$(dirname "$0")/lib.bash"

MIB=1048576
NAIVE=schedules/seed/03_rs_ag_naive.yaml RSONLY=schedules/seed/02_rs_only.yaml
FSDP=schedules/fsdp_layers.yaml

if ! command -v python3 >/dev/null 2>&1; then
    echo "skip - optimize: python3 not found (reads the JSON reports)"
    exit 0
fi

# field JSON EXPR: python3 expression over the report `r` (first plan `p`, rank 0 `k`); prints it.
field() {
    python3 - "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
p = r["plans"][0]
k = p["ranks"][0]
kept = [s for s in p["stages"] if s["kept"]]
print(eval(sys.argv[2]))
PY
}

# same_on_ranks JSON EXPR: the expression (over `k`, one rank) is equal on every rank.
same_on_ranks() {
    python3 - "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
vals = {str(eval(sys.argv[2], {}, {"k": k})) for k in r["plans"][0]["ranks"]}
print(vals.pop() if len(vals) == 1 else "differs: %s" % sorted(vals))
PY
}

# predicted FILE: "steady/peak" requested MiB of rank 0 by `memlife predict` (the file loads back).
predicted() {
    run predict --format json "$1"
    [ "$RC" -eq 0 ] || { echo "predict exit $RC: $(head -1 "$TMP/err")"; return; }
    python3 -c 'import json,sys; k=json.load(open(sys.argv[1]))["schedules"][0]["ranks"][0]["requested"]; print("%d/%d" % (k["steady"]//1048576, k["peak"]//1048576))' "$TMP/out"
}

check_case() {   # NAME WANT GOT
    if [ "$2" = "$3" ]; then ok "$1: $2"; else not_ok "$1" "got '$3', want '$2'"; fi
}

# --- naive RS+AG, lifetimes only: 576 -> 320 MiB (the chapter's optimized plan) ---------------
run optimize "$NAIVE" --allow lifetimes -o "$TMP/lt.yaml" --format json
cp "$TMP/out" "$TMP/lt.json"
check_case "naive lifetimes: exit" 0 "$RC"
check_case "naive lifetimes: peak before, every rank (MiB)" 576 \
    "$(same_on_ranks "$TMP/lt.json" 'k["before"]["requested"]["peak"] // 1048576')"
check_case "naive lifetimes: peak after, every rank (MiB)" 320 \
    "$(same_on_ranks "$TMP/lt.json" 'k["after"]["requested"]["peak"] // 1048576')"
check_case "naive lifetimes: the rewritten file predicts 256/320 MiB" "256/320" "$(predicted "$TMP/lt.yaml")"
# The free of 'full' follows the reduce_scatter on the default stream: stream order completes
# it (cudaFreeAsync on default; plain cudaFree synchronizes), so no host sync is added; with
# --allow-host-syncs the old `sync: {stream: default}` comes back.
run optimize "$NAIVE" --allow lifetimes --allow-host-syncs -o "$TMP/lt_sync.yaml"
if ! grep -q 'sync: {stream' "$TMP/lt.yaml" &&
   [ "$(sed -n '/^  - reduce_scatter/,/free: full$/p' "$TMP/lt.yaml" | grep -vc '^ *#')" = 2 ] &&
   grep -q '^  - sync: {stream: default}$' "$TMP/lt_sync.yaml" &&
   grep -q '"host_syncs_added": 0' "$TMP/lt.json"; then
    ok "naive lifetimes: 'full' freed right after the reduce_scatter, no host sync (one with --allow-host-syncs)"
else
    not_ok "naive lifetimes: narrow sync" "$(sed -n '/^steps/,$p' "$TMP/lt.yaml" | head -20 | tr '\n' '|')"
fi
n=$(grep -c '^ *# memlife optimize\|^ *# \(alloc\|free\|added\)' "$TMP/lt.yaml")
if [ "$n" -ge 4 ]; then ok "naive lifetimes: comments above the changed steps ($n)"
else not_ok "naive lifetimes: comments above the changed steps" "$n"; fi

# --- naive RS+AG, everything: 256 MiB, the floor ---------------------------------------------
run optimize "$NAIVE" -o "$TMP/all.yaml" --format json
cp "$TMP/out" "$TMP/all.json"
check_case "naive all: stages kept" "lifetimes inplace" "$(field "$TMP/all.json" '" ".join(s["stage"] for s in kept)')"
check_case "naive all: peak after lifetimes, then in place (MiB)" "320 256" \
    "$(field "$TMP/all.json" '" ".join(str(s["after"]["requested"]["peak"] // 1048576) for s in k["stages"] if s["kept"])')"
check_case "naive all: floor and distance (MiB)" "256 0" \
    "$(field "$TMP/all.json" '"%d %d" % (k["floor"] // 1048576, k["above_floor"] // 1048576)')"
check_case "naive all: the rewritten file predicts 256/256 MiB" "256/256" "$(predicted "$TMP/all.yaml")"

# --- RS-only: in place, then chunked release: 64 / 256 MiB -------------------------------------
run optimize "$RSONLY" -o "$TMP/rs.yaml" --format json
cp "$TMP/out" "$TMP/rs.json"
check_case "rs-only: before steady/peak (MiB)" "64/320" \
    "$(same_on_ranks "$TMP/rs.json" '"%d/%d" % (k["before"]["requested"]["steady"] // 1048576, k["before"]["requested"]["peak"] // 1048576)')"
check_case "rs-only: in place alone (MiB)" "256/256" \
    "$(field "$TMP/rs.json" '[ "%d/%d" % (s["after"]["requested"]["steady"] // 1048576, s["after"]["requested"]["peak"] // 1048576) for s in k["stages"] if s["stage"] == "inplace"][0]')"
check_case "rs-only: chunked release (MiB)" "64/256" \
    "$(same_on_ranks "$TMP/rs.json" '"%d/%d" % (k["after"]["requested"]["steady"] // 1048576, k["after"]["requested"]["peak"] // 1048576)')"
check_case "rs-only: the rewritten file predicts 64/256 MiB" "64/256" "$(predicted "$TMP/rs.yaml")"
if grep -q 'chunks: world' "$TMP/rs.yaml" && grep -q 'release: {buf: full, keep: rank}' "$TMP/rs.yaml"; then
    ok "rs-only: chunks: world and release: {buf: full, keep: rank}"
else not_ok "rs-only: chunked form" "$(grep -E 'alloc|release' "$TMP/rs.yaml" | tr '\n' '|')"; fi

# --- FSDP example: at its floor already ---------------------------------------------------------
run optimize "$FSDP" --format json -o "$TMP/fsdp.yaml"
check_case "fsdp: before, after, floor (MiB)" "256 256 256" \
    "$(same_on_ranks "$TMP/out" '"%d %d %d" % (k["before"]["requested"]["peak"] // 1048576, k["after"]["requested"]["peak"] // 1048576, k["floor"] // 1048576)')"

# --- where the outputs go ----------------------------------------------------------------------
run optimize "$NAIVE"
# the rewrite says where it comes from, then the input's own text follows from its first line
if [ "$RC" -eq 0 ] && head -1 "$TMP/out" | grep -q '^# memlife optimize: rewritten from ' &&
   sed -n 2p "$TMP/out" | grep -q '^# Lifetime 3 of the chapter' &&
   grep -q '^  inplace    yes' "$TMP/err"; then
    ok "no -o, no --format: the schedule on stdout, the report on stderr"
else not_ok "default outputs" "exit $RC: $(head -1 "$TMP/out") / $(head -2 "$TMP/err" | tr '\n' '|')"; fi
run optimize "$NAIVE" --format md
if [ "$RC" -eq 0 ] && head -1 "$TMP/out" | grep -q '^| schedule | stage' && [ ! -s "$TMP/err" ]; then
    ok "--format without -o: only the report, on stdout"
else not_ok "--format without -o" "exit $RC: $(head -1 "$TMP/out")"; fi
rm -f "$TMP/x.yaml"
run optimize "$NAIVE" -o "$TMP/x.yaml"
if [ "$RC" -eq 0 ] && [ -s "$TMP/x.yaml" ] && grep -q '^rs-ag-naive-lifetime (' "$TMP/out"; then
    ok "-o: the schedule to the file, the table report on stdout"
else not_ok "-o" "exit $RC"; fi
run optimize "$NAIVE" --allow lifetimes,inline
if [ "$RC" -eq 2 ] && grep -q "unknown transformation 'inline'" "$TMP/err"; then
    ok "--allow with an unknown name: exit 2"
else not_ok "--allow unknown" "exit $RC: $(head -1 "$TMP/err")"; fi
run optimize "$NAIVE" "$RSONLY"
if [ "$RC" -eq 2 ]; then ok "two files: exit 2"; else not_ok "two files" "exit $RC"; fi
run optimize tests/cli/bad/unknown_step.yaml
if [ "$RC" -eq 2 ] && grep -q "unknown step 'alreduce'" "$TMP/err"; then
    ok "bad input: exit 2 with the loader's error"
else not_ok "bad input" "exit $RC"; fi
# equiv/contracts.yaml: plans before 'divergent' get kept rewrites, then 'divergent' (ranks issue
# different collectives, lines 100 and 102 of the file) is refused: its error is the original's
# (line numbers and name), not the freed rewrite's.
run optimize schedules/equiv/contracts.yaml --world 4 --format json -o "$TMP/contracts.yaml"
want="schedules/equiv/contracts.yaml:102:9: error: rank 3 issues all_reduce (count 20) where rank 0 issues all_gather (count 5) [rank 3]"
want_note="schedules/equiv/contracts.yaml:100:9: note: rank 0 issues all_gather (count 5) here [rank 3]"
if [ "$RC" -eq 2 ] && [ "$(head -1 "$TMP/err")" = "$want" ] && [ "$(sed -n 2p "$TMP/err")" = "$want_note" ]; then
    ok "a plan refused after earlier plans were rewritten: exit 2, the original's lines"
else not_ok "refused after rewrites" "exit $RC: $(head -1 "$TMP/err")"; fi

# --- a rewrite is a fixed point: optimizing it again keeps nothing -----------------------------
run optimize "$TMP/all.yaml" --format json -o "$TMP/again.yaml"
check_case "optimizing the rewrite again keeps no stage" "0" "$(field "$TMP/out" 'len(kept)')"
if [ ! -e "$TMP/again.yaml" ] && grep -q "no rewrite was kept: $TMP/again.yaml not written" "$TMP/err"; then
    ok "optimizing the rewrite again writes nothing (no rewrite kept)"
else not_ok "fixed point" "$(ls "$TMP/again.yaml" 2>&1; head -2 "$TMP/err")"; fi

# --- predict shows the floor -------------------------------------------------------------------
run predict --format csv "$NAIVE"
got=$(awk -F, 'NR == 1 { for (k = 1; k <= NF; k++) if ($k == "floor") c = k; next } { print $c }' "$TMP/out" | sort -u)
check_case "predict: the naive plan's floor is 256 MiB on every rank" $((256 * MIB)) "$got"
run predict "$NAIVE"
if head -2 "$TMP/out" | tail -1 | grep -q ' floor '; then ok "predict table has a floor column"
else not_ok "predict table floor column" "$(head -2 "$TMP/out" | tail -1)"; fi
