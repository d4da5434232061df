#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `memlife bench --backend torch` and `memlife equiv --backend torch` on CPUs over gloo, 2 ranks,
# with the python3 that has torch (make deps puts PyTorch in .venv, which tests/run.sh puts first on PATH). Timings here
# (2 cores, oversubscribed ranks, one pipe round trip per op) are noise: what is tested is what
# bench does with them (sample counts, the statistics' order, the ratio rule) and the exact bytes
# equiv reads back from torch's tensors.
# Numbers: the seed schedule at world 2 moves S per plan (bus factor 1 for AllReduce, 2 x 1/2 for
# RS + AG: bus bytes = S, as in tests/mpi/bench_host.sh). equiv's inputs are x_i = 100 rank + i,
# so at world 2 the sum is 100 + 2i (element 0: 100); schedules/equiv/contracts.yaml at world 2 has
# n = 5 x 2 = 10 elements per rank.
. "$(dirname "$0")/../mpi/lib.bash"

CASES="bench json structure, bench statistics, bench ratio rule, bench reset, bench refusals,
equiv direct vs naive, equiv contracts, equiv random float32, equiv same as host"
why=$(host_backend_missing)
TORCH_PY=${MEMLIFE_PYTHON:-}
if [ -z "$why" ] && [ -z "$TORCH_PY" ]; then
    for p in $(type -ap python3) /usr/bin/python3; do
        if "$p" -c 'import torch' 2>/dev/null; then TORCH_PY=$p; break; fi
    done
    [ -n "$TORCH_PY" ] || why="no python3 with torch (make deps)"
fi
if [ -n "$why" ]; then
    echo "$CASES" | tr ',' '\n' | while read -r n; do skip "torch $n" "$why"; done
    exit 0
fi
export MEMLIFE_PYTHON=$TORCH_PY

# ---- bench --------------------------------------------------------------------------------------
SEED=schedules/seed/06_bench_direct_decomposed.yaml
run bench "$SEED" --backend torch --ranks 2 --sizes 1KiB,64KiB --warmup 1 --cycles 4 \
    --format json -o "$TMP/b.json" </dev/null
if [ "$RC" -ne 0 ]; then
    not_ok "torch bench 06 at 1 KiB and 64 KiB, 2 ranks" "exit $RC: $(head -3 "$TMP/err" | tr '\n' ' ')"
else
    ok "torch bench 06 at 1 KiB and 64 KiB, 2 ranks: exit 0 in ${SECS} s"
    jq_case "torch bench: sizes 1024, 65536; plans direct, decomposed; bus bytes = S at world 2; aligned; gloo" \
        '[.sizes[].payload_bytes] == [1024, 65536] and
         ([.sizes[] | [.plans[].plan]] | all(. == ["direct", "decomposed"])) and
         ([.sizes[] | .payload_bytes as $s | .plans[] | .bus_bytes == $s and .payload_bytes == $s]
          | all) and .world == 2 and .backend == "torch" and .launch == "mpi" and .align == true
         and .provenance.torch_process_group == "gloo"' "$TMP/b.json"
    jq_case "torch bench: 4 samples per plan for memlife and bare (the driver's bare call), no graph, no failed check" \
        '[.sizes[].plans[] | .memlife.n == 4 and (.memlife.samples_us | length) == 4 and
          .bare.n == 4 and (.bare.samples_us | length) == 4 and (has("graph") | not) and
          .check_failures == 0] | length == 4 and all' "$TMP/b.json"
    # 4 samples: the median is the mean of the 2nd and 3rd (samples rounded to the nanosecond)
    jq_case "torch bench: min <= median <= P95 <= max, positive; median and extremes from the samples" \
        '[.sizes[].plans[] | .memlife, .bare | (.samples_us | sort) as $s |
          .min_us > 0 and .min_us <= .median_us and .median_us <= .p95_us and .p95_us <= .max_us
          and ((.median_us - ($s[1] + $s[2]) / 2) | fabs) < 0.002 and
          .min_us == $s[0] and .max_us == $s[3]] | length == 8 and all' "$TMP/b.json"
    jq_case "torch bench ratio rule: direct is the reference; decomposed stable iff both CVs <= 5%" \
        '[.sizes[] | .plans[0].memlife as $a | .plans[1].memlife as $b |
          $a.ratio_status == "reference" and $a.ratio == null and
          (if $a.cv_percent <= 5 and $b.cv_percent <= 5
           then $b.ratio_status == "stable" and $b.ratio != null
           else $b.ratio_status == "unstable" and $b.ratio == null end)] | all' "$TMP/b.json"
fi
# A threshold nothing misses: the ratio is stated and is median(decomposed) / median(direct).
run bench "$SEED" --backend torch --ranks 2 --sizes 1KiB --warmup 0 --cycles 3 --cv-max 1e9 \
    --format json -o "$TMP/loose.json" </dev/null
jq_run_case "torch bench --cv-max 1e9: the ratio is stated and is median / median" \
    '.sizes[0].plans as $p | $p[1].memlife.ratio_status == "stable" and
     (($p[1].memlife.ratio / ($p[1].memlife.median_us / $p[0].memlife.median_us)) - 1 | fabs)
      < 0.001' "$TMP/loose.json"
# The table says how the torch driver starts a span.
run bench "$SEED" --backend torch --ranks 2 --sizes 1KiB --warmup 0 --cycles 2 </dev/null
if [ "$RC" -eq 0 ] && grep -q "^span start: aligned by the torch driver (a one-element all_reduce before its start mark" "$TMP/out" &&
    grep -Eq '^ +1 KiB +direct +[0-9.]+ +[0-9.]+ +[0-9.]+% ' "$TMP/out"; then
    ok "torch bench table: the driver's span start stated, a row per plan"
else
    not_ok "torch bench table" "exit $RC: $(head -4 "$TMP/out" | tr '\n' '|')"
fi

# The reset before each timed run restores the setup's state in torch's tensors (the plans of
# tests/mpi/data/bench_reset.yaml): after the last timed run one sum over 2 ranks of 3 x (100 r + i) =
# 300 + 6i in x, and 100 + 2i in y, with x untouched; a missing reset doubles them every run.
run bench tests/mpi/data/bench_reset.yaml --backend torch --ranks 2 --warmup 1 --cycles 2 --format json \
    -o "$TMP/reset.json" </dev/null
jq_run_case "torch bench: the reset restores the setup's state (checks after the timed runs pass)" \
    '[.sizes[0].plans[] | .check_failures] == [0, 0]' "$TMP/reset.json"

# What cannot apply is refused by name before any rank starts (exit 2).
run bench "$SEED" --backend torch --ranks 2 --graph
if [ "$RC" -eq 2 ] && grep -qxF "error: --graph needs CUDA graphs: backend 'torch' runs each op as its own driver request and captures none (use --backend cuda)" "$TMP/err"; then
    ok "torch bench --graph: exit 2, the reason named"
else
    not_ok "torch bench --graph" "exit $RC: $(head -2 "$TMP/err" | tr '\n' ' ')"
fi
run bench "$SEED" --backend torch --ranks 2 --sizes 1KiB --warmup 0 --cycles 1 --kernels -q \
    --format json -o "$TMP/k.json" </dev/null
jq_case "torch bench --kernels: no CUPTI count; the note says why and the timings stand" \
    '.kernels == {"requested": true, "available": false, "note": "kernel evidence needs the cuda backend: backend '"'torch'"' does not count the kernels torch launches"}
     and .sizes[0].plans[0].memlife.n == 1' "$TMP/k.json"

# ---- equiv --------------------------------------------------------------------------------------
E=schedules/equiv
# 1 MiB float32 per rank = 262144 elements; both plans sum the same 2 values per element.
run equiv $E/direct_vs_naive.yaml --backend torch --ranks 2 --set M=1MiB --format json \
    -o "$TMP/dvn.json" </dev/null
if [ "$RC" -ne 1 ] || [ ! -s "$TMP/dvn.json" ]; then
    not_ok "torch equiv direct vs naive, 2 ranks, 1 MiB: exit 1" "exit $RC: $(head -3 "$TMP/err" | tr '\n' ' ')"
else
    jq_case "torch equiv direct vs naive: rows 1-2 hold, 3-4 do not; 262144 float32 bitwise equal on each of 2 ranks" \
        '[.rows[].verdict] == ["holds", "holds", "does not hold", "does not hold"] and
         .rows[0].detail == "bitwise equal on 2 ranks (524288 elements)" and
         ([.ranks[].data | .compared == 262144 and .bitwise_equal and .differ_bitwise == 0 and
           .max_abs == 0] | length == 2 and all) and
         .provenance.backend == "torch" and .provenance.torch_device == "cpu"' "$TMP/dvn.json"
fi
# The checklist's cases: the first difference read back from torch's tensors on rank 0, from the
# formulas (direct: 100 + 2i over n = 10): the shard or the input scaled by 2, 200 at element 0,
# all 10 differ; the gather rolled by one shard of 5, element 0 holds the sum at 5, 110 (either
# direction at world 2); MAX, 100 + i: equal at 0, 102 vs 101 at 1, 9 differ; int8 holds
# 100 + 2i <= 118 without wrapping: the data agree and only the dtype is named.
while read -r file a b code line first diff; do
    run equiv "$E/$file:$a" "$E/$file:$b" --backend torch --ranks 2 --format json -o "$TMP/c.json" </dev/null
    got=$(jq -r '[.rows[0].verdict, (.causes[0] | "\(.code) \(.line)"),
                  (.ranks[0].data.first_difference // "none"),
                  ([.ranks[].data.differ_beyond_tolerance] | map(tostring) | join(","))] | join(" | ")' "$TMP/c.json" 2>&1)
    want="does not hold | $code $line | ${first//_/ } | $diff"
    if [ "$RC" -eq 1 ] && [ "$got" = "$want" ]; then ok "torch equiv $b: $code at $line, ${first//_/ }, differ $diff"
    else not_ok "torch equiv $b: $code at $line" "exit $RC, got '$got', want '$want'"; fi
done <<'CASES'
contracts.yaml direct scaled_shard shard_changed 41 element_0:_100_vs_200 10,10
contracts.yaml direct prescaled scaling 48 element_0:_100_vs_200 10,10
contracts.yaml direct reordered gather_order 66 element_0:_100_vs_110 10,10
contracts.yaml direct max_op reduction_op 81 element_1:_102_vs_101 9,9
contracts.yaml direct int8 dtype 89 none 0,0
CASES

# Random float32 (splitmix64 of (seed, rank, i)), 1 MiB per rank: at world 2 every path adds the
# same two values, and IEEE addition commutes, so direct and RS + AG (gloo's emulated
# reduce_scatter is an all_reduce, its shard cut out) are bitwise equal, not just within tolerance.
run equiv $E/random_float.yaml --backend torch --ranks 2 --set M=1MiB --format json \
    -o "$TMP/f.json" </dev/null
jq_case "torch equiv random float32 at 2 ranks: 262144 elements per rank, bitwise equal" \
    '.rows[0].verdict == "holds" and
     ([.ranks[].data | .compared == 262144 and .bitwise_equal and .max_abs == 0]
      | length == 2 and all)' "$TMP/f.json"

# The same comparison on the host backend reads back the same bytes: every rank's data row of
# torch's run equals the host's, field by field (contracts.yaml's scaled shard: 10 differences).
run equiv $E/contracts.yaml:direct $E/contracts.yaml:scaled_shard --backend host --ranks 2 \
    --format json -o "$TMP/h.json" </dev/null
run equiv $E/contracts.yaml:direct $E/contracts.yaml:scaled_shard --backend torch --ranks 2 \
    --format json -o "$TMP/t.json" </dev/null
if [ -s "$TMP/h.json" ] && [ -s "$TMP/t.json" ] &&
    [ "$(jq -c '[.ranks[].data], [.rows[].verdict]' "$TMP/h.json")" = \
      "$(jq -c '[.ranks[].data], [.rows[].verdict]' "$TMP/t.json")" ] &&
    [ "$(jq -c '[.ranks[].data.differ_beyond_tolerance]' "$TMP/t.json")" = "[10,10]" ]; then
    ok "torch equiv = host equiv on the scaled shard: the same data rows and verdicts on 2 ranks"
else
    not_ok "torch equiv = host equiv" "host $(jq -c '[.ranks[].data]' "$TMP/h.json" 2>&1 | head -c 300) torch $(jq -c '[.ranks[].data]' "$TMP/t.json" 2>&1 | head -c 300)"
fi
run equiv $E/direct_vs_naive.yaml --backend torch --ranks 2 --set M=1MiB --kernels \
    --format json -o "$TMP/k.json" </dev/null
jq_case "torch equiv --kernels: the note says torch's kernels are not counted; rows as without it" \
    '.kernels.measured == false and
     .kernels.note == "kernel evidence needs the cuda backend with CUPTI: backend '"'torch'"' does not count the kernels torch launches; row 3 shows the kernels expected only" and
     [.rows[].verdict] == ["holds", "holds", "does not hold", "does not hold"]' "$TMP/k.json"
exit 0
