#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Python side's unit tests (tests/capture/test_*.py, pytest), one ok / not ok line each.
cd "$(dirname "$0")/../.." || exit 2
py=$(command -v python3)
if [ -z "$py" ] || ! "$py" -c 'import torch, pytest' 2>/dev/null; then
    echo "skip - capture pytest: no python3 with torch and pytest (make deps)"
    exit 0
fi
out=$("$py" -m pytest -q -rA -p no:cacheprovider tests/capture 2>&1)
rc=$?
printf '%s\n' "$out" | sed -n 's/^PASSED \(.*\)$/ok - pytest \1/p; s/^FAILED \(.*\)$/not ok - pytest \1/p; s/^ERROR \(.*\)$/not ok - pytest \1/p'
if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
    printf '%s\n' "$out" | tail -20
    echo "not ok - capture pytest: pytest exited $rc"
fi
[ "$rc" -eq 1 ] && printf '%s\n' "$out" | grep -E '^E ' | head -20
exit 0
