#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/cli/comms_view.sh — predict's communicator view per communicator (JSON `communicator`:
# `gpu`, `communicators`, each term's `comm`) and --gpu. Numbers, MiB (analyzer/predict/
# commmodel.h; granule 2 MiB; a communicator's init = 2 granules + channels x 3 granules, 2 with
# share; the first unshared split one granule more; the library once: 198 on h100-80gb, 192 on
# h200):
#   tests/gpu/schedules/comms_w1_share_false.yaml --gpu h100-80gb: world 586 = 198 + 4 + 64 x 6,
#     split1 390 = 4 + 64 x 6 + 2, split2 388: 1364 (measured on H100: the same);
#     share true: 586, 260 = 4 + 64 x 4, 260: 1106; without --gpu (h200) the world 580;
#     NCCL_COMM_SPLIT_SHARE_RESOURCES=1 over share false: 260, 260 (NCCL lets it win);
#   tests/mpi/data/comms_mesh_2x2.yaml at world 4 (32 channels), rank 0: world 388 = 192 + 4 +
#     32 x 6 (no collective on it); tp 198 = 4 + 192 + 2 at init, 474 = 32 x 12 + 90 at its first
#     all_reduce (its rings and the process's first kernel); dp (share) 132 = 4 + 32 x 4, 384 at
#     its all_reduce; rev 196, 384 at its broadcast: 2156 in all;
#   --gpu a100-80gb: a note (not measured), no numbers; --gpu v100: exit 2.
. "$(dirname "$0")/lib.bash"

MiB=1048576
# view FILE ARGS...: the communicator as "name:init:total ..." in MiB, then the total.
view() {
    local f=$1
    shift
    run predict "$f" -f json "$@"
    [ "$RC" -eq 0 ] || { echo "exit $RC"; return; }
    jq -r --argjson M $MiB '.schedules[0].communicator |
        ([.communicators[] | "\(.name):\(.stages[0].bytes / $M):\(.total / $M)"] | join(" "))
        + " = \(.total / $M) \(.gpu)"' "$TMP/out"
}

check() {   # NAME WANT GOT
    if [ "$2" = "$3" ]; then ok "$1: $3"; else not_ok "$1" "got '$3', want '$2'"; fi
}

W1=tests/gpu/schedules/comms_w1_share
check "h100-80gb, splits without share" "world:586:586 split1:390:390 split2:388:388 = 1364 h100-80gb" \
    "$(view ${W1}_false.yaml --gpu h100-80gb)"
check "h100-80gb, splits with share" "world:586:586 split1:260:260 split2:260:260 = 1106 h100-80gb" \
    "$(view ${W1}_true.yaml --gpu h100-80gb)"
check "default kind h200" "world:580:580 split1:390:390 split2:388:388 = 1358 h200" \
    "$(view ${W1}_false.yaml)"
check "NCCL_COMM_SPLIT_SHARE_RESOURCES=1 wins over share: false" \
    "world:586:586 split1:260:260 split2:260:260 = 1106 h100-80gb" \
    "$(NCCL_COMM_SPLIT_SHARE_RESOURCES=1 view ${W1}_false.yaml --gpu h100-80gb)"
check "world 4 mesh, rank 0's communicators" \
    "world:388:388 tp:198:672 dp:132:516 rev:196:580 = 2156 h200" \
    "$(view tests/mpi/data/comms_mesh_2x2.yaml)"
run predict tests/mpi/data/comms_mesh_2x2.yaml -f json
check "world 4 mesh: tp's stages" "init 198, all_reduce 474, reduce_scatter 0, all_gather 0" \
    "$(jq -r --argjson M $MiB '[.schedules[0].communicator.communicators[1].stages[] |
        "\(.stage) \(.bytes / $M)"] | join(", ")' "$TMP/out")"
check "world 4 mesh: the first kernel is tp's, once" "tp" \
    "$(jq -r '[.schedules[0].communicator.terms[] | select(.term == "first kernel") | .comm] |
        join(",")' "$TMP/out")"
check "--gpu a100-80gb: not measured, no numbers" \
    "NCCL's memory on this GPU kind is not measured (measured: h100-80gb, h200)" \
    "$(run predict ${W1}_false.yaml -f json --gpu a100-80gb; jq -r '.schedules[0].communicator.note' "$TMP/out")"
expect_case "--gpu v100: a usage error" 2 "" "" -- predict ${W1}_false.yaml --gpu v100
check "--gpu v100: names the kinds" \
    "error: unknown GPU kind 'v100' in --gpu: expected one of h100-80gb, h200, a100-80gb, a100-40gb" \
    "$(head -1 "$TMP/err")"
