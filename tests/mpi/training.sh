#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# schedules/training/: every file's training step at 4 host ranks (small default sizes): every
# data check PASS, measured = predicted on every rank, every expectation (the numbers each
# file's header derives by hand) holds. The hand-derived peaks, from the files' headers:
#   ddp 3407872 B; zero1 1638400, zero2 1540096, zero3 1245184; fsdp2 1441792;
#   megatron-tp-sp 861184; pipeline-1f1b 1064960 / 999424 / 933888 / 868352 by stage.
. "$(dirname "$0")/lib.bash"

require_host_backend "training library at 4 ranks"
# file: the hand-derived peak of each schedule (plan) of it, rank by rank
declare -A PEAKS=(
    [ddp]='[[3407872,3407872,3407872,3407872]]'
    [zero]='[[1638400,1638400,1638400,1638400],[1540096,1540096,1540096,1540096],[1245184,1245184,1245184,1245184]]'
    [fsdp2]='[[1441792,1441792,1441792,1441792]]'
    [megatron_tp_sp]='[[861184,861184,861184,861184]]'
    [pipeline_1f1b]='[[1064960,999424,933888,868352]]'
)
for f in ddp zero fsdp2 megatron_tp_sp pipeline_1f1b; do
    file=schedules/training/$f.yaml
    run run "$file" --backend host --ranks 4 --format json -o "$TMP/$f.json"
    if [ "$RC" -ne 0 ]; then
        not_ok "training $f at 4 ranks" "exit $RC: $(head -3 "$TMP/err" | tr '\n' ' ')"
        continue
    fi
    jq_case "training $f at 4 ranks: checks PASS, measured = predicted, expectations hold" \
        '[.schedules[] | (.checks | length > 0 and all(.status == "pass")) and
          (.ranks | all(.match)) and (.expectations | length > 0 and all(.pass))] | all' \
        "$TMP/$f.json"
    jq_case "training $f: measured requested peaks = the header's ${PEAKS[$f]}" \
        "[.schedules[] | [.ranks[].measured.requested.peak]] == ${PEAKS[$f]}" "$TMP/$f.json"
done
