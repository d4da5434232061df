#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/cli/load_floors.sh — the loader's files call only downward (a cycle
# load.c <-> load_data.c <-> load_names.c <-> load_steps.c is gone): from the objects' symbol
# tables, no file uses a symbol defined in a file above it. Floors, bottom to top:
#   cursor (events, marks, errors, tables) < load_names < load_data < load_steps < load
source "$(dirname "$0")/lib.bash"

FLOORS=(cursor load_names load_data load_steps load)
OBJ=$ROOT/$BUILD/runtime/load
if ! command -v nm >/dev/null; then
    echo "skip - load_floors: nm not found"
    exit 0
fi
declare -A floor def
for i in "${!FLOORS[@]}"; do floor[${FLOORS[$i]}]=$i; done
missing=
for f in "${FLOORS[@]}"; do
    [ -f "$OBJ/$f.o" ] || missing="$missing $f.o"
done
if [ -n "$missing" ]; then
    not_ok load_floors "objects missing:$missing"
    exit 0
fi
for f in "${FLOORS[@]}"; do
    while read -r sym; do def[$sym]=$f; done < <(nm -P "$OBJ/$f.o" | awk '$2 ~ /^[TDRB]$/ {print $1}')
done
up=
for f in "${FLOORS[@]}"; do
    while read -r sym; do
        d=${def[$sym]:-}
        [ -n "$d" ] && [ "${floor[$d]}" -gt "${floor[$f]}" ] && up="$up $f.o uses $sym of $d.o;"
    done < <(nm -P "$OBJ/$f.o" | awk '$2 == "U" {print $1}')
done
# Every file above the cursor must use it (else the floors are not what this test says).
uses_cursor=1
for f in load_names load_data load_steps load; do
    nm -P "$OBJ/$f.o" | awk '$2 == "U" {print $1}' | grep -qx ld_fail || uses_cursor=0
done
if [ -n "$up" ]; then
    not_ok load_floors "calls upward:$up"
elif [ $uses_cursor = 0 ]; then
    not_ok load_floors "a file above the cursor does not call ld_fail: floors changed"
else
    ok load_floors
fi
