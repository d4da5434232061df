#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/probe/session.sh — one GPU in one call: the page sequences with the held-out ones,
# NCCL's memory under the settings (three predicted before measuring) with a send/receive to
# itself, NCCL's ALLOC log of it, then tools/gpu_session.sh at GPU_WORLD=1 (the
# communicator view included). Run from a tree holding build/memlife, tests/, tools/, schedules/.
set -u
cd "$(dirname "$0")/../../.." || exit 2
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1
R=$OUT/r
mkdir -p "$R"
t0=$SECONDS
timeout 120 python3 tests/gpu/probe/pages.py "$R/pages" >"$R/pages.txt" 2>&1
cat "$R/pages.txt"
timeout 200 python3 tests/gpu/probe/nccl_mem.py >"$R/nccl_mem.jsonl" 2>&1
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ALLOC,P2P timeout 60 python3 tests/gpu/probe/nccl_mem.py --one '{}' \
    >"$R/nccl_alloc_log.txt" 2>&1
echo "probes done at $((SECONDS - t0)) s"
GPU_WORLD=1 SESSION_BUDGET=${SESSION_BUDGET:-170} OUT=$OUT/s bash tools/gpu_session.sh >/dev/null 2>&1
echo "session exit $? at $((SECONDS - t0)) s"
grep -E '^(not ok|skip) - |communicator|passed|failed' "$OUT/s/session.log" | grep -v '^### ' | cut -c1-260
python3 tests/gpu/probe/nccl_mem.py --summary "$R/nccl_mem.jsonl"
tar -czf "$OUT/r.tgz" -C "$OUT" r && rm -rf "$R"
