#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `memlife fit` in the torch view (the default for a schedule with one): the budget, less the
# communicator and context reserves, is PyTorch's allocator limit, so the fit follows what the
# caching allocator does under set_per_process_memory_fraction: a value that needs more than the
# limit frees the cache and retries (counted, slow but alive), and fits if that makes room; one
# that still finds none runs out of memory and does not fit.
# Input: tests/cli/fit/gpt_vary.yaml, a capture of a small GPT step at world 8 with sizes in MBS.
# The torch view of it (predict --set MBS=v) reserves 121634816 B at MBS 1, 123731968 at 2,
# 127926272 at 4, 130023424 at 8. The budget: MBS = 8's reserved peak + the two 1-byte reserves,
# so the limit is 130023424 B: MBS 8 fits without a retry, MBS 9 to 12 fit only after the
# allocator frees its cache (3 retries at 12), MBS 13 runs out of memory at an alloc of the
# second layer's fc2. The answer is 12, and the torch view's own prediction at that limit agrees
# on both sides: 12 predicts, 13 is "would run out of memory".
. "$(dirname "$0")/lib.bash"
F=tests/cli/fit/gpt_vary.yaml

bad=""
for m in 1 2 4 8; do
    got=$("$MEMLIFE" predict "$F" --set MBS=$m --format json 2>/dev/null | jq '.schedules[0].ranks[0].torch.reserved.peak')
    case $m in 1) want=121634816 ;; 2) want=123731968 ;; 4) want=127926272 ;; 8) want=130023424 ;; esac
    [ "$got" = "$want" ] || bad="$bad MBS=$m: expected $want, got $got;"
done
if [ -z "$bad" ]; then ok "fit torch: reserved peaks 121634816, 123731968, 127926272, 130023424 at MBS 1, 2, 4, 8"
else not_ok "fit torch: reserved peaks" "$bad"; fi

run fit "$F" --vary MBS --budget 130023426 --reserve 1 --context 1 --format json
if [ "$RC" = 0 ] && jq -e '.view == "torch" and .value == 12 and .retries == 3 and
        .peak == 130023424 and .next.value == 13 and (.next.fits | not) and
        (.next.error | test("would run out of memory at alloc .temp/model.layers.1.fc2_2."))' \
        "$TMP/out" >/dev/null; then
    ok "fit torch: MBS = 12 under the limit of MBS 8's reserved peak, with 3 allocator retries; 13 out of memory"
else
    not_ok "fit torch" "exit $RC: $(jq -c '{view, value, retries, peak, next}' "$TMP/out" 2>/dev/null) $(head -c 300 "$TMP/err")"
fi

# The answer against the torch view at that limit, on both sides.
run predict "$F" --set MBS=12 --torch-limit 130023424 -q
rc12=$RC
run predict "$F" --set MBS=13 --torch-limit 130023424 -q
if [ "$rc12" = 0 ] && [ "$RC" = 2 ] && grep -q "would run out of memory" "$TMP/err"; then
    ok "fit torch: predict at the limit agrees (MBS 12 predicts, 13 runs out of memory)"
else
    not_ok "fit torch: predict at the limit" "MBS 12 exit $rc12, MBS 13 exit $RC: $(head -c 200 "$TMP/err")"
fi

# The text says the retries; --view device keeps the old answer shape (no retries key).
run fit "$F" --vary MBS --budget 130023426 --reserve 1 --context 1
if [ "$RC" = 0 ] && grep -q "needs 3 allocator retries" "$TMP/out"; then
    ok "fit torch: the text says the 3 retries"
else
    not_ok "fit torch text" "exit $RC: $(head -c 300 "$TMP/out")"
fi
run fit "$F" --vary MBS --budget 130023426 --reserve 1 --context 1 --torch-limit 1GiB
if [ "$RC" = 2 ] && grep -q "the budget sets the allocator's limit" "$TMP/err"; then
    ok "fit torch: --torch-limit with the torch view is refused"
else
    not_ok "fit torch --torch-limit" "exit $RC: $(head -c 200 "$TMP/err")"
fi

# --gpu KIND: the reserves become the kind's measured CUDA context (552402944 B on the H100,
# driver 580.159.04, CUDA 13.0) and the communicator view's total for the file at that kind (what
# `predict --gpu` reports), so the answer is for what that GPU shows.
comm=$("$MEMLIFE" predict "$F" --gpu h100-80gb --format json 2>/dev/null | jq '.schedules[0].communicator.total')
run fit "$F" --vary MBS --budget 2GiB --gpu h100-80gb --format json
if [ "$RC" = 0 ] && [ -n "$comm" ] && jq -e --argjson c "$comm" '.reserve.context == 552402944 and
        .reserve.communicator == $c and .total <= 2147483648 and .view == "torch"' "$TMP/out" >/dev/null; then
    ok "fit --gpu h100-80gb: context 552402944 B and the communicator view's $comm B as reserves"
else
    not_ok "fit --gpu" "exit $RC, view total '$comm': $(jq -c '{reserve, total}' "$TMP/out" 2>/dev/null) $(head -c 200 "$TMP/err")"
fi
run fit "$F" --vary MBS --budget 1GiB --gpu h100-80gb
if [ "$RC" = 1 ] && grep -q "the communicators take .* and the CUDA context .* before any tensor" "$TMP/err"; then
    ok "fit --gpu: a budget below the communicators and the context fits nothing, and says so"
else
    not_ok "fit --gpu small budget" "exit $RC: $(head -c 300 "$TMP/err")"
fi
run fit "$F" --vary MBS --budget 2GiB --gpu a100-80gb
if [ "$RC" = 2 ] && grep -q "has not been measured; give --context" "$TMP/err"; then
    ok "fit --gpu a100-80gb: no measured context, refused"
else
    not_ok "fit --gpu a100" "exit $RC: $(head -c 300 "$TMP/err")"
fi
