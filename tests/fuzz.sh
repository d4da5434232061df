#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/fuzz.sh — `make fuzz`: builds the libFuzzer harnesses with clang
# (-fsanitize=fuzzer,address,undefined) from the sources, not from libmemlife.a (gcc objects
# carry no coverage), replays each one's committed corpus, then fuzzes each for FUZZ_SECONDS
# (default 60):
#   load  tests/fuzz/fuzz_load.c: a schedule, from memory and through the file entry point, up
#         to a world of 64, loaded, expanded, linted, predicted (corpus: tests/fuzz/corpus and
#         tests/bad);
#   cli   tests/fuzz/fuzz_cli.c: a command line split into words, through the option parsers
#         (corpus: tests/fuzz/corpus_cli);
#   pickle tests/fuzz/fuzz_pickle.c: the snapshot pickle reader and writer (corpus:
#         tests/fuzz/corpus_pickle).
#
#   FUZZ_SECONDS=0 make fuzz          replay only
#   FUZZ_SECONDS=1800 make fuzz       a long run (each harness)
#   FUZZ_TARGETS=cli make fuzz        one harness
# New interesting inputs go to build-fuzz/corpus-NAME (not committed), crashes to
# build-fuzz/artifacts/; a crash's input belongs in the harness's committed corpus once fixed.
# Exit status: 0 clean, 1 a finding, 2 could not build.
set -u
cd "$(dirname "$0")/.."

OUT=${FUZZ_BUILD:-build-fuzz}
SECONDS_TO_FUZZ=${FUZZ_SECONDS:-60}
TARGETS=${FUZZ_TARGETS:-load cli pickle}
CLANG=${FUZZ_CC:-clang}
# Every runtime/, analyzer/ and cli/ source but main.c goes into an archive, so the link pulls
# in what a harness reaches and new files need no edit here. Built without MPI and CUDA: those
# parts compile to stubs.
SRCS=$(find runtime analyzer cli -name "*.c" ! -path cli/main.c | sort)
SAN="-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
CFLAGS="-O1 -g -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -Wno-bitwise-instead-of-logical
        -Iruntime -Ianalyzer -Iinclude -I. -DMEMLIFE_VERSION=\"fuzz\" -DMEMLIFE_COMMIT=\"fuzz\""

if ! command -v "$CLANG" >/dev/null; then
    echo "error: $CLANG not found (apt-get install clang libclang-rt-14-dev)" >&2
    exit 2
fi
mkdir -p "$OUT/obj" "$OUT/artifacts"

# Compiles what changed (one object per source, so a rebuild after an edit takes seconds). A
# source that does not compile is left out with a warning: the link says whether it was needed.
objs=()
for src in $SRCS; do
    obj=$OUT/obj/$(echo "${src%.c}" | tr / _).o
    if [ ! -f "$obj" ] || [ -n "$(find runtime analyzer cli \( -name "*.h" -o -path "$src" \) -newer "$obj" 2>/dev/null | head -1)" ]; then
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

# libFuzzer's options: inputs up to 64 KiB (the seed schedules are 1-3 KiB), a per-input time
# limit of 10 s and a memory limit of 2 GiB: an input that makes memlife take longer or more is
# a finding (scale is bounded by the loader's limits, not by the machine).
OPTS=(-timeout=10 -rss_limit_mb=2048 -max_len=65536 "-artifact_prefix=$OUT/artifacts/"
      -print_final_stats=1)

status=0
for t in $TARGETS; do
    case $t in
    load) corpus=(tests/fuzz/corpus tests/bad); dict=(-dict=tests/fuzz/yaml.dict); extra=() ;;
    # The parsers print usage errors: stderr closed (libFuzzer keeps its own for reports).
    cli) corpus=(tests/fuzz/corpus_cli); dict=(-dict=tests/fuzz/cli.dict); extra=(-close_fd_mask=2) ;;
    pickle) corpus=(tests/fuzz/corpus_pickle); dict=(); extra=() ;;
    *) echo "error: unknown fuzz target '$t' (load, cli, pickle)" >&2; exit 2 ;;
    esac
    # shellcheck disable=SC2086
    "$CLANG" $CFLAGS $SAN -c -o "$OUT/obj/fuzz_$t.o" "tests/fuzz/fuzz_$t.c" || exit 2
    "$CLANG" $SAN -o "$OUT/fuzz_$t" "$OUT/obj/fuzz_$t.o" "$OUT/libsrc.a" -lyaml -ljansson -lm || exit 2
    mkdir -p "$OUT/corpus-$t"

    echo "== $t: replay ${corpus[*]} ($(find "${corpus[@]}" -type f | wc -l) inputs)"
    if ! "$OUT/fuzz_$t" "${OPTS[@]}" "${extra[@]}" -runs=0 "${corpus[@]}" >"$OUT/replay-$t.log" 2>&1; then
        tail -40 "$OUT/replay-$t.log"
        echo "fuzz: replaying the $t corpus found a crash (log: $OUT/replay-$t.log)"
        exit 1
    fi
    grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "$OUT/replay-$t.log"

    [ "$SECONDS_TO_FUZZ" -gt 0 ] || continue
    echo "== $t: fuzz ${SECONDS_TO_FUZZ} s"
    # Output dir first (new inputs are written there), the committed seeds after.
    "$OUT/fuzz_$t" "${OPTS[@]}" "${extra[@]}" -max_total_time="$SECONDS_TO_FUZZ" "${dict[@]}" \
        "$OUT/corpus-$t" "${corpus[@]}" >"$OUT/fuzz-$t.log" 2>&1
    rc=$?
    grep -E '^#[0-9]+' "$OUT/fuzz-$t.log" | tail -1
    grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' \
        "$OUT/fuzz-$t.log" | sort -u
    if [ "$rc" -ne 0 ]; then
        grep -m1 -A30 -E '^==[0-9]+==ERROR|contract broken|runtime error|deadly signal|timeout' \
            "$OUT/fuzz-$t.log" | grep -v '^ *#[0-9]* 0x' | head -30
        echo "fuzz: $t finding (exit $rc); inputs in $OUT/artifacts/, log $OUT/fuzz-$t.log"
        status=1
    else
        echo "fuzz: $t clean"
    fi
done
exit $status
