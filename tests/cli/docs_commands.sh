#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# docs_commands.sh — every memlife command shown in README.md, docs/*.md and the examples'
# READMEs runs, and its shown output (masked where it varies: the provenance line) and exit code
# are what it does today, so that a doc cannot drift from the program (tests/cli/docs_commands.py
# says what counts and how a doc marks what the test cannot run: <!-- docs-test: skip REASON -->,
# listed as skipped). One line per block. The examples show their output in a block of its own,
# which tests/cli/plot_examples.sh compares; here their commands' exit codes count.
. "$(dirname "$0")/lib.bash"
command -v python3 >/dev/null || { echo "skip - docs commands: python3 not installed"; exit 0; }

# The reader's terminal: the repository's folders, ./memlife and memlife on PATH; what the
# commands write (-o FILE) lands here, not in the tree.
W=$TMP/work
mkdir -p "$W/bin"
for d in schedules examples tests docs tools; do ln -s "$ROOT/$d" "$W/$d"; done
ln -s "$MEMLIFE" "$W/memlife"
ln -s "$MEMLIFE" "$W/bin/memlife"
PATH=$W/bin:$PATH python3 "$ROOT/tests/cli/docs_commands.py" "$W" README.md docs/*.md examples/*/README.md
