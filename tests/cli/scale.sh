#!/usr/bin/env bash
# Scale limits (issue 7): big schedules load and predict in time linear in their size, and the
# limits on names and nesting are errors that say so.
#
#   steps:    1 M and 10 M written steps (tests/cli/scale_gen.c: alloc / all_reduce / free cycles,
#             world 1); `memlife predict` CPU time (user + sys) and peak RSS at 10 M over 1 M must
#             stay under 15x: linear work gives about 10x, anything quadratic 100x.
#   buffers:  100 k and 1 M distinct buffers live at once, one collective each, one free of them
#             all (symbol tables, lint's per-buffer state, the predictor's live set and the
#             device model's shared pages): the same 15x bound.
#   races:    100 k and 1 M steps of FSDP-style prefetch on two streams (record/wait both ways,
#             one new slice of one buffer per six steps, a whole-buffer read every 64 slices):
#             the race lint's segments (analyzer/lint/lint_race.c), the same 15x bound.
#   limits:   a name of 128 bytes loads and one of 129 is `name longer than 128 bytes`; 64 nested
#             repeats load and 65 are `nesting deeper than 64 levels` (docs/schedule.md).
# CPU time rather than wall time: the machines are shared. The time ratios are skipped under
# ASan (SANITIZE=1), where timings say nothing and 10 M steps would need tens of GB; the limit
# cases run everywhere. SCALE_BIG=0 skips the 10 M / 1 M sizes (about 45 s and 5 GB of memory).
. "$(dirname "$0")/lib.bash"

CC=${CC:-cc}
if ! $CC -O2 -o "$TMP/gen" tests/cli/scale_gen.c 2>"$TMP/cc.err"; then
    echo "error: cannot build tests/cli/scale_gen.c: $(head -1 "$TMP/cc.err")" >&2
    exit 2
fi
ASAN=0
ldd "$MEMLIFE" 2>/dev/null | grep -q libasan && ASAN=1

# measure FILE: runs `memlife predict FILE`; prints "cpu_seconds max_rss_kib exit_code".
measure() {
    python3 - "$MEMLIFE" "$1" <<'PY'
import resource, subprocess, sys
rc = subprocess.run([sys.argv[1], "predict", sys.argv[2]], stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL).returncode
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.3f %d %d" % (r.ru_utime + r.ru_stime, r.ru_maxrss, rc))
PY
}

# ratio_case NAME KIND SMALL BIG: generates both sizes, predicts each (the small one best of 3,
# it is the noisier), and checks both exit 0 and the CPU-time and RSS ratios are under 15.
ratio_case() {
    local name=$1 kind=$2 small=$3 big=$4 best="" rss_s=0 t rss rc why=""
    "$TMP/gen" "$kind" "$small" >"$TMP/small.yaml"
    for _ in 1 2 3; do
        read -r t rss rc < <(measure "$TMP/small.yaml")
        [ "$rc" -eq 0 ] || why="exit $rc at $small $kind"
        if [ -z "$best" ] || python3 -c "import sys; sys.exit(not $t < $best)"; then best=$t; fi
        rss_s=$rss
    done
    "$TMP/gen" "$kind" "$big" >"$TMP/big.yaml"
    read -r t rss rc < <(measure "$TMP/big.yaml")
    rm -f "$TMP/big.yaml"
    [ "$rc" -eq 0 ] || why="${why:+$why; }exit $rc at $big $kind"
    local verdict
    verdict=$(python3 -c "
t_s, t_b, m_s, m_b = $best, $t, $rss_s, $rss
rt, rm = t_b / max(t_s, 0.001), m_b / max(m_s, 1)
bad = [w for w, r in (('cpu time', rt), ('peak rss', rm)) if r >= 15]
print('%s|cpu %.2fs -> %.2fs (%.1fx), rss %d -> %d MiB (%.1fx)' % (
    ' and '.join(bad), t_s, t_b, rt, m_s // 1024, m_b // 1024, rm))")
    local over=${verdict%%|*} detail=${verdict#*|}
    [ -z "$over" ] || why="${why:+$why; }$over grows 15x or more for 10x the size: $detail"
    if [ -z "$why" ]; then ok "$name: $detail"; else not_ok "$name" "$why"; fi
}

if [ "$ASAN" = 1 ]; then
    echo "skip - scale 1M vs 10M steps: timings under ASan say nothing (SANITIZE=1)"
    echo "skip - scale 100k vs 1M buffers: timings under ASan say nothing (SANITIZE=1)"
    echo "skip - scale 100k vs 1M race-linted steps: timings under ASan say nothing (SANITIZE=1)"
elif [ "${SCALE_BIG:-1}" = 0 ]; then
    echo "skip - scale 1M vs 10M steps: SCALE_BIG=0"
    echo "skip - scale 100k vs 1M buffers: SCALE_BIG=0"
    echo "skip - scale 100k vs 1M race-linted steps: SCALE_BIG=0"
else
    ratio_case "scale 1M vs 10M steps" steps 1000000 10000000
    ratio_case "scale 100k vs 1M buffers" buffers 100000 1000000
    ratio_case "scale 100k vs 1M race-linted steps" races 100000 1000000
fi

# limit_case NAME KIND N WANT_RC [WANT_TEXT]: a generated file at a limit; WANT_TEXT is the
# expected first diagnostic after "FILE:LINE:COL: error: ".
limit_case() {
    local name=$1 kind=$2 n=$3 want_rc=$4 want=${5:-} why=""
    "$TMP/gen" "$kind" "$n" >"$TMP/$kind.yaml"
    run check "$TMP/$kind.yaml"
    [ "$RC" -eq "$want_rc" ] || why="exit $RC, want $want_rc: $(head -1 "$TMP/err")"
    if [ -n "$want" ] && ! head -1 "$TMP/err" | grep -Eq "^$TMP/$kind.yaml:[0-9]+:[0-9]+: error: $want\$"; then
        why="${why:+$why; }first diagnostic is '$(head -1 "$TMP/err")', want '...: error: $want'"
    fi
    if [ -z "$why" ]; then ok "$name"; else not_ok "$name" "$why"; fi
}
limit_case "name of 128 bytes loads" name 128 0
limit_case "name of 129 bytes is an error" name 129 2 "buffer name longer than 128 bytes"
limit_case "name of 1 MB is an error, not a slow load" name 1000000 2 "buffer name longer than 128 bytes"
limit_case "64 nested repeats load" nest 64 0
limit_case "65 nested repeats are an error" nest 65 2 "nesting deeper than 64 levels"
limit_case "10000 nested repeats are an error" nest 10000 2 "nesting deeper than 64 levels"
