#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The bad-input corpus (tests/bad/*.yaml): YAML syntax, schema, expressions, size overflow,
# hazards, cross-rank divergence, deep nesting, aliases, huge repeat counts, long names. Each
# file's first line is `# expect: FILE:LINE:COL: error: TEXT`, the exact first diagnostic that
# `memlife check` must print for it, and where the error has a second place (a double free's
# earlier free), the second line is `# note: FILE:LINE:COL: note: TEXT`, the diagnostic after
# it; each must end with exit 2, nothing on stdout, within 10 s and
# 2 GB of address space (ulimit -v 2000000), so no input can hang, crash or exhaust the machine.
# Under ASan (SANITIZE=1) the shadow memory does not fit a ulimit; ASan's own RSS limit
# (hard_rss_limit_mb=2000) bounds memory instead.
. "$(dirname "$0")/lib.bash"

LIMIT_KB=2000000
if ldd "$MEMLIFE" 2>/dev/null | grep -q libasan; then
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}hard_rss_limit_mb=2000"
    LIMIT_KB=unlimited
fi

n=0
for f in tests/bad/*.yaml; do
    name=$(basename "$f" .yaml)
    n=$((n + 1))
    want=$(head -1 "$f" | sed -n 's/^# expect: //p')
    if [ -z "$want" ]; then
        not_ok "bad corpus $name" "first line is not '# expect: FILE:LINE:COL: error: ...'"
        continue
    fi
    (ulimit -v "$LIMIT_KB" && exec timeout 10 "$MEMLIFE" check "$f") >"$TMP/out" 2>"$TMP/err"
    rc=$?
    got=$(head -1 "$TMP/err")
    want_note=$(sed -n '2s/^# note: //p' "$f")
    got_note=$(sed -n '2{/: note: /p}' "$TMP/err")
    why=""
    case $rc in
    2) ;;
    124) why="timed out after 10 s" ;;
    *) why="exit $rc, want 2" ;;
    esac
    [ -s "$TMP/out" ] && why="${why:+$why; }stdout not empty"
    [ "$got" = "$want" ] || why="${why:+$why; }first diagnostic differs:
  want: $want
  got:  $got"
    [ "$got_note" = "$want_note" ] || why="${why:+$why; }its note differs:
  want: ${want_note:-(none)}
  got:  ${got_note:-(none)}"
    if [ -z "$why" ]; then ok "bad corpus $name"; else not_ok "bad corpus $name" "$why"; fi
done
# The issue asks for at least 60 bad schedules; fewer means files were lost.
if [ "$n" -ge 60 ]; then ok "bad corpus has $n schedules (at least 60)"; else
    not_ok "bad corpus has $n schedules" "want at least 60"; fi
