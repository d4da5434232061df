#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CLI basics: --version, help, per-command --help, unknown commands and options, exit codes.
. "$(dirname "$0")/lib.bash"

# --version: "memlife 0.1.0 (<commit>)" then the backends compiled in (the commit and the backend
# list depend on the build, so the first line is matched by pattern, not a golden).
run --version
if [ "$RC" -eq 0 ] && head -1 "$TMP/out" | grep -Eq '^memlife 0\.1\.0 \([0-9a-f]{7,}(-dirty)?|unknown\)$' &&
    sed -n 2p "$TMP/out" | grep -Eq '^backends: .*host'; then
    ok "version"
else
    not_ok "version" "exit $RC, got: $(head -2 "$TMP/out" | tr '\n' '|')"
fi

expect_case "help lists the commands" 0 help.out "" -- help
expect_case "--help is help" 0 help.out "" -- --help
expect_case "predict --help" 0 predict_help.out "" -- predict --help
expect_case "check -h" 0 check_help.out "" -- check -h
expect_case "help predict = predict --help" 0 predict_help.out "" -- help predict
# --help wins over everything after it, files included: usage, exit 0.
expect_case "--help after a bad option still helps" 0 predict_help.out "" -- predict --bogus --help

expect_case "unknown command" 2 empty.out unknown_command.err -- frobnicate
expect_case "help of an unknown command" 2 empty.out unknown_command.err -- help frobnicate
expect_case "unknown option" 2 empty.out unknown_option.err -- predict --bogus schedules/seed/01_allreduce_full.yaml
expect_case "no file" 2 empty.out no_file.err -- predict
expect_case "--world needs an integer" 2 empty.out bad_world.err -- predict --world four schedules/seed/01_allreduce_full.yaml
expect_case "--world 0 is out of range" 2 empty.out world_zero.err -- predict --world 0 schedules/seed/01_allreduce_full.yaml
expect_case "--set needs NAME=VALUE" 2 empty.out bad_set.err -- predict --set M schedules/seed/01_allreduce_full.yaml
expect_case "--format must be known" 2 empty.out bad_format.err -- predict --format xml schedules/seed/01_allreduce_full.yaml
expect_case "--world needs a value" 2 empty.out world_missing.err -- predict schedules/seed/01_allreduce_full.yaml --world

# No command at all: the overview on stderr, exit 2.
run
if [ "$RC" -eq 2 ] && [ ! -s "$TMP/out" ] && grep -q '^usage: memlife COMMAND' "$TMP/err"; then
    ok "no command"
else
    not_ok "no command" "exit $RC"
fi

# A report that cannot reach stdout (a full disk; /dev/full fails every write) is a failure,
# exit 3 with the reason, in every format: the write is flushed and checked before memlife exits.
if [ -w /dev/full ]; then
    for f in table json csv; do
        "$MEMLIFE" predict schedules/seed/01_allreduce_full.yaml -f $f >/dev/full 2>"$TMP/err"
        rc=$?
        if [ "$rc" -eq 3 ] && grep -q "error: cannot write the report to stdout" "$TMP/err"; then
            ok "stdout full: predict -f $f exits 3"
        else
            not_ok "stdout full: predict -f $f exits 3" "exit $rc: $(head -c 200 "$TMP/err")"
        fi
    done
else
    echo "skip - stdout full: no writable /dev/full"
fi
