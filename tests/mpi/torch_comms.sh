#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The torch backend's communicators on CPUs over gloo (runtime/backends/torch.c + driver.py: a
# torch group per group of each communicator, made by every rank in one order), on
# tests/mpi/data/comms_mesh_2x2.yaml at world 4 (a dp 2 x tp 2 mesh, a color split whose key
# reverses the members' order):
#   - requested bytes measured = predicted on every rank (280 B peak, 0 steady: the file's
#     expect), every op matched;
#   - the 7 checks x 4 ranks pass: tp's reduce-scatter + all-gather equal tp's all-reduce and
#     the closed form 100 (2 t + 1) + 2 i, dp's all-reduce its closed form, rev's broadcast
#     comes from member 0 (world rank 2 or 3, not 0), rev's shards are the members' in the
#     key's order (torch numbers them by world rank);
#   - the same file on the host backend passes the same checks (one meaning, two backends).
. "$(dirname "$0")/lib.bash"

require_host_backend "torch backend with communicators"

TORCH_PY=$(torch_python)
F=tests/mpi/data/comms_mesh_2x2.yaml
if [ -z "$TORCH_PY" ]; then
    skip "torch backend, communicators at world 4" "no python3 with torch (make deps)"
else
    name="torch backend, communicators at world 4: requested measured = predicted (280 B peak)"
    run run "$F" --backend torch --ranks 4 --format json -o "$TMP/t.json"
    if [ "$RC" -ne 0 ]; then
        not_ok "$name" "exit $RC: $(head -3 "$TMP/err" | tr '\n' ' ')"
    else
        jq_case "$name" '[.schedules[0].ranks[] | .match and
            .measured.requested.steady == 0 and .requested.steady == 0 and
            .measured.requested.peak == 280 and .requested.peak == 280] | length == 4 and all' \
            "$TMP/t.json"
        jq_case "torch backend, communicators at world 4: 7 x 4 check rows, all pass" \
            '[.schedules[0].checks[] | .status == "pass"] | length == 28 and all' "$TMP/t.json"
        jq_case "torch backend, communicators at world 4: rev's shards in the key's order" \
            '[.schedules[0].checks[] | select(.name == "rev-shard-of-member" or
              .name == "rev-broadcast-from-member-0") | .status == "pass"] | length == 8 and all' \
            "$TMP/t.json"
    fi
fi
run run "$F" --backend host --ranks 4 --format json -o "$TMP/h.json"
if [ "$RC" -ne 0 ]; then
    not_ok "host backend, the same communicators" "exit $RC: $(head -3 "$TMP/err" | tr '\n' ' ')"
else
    jq_case "host backend, the same communicators: 7 x 4 check rows, all pass" \
        '[.schedules[0].checks[] | .status == "pass"] | length == 28 and all' "$TMP/h.json"
fi
