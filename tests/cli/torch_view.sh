#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# torch_view.sh — the torch view (PyTorch's caching allocator) through the CLI: expectations,
# JSON, CSV, trace counters, the predicted out-of-memory, bad configurations (file:line:col,
# exit 2). The expected numbers are measured on an H200 (tests/torch/fixtures, named per file).
source "$(dirname "$0")/lib.bash"
T=tests/cli/torch

# The worked example: 40894976 / 50331648 after the last step (worked_example__default.json).
run check $T/worked_example.yaml
[ "$RC" = 0 ] && grep -q '(10 expectations)' "$TMP/out" \
    && ok "torch check: the worked example's allocated/reserved hold" \
    || not_ok "torch check: the worked example" "exit $RC: $(head -c 300 "$TMP/err")"

# With expandable_segments:True the same steps end at 39846400 / 44040192 (the fact sheet and
# worked_example__expandable.json).
run predict -f json --torch-conf expandable_segments:True $T/worked_example.yaml
got=$(jq -c '[.schedules[0].ranks[0].torch.allocated.steady, .schedules[0].ranks[0].torch.reserved.steady]' "$TMP/out" 2>/dev/null)
[ "$RC" = 0 ] && [ "$got" = "[39846400,44040192]" ] \
    && ok "--torch-conf expandable_segments:True: 39846400 / 44040192" \
    || not_ok "--torch-conf expandable_segments:True" "exit $RC, got $got"

# Segments at the reserved peak in address order: 26, 2 and 20 MiB, where the H200 put them
# (tests/torch/fixtures/allocator/worked_example__default.json: the 26 MiB segment lowest, the
# 20 MiB one highest; analyzer/torch/torchplace.c).
got=$(jq -c '[.schedules[0].ranks[0].torch.segments_at_peak[].size]' "$TMP/out" 2>/dev/null)
run predict -f json $T/worked_example.yaml
got=$(jq -c '[.schedules[0].ranks[0].torch.segments_at_peak[].size]' "$TMP/out" 2>/dev/null)
frag=$(jq -c '.schedules[0].ranks[0].torch.fragmentation | [.bytes, .free_in_used_segments, .whole_free_segments]' "$TMP/out" 2>/dev/null)
# reserved - allocated = 50331648 - 40894976 = 9436672: the 2 MiB small segment is whole free
# (a was freed), 7339520 B free inside the 20 MiB segment (20 MiB - 12 MiB - (1 MiB + 512)).
[ "$got" = "[27262976,2097152,20971520]" ] && [ "$frag" = "[9436672,7339520,2097152]" ] \
    && ok "torch json: segments_at_peak 26/2/20 MiB, fragmentation 9436672 = 7339520 + 2097152" \
    || not_ok "torch json: segments and fragmentation" "segments $got, fragmentation $frag"

# The view is off without a torch: key or option: the seed's JSON has no torch key.
run predict -f json schedules/seed/01_allreduce_full.yaml
[ "$(jq '.schedules[0].ranks[0] | has("torch")' "$TMP/out")" = false ] \
    && ok "torch view off by default (reports unchanged)" \
    || not_ok "torch view off by default" "torch key present"

# CSV columns from the view table.
run predict -f csv $T/worked_example.yaml
head -1 "$TMP/out" | grep -q ',torch_allocated_steady,torch_allocated_peak,torch_reserved_steady,torch_reserved_peak,' \
    && grep -q ',40894976,40894976,50331648,50331648,' "$TMP/out" \
    && ok "torch csv: four columns, 40894976 / 50331648" \
    || not_ok "torch csv" "$(head -2 "$TMP/out")"

# Trace counters: one sample per op (the k-th is the value after op k), then a closing one.
run trace $T/worked_example.yaml -o "$TMP/t.json"
n=$(jq '[.traceEvents[] | select(.ph == "C" and .name == "torch reserved bytes" and .pid == 0)] | length' "$TMP/t.json" 2>/dev/null)
last=$(jq '[.traceEvents[] | select(.ph == "C" and .name == "torch reserved bytes" and .pid == 0)] | last | .args.predicted' "$TMP/t.json" 2>/dev/null)
# the worked example's 7 ops (docs/torch.md), plus the closing sample; reserved ends at 48 MiB
[ "$RC" = 0 ] && [ "$n" = 8 ] && [ "$last" = 50331648 ] \
    && ok "torch trace: 'torch reserved bytes' 8 samples (7 ops + closing), last 50331648" \
    || not_ok "torch trace counters" "exit $RC, $n samples, last $last"

# record_stream and empty_cache: the pending block, then every segment returned.
expect_case "torch record_stream/empty_cache expectations" 0 "" "" -- check $T/streams.yaml

# Predicted out-of-memory: file:line:col at the alloc's size, exit 2, nothing on stdout.
run predict $T/oom.yaml
grep -qx "$T/oom.yaml:10:35: error: would run out of memory at alloc 'gathered' (256 MiB): allocated 800 MiB, reserved 800 MiB, limit 1 GiB (torch view, rank 0)" "$TMP/err" \
    && [ "$RC" = 2 ] && [ ! -s "$TMP/out" ] \
    && ok "torch out of memory: 10:35 alloc 'gathered' (its bytes), exit 2" \
    || not_ok "torch out of memory" "exit $RC: $(cat "$TMP/err")"
# The same through --torch-limit: under 24 MiB the worked example's first steps fit (reserved
# 22 MiB); the 25 MiB tensor needs a 26 MiB segment: the retry path returns the whole-free 2 MiB
# small segment (reserved 20 MiB) and still fails.
run predict --torch-limit 24MiB $T/worked_example.yaml
grep -q "worked_example.yaml:18:28: error: would run out of memory at alloc 'e' (25 MiB): allocated 13.0 MiB, reserved 20 MiB, limit 24 MiB" "$TMP/err" && [ "$RC" = 2 ] \
    && ok "--torch-limit 24MiB: out of memory at 18:28 alloc 'e', reserved 20 MiB after the retry" \
    || not_ok "--torch-limit" "exit $RC: $(cat "$TMP/err")"

# --torch-capacity: the same retry path as a limit (cudaMalloc fails instead of the fraction's
# check), so the same out-of-memory, named capacity.
run predict --torch-capacity 24MiB $T/worked_example.yaml
grep -q "worked_example.yaml:18:28: error: would run out of memory at alloc 'e' (25 MiB): allocated 13.0 MiB, reserved 20 MiB, capacity 24 MiB" "$TMP/err" && [ "$RC" = 2 ] \
    && ok "--torch-capacity 24MiB: out of memory at 18:28 alloc 'e', reserved 20 MiB after the retry" \
    || not_ok "--torch-capacity" "exit $RC: $(cat "$TMP/err")"
# `torch: {capacity:}` in the file: 2 MiB + 20 MiB + 26 MiB = 48 MiB fit under 48 MiB exactly
# (alloc_block fails only past it)
sed 's/^torch:.*/torch: {capacity: 48MiB}/' $T/worked_example.yaml > "$TMP/cap.yaml"
run predict -f json "$TMP/cap.yaml"
[ "$RC" = 0 ] && [ "$(jq '.schedules[0].ranks[0].torch.reserved.steady' "$TMP/out")" = 50331648 ] \
    && ok "torch: {capacity: 48MiB}: the example's 50331648 B fit" \
    || not_ok "torch capacity key" "exit $RC: $(cat "$TMP/err")"
# One byte less, e's 26 MiB segment fails first (22 + 26 MiB
# > 48 MiB - 1), the retry returns a's whole-free 2 MiB segment and 20 + 26 = 46 MiB fit.
sed 's/^torch:.*/torch: {capacity: 48MiB - 1}/' $T/worked_example.yaml > "$TMP/cap.yaml"
run predict -f json "$TMP/cap.yaml"
[ "$RC" = 0 ] && [ "$(jq '.schedules[0].ranks[0].torch.reserved.steady' "$TMP/out")" = 48234496 ] \
    && ok "torch: {capacity: 48MiB - 1}: the retry releases the 2 MiB segment, 48234496 B" \
    || not_ok "torch capacity key, one byte less" "exit $RC: $(cat "$TMP/err")"
run predict --torch-capacity 0 $T/worked_example.yaml
[ "$RC" = 2 ] && grep -q "option '--torch-capacity' needs a positive size" "$TMP/err" \
    && ok "--torch-capacity 0: usage error, exit 2" \
    || not_ok "--torch-capacity 0" "exit $RC: $(cat "$TMP/err")"

# On the torch backend a capacity runs as a memory fraction at it (the same failing comparison
# and retries); with garbage_collection_threshold the fraction would turn garbage collection on,
# which a capacity never does: refused when the rank is set up, exit 3.
sed 's/^torch:.*/torch: {conf: "garbage_collection_threshold:0.5", capacity: 100MiB}/' $T/worked_example.yaml > "$TMP/capgc.yaml"
run run --backend torch "$TMP/capgc.yaml"
[ "$RC" = 3 ] && grep -qF "torch capacity with garbage_collection_threshold: a device's memory can be bounded only by a memory fraction, which turns garbage collection on" "$TMP/err" \
    && ok "run --backend torch: a capacity with garbage_collection_threshold refused, exit 3" \
    || not_ok "run --backend torch: capacity with gc" "exit $RC: $(head -2 "$TMP/err")"

# torch: {addresses:}: the segments' addresses in the order made (decimal or 0x hex); the order
# of the worked example's 2, 20 and 26 MiB segments changes no number there (no tie), so the
# predictions stay 40894976 / 50331648; a value that is no integer is an error at its column.
sed 's/^torch:.*/torch: {addresses: [0x40000000, 1048576000, 3221225472]}/' $T/worked_example.yaml > "$TMP/addr.yaml"
run predict -f json "$TMP/addr.yaml"
[ "$RC" = 0 ] && [ "$(jq -c '.schedules[0].ranks[0].torch | [.allocated.steady, .reserved.steady]' "$TMP/out")" = "[40894976,50331648]" ] \
    && ok "torch: {addresses:} accepted, the worked example's numbers unchanged" \
    || not_ok "torch addresses" "exit $RC: $(cat "$TMP/err")"
printf 'name: x\nworld: 1\ntorch: {addresses: [1048576, 0x40000000, 12Q]}\nsteps:\n  - alloc: {buf: a, bytes: 1}\n' > "$TMP/ba.yaml"
run predict "$TMP/ba.yaml"
grep -qx "$TMP/ba.yaml:3:42: error: 'addresses' holds '12Q', not an address (an integer below 2^63)" "$TMP/err" && [ "$RC" = 2 ] \
    && ok "torch addresses: '12Q' refused at its column 3:42, exit 2" \
    || not_ok "torch addresses: bad value" "exit $RC: $(cat "$TMP/err")"

# A bad key inside the conf string: the column of 'foo' (2:41), exit 2.
run predict $T/bad_conf.yaml
grep -qx "$T/bad_conf.yaml:2:41: error: unknown key 'foo' in PYTORCH_CUDA_ALLOC_CONF" "$TMP/err" && [ "$RC" = 2 ] \
    && ok "torch conf: unknown key at its column, exit 2" \
    || not_ok "torch conf: unknown key" "exit $RC: $(cat "$TMP/err")"
run predict --torch-conf max_split_size_mb:2 $T/worked_example.yaml
grep -q "max_split_size_mb too small, must be >= 20" "$TMP/err" && [ "$RC" = 2 ] \
    && ok "--torch-conf: PyTorch's own message for a bad value, exit 2" \
    || not_ok "--torch-conf bad value" "exit $RC: $(cat "$TMP/err")"
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True run predict -f json --torch-conf env $T/worked_example.yaml
[ "$(jq '.schedules[0].ranks[0].torch.reserved.steady' "$TMP/out")" = 44040192 ] \
    && ok "--torch-conf env reads PYTORCH_CUDA_ALLOC_CONF" \
    || not_ok "--torch-conf env" "exit $RC"
run predict --torch-limit 12Q $T/worked_example.yaml
[ "$RC" = 2 ] && grep -q "torch-limit" "$TMP/err" \
    && ok "--torch-limit with a bad size: usage error, exit 2" \
    || not_ok "--torch-limit bad size" "exit $RC"

# record_stream of a freed buffer is a lint error.
printf 'name: x\nworld: 1\nstreams: [s]\nsteps:\n  - alloc: {buf: a, bytes: 1}\n  - free: a\n  - record_stream: {buf: a, stream: s}\n' > "$TMP/rs.yaml"
run predict "$TMP/rs.yaml"
# at the name (column 26 of `  - record_stream: {buf: a, ...}`), the free (6:11) as its note
grep -q "7:26: error: record_stream of 'a' after free" "$TMP/err" && grep -q "6:11: note: 'a' was freed here" "$TMP/err" && [ "$RC" = 2 ] \
    && ok "lint: record_stream after free" \
    || not_ok "lint: record_stream after free" "exit $RC: $(cat "$TMP/err")"

# The segments' address order (docs/torch.md): order_decides.yaml's comment works out both orders.
# JSON: the first tie at c (op 4, line 25), the first difference after d (op 6, line 27): 39321600
# predicted, 39845888 with new segments above; the peaks 41943040 and 42467328.
run predict -f json $T/order_decides.yaml
got=$(jq -c '.schedules[0].ranks[0].torch.segment_order | [.tie_step.index, .tie_step.line, .first_difference_step.index, .first_difference_step.line, .allocated.predicted, .allocated.other_order, .peak_allocated.predicted, .peak_allocated.other_order, .other_order_oom_step]' "$TMP/out" 2>/dev/null)
peak=$(jq -c '.schedules[0].ranks[0].torch | [.allocated.peak, .reserved.peak]' "$TMP/out" 2>/dev/null)
[ "$RC" = 0 ] && [ "$got" = "[4,25,6,27,39321600,39845888,41943040,42467328,null]" ] \
    && [ "$peak" = "[41943040,41943040]" ] \
    && ok "torch segment order decides: tie at op 4, 39321600 vs 39845888 after op 6; peaks unchanged" \
    || not_ok "torch segment order decides" "exit $RC, got $got, peaks $peak"
run predict $T/order_decides.yaml
n=$(grep -c "address order decides" "$TMP/out")
grep -qF "  torch: the segments' address order decides (rank 0): from line 25 (alloc 'c') best fit met equal free blocks in different segments; with new segments above the old, allocated after line 27 is 39845888 B, not 39321600 B, its peak 42467328 B, not 41943040 B" "$TMP/out" && [ "$n" = 1 ] \
    && ok "torch segment order decides: one note in the table" \
    || not_ok "torch segment order note" "$n notes: $(grep torch: "$TMP/out")"
# Markdown carries the same note, a list item naming the schedule (golden torch_order_decides.md:
# the table's row, then the note; order_decides.yaml works its numbers out)
run predict -f md $T/order_decides.yaml
[ "$RC" = 0 ] && golden torch_order_decides.md "$TMP/out" \
    && ok "torch segment order decides: the note in Markdown (golden)" \
    || not_ok "torch segment order in Markdown" "exit $RC"
# A tie that does not decide (order_same.yaml): null, no note; nor in the worked example (no tie).
run predict -f json $T/order_same.yaml
a=$(jq -c '.schedules[0].ranks[0].torch | [.segment_order, .allocated.peak]' "$TMP/out" 2>/dev/null)
run predict $T/order_same.yaml
grep -q "address order" "$TMP/out" && a="$a, a note"
run predict -f json $T/worked_example.yaml
b=$(jq -c '[.schedules[0].ranks[].torch.segment_order]' "$TMP/out" 2>/dev/null)
[ "$a" = "[null,39845888]" ] && [ "$b" = "[null,null]" ] \
    && ok "torch segment order: a tie that does not decide and no tie give null, no note" \
    || not_ok "torch segment order: no note" "order_same $a, worked example $b"
# Under --torch-limit 50MiB the other order runs out of memory at f (line 28): its third 20 MiB
# segment would make 60 MiB, and no segment is whole free to release; this one stays at 40 MiB.
# Its allocated after d (39845888) is also its peak up to there.
run predict -f json --torch-limit 50MiB $T/order_decides.yaml
got=$(jq -c '.schedules[0].ranks[0].torch | [.segment_order.other_order_oom_step.line, .segment_order.allocated.other_order, .segment_order.peak_allocated.other_order, .allocated.peak, .reserved.peak]' "$TMP/out" 2>/dev/null)
[ "$RC" = 0 ] && [ "$got" = "[28,39845888,39845888,41943040,41943040]" ] \
    && ok "torch segment order: the other order's out-of-memory at line 28 under a 50 MiB limit" \
    || not_ok "torch segment order out of memory" "exit $RC, got $got"
# Releases under a limit (numbers worked out in each file's comment): the oversize blocks freed
# before a retry (limit_oversize.yaml: reserved 170 MiB at the end, 200 at the peak) and garbage
# collection (limit_gc.yaml: 120 MiB; without the threshold the cached 40 MiB segment stays: 160).
for f in limit_oversize limit_gc; do
    run check $T/$f.yaml
    [ "$RC" = 0 ] && grep -q '(4 expectations)' "$TMP/out" \
        && ok "torch check: $f's allocated/reserved hold" \
        || not_ok "torch check: $f" "exit $RC: $(head -c 300 "$TMP/out" "$TMP/err")"
done
run predict -f json --torch-conf roundup_power2_divisions:1 $T/limit_gc.yaml
got=$(jq -c '.schedules[0].ranks[0].torch.reserved.steady' "$TMP/out" 2>/dev/null)
[ "$RC" = 0 ] && [ "$got" = 167772160 ] \
    && ok "torch: limit_gc.yaml without the threshold keeps 160 MiB reserved" \
    || not_ok "torch: limit_gc.yaml without the threshold" "exit $RC, got $got"
