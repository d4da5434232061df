#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# examples/api/predict.c, built by make test against libmemlife.a: the C API predicts the
# README's lifetimes (requested peaks at 4 ranks: 256, 320, 576, 320 MiB), reports a bad file as
# file:line:col with exit 2, and writes the same JSON as 'memlife predict --format json'.
. "$(dirname "$0")/lib.bash"

EX=$ROOT/$BUILD/examples/api_predict
if [ ! -x "$EX" ]; then not_ok "api example" "$EX is not built (make test builds it)"; exit 0; fi
"$EX" schedules/seed/0[1-4]*.yaml --json "$TMP/api.json" >"$TMP/out" 2>"$TMP/err"
cat >"$TMP/want" <<'W'
allreduce-full world 4 requested peak 268435456 device peak 268435456
reduce-scatter-shard world 4 requested peak 335544320 device peak 335544320
rs-ag-naive-lifetime world 4 requested peak 603979776 device peak 603979776
rs-ag-optimized-lifetime world 4 requested peak 335544320 device peak 335544320
W
if [ $? -eq 0 ] && cmp -s "$TMP/want" "$TMP/out"; then ok "api: the four lifetimes' peaks"; else not_ok "api: the four lifetimes' peaks" "$(diff "$TMP/want" "$TMP/out" | head -4 | tr '\n' '|')"; fi
"$MEMLIFE" predict --format json schedules/seed/0[1-4]*.yaml >"$TMP/cli.json"
if cmp -s "$TMP/cli.json" "$TMP/api.json"; then ok "api: memlife_report json = memlife predict --format json"; else not_ok "api: memlife_report json = memlife predict --format json" "differ"; fi
"$EX" tests/cli/bad/double_free.yaml >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ $rc -eq 2 ] && grep -Eq '^tests/cli/bad/double_free.yaml:[0-9]+:[0-9]+: error:' "$TMP/err" && [ ! -s "$TMP/out" ]; then
    ok "api: a bad schedule gives memlife_errors' file:line:col lines"
else
    not_ok "api: a bad schedule gives memlife_errors' file:line:col lines" "exit $rc: $(head -1 "$TMP/err")"
fi
