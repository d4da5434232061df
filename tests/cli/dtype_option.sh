#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# --dtype T replaces the file's default dtype (buffers without their own dtype) in every command
# that loads; an unknown T is a usage error listing the valid ones. Numbers:
#   schedules/seed/01_allreduce_full.yaml allocates full = world * q elements, q = M/4/world at
#   M = 256 MiB (float32): 64 Mi elements. As bfloat16 (2 B): 128 MiB; as float64 (8 B): 512 MiB.
#   A buffer with its own `dtype:` keeps it: tests/mpi/data/lang_ops.yaml's peak stays 448 B.
. "$(dirname "$0")/lib.bash"

MIB=1048576
SEED=schedules/seed/01_allreduce_full.yaml
peak() { jq -r '.schedules[0].ranks[0].requested.peak' "$TMP/out"; }

run predict --format json --dtype bfloat16 "$SEED"
if [ "$RC" -eq 0 ] && [ "$(peak)" = $((128 * MIB)) ]; then ok "--dtype bfloat16: 128 MiB"
else not_ok "--dtype bfloat16: 128 MiB" "exit $RC, peak $(peak 2>/dev/null)"; fi

run predict --format json --dtype=float64 "$SEED"
if [ "$RC" -eq 0 ] && [ "$(peak)" = $((512 * MIB)) ]; then ok "--dtype=float64: 512 MiB"
else not_ok "--dtype=float64: 512 MiB" "exit $RC, peak $(peak 2>/dev/null)"; fi

run predict --format json --dtype int8 tests/mpi/data/lang_ops.yaml
if [ "$RC" -eq 0 ] && [ "$(peak)" = 448 ]; then ok "--dtype leaves a buffer's own dtype: 448 B"
else not_ok "--dtype leaves a buffer's own dtype: 448 B" "exit $RC, peak $(peak 2>/dev/null)"; fi

run check --dtype bfloat16 "$SEED"
if [ "$RC" -eq 1 ] && grep -q "predicted 128 MiB" "$TMP/err"; then ok "check --dtype: the file's float32 expectations fail (exit 1)"
else not_ok "check --dtype: the file's float32 expectations fail (exit 1)" "exit $RC: $(head -2 "$TMP/err")"; fi

run predict --dtype bf16 "$SEED"
want="error: unknown dtype 'bf16' in --dtype: expected one of int8, uint8, int32, uint32, int64, uint64, float16, bfloat16, float32, float64"
if [ "$RC" -eq 2 ] && [ "$(head -1 "$TMP/err")" = "$want" ] && [ ! -s "$TMP/out" ]; then ok "--dtype bf16: usage error listing the dtypes"
else not_ok "--dtype bf16: usage error listing the dtypes" "exit $RC: $(head -1 "$TMP/err")"; fi
