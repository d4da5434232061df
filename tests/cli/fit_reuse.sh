#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `memlife fit` expands and lints a capture once and only predicts again at each value where the
# let reaches the steps through allocs' sizes alone (pipeline_sizes; tests/unit/test_fitsizes.c
# checks which files take it), and each value its own expansion where the let is anywhere else.
# Both must give the same answer. Input: tests/cli/fit/gpt_vary.yaml (MBS only in sizes: the
# reuse), and the same file with a step that never runs but names MBS in its `when:`, or in a
# repeat's count that is 0 (each value expanded on its own); the step changes no prediction, so
# the three answers are fit_torch.sh's, in full: MBS = 12 with 3 allocator retries, 13 out of
# memory, at the budget of MBS 8's reserved peak (130023424 B) plus two 1-byte reserves.
. "$(dirname "$0")/lib.bash"
F=tests/cli/fit/gpt_vary.yaml
cp "$F" "$TMP/when.yaml"
printf -- '- when: MBS < 0\n  sync: device\n' >>"$TMP/when.yaml"
cp "$F" "$TMP/count.yaml"
printf -- '- repeat:\n    count: MBS - MBS\n    steps:\n    - sync: device\n' >>"$TMP/count.yaml"

answer() {   # FILE: fit's JSON answer without the file's name (also the error's)
    "$MEMLIFE" fit "$1" --vary MBS --budget 130023426 --reserve 1 --context 1 --format json |
        jq -c 'del(.file) | .next.error |= sub("^[^:]*:"; "")'
}
reuse=$(answer "$F")
if jq -e '.value == 12 and .retries == 3 and .peak == 130023424 and .next.value == 13 and
        (.next.error | test("would run out of memory at alloc .temp/model.layers.1.fc2_2."))' \
        <<<"$reuse" >/dev/null; then
    ok "fit reuse: MBS only in sizes: MBS = 12, 3 retries, 13 out of memory"
else
    not_ok "fit reuse: MBS only in sizes" "$reuse"
fi
for v in when count; do
    full=$(answer "$TMP/$v.yaml")
    # the error's line and column are the same either way: the step is appended at the end
    if [ -n "$full" ] && [ "$full" = "$reuse" ]; then
        ok "fit reuse: MBS also in a $v (each value expanded): the same answer, every field"
    else
        not_ok "fit reuse: MBS also in a $v" "full: $full; reuse: $reuse"
    fi
done
