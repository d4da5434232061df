#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `memlife fit`: three questions about the 7B transformer (H 4096, L 32, S 4096: P = 12*H^2 =
# 201326592 parameters per layer, W = L*P = 6442450944) at 8 GPUs of 80 GiB, requested view, with
# the default reserves (communicator 862 MiB at world >= 2, context 500 MiB): a value fits when
# peak <= 85899345920 - 1428160512 = 84471185408 B. Activations per layer A = MBS*S*H*16.
#  1. ZeRO-3 (zero.yaml's zero3 header): peak = 16W/8 + 4P + 2LA
#     = 12884901888 + 805306368 + MBS*17179869184; MBS <= 4.12: MBS = 4, peak 82409684992.
#  2. 1F1B pipeline, 8 stages of LP = 4 layers, M = 8: stage 0 keeps min(8, 8) micro-batches:
#     peak = 16*LP*P + 2*8*LP*A + 8T = 12884901888 + MBS*(17179869184 + 134217728);
#     MBS <= 4.13: MBS = 4, peak 82141249536 on rank 0 (stage 0 binds).
#  3. Megatron TP+SP over 8: peak = 16W/8 + 2T/8 + 2LA/8 + 4T
#     = 12884901888 + MBS*(4194304 + 2147483648 + 67108864); MBS <= 32.26: MBS = 32,
#     peak 83886080000.
# And DDP (every rank a full replica with Adam: 16W = 96 GiB before any activation) answers that
# nothing fits: exit 1. Then the device view on schedules/fsdp_layers.yaml (its header): peak =
# 2 DKEPT + 2 DF = 32L + 128 MiB at P = 64 MiB, world 4; 32L + 128 <= 81920 - 1362 = 80558 MiB:
# L = 2513, peak 80544 MiB = 84456505344 B.
. "$(dirname "$0")/lib.bash"

SEVENB=(--vary MBS --budget 80GiB --world 8 --set H=4096 --set L=32 --set S=4096 --view requested --format json)
ask() {   # NAME JQ-FILTER ARGS...: one question, its JSON answer held to the filter
    local name=$1 filter=$2
    shift 2
    run fit "$@"
    if [ "$RC" -ne 0 ]; then
        not_ok "$name" "exit $RC: $(head -2 "$TMP/err" | tr '\n' ' ')"
    elif [ "$(jq -r "$filter" "$TMP/out")" = true ]; then
        ok "$name"
    else
        not_ok "$name" "$(jq -c '{value, peak, rank, next}' "$TMP/out")"
    fi
}

ask "fit zero3 7B at 8 x 80 GiB: MBS = 4, peak 82409684992, MBS 5 over" \
    '.value == 4 and .peak == 82409684992 and .next.value == 5 and (.next.fits | not) and
     .reserve.communicator == 903872512 and .reserve.context == 524288000 and .world == 8' \
    schedules/training/zero.yaml --plan zero3 "${SEVENB[@]}"
ask "fit 1F1B 7B at 8 stages: MBS = 4, peak 82141249536 on stage 0" \
    '.value == 4 and .peak == 82141249536 and .rank == 0' \
    schedules/training/pipeline_1f1b.yaml "${SEVENB[@]}"
ask "fit Megatron TP+SP 7B at 8: MBS = 32, peak 83886080000" \
    '.value == 32 and .peak == 83886080000 and .total == 83886080000 + 903872512 + 524288000' \
    schedules/training/megatron_tp_sp.yaml "${SEVENB[@]}"

run fit schedules/training/ddp.yaml --vary MBS --budget 80GiB --world 8 --set H=4096 --set L=32 --set S=4096 --view requested
if [ "$RC" -eq 1 ] && grep -q "MBS = 1 does not fit in 80 GiB: peak 112 GiB on rank 0" "$TMP/err"; then
    ok "fit DDP 7B: nothing fits (16W + 2LA = 112 GiB at MBS 1), exit 1"
else
    not_ok "fit DDP 7B: nothing fits (16W + 2LA = 112 GiB at MBS 1), exit 1" "exit $RC: $(head -1 "$TMP/err")"
fi

ask "fit fsdp_layers L in 80 GiB, device view: L = 2513, peak 80544 MiB" \
    '.value == 2513 and .peak == 84456505344 and .view == "device"' \
    schedules/fsdp_layers.yaml --vary L --budget 80GiB --format json

run fit schedules/fsdp_layers.yaml --vary NOPE --budget 80GiB
if [ "$RC" -eq 2 ] && grep -q "the file has no let 'NOPE'" "$TMP/err"; then ok "fit --vary of a name that is not a let: exit 2"
else not_ok "fit --vary of a name that is not a let: exit 2" "exit $RC: $(head -1 "$TMP/err")"; fi

# -o: the same answer as on stdout, written atomically (made in memory, then renamed into place);
# a folder that does not exist: exit 3, nothing written.
"$MEMLIFE" fit schedules/training/zero.yaml --plan zero3 "${SEVENB[@]}" >"$TMP/fit_stdout.json"
"$MEMLIFE" fit schedules/training/zero.yaml --plan zero3 "${SEVENB[@]}" -o "$TMP/fit.json"
if cmp -s "$TMP/fit_stdout.json" "$TMP/fit.json" && [ "$(jq -r .value "$TMP/fit.json")" = 4 ]; then
    ok "fit -o FILE: the answer stdout has (MBS = 4)"; else
    not_ok "fit -o FILE: the answer stdout has (MBS = 4)" "$(head -c 200 "$TMP/fit.json")"; fi
"$MEMLIFE" fit schedules/training/zero.yaml --plan zero3 "${SEVENB[@]}" -o "$TMP/none/fit.json" \
    2>"$TMP/fit.err"
rc=$?
if [ $rc -eq 3 ] && [ ! -e "$TMP/none" ] && grep -q "cannot write '$TMP/none/fit.json'" "$TMP/fit.err"; then
    ok "fit -o into a missing folder: exit 3, nothing written"; else
    not_ok "fit -o into a missing folder: exit 3, nothing written" "exit $rc: $(head -2 "$TMP/fit.err")"; fi

# A file with plans: every plan must fit, so the answer is the smallest plan's; fit names it.
# zero1 at the 7B model, world 8: peak = 4W + 12W/8 + 2LA = 32 GiB + 48 GiB / 4 + MBS * 16 GiB
# (A = MBS*S*H*16, 2LA = MBS * 2*32*4096*4096*16 B = MBS * 16 GiB): 49 GiB + MBS * 16 GiB;
# MBS = 2: 65 GiB (+ 1362 MiB of reserves fits 80 GiB), MBS = 3: 81 GiB does not. zero3 alone
# takes MBS = 4 (above), zero2 lies between, so zero1 binds.
ZARGS=(schedules/training/zero.yaml --vary MBS --budget 80GiB --world 8 --set H=4096 --set L=32 --set S=4096 --view requested)
run fit "${ZARGS[@]}"
if [ "$RC" -eq 0 ] && [ "$(sed -n 1p "$TMP/out")" = "MBS = 2 fits in 80 GiB on every rank of 8 (requested view)" ] &&
    [ "$(sed -n 2p "$TMP/out")" = "  peak 65 GiB on rank 0 of plan zero1 + communicator 862 MiB + context 500 MiB = ~66.3 GiB" ] &&
    [ "$(sed -n 3p "$TMP/out")" = "  MBS = 3: peak 81 GiB on rank 0 of plan zero1, over the budget" ] &&
    [ "$(sed -n 4p "$TMP/out")" = "  plan zero1 binds: the largest MBS that fits all 3 plans of the file (--plan NAME fits one)" ]; then
    ok "fit on a file with plans names the plan that binds (zero1: MBS = 2, 65 GiB), sizes for people"
else
    not_ok "fit on a file with plans names the plan that binds" "exit $RC: $(tr '\n' '|' <"$TMP/out")"
fi
run fit "${ZARGS[@]}" --bytes
if [ "$(sed -n 2p "$TMP/out")" = "  peak 69793218560 B on rank 0 of plan zero1 + communicator 903872512 B + context 524288000 B = 71221379072 B" ]; then
    ok "fit --bytes: exact bytes (65 GiB = 69793218560 B)"; else not_ok "fit --bytes: exact bytes" "$(sed -n 2p "$TMP/out")"; fi
run fit "${ZARGS[@]}" --format csv
want_csv="file,let,value,budget,world,view,plan,peak,rank,communicator,context,total,next value,next peak
schedules/training/zero.yaml,MBS,2,85899345920,8,requested,zero1,69793218560,0,903872512,524288000,71221379072,3,86973087744"
if [ "$RC" -eq 0 ] && [ "$(cat "$TMP/out")" = "$want_csv" ]; then ok "fit --format csv: one row of exact bytes"; else not_ok "fit --format csv" "exit $RC: $(head -c 300 "$TMP/out")"; fi
run fit "${ZARGS[@]}" --format md
if [ "$RC" -eq 0 ] && grep -qxF "| schedules/training/zero.yaml | MBS | 2 | 80 GiB | 8 | requested | zero1 | 65 GiB | 0 | 862 MiB | 500 MiB | ~66.3 GiB | 3 | 81 GiB |" "$TMP/out"; then
    ok "fit --format md: a Markdown table row"; else not_ok "fit --format md" "exit $RC: $(tail -1 "$TMP/out")"; fi
run fit "${ZARGS[@]}" --format json
if [ "$(jq -r '.plan + " " + .next.plan' "$TMP/out")" = "zero1 zero1" ]; then ok "fit --format json: the binding plan"; else not_ok "fit --format json: the binding plan" "$(jq -c .plan "$TMP/out")"; fi

# A let written with a unit is a size: fsdp_layers.yaml's P (64MiB) at L = 4, world 4: requested
# peak 2 DKEPT + 2 DF = 2*(L*P/4) + 2P = 4P, at most 84471185408 B, so P <= 21117796352; the
# device view rounds each buffer up to its pages, which leaves P = 21116223491 B (~19.7 GiB).
# Its next value reads "P + 1 B", not the same rounded size twice.
run fit schedules/fsdp_layers.yaml --vary P --budget 80GiB
if [ "$RC" -eq 0 ] && [ "$(sed -n 1p "$TMP/out")" = "P = ~19.7 GiB fits in 80 GiB on every rank of 4 (device view)" ] &&
    grep -q '^  P + 1 B: peak ~78.7 GiB on rank 0, over the budget$' "$TMP/out"; then
    ok "fit --vary of a size let prints the value as a size"
else
    not_ok "fit --vary of a size let prints the value as a size" "exit $RC: $(tr '\n' '|' <"$TMP/out")"
fi
run fit schedules/fsdp_layers.yaml --vary P --budget 80GiB --bytes
if grep -q '^P = 21116223491 B fits in 85899345920 B' "$TMP/out"; then ok "fit --bytes: the size let's exact value"; else not_ok "fit --bytes: the size let's exact value" "$(head -1 "$TMP/out")"; fi

# no communicator and no context (one GPU without NCCL, or a fake process group): the whole
# budget is the peak's. Megatron TP+SP as above: MBS <= (85899345920 - 12884901888) /
# 2218786816 = 32.9, so MBS = 32 and total = peak = 83886080000.
ask "fit with --reserve 0 --context 0: the total is the peak" \
    '.value == 32 and .reserve.communicator == 0 and .reserve.context == 0 and .total == 83886080000' \
    schedules/training/megatron_tp_sp.yaml "${SEVENB[@]}" --reserve 0 --context 0
run fit schedules/fsdp_layers.yaml --vary L --budget 0 --reserve 0
if [ "$RC" -eq 2 ] && grep -q -- "--budget needs a positive size such as 80GiB, not '0'" "$TMP/err"; then
    ok "fit --budget 0 refused, --reserve 0 taken: exit 2"
else not_ok "fit --budget 0 refused, --reserve 0 taken: exit 2" "exit $RC: $(head -1 "$TMP/err")"; fi
