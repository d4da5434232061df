#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The race corpus: every schedule under tests/races/race/ is a data race between
# streams that lint must refuse (exit 2) with exactly the first diagnostic, at the offending
# view, and its note (the other access, at its view) in its .err golden next to it; every schedule under tests/races/clean/ is ordered (transitive events, host syncs,
# disjoint slices, one stream, concurrent reads...) and must pass `check` with nothing on stderr.
# UPDATE_GOLDEN=1 rewrites the .err files from the current output (then review them with git
# diff). The goldens were written by hand-checking each message against the schedule's comment.
. "$(dirname "$0")/lib.bash"

n_race=0
for f in tests/races/race/*.yaml; do
    name=race-$(basename "$f" .yaml)
    want=${f%.yaml}.err
    run check "$f"
    sed -n '1p;2{/: note: /p}' "$TMP/err" >"$TMP/first"   # the error and its note
    n_race=$((n_race + 1))
    if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then
        cp "$TMP/first" "$want"
    fi
    why=""
    [ "$RC" -eq 2 ] || why="exit $RC, want 2"
    if [ ! -f "$want" ]; then
        why="${why:+$why; }missing $want"
    elif ! cmp -s "$want" "$TMP/first"; then
        why="${why:+$why; }first diagnostic differs"
        diff -u --label "$want" --label actual "$want" "$TMP/first" | sed 's/^/  /'
    fi
    [ -z "$why" ] && ok "$name" || not_ok "$name" "$why"
done

n_clean=0
for f in tests/races/clean/*.yaml; do
    name=clean-$(basename "$f" .yaml)
    run check "$f"
    n_clean=$((n_clean + 1))
    if [ "$RC" -eq 0 ] && [ ! -s "$TMP/err" ]; then
        ok "$name"
    else
        not_ok "$name" "exit $RC, stderr: $(head -1 "$TMP/err")"
    fi
done

# The corpus is the acceptance's size: at least 20 of each.
[ "$n_race" -ge 20 ] && ok "race-corpus-size ($n_race)" || not_ok race-corpus-size "$n_race races, want >= 20"
[ "$n_clean" -ge 20 ] && ok "clean-corpus-size ($n_clean)" || not_ok clean-corpus-size "$n_clean clean, want >= 20"
