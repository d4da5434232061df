#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The architecture test: tools/archcheck.py reads the objects' symbol tables and the includes and
# checks that no two source files use each other in a circle, that no file uses one of a higher
# layer, and that every folder has a layer. It prints the layers with their files, then its own
# `ok` / `not ok` lines (the offending edges and the symbol or include behind each indented below).
. "$(dirname "$0")/lib.bash"

if ! command -v python3 >/dev/null 2>&1; then
    echo "skip - architecture: python3 not found"
    exit 0
fi
if ! command -v nm >/dev/null 2>&1; then
    echo "skip - architecture: nm not found (binutils)"
    exit 0
fi
python3 "$ROOT/tools/archcheck.py" "$BUILD" >"$TMP/arch" 2>"$TMP/arch.err"
rc=$?
# Every check prints one ok/not ok line; the layers and the edges are indented context.
sed -e 's/^\(ok\|not ok\) - /\1 - architecture: /' -e '/^\(ok\|not ok\) - /!s/^/  /' "$TMP/arch"
if [ "$rc" -eq 2 ] || ! grep -q '^ok - \|^not ok - ' "$TMP/arch"; then
    not_ok "architecture" "tools/archcheck.py could not run (exit $rc): $(head -3 "$TMP/arch.err" | tr '\n' ' ')"
fi

# No merge leftovers: a line that starts with a conflict marker in any tracked file (a merge
# once committed both sides of docs/design.md's module table with the markers between them).
if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
    left=$(git -C "$ROOT" grep -n -I -E '^(<<<<<<< |>>>>>>> |=======$)' -- . ':!*.golden' 2>/dev/null | head -5)
    if [ -z "$left" ]; then ok "architecture: no merge conflict markers in tracked files"; else
        not_ok "architecture: no merge conflict markers in tracked files" "$(echo "$left" | tr '\n' ' ')"; fi
else
    echo "skip - architecture: conflict markers: not a git checkout"
fi
