#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# valgrind memcheck over the CLI: predict and check on every schedule under schedules/, the
# report writers, and a dozen bad inputs (one per kind of error path: a yaml error, an alias, a
# schema error, an expression, an overflow, a lifetime hazard, a cross-rank divergence, deep
# nesting, a huge repeat, a long name), and the torch view. No memcheck error and no definite or indirect leak:
# valgrind exits 99 on either. The exit code memlife would give anyway (0, 1 or 2) is kept.
# Skipped visibly without valgrind, and for an ASan build (SANITIZE=1), which valgrind cannot run.
. "$(dirname "$0")/lib.bash"

if ! command -v valgrind >/dev/null; then
    echo "skip - valgrind: valgrind is not installed (apt-get install valgrind)"
    exit 0
fi
if ldd "$MEMLIFE" 2>/dev/null | grep -q libasan; then
    echo "skip - valgrind: $MEMLIFE is built with ASan (SANITIZE=1); valgrind needs a plain build"
    exit 0
fi

# vg NAME WANT_RC ARGS...: memlife ARGS under memcheck; valgrind's report goes to $TMP/vg.
vg() {
    local name=$1 want=$2
    shift 2
    valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
        --log-file="$TMP/vg" "$MEMLIFE" "$@" >"$TMP/out" 2>"$TMP/err"
    local rc=$? why=""
    if [ "$rc" -eq 99 ] || [ -s "$TMP/vg" ]; then
        why="memcheck: $(grep -m1 -E 'Invalid|uninitialised|definitely|indirectly|Mismatched|overlap' "$TMP/vg" || head -1 "$TMP/vg")"
    elif [ "$rc" -ne "$want" ]; then
        why="exit $rc, want $want: $(head -1 "$TMP/err")"
    fi
    if [ -z "$why" ]; then ok "valgrind $name"; else
        not_ok "valgrind $name" "$why"
        sed 's/^/  /' "$TMP/vg" | head -30
    fi
}

# The exit code each schedule gets from plain memlife is what it must get under valgrind too.
plain_rc() { "$MEMLIFE" "$@" >/dev/null 2>&1; echo $?; }

while IFS= read -r f; do
    vg "predict $f" "$(plain_rc predict "$f")" predict "$f"
    vg "check $f" "$(plain_rc check "$f")" check "$f"
done < <(find schedules -name '*.yaml' | sort)

# Report writers: every format, to stdout and atomically to a file.
for fmt in json csv md table; do
    vg "predict --format $fmt -o" 0 predict schedules/seed/03_rs_ag_naive.yaml --world 8 \
        --format "$fmt" -o "$TMP/report.$fmt"
done
vg "check --set" 0 check schedules/seed/04_rs_ag_optimized.yaml --set M=64MiB --quiet

for b in yaml_unclosed_flow yaml_bad_utf8 alias_billion_laughs schema_unknown_alloc_key \
    schema_steps_and_plans expr_division_by_zero expr_deep_parentheses size_count_overflow \
    hazard_use_after_free hazard_free_unsynced_stream cross_op_by_rank nest_repeat_65 \
    repeat_huge name_buffer_long; do
    vg "bad input $b" 2 check "tests/bad/$b.yaml"
done

# The torch view: the allocator model's trees and segment walk (a stream churn measured on the
# H200, both configurations), the JSON with its segments, a predicted out-of-memory.
for fx in stream_churn_s7__default stream_churn_s7__expandable; do
    python3 tests/torch/fixture_to_yaml.py "tests/torch/fixtures/allocator/$fx.json" "$TMP/$fx.yaml" >/dev/null
    vg "torch trace $fx" 0 trace "$TMP/$fx.yaml" -o "$TMP/$fx.json"
done
vg "torch json" 0 predict -f json tests/cli/torch/worked_example.yaml
vg "torch out of memory" 2 predict tests/cli/torch/oom.yaml
