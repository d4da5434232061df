#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# memlife export --memory-viz (analyzer/snapshot/export.h): the naive RS+AG at world 2 (full
# 256 MiB, shard 128 MiB, gathered 256 MiB, then full and shard freed) as a PyTorch snapshot.
#   - python3 reads it with an unpickler that refuses every global: the keys memory_viz reads
#     (segments, device_traces, allocator_settings), 10 events in the model's order (three
#     segment_alloc + alloc pairs, two free_requested + free_completed pairs), each framed by the
#     schedule's line, and 3 segments in address order: 256 MiB active_allocated (gathered, the
#     newest segment, lowest address), then 128 MiB and 256 MiB inactive;
#   - where a python3 has torch (the .venv's 2.13 first), its torch.cuda._memory_viz reads it
#     as a user would (pickle.load): 2.x's trace_plot and segment_plot write the viewer pages with
#     this very snapshot inside, its segsum reads 3 segments, 640 MiB reserved and 256 MiB
#     allocated, and its trace reads 10 entries: cudaMalloc 256, 128 and 256 MiB, each with its
#     block, then two frees; 1.13's stats reads the segments list (640 MiB in 3 segments);
#   - imported back (memlife import), its expectations are the model's numbers: reserved and
#     requested peak 671088640 (640 MiB), reserved steady 640 MiB, requested steady 256 MiB;
#   - bad usage: exit 2, no file.
. "$(dirname "$0")/lib.bash"

run export --memory-viz schedules/seed/03_rs_ag_naive.yaml --world 2 -o "$TMP/e.pickle"
if [ "$RC" -ne 0 ]; then
    not_ok "export seed 03 at world 2" "exit $RC: $(head -2 "$TMP/err")"
    exit 0
fi
if ! command -v python3 >/dev/null; then
    echo "skip - export structure: no python3"
else
    out=$(python3 - "$TMP/e.pickle" <<'PY' 2>&1
import pickle, sys
class NoGlobals(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("global %s.%s" % (module, name))
d = NoGlobals(open(sys.argv[1], "rb")).load()
assert set(d) == {"segments", "device_traces", "allocator_settings", "external_annotations"}, d.keys()
t = d["device_traces"][0]
acts = [e["action"] for e in t]
assert acts == ["segment_alloc", "alloc"] * 3 + ["free_requested", "free_completed"] * 2, acts
M = 1 << 20
assert [e["size"] // M for e in t if e["action"] == "alloc"] == [256, 128, 256]
assert [e["frames"][0]["line"] for e in t if e["action"] == "alloc"] == [23, 24, 25]
assert t[1]["frames"][0]["filename"].endswith("schedules/seed/03_rs_ag_naive.yaml")
assert t[1]["frames"][0]["name"] == "alloc 'full' (col 5)", t[1]["frames"][0]
for e in t:
    assert set(e) >= {"action", "addr", "size", "stream", "time_us", "frames"}, e.keys()
segs = [(s["total_size"] // M, s["segment_type"], [(b["size"] // M, b["state"]) for b in s["blocks"]])
        for s in d["segments"]]
# in address order: each of these large segments gets a heap of its own below the earlier ones,
# as the driver placed them (docs/torch.md, Addresses), so gathered (the newest) comes first
assert segs == [(256, "large", [(256, "active_allocated")]), (128, "large", [(128, "inactive")]),
                (256, "large", [(256, "inactive")])], segs
alive = [b for s in d["segments"] for b in s["blocks"] if b["state"] == "active_allocated"]
assert alive[0]["frames"][0]["line"] == 25   # gathered, allocated at line 25
print("ok")
PY
)
    if [ "$out" = ok ]; then
        ok "export: memory_viz's keys, 10 events framed by the schedule's lines, 3 segments (no globals)"
    else
        not_ok "export structure" "$out"
    fi
fi

# memory_viz itself, where a python3 has torch: the one tests are told to use, the checkout's
# .venv (make deps: torch 2.13), else any on PATH (an older CI: /usr/bin/python3, torch 1.13)
TORCH_PY=
for p in ${MEMLIFE_PYTHON:-} .venv/bin/python3 $(type -ap python3) /usr/bin/python3; do
    if "$p" -c 'import torch.cuda._memory_viz' 2>/dev/null; then TORCH_PY=$p; break; fi
done
if [ -z "$TORCH_PY" ]; then
    echo "skip - export through torch.cuda._memory_viz: no python3 with torch"
else
    out=$("$TORCH_PY" - "$TMP/e.pickle" "$TMP/e.html" <<'PY' 2>&1
import base64, pickle, re, sys
import torch.cuda._memory_viz as mv
d = pickle.load(open(sys.argv[1], "rb"))
if hasattr(mv, "trace_plot"):      # torch 2.x: the HTML pages memory_viz writes
    html = mv.trace_plot(d) + mv.segment_plot(d)
    open(sys.argv[2], "w").write(html)
    # the pages load the snapshot from inside themselves: this one, twice
    inside = [pickle.loads(base64.b64decode(b)) for b in re.findall(r'"base64": "([^"]+)"', html)]
    assert inside == [d, d], len(inside)
    summary = mv.segsum(d)
    for want in ("segments: 3", "total_reserved: 640.0MiB", "total_allocated: 256.0MiB"):
        assert want in summary, (want, summary)
    trace = mv.trace(d)
    assert "10 entries" in trace, trace
    mallocs = re.findall(r"cudaMalloc\(\d+, ([0-9.]+MiB)\)", trace)
    assert mallocs == ["256.0MiB", "128.0MiB", "256.0MiB"], trace
    assert len(re.findall(r"^del ", trace, re.M)) == 2, trace
    print("ok trace_plot/segment_plot/segsum/trace, torch %s" % __import__("torch").__version__)
else:                               # torch 1.13: the segments list
    st = mv.stats(d["segments"])
    assert st["segments"] == 3 and str(st["total_size"]) == "640.0MiB", st
    flame = mv.segments(d["segments"], format_flamegraph=lambda text: text)
    assert flame.count("\n") == 3 and "active_allocated 268435456" in flame, flame
    print("ok stats/segments")
PY
)
    case $out in
    ok*) ok "export through torch.cuda._memory_viz (${out#ok })" ;;
    *) not_ok "export through torch.cuda._memory_viz" "$(echo "$out" | tail -3 | tr '\n' ' ')" ;;
    esac
fi

run import "$TMP/e.pickle" -o "$TMP/back.yaml"
if [ "$RC" -eq 0 ] && grep -q '^  requested: {steady: 268435456, peak: 671088640}' "$TMP/back.yaml" &&
    grep -q 'reserved: {steady: 671088640, peak: 671088640}' "$TMP/back.yaml"; then
    ok "export then import: requested 256/640 MiB, reserved 640/640 MiB"
else
    not_ok "export then import" "exit $RC: $(grep -A2 '^expect' "$TMP/back.yaml" | tr '\n' ' ')"
fi

rm -f "$TMP/x.pickle"
run export schedules/seed/03_rs_ag_naive.yaml -o "$TMP/x.pickle"
if [ "$RC" -eq 2 ] && grep -q "say the format: --memory-viz" "$TMP/err" && [ ! -e "$TMP/x.pickle" ]; then
    ok "export without --memory-viz: exit 2"
else
    not_ok "export without --memory-viz" "exit $RC"
fi
run export --memory-viz schedules/seed/03_rs_ag_naive.yaml --torch-conf foo:1 -o "$TMP/x.pickle"
if [ "$RC" -eq 2 ] && grep -q "unknown key 'foo'" "$TMP/err" && [ ! -e "$TMP/x.pickle" ]; then
    ok "export with a bad --torch-conf: exit 2"
else
    not_ok "export with a bad --torch-conf" "exit $RC: $(head -1 "$TMP/err")"
fi
