#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The README shows real output: its schedule example must pass `check` (the commands the README
# and docs/*.md show, with their output, are docs_commands.sh's).
. "$(dirname "$0")/lib.bash"

if ! command -v python3 >/dev/null 2>&1; then
    echo "skip - readme example: python3 not found"
    exit 0
fi
python3 - "$ROOT/README.md" "$TMP/example.yaml" <<'PY'
import sys
text = open(sys.argv[1]).read()
start = text.index("```yaml\n") + len("```yaml\n")
open(sys.argv[2], "w").write(text[start:text.index("```", start)])
PY
run check "$TMP/example.yaml"
if [ "$RC" -eq 0 ]; then ok "readme schedule example passes check"
else not_ok "readme schedule example passes check" "exit $RC: $(head -2 "$TMP/err" | tr '\n' '|')"; fi

