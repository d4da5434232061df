#!/bin/bash
# SPDX-License-Identifier: MIT
# gate.sh — the peak-memory gate a CI job runs on every pull request.
#   examples/ci_gate/gate.sh [SCHEDULE.yaml...]     (default: this folder's layers.yaml)
# `memlife check` predicts every rank of every schedule and compares with its `expect:` block:
# exit 0 when all hold, 1 when an expectation fails (a peak regression), 2 on bad input. The
# Markdown report ($REPORT, default $TMPDIR/memory-report.md) is what the job posts on the pull
# request.
set -u
cd "$(dirname "$0")" || exit 2
ML=${MEMLIFE:-../../memlife}
[ $# -gt 0 ] || set -- layers.yaml
REPORT=${REPORT:-${TMPDIR:-/tmp}/memory-report.md}
"$ML" check "$@" --format md -o "$REPORT"
rc=$?
[ -f "$REPORT" ] && cat "$REPORT"
case $rc in
0) echo "memory gate: pass" ;;
1) echo "memory gate: FAIL, a peak or steady expectation no longer holds (see above)" ;;
*) echo "memory gate: could not check (exit $rc)" ;;
esac
exit $rc
