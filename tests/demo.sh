#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/demo.sh (`make demo`) — memlife's main job on a CPU machine, start to finish:
#   1. install what is missing (tools/deps.sh: Debian/Ubuntu packages, PyTorch and jsonschema in
#      .venv; nothing, and no apt or sudo, when all are there; elsewhere it names what to install),
#   2. build,
#   3. predict the chapter's seed schedules (the lifetime table: 256/256, 64/320, 256/576, 256/320
#      MiB at 4 ranks),
#   4. check them (the CI gate: every expectation holds),
#   5. run them for real on the host backend with 4 MPI ranks: predicted vs measured per rank and
#      the data-contract rows.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

# --- 1. dependencies ------------------------------------------------------------------------
step "dependencies (tools/deps.sh: installs only what is missing)"
./tools/deps.sh
echo "all present"

# --- 2. build ---------------------------------------------------------------------------------
step "make"
make -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
./memlife --version

LIFETIMES=(schedules/seed/01_allreduce_full.yaml schedules/seed/02_rs_only.yaml
           schedules/seed/03_rs_ag_naive.yaml schedules/seed/04_rs_ag_optimized.yaml)
CONTRACTS=(schedules/seed/*contract*.yaml)

# --- 3. predict -------------------------------------------------------------------------------
step "memlife predict: the four lifetimes at 4 ranks (requested and device views)"
./memlife predict "${LIFETIMES[@]}"
step "memlife predict --world 2 --format md (ready for a pull request)"
./memlife predict --world 2 --format md "${LIFETIMES[@]}"

# --- 4. check ---------------------------------------------------------------------------------
step "memlife check: every seed schedule against its expectations (exit 0 = all hold)"
./memlife check schedules/seed/*.yaml
step "memlife check with a wrong budget (--set SHARD=1MiB): the gate fails, exit 1"
set +e
./memlife check --set SHARD=1MiB schedules/seed/04_rs_ag_optimized.yaml 2>&1 | head -3
rc=${PIPESTATUS[0]}
set -e
echo "exit $rc"

# --- 5. run on the host backend ------------------------------------------------------------------
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
if ./memlife help run >/dev/null 2>&1 && ./memlife --version | grep -q '^backends:.*host\b' &&
    ! ./memlife --version | grep -q 'host (not built)'; then
    step "memlife run --backend host --ranks 4: the lifetimes, predicted vs measured per rank"
    ./memlife run "${LIFETIMES[@]}" --backend host --ranks 4
    # The chapter's five contracts, each on every rank (5 x 4 = 20 rows), with the checks that
    # back them (closed form, independent reduction, unrolled order, prod/max/min padding).
    step "memlife run --backend host --ranks 4: the data contracts (rank rows per contract)"
    ./memlife run "${CONTRACTS[@]}" --backend host --ranks 4 --format md
else
    step "memlife run: skipped (the host backend needs Open MPI: apt-get install openmpi-bin libopenmpi-dev, then make)"
fi
step "done"
