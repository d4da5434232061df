#!/bin/bash
# SPDX-License-Identifier: MIT
# plot_examples.sh — the examples/ walk-throughs stay true: the committed picture is what
# `memlife plot` draws today, the CI gate passes on the budgeted schedule and fails (exit 1) on the
# prefetch regression, and the outputs pasted in the READMEs are today's.
# seed numbers: naive 576 MiB vs optimized 320 MiB peak at world 4 (chapter 07); the gate's
# two layers: 96 MiB budget, 160 MiB with prefetch (examples/ci_gate/layers*.yaml comments).
cd "$(dirname "$0")/../.." || exit 1
ML=${MEMLIFE:-./memlife}
[ -x "$ML" ] || { echo "memlife binary not found at $ML" >&2; exit 1; }
tmp=$(mktemp -d); . "$(dirname "$0")/../json.bash"; trap 'json_collect "$tmp"; rm -rf "$tmp"' EXIT
NAIVE=schedules/seed/03_rs_ag_naive.yaml OPT=schedules/seed/04_rs_ag_optimized.yaml
EX=examples/naive_vs_optimized GATE=examples/ci_gate

"$ML" plot "$NAIVE" "$OPT" -o "$tmp/l.svg" 2>/dev/null
if cmp -s "$tmp/l.svg" "$EX/lifetimes.svg"; then echo "ok - example-picture-current"; else
    echo "not ok - example-picture-current: regenerate with: memlife plot $NAIVE $OPT -o $EX/lifetimes.svg"; fi

# Every line of today's outputs appears in the README that pastes it.
pasted() {   # name, readme, command...
    local name=$1 readme=$2; shift 2
    "$@" >"$tmp/out" 2>/dev/null
    local missing
    missing=$(grep -vxF -f <(sed 's/[[:space:]]*$//' "$readme") <(sed 's/[[:space:]]*$//' "$tmp/out") | head -1)
    if [ -z "$missing" ]; then echo "ok - $name"; else echo "not ok - $name: not in $readme: $missing"; fi
}
pasted example-predict-pasted "$EX/README.md" "$ML" predict "$NAIVE" "$OPT"
pasted example-diff-pasted "$EX/README.md" "$ML" diff "$NAIVE" "$OPT"
pasted example-diff-md-pasted "$EX/README.md" "$ML" diff "$NAIVE" "$OPT" --format md
(cd "$GATE" && "../../$ML" diff layers.yaml layers_prefetch.yaml) >"$tmp/gd" 2>/dev/null
pasted example-gate-diff-pasted "$GATE/README.md" cat "$tmp/gd"

"$GATE/gate.sh" >/dev/null 2>&1; rc1=$?
REPORT=$tmp/r.md "$GATE/gate.sh" layers_prefetch.yaml >"$tmp/fail" 2>&1; rc2=$?
if [ $rc1 -eq 0 ] && [ $rc2 -eq 1 ] && grep -q "expected requested peak 96 MiB on ranks 0-3, predicted 160 MiB" "$tmp/fail"; then
    echo "ok - example-gate-pass-and-fail"
else
    echo "not ok - example-gate-pass-and-fail: exits $rc1 $rc2: $(head -c 300 "$tmp/fail")"
fi
pasted example-gate-failure-pasted "$GATE/README.md" cat "$tmp/fail"
