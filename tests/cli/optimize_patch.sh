#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# optimize edits the user's text (analyzer/optimize/patch_text.h): goldens of the
# rewritten files, and for each one that
#   - `memlife predict` of the rewrite (its own `world:`) gives optimize's predicted 'after' on
#     every rank, requested and device, steady and peak, to the byte (patch_check.py same);
#   - only the edited lines differ from the input (patch_check.py edited) and every comment of
#     the input is in it byte for byte (patch_check.py comments).
# Inputs: the seed schedules (schedules/seed/*), schedules/fsdp_prefetch.yaml (an FSDP
# step with prefetch), and tests/cli/patch/*.yaml (comments in every position, flow-style steps,
# a rewrite inside a repeat body, a flow sequence of steps); each file's header gives its
# numbers. A CRLF copy of the naive seed, and --world other than the file's.
. "$(dirname "$0")/lib.bash"

if ! command -v python3 >/dev/null 2>&1; then
    echo "skip - optimize_patch: python3 not found (patch_check.py)"
    exit 0
fi
CHECK="python3 $ROOT/tests/cli/patch_check.py"

# patched NAME IN [OPTIONS]: optimizes IN into $TMP/NAME.yaml (report $TMP/NAME.json), compares
# it with golden optimize_patch_NAME.yaml and runs the three checks, one ok line each.
patched() {
    local name=$1 in=$2
    shift 2
    run optimize "$in" "$@" --format json -o "$TMP/$name.yaml"
    cp "$TMP/out" "$TMP/$name.json"
    if [ "$RC" -ne 0 ] || [ ! -f "$TMP/$name.yaml" ]; then
        not_ok "$name: written" "exit $RC: $(head -1 "$TMP/err")"
        return
    fi
    golden "optimize_patch_$name.yaml" "$TMP/$name.yaml" && ok "$name: the rewrite (golden)" ||
        not_ok "$name: the rewrite" "differs from golden/optimize_patch_$name.yaml"
    run predict --format json "$TMP/$name.yaml"
    local got
    got=$([ "$RC" -eq 0 ] && $CHECK same "$TMP/$name.json" "$TMP/out" || echo "predict exit $RC: $(head -1 "$TMP/err")")
    [ "$got" = ok ] && ok "$name: predict of the rewrite = optimize's prediction" ||
        not_ok "$name: predict of the rewrite" "$got"
    got=$($CHECK edited "$in" "$TMP/$name.yaml")
    [ "$got" = ok ] && ok "$name: only the edited lines differ" || not_ok "$name: edited lines" "$got"
    got=$($CHECK comments "$in" "$TMP/$name.yaml")
    [ "$got" = ok ] && ok "$name: every comment of the input kept" || not_ok "$name: comments" "$got"
    # a rewritten or added step's comment says what the stage did (an emitter-written block
    # step's says so itself: the notes are on the steps of its body)
    got=$(grep -n 'memlife optimize (\(line [0-9]*, rewritten\|added\)):$' "$TMP/$name.yaml" | head -2)
    [ -z "$got" ] && ok "$name: every rewritten or added step's comment names its stage" ||
        not_ok "$name: a comment without its note" "$got"
}

# --- the seed schedules ----------------------------------------------------------------------
# Nothing kept (each is at its floor or no rewrite saves: docs/optimize.md): the AllReduce
# (256 MiB, floor 256), the non-divisible contract (no saving) and the bench pair (no saving).
for f in schedules/seed/*.yaml; do
    base=$(basename "$f" .yaml)
    case $base in
    01_allreduce_full | 05_contract_nondivisible | 06_bench_direct_decomposed)
        run optimize "$f" -o "$TMP/$base.yaml"
        if [ "$RC" -eq 0 ] && [ ! -e "$TMP/$base.yaml" ] &&
           [ "$(cat "$TMP/err")" = "note: no rewrite was kept: $TMP/$base.yaml not written" ]; then
            ok "$base: nothing kept, nothing written (exit 0, the note on stderr)"
        else
            not_ok "$base: nothing written" "exit $RC, $(ls "$TMP" | tr '\n' ' '), $(head -1 "$TMP/err")"
        fi ;;
    *) patched "$base" "$f" ;;
    esac
done

# --- an FSDP step with prefetch ----------------------------------------------------------------
# (tests/cli/optimize_prefetch.sh has its numbers: 640 -> 448 MiB, 0 syncs, 5700.5 us both)
patched fsdp_prefetch schedules/fsdp_prefetch.yaml

# --- comments in every position, flow-style steps ------------------------------------------------
patched comments tests/cli/patch/comments.yaml
patched flow_step tests/cli/patch/flow_step.yaml

# --- a rewrite inside a repeat body: that step by the emitter, said in the report ----------------
patched repeat_body tests/cli/patch/repeat_body.yaml
got=$(jq -c '.rewrite' "$TMP/repeat_body.json" 2>&1)
if [ "$got" = '{"patched":true,"edits":2,"emitted_steps":1,"why":null}' ] &&
   grep -q '^  # memlife optimize (line 9, rewritten by the emitter, ' "$TMP/repeat_body.yaml"; then
    ok "repeat body: the repeat written by the emitter, the report counts it (1 of 2 edits)"
else
    not_ok "repeat body: report" "$got"
fi
run optimize tests/cli/patch/repeat_body.yaml -o "$TMP/rb.yaml"
want="rewritten file: the input's text with 2 edits; 1 block step written by the emitter (a body changed: the comments inside moved above it)"
[ "$(tail -1 "$TMP/out")" = "$want" ] && ok "repeat body: the table report's last line says so" ||
    not_ok "repeat body: table" "$(tail -1 "$TMP/out")"

# --- a flow sequence of steps: the emitter writes the whole file, the report says why -------------
run optimize tests/cli/patch/flow_list.yaml --format json -o "$TMP/flow_list.yaml"
cp "$TMP/out" "$TMP/flow_list.json"
got=$(jq -c '.rewrite' "$TMP/flow_list.json" 2>&1)
run predict --format json "$TMP/flow_list.yaml"
same=$($CHECK same "$TMP/flow_list.json" "$TMP/out")
if [ "$got" = '{"patched":false,"edits":0,"emitted_steps":0,"why":"the steps at line 5 are a flow sequence"}' ] &&
   [ "$same" = ok ]; then
    ok "flow sequence: written whole by the emitter, said why; predict of it = optimize's"
else
    not_ok "flow sequence" "$got; $same"
fi

# --- CRLF line ends: the same edits, every line of the rewrite ends in CRLF -----------------------
sed 's/$/\r/' schedules/seed/03_rs_ag_naive.yaml >"$TMP/crlf.yaml"
run optimize "$TMP/crlf.yaml" --format json -o "$TMP/crlf_out.yaml"
cp "$TMP/out" "$TMP/crlf.json"
lf=$(grep -c $'[^\r]$' "$TMP/crlf_out.yaml")
# the LF golden with CRs added and the header's file name replaced
sed "1s|schedules/seed/03_rs_ag_naive.yaml|$TMP/crlf.yaml|; s/\$/\r/" \
    "$GOLDEN/optimize_patch_03_rs_ag_naive.yaml" >"$TMP/crlf_want.yaml"
run predict --format json "$TMP/crlf_out.yaml"
same=$($CHECK same "$TMP/crlf.json" "$TMP/out")
if [ "$lf" = 0 ] && cmp -s "$TMP/crlf_want.yaml" "$TMP/crlf_out.yaml" && [ "$same" = ok ]; then
    ok "CRLF: every line ends in CRLF, the same rewrite as the LF file's golden, predict agrees"
else
    not_ok "CRLF" "$lf lines without CR; $(diff "$TMP/crlf_want.yaml" "$TMP/crlf_out.yaml" | head -3 | tr '\n' '|'); $same"
fi

# --- verified at another world: `world:` says it, with a comment ----------------------------------
patched flow_step_w4 tests/cli/patch/flow_step.yaml --world 4
if grep -q '^world: 4$' "$TMP/flow_step_w4.yaml" &&
   grep -q '^# memlife optimize (line 5): world 4, where the rewrite was verified (was 2)$' "$TMP/flow_step_w4.yaml"; then
    ok "--world 4 on a world-2 file: world: 4 written, the old value in the comment"
else
    not_ok "--world 4" "$(grep -n world "$TMP/flow_step_w4.yaml" | tr '\n' '|')"
fi

# --- events the rewrite records: added to the file's own list, flow or block --------------------
patched events_flow tests/cli/patch/events_flow.yaml
patched events_block tests/cli/patch/events_block.yaml
if grep -q '^events: \[mine, side_done\]        # declared, never used$' "$TMP/events_flow.yaml" &&
   [ "$(sed -n '/^events:/,/^steps:/p' "$TMP/events_block.yaml" | grep -v '^ *#' | tr '\n' '|')" = \
     'events:|  - mine              # declared, never used|  - side_done|steps:|' ]; then
    ok "events: side_done appended to the flow list (before its ]) and to the block list"
else
    not_ok "events" "$(grep -n 'events\|side_done$' "$TMP"/events_*.yaml | head -4 | tr '\n' '|')"
fi

# --- no line end after the last line: the rewrite has none either ----------------------------
patched no_eol tests/cli/patch/no_eol.yaml
# (the input's last line was its free, which the rewrite splits and moves up: the sync is last)
last=$(tail -n 1 "$TMP/no_eol.yaml")
[ "$(tail -c 1 "$TMP/no_eol.yaml" | od -An -tx1 | tr -d ' ')" != 0a ] && [ "$last" = "  - sync: device" ] &&
    ok "no final line end: the rewrite ends as the input does, without one (after its sync)" ||
    not_ok "no final line end" "$(tail -c 20 "$TMP/no_eol.yaml" | od -An -c | tr '\n' ' ')"

# --- two plans: each step list edited in place; an expectation that still holds gets no comment -
patched plans tests/cli/patch/plans.yaml
got=$(jq -c '[.plans[] | [.plan, .ranks[0].before.requested.peak / 1048576, .ranks[0].after.requested.peak / 1048576]]' "$TMP/plans.json" 2>&1)
if [ "$got" = '[["big",32,16],["small",32,16]]' ] && ! grep -q 'expectation' "$TMP/plans.yaml"; then
    ok "plans: both rewritten 32 -> 16 MiB, the still-true expectation left without a comment"
else
    not_ok "plans" "$got; $(grep -n expectation "$TMP/plans.yaml" | head -2)"
fi

# --- standard input: it cannot be read again, so the emitter writes the file, and says why ------
"$MEMLIFE" optimize - <schedules/seed/03_rs_ag_naive.yaml >"$TMP/stdin.yaml" 2>"$TMP/stdin.err"
RC=$?
run predict "$TMP/stdin.yaml" --format json
peak=$(jq '.schedules[0].ranks[0].requested.peak / 1048576' "$TMP/out" 2>&1)
if [ "$RC" -eq 0 ] && [ "$peak" = 256 ] &&
   [ "$(tail -1 "$TMP/stdin.err")" = "rewritten file: written whole by the emitter (standard input cannot be read again): only the comments above steps are kept" ]; then
    ok "standard input: written whole by the emitter, the report says why; it predicts 256 MiB"
else
    not_ok "standard input" "exit $RC, peak $peak, $(tail -1 "$TMP/stdin.err")"
fi

# --- the schedule's own link: the stages predict with it (tests/time/link_copy.yaml: its header
# gives 1000 us, the all_reduce at 100 GB/s); stage texts once lost `link:` (500 us after) -------
patched link_copy tests/time/link_copy.yaml
run predict --format json "$TMP/link_copy.yaml"
got="$(jq -r '.plans[0].time | "\(.step_before_us) \(.step_after_us)"' "$TMP/link_copy.json") $(jq -r '.schedules[0].ranks[0].time.step_us' "$TMP/out")"
[ "$got" = "1000 1000 1000" ] && ok "link: optimize's step time before and after and predict's of the rewrite, 1000 us" ||
    not_ok "link" "$got"
