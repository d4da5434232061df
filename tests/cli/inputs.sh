#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Odd input files: devices, directories and files past the size limit are refused
# with one line `FILE: error: ...` and exit 2, at once (/dev/zero used to run out of memory, a
# 2 GiB file to abort); `-` reads standard input under the same limit, and so does a FIFO (a pipe
# as /dev/stdin, `<(...)`, a mkfifo with its writer), while one that no writer opens is refused
# after a second (it used to hang); run refuses both, which its ranks cannot all read; `-o` naming an input (also by another path or a hard link) is refused before
# anything is written; byte sums past 2^63-1 are errors, not negative peaks.
. "$(dirname "$0")/lib.bash"

SEED=schedules/seed/01_allreduce_full.yaml

# case NAME RC WANT_FIRST_STDERR_LINE -- ARGS...: exit RC within 10 s, nothing on stdout (when RC
# is 2), the first stderr line exactly WANT.
case_line() {
    local name=$1 want_rc=$2 want=$3
    shift 4
    timeout 10 "$MEMLIFE" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
    RC=$?
    local why="" got
    got=$(head -1 "$TMP/err")
    [ "$RC" -eq "$want_rc" ] || why="exit $RC, want $want_rc"
    [ "$want_rc" -eq 2 ] && [ -s "$TMP/out" ] && why="${why:+$why; }stdout not empty"
    [ "$got" = "$want" ] || why="${why:+$why; }stderr: want '$want', got '$got'"
    if [ -z "$why" ]; then ok "$name"; else not_ok "$name" "$why"; fi
}

mkfifo "$TMP/fifo"
t0=$(date +%s%N)
case_line "a FIFO that no process writes to is refused" 2 \
    "$TMP/fifo: error: is a FIFO (named pipe) that no process writes to (waited 1000 ms)" \
    -- predict "$TMP/fifo"
ms=$((($(date +%s%N) - t0) / 1000000))
[ $ms -ge 1000 ] && ok "... after waiting a second for a writer ($ms ms)" ||
    not_ok "a FIFO without a writer" "refused after $ms ms, before the second it waits"

# A FIFO with a writer reads as the file does: the same JSON report as from the file itself.
"$MEMLIFE" predict --format json $SEED >"$TMP/file.json"
same_report() {   # NAME: $TMP/fifo.json (exit $RC) against the file's report
    if [ $RC -eq 0 ] && [ "$(jq -c '.schedules[0].ranks' "$TMP/fifo.json")" = "$(jq -c '.schedules[0].ranks' "$TMP/file.json")" ]; then
        ok "$1"
    else not_ok "$1" "exit $RC: $(head -2 "$TMP/err")"; fi
}
cat $SEED | timeout 10 "$MEMLIFE" predict --format json /dev/stdin >"$TMP/fifo.json" 2>"$TMP/err"
RC=$?
same_report "a pipe as /dev/stdin is read"
timeout 10 "$MEMLIFE" predict --format json <(cat $SEED) >"$TMP/fifo.json" 2>"$TMP/err"
RC=$?
same_report "process substitution <(...) is read"
timeout 10 "$MEMLIFE" predict --format json "$TMP/fifo" >"$TMP/fifo.json" 2>"$TMP/err" &
pid=$!
sleep 0.2
cat $SEED >"$TMP/fifo"
wait $pid
RC=$?
same_report "a mkfifo whose writer comes after memlife opened it is read"
head -c 200000 /dev/zero | MEMLIFE_MAX_INPUT=100KiB timeout 10 "$MEMLIFE" predict /dev/stdin >"$TMP/out" 2>"$TMP/err"
RC=$?
want="/dev/stdin: error: the FIFO is above the input limit of 102400 bytes (MEMLIFE_MAX_INPUT)"
if [ $RC -eq 2 ] && [ "$(head -1 "$TMP/err")" = "$want" ]; then
    ok "a FIFO past MEMLIFE_MAX_INPUT is refused"
else not_ok "a FIFO past MEMLIFE_MAX_INPUT is refused" "exit $RC: $(head -1 "$TMP/err")"; fi
cat $SEED | timeout 10 "$MEMLIFE" run --ranks 2 /dev/stdin >"$TMP/out" 2>"$TMP/err"
RC=$?
want="/dev/stdin: error: a FIFO (named pipe) cannot be read by every rank: give the schedule as a file"
if [ $RC -eq 2 ] && [ "$(head -1 "$TMP/err")" = "$want" ]; then
    ok "run refuses a FIFO, which its ranks cannot all read"
else not_ok "run refuses a FIFO" "exit $RC: $(head -1 "$TMP/err")"; fi
case_line "/dev/zero is refused, not read until memory runs out" 2 \
    "/dev/zero: error: is a character device, not a regular file (give '-' to read standard input)" \
    -- check /dev/zero
case_line "/dev/urandom is refused" 2 \
    "/dev/urandom: error: is a character device, not a regular file (give '-' to read standard input)" \
    -- predict /dev/urandom
case_line "a directory is refused" 2 "$TMP: error: is a directory, not a regular file" \
    -- predict "$TMP"
# A sparse 2 GiB file: above the 1 GiB default (1073741824 bytes), refused from its size alone.
truncate -s 2G "$TMP/huge.yaml"
case_line "a 2 GiB file is refused by its size, not read" 2 \
    "$TMP/huge.yaml: error: is 2147483648 bytes, above the input limit of 1073741824 bytes (MEMLIFE_MAX_INPUT)" \
    -- predict "$TMP/huge.yaml"
rm -f "$TMP/huge.yaml"
size=$(stat -c %s $SEED)
MEMLIFE_MAX_INPUT=100 case_line "MEMLIFE_MAX_INPUT=100 refuses the $size-byte seed" 2 \
    "$SEED: error: is $size bytes, above the input limit of 100 bytes (MEMLIFE_MAX_INPUT)" \
    -- predict $SEED
MEMLIFE_MAX_INPUT=1MiB case_line "MEMLIFE_MAX_INPUT=1MiB reads it" 0 "" -- predict --quiet $SEED
MEMLIFE_MAX_INPUT=lots case_line "MEMLIFE_MAX_INPUT=lots is an error naming the variable" 2 \
    "error: environment variable MEMLIFE_MAX_INPUT='lots' is not a byte count of at least 1 (e.g. 64MiB)" \
    -- predict $SEED
MEMLIFE_MAX_INPUT=0 case_line "MEMLIFE_MAX_INPUT=0 is an error" 2 \
    "error: environment variable MEMLIFE_MAX_INPUT='0' is not a byte count of at least 1 (e.g. 64MiB)" \
    -- predict $SEED

# Standard input: the same report as the file (the name is '-'), and the same limit.
"$MEMLIFE" predict --format json - <$SEED >"$TMP/stdin.json" 2>"$TMP/err"
RC=$?
"$MEMLIFE" predict --format json $SEED >"$TMP/file.json"
if [ $RC -eq 0 ] && [ "$(jq -c '.schedules[0].ranks' "$TMP/stdin.json")" = "$(jq -c '.schedules[0].ranks' "$TMP/file.json")" ]; then
    ok "'-' reads the schedule from standard input"
else not_ok "'-' reads the schedule from standard input" "exit $RC: $(head -2 "$TMP/err")"; fi
head -c 200000 /dev/zero | MEMLIFE_MAX_INPUT=100KiB timeout 10 "$MEMLIFE" predict - >"$TMP/out" 2>"$TMP/err"
RC=$?
want="-: error: standard input is above the input limit of 102400 bytes (MEMLIFE_MAX_INPUT)"
if [ $RC -eq 2 ] && [ "$(head -1 "$TMP/err")" = "$want" ]; then
    ok "standard input past MEMLIFE_MAX_INPUT is refused"
else not_ok "standard input past MEMLIFE_MAX_INPUT is refused" "exit $RC: $(head -1 "$TMP/err")"; fi

# Result readers (plot, trace, diff): the same refusals.
case_line "plot of a FIFO result that no process writes to is refused" 2 \
    "$TMP/fifo: error: is a FIFO (named pipe) that no process writes to (waited 1000 ms)" \
    -- plot "$TMP/fifo" -o "$TMP/p.svg"
case_line "diff of a directory is refused" 2 "$TMP: error: is a directory, not a regular file" \
    -- diff "$TMP" $SEED

# -o naming an input: the same path, another path, a hard link; the input is left as it was.
cp $SEED "$TMP/x.yaml"
cp schedules/equiv/direct_vs_naive.yaml "$TMP/eq.yaml"
ln "$TMP/x.yaml" "$TMP/link.yaml"
sum=$(md5sum <"$TMP/x.yaml")
for cmd in predict check optimize plot trace; do
    case_line "$cmd -o the input itself is refused" 2 \
        "$TMP/x.yaml: error: output file is the input '$TMP/x.yaml' (the same file); refusing to overwrite an input" \
        -- $cmd "$TMP/x.yaml" -o "$TMP/x.yaml"
done
case_line "-o the input by another path is refused" 2 \
    "$TMP/../$(basename "$TMP")/x.yaml: error: output file is the input '$TMP/x.yaml' (the same file); refusing to overwrite an input" \
    -- predict "$TMP/x.yaml" -o "$TMP/../$(basename "$TMP")/x.yaml"
case_line "-o a hard link of the input is refused" 2 \
    "$TMP/link.yaml: error: output file is the input '$TMP/x.yaml' (the same file); refusing to overwrite an input" \
    -- predict "$TMP/x.yaml" -o "$TMP/link.yaml"
case_line "-o the second input of diff is refused" 2 \
    "$TMP/x.yaml: error: output file is the input '$TMP/x.yaml' (the same file); refusing to overwrite an input" \
    -- diff $SEED "$TMP/x.yaml" -o "$TMP/x.yaml"
case_line "-o the file of an equiv FILE:PLAN word is refused" 2 \
    "$TMP/eq.yaml: error: output file is the input '$TMP/eq.yaml:direct' (the same file); refusing to overwrite an input" \
    -- equiv "$TMP/eq.yaml:direct" "$TMP/eq.yaml:naive" -o "$TMP/eq.yaml"
if [ "$(md5sum <"$TMP/x.yaml")" = "$sum" ]; then ok "the input is unchanged after the refusals"; else
    not_ok "the input is unchanged after the refusals" "x.yaml was written"; fi

# Byte sums (base/checked.h, bound 2^63-1 = the int64 of the JSON). 4 EiB = 2^62 bytes.
cat >"$TMP/two.yaml" <<'EOF'
world: 2
steps:
  - alloc: {buf: a, bytes: 4 * 1024 TiB * 1024}
  - alloc: {buf: b, bytes: 4 * 1024 TiB * 1024}
EOF
# at the second alloc's bytes (column 28), whose size crossed the bound
case_line "two allocations of 4 EiB: an error at the second, not a negative peak" 2 \
    "$TMP/two.yaml:4:28: error: live requested bytes on rank 0 exceed 2^63-1 at alloc 'b'" \
    -- predict "$TMP/two.yaml"
# One at a time they fit: peak 2^62 = 4611686018427387904 on both views (whole 2 MiB pages).
cat >"$TMP/seq.yaml" <<'EOF'
world: 2
steps:
  - alloc: {buf: a, bytes: 4 * 1024 TiB * 1024}
  - free: a
  - alloc: {buf: b, bytes: 4 * 1024 TiB * 1024}
EOF
# (grep, not jq: jq reads integers as doubles and would round 2^62's neighbours.)
got=$("$MEMLIFE" predict --format json "$TMP/seq.yaml" | tr -d ' \n' |
      grep -oE '"(steady|peak)":-?[0-9]+' | head -4 | tr '\n' ' ')
want='"steady":4611686018427387904 "peak":4611686018427387904 "steady":4611686018427387904 "peak":4611686018427387904 '

if [ "$got" = "$want" ]; then ok "4 EiB, freed, then 4 EiB again: steady = peak = 2^62"; else
    not_ok "4 EiB, freed, then 4 EiB again: steady = peak = 2^62" "got '$got', want '$want'"; fi

# -o through links and descriptors (base/util.h ml_output_place). A link stays a link and the
# file it ends at gets the report (renaming onto the link's own name made it a plain file, and
# as root `-o /dev/stdout` replaced the /dev/stdout link itself); /dev/fd/1 is written as it
# stands, so an appending redirect keeps what was there.
want_json=$("$MEMLIFE" predict --format json $SEED)
mkdir "$TMP/links"
echo old >"$TMP/links/real.json"
ln -s real.json "$TMP/links/link.json"
ln -s later.json "$TMP/links/dangling.json"
"$MEMLIFE" predict --format json $SEED -o "$TMP/links/link.json"
if [ -L "$TMP/links/link.json" ] && [ "$(cat "$TMP/links/real.json")" = "$want_json" ]; then
    ok "-o a link: the link kept, the file it points to holds the report"; else
    not_ok "-o a link: the link kept, the file it points to holds the report" \
        "$(ls -l "$TMP/links" | tr '\n' ' ')"; fi
"$MEMLIFE" predict --format json $SEED -o "$TMP/links/dangling.json"
if [ -L "$TMP/links/dangling.json" ] && [ "$(cat "$TMP/links/later.json")" = "$want_json" ]; then
    ok "-o a link to a file not made yet: that file is made"; else
    not_ok "-o a link to a file not made yet: that file is made" "$(ls -l "$TMP/links" | tr '\n' ' ')"; fi
# real.json, link.json, dangling.json, later.json: no temp file left
n=$(find "$TMP/links" -mindepth 1 | wc -l)
if [ "$n" -eq 4 ]; then ok "-o through links leaves no temp file"; else
    not_ok "-o through links leaves no temp file" "$n entries"; fi
echo first >"$TMP/app.txt"
"$MEMLIFE" predict --format json $SEED -o /dev/fd/1 >>"$TMP/app.txt"
if [ "$(cat "$TMP/app.txt")" = "$(printf 'first\n%s' "$want_json")" ]; then
    ok "-o /dev/fd/1 >> file appends, as -o - does"; else
    not_ok "-o /dev/fd/1 >> file appends, as -o - does" "$(head -c 200 "$TMP/app.txt")"; fi
