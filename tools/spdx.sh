#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/spdx.sh — puts the SPDX line (LICENSE: MIT) first in every tracked source file that lacks
# it: C files get a block comment as line 1; shell, Python and the Makefile a '#' line, after the
# '#!' line where there is one. Idempotent; run it after adding files. --check only lists the
# files without it (exit 1 when there are any).
set -euo pipefail
cd "$(dirname "$0")/.."
TAG='SPDX-License-Identifier: MIT'
check=0
[ "${1:-}" = --check ] && check=1
missing=0
while IFS= read -r f; do
    [ -f "$f" ] || continue
    head -3 "$f" | grep -q "$TAG" && continue
    missing=$((missing + 1))
    if [ $check = 1 ]; then echo "$f"; continue; fi
    case $f in
    *.c | *.h | *.def) { printf '/* %s */\n' "$TAG"; cat "$f"; } >"$f.spdx" ;;
    *)
        if head -1 "$f" | grep -q '^#!'; then
            { head -1 "$f"; printf '# %s\n' "$TAG"; tail -n +2 "$f"; } >"$f.spdx"
        else
            { printf '# %s\n' "$TAG"; cat "$f"; } >"$f.spdx"
        fi ;;
    esac
    chmod --reference="$f" "$f.spdx"
    mv "$f.spdx" "$f"
done < <(git ls-files -- '*.c' '*.h' '*.def' '*.sh' '*.bash' '*.py' Makefile)
[ $check = 1 ] && [ $missing -gt 0 ] && exit 1
exit 0
