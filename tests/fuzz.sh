#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/fuzz.sh — `make fuzz`: builds the libFuzzer harness tests/fuzz/fuzz_load.c with clang
# (-fsanitize=fuzzer,address,undefined) from the sources, not from libmemlife.a (gcc objects
# carry no coverage), replays the committed corpus, then fuzzes for FUZZ_SECONDS (default 60).
#
#   FUZZ_SECONDS=0 make fuzz      replay only
#   FUZZ_SECONDS=1800 make fuzz   a long run
# New interesting inputs go to build-fuzz/corpus (not committed), crashes to build-fuzz/artifacts/;
# a crash's input belongs in tests/fuzz/corpus/ once fixed. Exit status: 0 clean, 1 a finding,
# 2 could not build.
set -u
cd "$(dirname "$0")/.."

OUT=${FUZZ_BUILD:-build-fuzz}
SECONDS_TO_FUZZ=${FUZZ_SECONDS:-60}
CLANG=${FUZZ_CC:-clang}
# Every runtime/ and analyzer/ source goes into an archive, so the link pulls in what the harness
# reaches (load, plan, lint, predict and what they call) and new files need no edit here. Built
# without MPI and CUDA: those parts compile to stubs.
SRCS=$(find runtime analyzer -name "*.c" | sort)
SAN="-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
CFLAGS="-O1 -g -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -Wno-bitwise-instead-of-logical
        -Iruntime -Ianalyzer -I. -DMEMLIFE_VERSION=\"fuzz\" -DMEMLIFE_COMMIT=\"fuzz\""

if ! command -v "$CLANG" >/dev/null; then
    echo "error: $CLANG not found (apt-get install clang libclang-rt-14-dev)" >&2
    exit 2
fi
mkdir -p "$OUT/obj" "$OUT/corpus" "$OUT/artifacts"

# Compiles what changed (one object per source, so a rebuild after an edit takes seconds). A
# source that does not compile is left out with a warning: the link says whether it was needed.
objs=()
for src in $SRCS; do
    obj=$OUT/obj/$(echo "${src%.c}" | tr / _).o
    if [ ! -f "$obj" ] || [ -n "$(find runtime analyzer \( -name "*.h" -o -path "$src" \) -newer "$obj" 2>/dev/null | head -1)" ]; then
        # shellcheck disable=SC2086
        if ! "$CLANG" $CFLAGS $SAN -c -o "$obj" "$src" 2>"$OUT/cc.log"; then
            echo "warning: $src does not compile with $CLANG; left out:" >&2
            head -3 "$OUT/cc.log" >&2
            rm -f "$obj"
            continue
        fi
    fi
    objs+=("$obj")
done
rm -f "$OUT/libsrc.a"
ar rcs "$OUT/libsrc.a" "${objs[@]}" || exit 2
# shellcheck disable=SC2086
"$CLANG" $CFLAGS $SAN -c -o "$OUT/obj/fuzz_load.o" tests/fuzz/fuzz_load.c || exit 2
"$CLANG" $SAN -o "$OUT/fuzz_load" "$OUT/obj/fuzz_load.o" "$OUT/libsrc.a" -lyaml -ljansson -lm || exit 2

# libFuzzer's options: inputs up to 64 KiB (the seed schedules are 1-3 KiB), a per-input time
# limit of 10 s and a memory limit of 2 GiB: a schedule that makes the loader take longer or
# more is a finding (scale is bounded by the loader's limits, not by the machine).
OPTS=(-timeout=10 -rss_limit_mb=2048 -max_len=65536 "-artifact_prefix=$OUT/artifacts/"
      -print_final_stats=1)

echo "== replay: tests/fuzz/corpus and tests/bad ($(find tests/fuzz/corpus tests/bad -type f | wc -l) inputs)"
if ! "$OUT/fuzz_load" "${OPTS[@]}" -runs=0 tests/fuzz/corpus tests/bad >"$OUT/replay.log" 2>&1; then
    tail -40 "$OUT/replay.log"
    echo "fuzz: replaying the corpus found a crash (log: $OUT/replay.log)"
    exit 1
fi
grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "$OUT/replay.log"

[ "$SECONDS_TO_FUZZ" -gt 0 ] || exit 0
echo "== fuzz: ${SECONDS_TO_FUZZ} s"
# Output dir first (new inputs are written there), the committed seeds and bad inputs after.
"$OUT/fuzz_load" "${OPTS[@]}" -max_total_time="$SECONDS_TO_FUZZ" -dict=tests/fuzz/yaml.dict \
    "$OUT/corpus" tests/fuzz/corpus tests/bad >"$OUT/fuzz.log" 2>&1
rc=$?
grep -E '^#[0-9]+' "$OUT/fuzz.log" | tail -1
grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' \
    "$OUT/fuzz.log" | sort -u
if [ "$rc" -ne 0 ]; then
    grep -m1 -A30 -E '^==[0-9]+==ERROR|contract broken|runtime error|deadly signal|timeout' \
        "$OUT/fuzz.log" | grep -v '^ *#[0-9]* 0x' | head -30
    echo "fuzz: finding (exit $rc); inputs in $OUT/artifacts/, log $OUT/fuzz.log"
    exit 1
fi
echo "fuzz: clean"
