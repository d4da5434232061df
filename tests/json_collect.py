#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# tests/json_collect.py NAME DIR... — the JSON hook of the test scripts (tests/json.bash): every
# file under DIR that holds a memlife JSON document is validated against its schema in schemas/
# (JSON Schema 2020-12), chosen by what the document says it is: "command" predict, check or
# run -> result, diff, equiv, optimize, bench, fit -> the schema of that name; a Chrome trace whose
# otherData.generator is "memlife trace ..." -> trace. Files that do not parse as one JSON
# object, or say no such kind (fixtures, snapshots, a test's own JSON), are not memlife's and
# are left alone; so is a file listed in DIR/.json-ignore (a test's deliberately broken copy).
# Prints one TAP line for NAME when it validated anything: `ok - NAME: json outputs validate
# (N: ...)` or `not ok - NAME: json ...: FILE: where: why`; nothing when there was no memlife
# JSON. Exit 0 always: the line carries the verdict (tests/run.sh counts lines).
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA_OF = {"predict": "result", "check": "result", "run": "result", "diff": "diff",
             "equiv": "equiv", "optimize": "optimize", "bench": "bench", "fit": "fit"}
MAX_BYTES = 16 << 20   # a larger trace (trace_json.sh's 129 MB one) would take minutes


def kind(doc):
    if not isinstance(doc, dict):
        return None
    if doc.get("command") in SCHEMA_OF:
        return SCHEMA_OF[doc["command"]]
    other = doc.get("otherData")
    if isinstance(other, dict) and str(other.get("generator", "")).startswith("memlife trace"):
        return "trace"
    return None


def main():
    name, dirs = sys.argv[1], sys.argv[2:]
    try:
        import jsonschema
    except ImportError:
        print("skip - %s: json outputs: no python3 with jsonschema (make deps)" % name)
        return
    validators = {}
    counts, failures, too_big = {}, [], 0
    for top in dirs:
        ignore = set()
        try:
            with open(os.path.join(top, ".json-ignore")) as f:
                ignore = {os.path.realpath(l.strip()) for l in f if l.strip()}
        except OSError:
            pass
        for here, _, files in os.walk(top):
            for fn in sorted(files):
                path = os.path.join(here, fn)
                if os.path.realpath(path) in ignore or not os.path.isfile(path):
                    continue
                try:
                    with open(path, "rb") as f:
                        head = f.read(1)
                        if head != b"{":
                            continue
                        if os.path.getsize(path) > MAX_BYTES:
                            too_big += 1
                            continue
                        f.seek(0)
                        doc = json.loads(f.read())
                except (OSError, ValueError):
                    continue
                k = kind(doc)
                if not k:
                    continue
                if k not in validators:
                    with open(os.path.join(ROOT, "schemas", k + ".schema.json")) as f:
                        schema = json.load(f)
                    jsonschema.Draft202012Validator.check_schema(schema)
                    validators[k] = jsonschema.Draft202012Validator(schema)
                counts[k] = counts.get(k, 0) + 1
                errors = sorted(validators[k].iter_errors(doc), key=str)
                if errors:
                    e = errors[0]
                    where = "/".join(map(str, e.absolute_path)) or "(top)"
                    failures.append("%s (%s): %s: %s" % (os.path.relpath(path, top), k, where,
                                                          e.message[:200]))
    if not counts:
        return
    total = sum(counts.values())
    what = ", ".join("%s %d" % (k, counts[k]) for k in sorted(counts))
    big = "; %d over 16 MB not read" % too_big if too_big else ""
    if failures:
        print("not ok - %s: json outputs: %d of %d do not validate: %s" %
              (name, len(failures), total, " | ".join(failures[:3])))
    else:
        print("ok - %s: json outputs validate (%d: %s%s)" % (name, total, what, big))


main()
