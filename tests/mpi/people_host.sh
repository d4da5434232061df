#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# people_host.sh — output for people from ranks (base/human.h): memlife's ranks run under mpirun,
# which gives their stdout and stderr a pseudo-terminal of its own; the terminal that counts is
# memlife's (MEMLIFE_TERM, exec/launch.c). So `run` into a pipe has no colour, COLUMNS narrows
# its table as for predict, and --color=always still colours.
#   seed 03 at world 2 (docs/design.md): requested 256 MiB steady, 640 MiB peak, measured equal.
. "$(dirname "$0")/lib.bash"

require_host_backend "run into a pipe: no colour" "run at COLUMNS=80" "run --color=always"
ESC=$'\033'
SEED=schedules/seed/03_rs_ag_naive.yaml

run run --backend host --ranks 2 -w 2 "$SEED"
if [ "$RC" -eq 0 ] && grep -q 'pass on ranks 0-1' "$TMP/out" && ! grep -q "$ESC" "$TMP/out" "$TMP/err"; then
    ok "run into a pipe: no colour (mpirun's pseudo-terminal is not memlife's)"
else
    not_ok "run into a pipe: no colour" "exit $RC, $(grep -c "$ESC" "$TMP/out") lines with ESC"
fi

COLUMNS=80 run run --backend host --ranks 2 -w 2 "$SEED"
widest=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$TMP/out")
row='     0           256 MiB         640 MiB            640 MiB  yes'
if [ "$RC" -eq 0 ] && [ "$widest" -le 80 ] && grep -qxF -- "$row" "$TMP/out" &&
    grep -qF 'not shown to fit 80 columns: device steady, device peak, floor, measured req' "$TMP/out"; then
    ok "run at COLUMNS=80: the requested and measured peaks and match stay ($widest columns)"
else
    not_ok "run at COLUMNS=80" "exit $RC, widest $widest: $(head -8 "$TMP/out" | tr '\n' '|')"
fi

run run --backend host --ranks 2 -w 2 "$SEED" --color=always
if [ "$RC" -eq 0 ] && grep -qF "(line 20): ${ESC}[32mpass${ESC}[0m on ranks 0-1" "$TMP/out"; then
    ok "run --color=always: pass in green"
else
    not_ok "run --color=always" "exit $RC: $(grep -m1 'line 20' "$TMP/out" | od -c | head -2 | tr '\n' ' ')"
fi
