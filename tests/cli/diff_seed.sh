#!/bin/bash
# SPDX-License-Identifier: MIT
# diff_seed.sh — `memlife diff` on the chapter's naive vs optimized RS+AG lifetimes.
# seed: world 4 peaks 576 vs 320 MiB (delta -256 MiB), caused by 'full' still live when
# 'gathered' is allocated for the all_gather; world 2: 640 vs 384 MiB.
cd "$(dirname "$0")/../.." || exit 1
ML=${MEMLIFE:-./memlife}
[ -x "$ML" ] || { echo "memlife binary not found at $ML" >&2; exit 1; }
tmp=$(mktemp -d); . "$(dirname "$0")/../json.bash"; trap 'json_collect "$tmp"; rm -rf "$tmp"' EXIT
NAIVE=schedules/seed/03_rs_ag_naive.yaml OPT=schedules/seed/04_rs_ag_optimized.yaml

check() {   # name, file, expected substrings...
    local name=$1 file=$2; shift 2
    for want in "$@"; do
        grep -qF -- "$want" "$file" || { echo "not ok - $name: no '$want' in: $(head -c 600 "$file")"; return; }
    done
    echo "ok - $name"
}

"$ML" diff "$NAIVE" "$OPT" >"$tmp/table" 2>"$tmp/err"; rc=$?
if [ $rc -ne 0 ]; then echo "not ok - diff-table: exit $rc: $(head -c 300 "$tmp/err")"; else
    check diff-table "$tmp/table" "576 MiB" "320 MiB" "-256 MiB" \
        "requested peak: A 576 MiB, B 320 MiB (-256 MiB)" "only at A's peak: gathered 256 MiB" \
        "gathered (256 MiB) allocated at" "while 'full' (256 MiB) is still live: +256 MiB at the all_gather" \
        "B frees 'full' at"
fi

"$ML" diff "$NAIVE" "$OPT" --format md >"$tmp/md" 2>"$tmp/err"; rc=$?
if [ $rc -ne 0 ]; then echo "not ok - diff-md: exit $rc"; else
    check diff-md "$tmp/md" "### memlife diff" "| rank | view |" "| 0-3 | requested |" "**cause:** gathered (256 MiB)"
fi

"$ML" diff "$NAIVE" "$OPT" --world 2 >"$tmp/w2" 2>"$tmp/err"; rc=$?
if [ $rc -ne 0 ]; then echo "not ok - diff-world-2: exit $rc"; else
    check diff-world-2 "$tmp/w2" "requested peak: A 640 MiB, B 384 MiB (-256 MiB)"
fi

if command -v python3 >/dev/null; then
    "$ML" diff "$NAIVE" "$OPT" --format json -o "$tmp/d.json" 2>"$tmp/err"; rc=$?
    python3 - "$tmp/d.json" "$rc" <<'PY'
import sys, json
try:
    doc = json.load(open(sys.argv[1]))
    rows = [r for r in doc['rows'] if r['view'] == 'requested']
    ok = sys.argv[2] == '0' and len(rows) == 4 and all(
        r['a']['peak'] == 576 << 20 and r['b']['peak'] == 320 << 20 and r['delta']['peak'] == -(256 << 20)
        and r['higher'] == 'a' and [b['name'] for b in r['a']['only_at_peak']] == ['gathered']
        and "while 'full'" in r['cause'] for r in rows)
    print('ok - diff-json' if ok else 'not ok - diff-json: %s' % rows[:1])
except Exception as e:
    print('not ok - diff-json: exit %s: %s' % (sys.argv[2], e))
PY
else
    echo "skip - diff-json: python3 not installed"
fi

# Same plan twice: exit 0, nothing to explain.
"$ML" diff "$OPT" "$OPT" >"$tmp/same" 2>&1; rc=$?
if [ $rc -eq 0 ]; then check diff-equal "$tmp/same" "The peaks are equal on every rank and view."; else echo "not ok - diff-equal: exit $rc"; fi

# Bad input is exit 2: a missing file, one plan only, csv.
"$ML" diff "$NAIVE" missing.yaml >/dev/null 2>&1; rc1=$?
"$ML" diff "$NAIVE" >/dev/null 2>&1; rc2=$?
"$ML" diff "$NAIVE" "$OPT" --format csv >/dev/null 2>&1; rc3=$?
if [ "$rc1$rc2$rc3" = 222 ]; then echo "ok - diff-bad-input"; else echo "not ok - diff-bad-input: exits $rc1 $rc2 $rc3"; fi
