#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# memlife optimize keeps results: for every shipped schedule (schedules/**/*.yaml) at 4 ranks on
# the host backend, the rewritten file
#   - loads back and runs: measured = predicted on every rank;
#   - gives the original's data-check rows, each with the same result (the original's data
#     checks pass on the rewrite);
#   - gives the same result buffers: `memlife equiv ORIGINAL REWRITE` row 1 (output semantics:
#     the result buffers compared element by element on every rank after both ran) holds, per plan.
# Sizes are shrunk with --set (M, P or S = 8 MiB where the file has that let) so 4 ranks fit on a
# small machine; the optimizer is run with the same --set, since it verifies at one size.
# A file the optimizer refuses (a lint error in the original) is skipped with its reason; one
# where no stage was kept is checked as well (the rewrite is then the original, re-written).
. "$(dirname "$0")/lib.bash"

why=$(host_backend_missing)
if [ -n "$why" ]; then
    skip "optimize-all" "$why"
    exit 0
fi
if ! command -v python3 >/dev/null 2>&1; then
    skip "optimize-all" "python3 not found (reads the JSON results)"
    exit 0
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
HAVE_EQUIV=0
"$MEMLIFE" help | grep -q '^  equiv ' && HAVE_EQUIV=1

# check_rows JSON: "name rank status" lines of every schedule item, sorted.
check_rows() {
    python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rows = []
for s in d["schedules"]:
    for c in s.get("checks") or []:
        rows.append("%s %s %s %s" % (s.get("plan") or "-", c["name"], c["rank"], c["status"]))
print("\n".join(sorted(rows)))
PY
}

# all_match JSON: "yes" when measured = predicted on every rank of every item.
all_match() {
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print("yes" if all(r.get("match") for s in d["schedules"] for r in s["ranks"]) else "no")' "$1"
}

for f in $(find schedules -name '*.yaml' | sort); do
    name=${f#schedules/}
    sets=()
    for let in M P S; do   # a payload size written in MiB (not, e.g., padding's P = q * world)
        grep -qE "^  $let: *[0-9]+ *MiB" "$f" && sets+=(--set "$let=8MiB")
    done
    out=$TMP/$(echo "$name" | tr '/' '_')
    run optimize "$f" --world 4 "${sets[@]}" -o "$out" --format json
    if [ "$RC" -eq 2 ]; then
        # not a test that could not run: a schedule outside what optimize rewrites (a comment
        # line, which tests/run.sh does not count)
        echo "# optimize $name: not rewritten, the optimizer refuses it: $(head -1 "$TMP/err")"
        continue
    fi
    if [ "$RC" -ne 0 ]; then
        not_ok "optimize $name" "exit $RC: $(head -1 "$TMP/err")"
        continue
    fi
    cp "$TMP/out" "$TMP/report.json"
    plans=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(" ".join(p["plan"] or "-" for p in r["plans"]))' "$TMP/report.json")
    kept=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(",".join(sorted({s["stage"] for p in r["plans"] for s in p["stages"] if s["kept"]})) or "none")' "$TMP/report.json")
    # nothing kept: optimize writes nothing, and there is no rewrite to compare
    if [ "$kept" = none ]; then
        if [ -e "$out" ]; then not_ok "optimize $name: nothing kept" "but $out was written"
        else ok "optimize $name: no rewrite kept, nothing written"; fi
        continue
    fi

    run run "$f" --ranks 4 "${sets[@]}" --format json
    rc_a=$RC
    cp "$TMP/out" "$TMP/a.json"
    run run "$out" --ranks 4 "${sets[@]}" --format json
    rc_b=$RC
    cp "$TMP/out" "$TMP/b.json"
    # The rewrite keeps the original's memory expectations as written (docs/optimize.md), which
    # a lower peak fails: either may exit 1; both must run.
    if [ "$rc_a" -gt 1 ] || [ "$rc_b" -gt 1 ] || ! [ -s "$TMP/b.json" ]; then
        not_ok "optimize $name: runs" "original exit $rc_a, rewrite exit $rc_b: $(head -1 "$TMP/err")"
        continue
    fi
    why=""
    [ "$(all_match "$TMP/b.json")" = yes ] || why="measured != predicted on the rewrite;"
    if ! diff <(check_rows "$TMP/a.json") <(check_rows "$TMP/b.json") >"$TMP/rows.diff"; then
        why="$why check rows differ: $(grep '^[<>]' "$TMP/rows.diff" | head -2 | tr '\n' '|')"
    fi
    n_rows=$(check_rows "$TMP/a.json" | grep -c .)
    if [ -n "$why" ]; then
        not_ok "optimize $name ($kept): same results" "$why"
        continue
    fi
    ok "optimize $name ($kept): runs, measured = predicted, $n_rows check rows as the original's"

    if [ "$HAVE_EQUIV" -eq 0 ]; then
        skip "equiv $name" "this memlife has no 'equiv' command"
        continue
    fi
    for plan in $plans; do
        a=$f b=$out label=$name
        if [ "$plan" != "-" ]; then a=$f:$plan b=$out:$plan label=$name:$plan; fi
        run equiv "$a" "$b" --ranks 4 "${sets[@]}" --format json
        verdict=$(python3 -c '
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception:
    print("no result"); sys.exit()
row = [r for r in d["rows"] if r["key"] == "output"][0]
print(row["verdict"] + ": " + row["detail"])' "$TMP/out" 2>/dev/null)
        case "$verdict" in
        holds:*) ok "equiv $label: output semantics ${verdict#holds: }" ;;
        *"never initialized"*)
            # no init: in the original, so its results are whatever memory held: nothing to
            # compare. schedules/optimize/*_checked.yaml are the same plans with data.
            echo "# equiv $label: nothing to compare, the original's inputs have no data (no init:); its plan with data is proved in schedules/optimize/" ;;
        "no result")
            # equiv could not read result buffers (none live at the end, or a released chunked
            # buffer of which only this rank's chunk exists): the check rows above prove it.
            echo "# equiv $label: no result buffers to compare ($(head -1 "$TMP/err")); proved by its $n_rows check rows" ;;
        *) not_ok "equiv $label" "$verdict" ;;
        esac
    done
done
