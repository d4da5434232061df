#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The snapshot pickle reader and writer against python3's pickle (analyzer/snapshot/pickle.h),
# through tests/cli/pickle_tool.c built from the sources:
#   - what pickle_write writes, python3's pickle.loads reads equal to the JSON it came from, and
#     it uses only protocol 4 opcodes that torch/utils/viz/MemoryViz.js reads;
#   - what python3 pickles (protocols 2 to 5) pickle_read reads equal to the original;
#   - a pickle whose __reduce__ would run a shell command is refused, and the command never runs.
. "$(dirname "$0")/lib.bash"

CC=${CC:-cc}
if ! $CC -O2 -std=c11 -D_GNU_SOURCE -Ianalyzer -Iruntime -o "$TMP/pickle_tool" tests/cli/pickle_tool.c \
    analyzer/snapshot/pickle*.c runtime/base/input.c runtime/base/util.c runtime/base/human.c -ljansson 2>"$TMP/cc.err"; then
    echo "error: cannot build tests/cli/pickle_tool.c: $(head -1 "$TMP/cc.err")" >&2
    exit 2
fi
TOOL=$TMP/pickle_tool

# A snapshot-shaped value: nested dicts and lists, 2,500 trace entries (past the 1,000 batch),
# repeated filenames, 48-bit addresses, int64 limits, floats, unicode, None and booleans.
python3 - "$TMP/snap.json" <<'PY'
import json, sys
files = ["/opt/torch/nn/modules/module.py", "train.py", "caf\u00e9/\u2603.py"]
trace = [{"action": ["alloc", "free_requested", "free_completed"][i % 3],
          "addr": 0x7f0000000000 + i * 512, "size": i * 4096 + 1, "stream": i % 2,
          "time_us": 1_700_000_000_000_000 + i,
          "frames": [{"filename": files[(i + k) % 3], "line": k * 100 + i, "name": "f%d" % k}
                     for k in range(3)]} for i in range(2500)]
snap = {"segments": [{"address": 0x7f0000000000, "total_size": 2 << 20, "is_expandable": False,
                      "blocks": [], "frames": []}],
        "device_traces": [trace, []],
        "allocator_settings": {"expandable_segments": True, "ratio": 0.5, "none": None},
        "external_annotations": [], "limits": [-2**63, 2**63 - 1, -1, 255, 256, 65536, -2**31],
        "text": "\U0001f40d " + "x" * 70000}
json.dump(snap, open(sys.argv[1], "w"))
PY

if "$TOOL" pickle "$TMP/snap.json" "$TMP/snap.pickle" 2>"$TMP/err" &&
    out=$(python3 - "$TMP/snap.json" "$TMP/snap.pickle" 2>&1 <<'PY'
import json, pickle, pickletools, sys
want = json.load(open(sys.argv[1]))
data = open(sys.argv[2], "rb").read()
# MemoryViz.js's unpickler: these opcodes, PROTO 2 to 4
viz = {"APPENDS", "BINGET", "BININT", "BININT1", "BININT2", "EMPTY_DICT", "EMPTY_LIST", "FRAME",
       "LONG1", "LONG_BINGET", "MARK", "MEMOIZE", "PROTO", "SETITEMS", "SHORT_BINUNICODE", "STOP",
       "TUPLE2", "APPEND", "NEWFALSE", "BINPUT", "BINUNICODE", "EMPTY_TUPLE", "NEWTRUE", "NONE",
       "BINFLOAT", "TUPLE", "TUPLE1", "TUPLE3", "LONG_BINPUT", "LIST", "DICT", "SETITEM"}
ops = {op.name for op, arg, pos in pickletools.genops(data)}
assert data[:2] == b"\x80\x04", data[:2]
assert ops <= viz, ops - viz
class NoGlobals(pickle.Unpickler):
    def find_class(self, module, name):
        raise AssertionError("global %s.%s" % (module, name))
import io
got = NoGlobals(io.BytesIO(data)).load()
assert got == want, "differs"
# memoized filenames: each written once
assert data.count(b"module.py") == 1, data.count(b"module.py")
print(len(data))
PY
    ); then
    ok "pickle_write output read by python3 equal ($out bytes, MemoryViz opcodes only)"
else
    not_ok "pickle_write output read by python3 equal" "$(cat "$TMP/err") $out"
fi

for p in 2 3 4 5; do
    python3 -c 'import json, pickle, sys; pickle.dump(json.load(open(sys.argv[1])), open(sys.argv[2], "wb"), protocol=int(sys.argv[3]))' \
        "$TMP/snap.json" "$TMP/p$p.pickle" "$p"
    if "$TOOL" json "$TMP/p$p.pickle" "$TMP/p$p.json" 2>"$TMP/err" &&
        python3 -c 'import json, sys; assert json.load(open(sys.argv[1])) == json.load(open(sys.argv[2]))' \
            "$TMP/snap.json" "$TMP/p$p.json" 2>>"$TMP/err"; then
        ok "python3 protocol $p pickle read equal"
    else
        not_ok "python3 protocol $p pickle read equal" "$(head -3 "$TMP/err")"
    fi
done

# The classic exploit: __reduce__ returning (os.system, (command,)). Python's pickle.load would
# run the command; pickle_read stops at the STACK_GLOBAL that names os.system.
python3 - "$TMP/evil.pickle" "$TMP/pwned" <<'PY'
import os, pickle, sys
class Evil:
    def __reduce__(self):
        return (os.system, ("touch " + sys.argv[2],))
pickle.dump({"device_traces": [Evil()]}, open(sys.argv[1], "wb"), protocol=4)
PY
"$TOOL" json "$TMP/evil.pickle" "$TMP/evil.json" 2>"$TMP/err"
RC=$?
if [ "$RC" -eq 1 ] && [ ! -e "$TMP/pwned" ] &&
    grep -Eq "evil.pickle: byte [0-9]+: error: pickle opcode STACK_GLOBAL \(0x93\) is not allowed: memlife reads only plain data and never runs code$" "$TMP/err"; then
    ok "a __reduce__ pickle is refused and runs nothing"
else
    not_ok "a __reduce__ pickle is refused and runs nothing" "exit $RC, $(cat "$TMP/err")"
fi
