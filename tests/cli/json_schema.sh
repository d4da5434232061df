#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every kind of JSON memlife writes validates against its schema in schemas/ (JSON Schema
# 2020-12), with jsonschema: predict, check (and run on the host backend where Open MPI
# is there), diff, equiv, optimize, bench, trace, fit. Each starts with the integer schema_version 1.
# Beyond this one of each kind, every test script validates the JSON it leaves in its temporary
# folder (tests/json.bash, tests/json_collect.py).
# The python3 used is the first on PATH (tests/run.sh puts the one tools/deps.sh made first).
. "$(dirname "$0")/lib.bash"

PY=$(command -v python3 || echo python3)
if ! "$PY" -c 'import jsonschema' 2>/dev/null; then
    echo "skip - json schemas: no python3 with jsonschema (make deps)"
    exit 0
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

# validate NAME SCHEMA FILE
validate() {
    if out=$("$PY" - "$ROOT/schemas/$2.schema.json" "$3" 2>&1 <<'P'
import json, sys, jsonschema
schema, doc = (json.load(open(p)) for p in sys.argv[1:3])
jsonschema.Draft202012Validator.check_schema(schema)
errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc), key=str)
for e in errors[:3]:
    print("/".join(map(str, e.absolute_path)) + ": " + e.message)
v = doc.get("schema_version", doc.get("otherData", {}).get("schema_version"))
if v != 1 or type(v) is not int:
    print("schema_version is %r, want the integer 1" % (v,))
    sys.exit(1)
sys.exit(1 if errors else 0)
P
    ); then ok "json schema: $1"; else not_ok "json schema: $1" "$(echo "$out" | head -3 | tr '\n' '|')"; fi
}

S=schedules/seed
"$MEMLIFE" predict -fjson $S/*.yaml >"$TMP/predict.json" && validate "predict (every seed schedule)" result "$TMP/predict.json"
"$MEMLIFE" check -fjson -o "$TMP/check.json" $S/*.yaml >/dev/null && validate "check" result "$TMP/check.json"
"$MEMLIFE" diff -fjson $S/03_rs_ag_naive.yaml $S/04_rs_ag_optimized.yaml >"$TMP/diff.json" && validate "diff" diff "$TMP/diff.json"
"$MEMLIFE" optimize -fjson -o "$TMP/opt.yaml" $S/03_rs_ag_naive.yaml >"$TMP/optimize.json" && validate "optimize" optimize "$TMP/optimize.json"
"$MEMLIFE" equiv --no-data -fjson schedules/equiv/direct_vs_naive.yaml:direct schedules/equiv/direct_vs_naive.yaml:naive >"$TMP/equiv.json"
validate "equiv --no-data" equiv "$TMP/equiv.json"
"$MEMLIFE" trace -o "$TMP/trace.json" $S/03_rs_ag_naive.yaml && validate "trace" trace "$TMP/trace.json"
"$MEMLIFE" fit -fjson --vary L --budget 80GiB schedules/fsdp_layers.yaml >"$TMP/fit.json" && validate "fit" fit "$TMP/fit.json"
if "$MEMLIFE" --version | grep -q 'host (not built)' || ! command -v mpirun >/dev/null; then
    echo "skip - json schema: run and bench: the host backend is not built (Open MPI)"
else
    "$MEMLIFE" run --backend host --ranks 2 --world 2 -fjson $S/03_rs_ag_naive.yaml >"$TMP/run.json" 2>"$TMP/run.err" &&
        validate "run (host, 2 ranks; provenance counts are integers)" result "$TMP/run.json" ||
        not_ok "json schema: run" "$(head -2 "$TMP/run.err" | tr '\n' '|')"
    "$MEMLIFE" bench --backend host --ranks 2 --world 2 --warmup 0 --cycles 2 -q --sizes 1KiB --json "$TMP/bench.json" $S/06_bench_direct_decomposed.yaml 2>"$TMP/bench.err" &&
        validate "bench (host, 2 ranks)" bench "$TMP/bench.json" ||
        not_ok "json schema: bench" "$(head -2 "$TMP/bench.err" | tr '\n' '|')"
fi
