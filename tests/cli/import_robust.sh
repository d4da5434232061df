#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# memlife import against what PyTorch 2.x can write into a snapshot (held-out snapshots
# of real programs are imported and compared event by event). The fields and actions are those of
# torch/csrc/cuda/Module.cpp's _cuda_memorySnapshot (the dict torch.cuda.memory._dump_snapshot
# pickles), as the four H200 snapshots of tests/torch/fixtures/snapshots have them: trace entries
# {action, addr (device_free for oom), size, stream, time_us, frames, compile_context,
# user_metadata}; segments {device, address, total_size, stream, segment_type, segment_pool_id
# (a tuple), is_expandable, frames, blocks: [{address, size, requested_size, state, frames}]};
# allocator_settings; external_annotations. Each synthetic snapshot is pickled by Python itself;
# an accepted one imports to the steps written below, a refused one gives one line naming the
# entry and why, exit 2, and no file.
. "$(dirname "$0")/lib.bash"
if ! command -v python3 >/dev/null; then
    echo "skip - import robustness: python3 not found"
    exit 0
fi

python3 - "$TMP" <<'PY'
import copy, pickle, sys
out = sys.argv[1]
MiB = 1 << 20
S = 0x7f0000000000
def settings(conf="", exp=False, msplit=-1, gc=0.0):
    return {"PYTORCH_CUDA_ALLOC_CONF": conf, "max_split_size": msplit,
            "garbage_collection_threshold": gc, "expandable_segments": exp,
            "pinned_num_register_threads": 1, "release_lock_on_cudamalloc": False,
            "pinned_use_cuda_host_register": False, "graph_capture_record_stream_reuse": False,
            "roundup_power2_divisions": {str(1 << k): 0 for k in range(16)}}
def ev(a, addr, size, stream=0, **kw):
    d = {"action": a, "addr": addr, "size": size, "stream": stream, "time_us": 1,
         "compile_context": "N/A", "user_metadata": ""}
    d.update(kw)
    return d
def seg(addr, size, blocks, device=0, **kw):
    d = {"device": device, "address": addr, "total_size": size, "allocated_size": 0,
         "active_size": 0, "requested_size": 0, "stream": 0,
         "segment_type": "small" if size == 2 * MiB else "large", "segment_pool_id": (0, 0),
         "is_expandable": False, "frames": [], "blocks": blocks}
    d.update(kw)
    return d
def blk(addr, size, state, req=None):
    return {"address": addr, "size": size, "requested_size": size if req is None else req,
            "state": state, "frames": []}
def snap(segments, traces, **kw):
    d = {"segments": segments, "device_traces": traces, "allocator_settings": settings(),
         "external_annotations": []}
    d.update(kw)
    return d
def dump(name, d):
    with open(f"{out}/{name}.pickle", "wb") as f:
        pickle.dump(d, f)

frames = [{"filename": "/home/u/train.py", "line": 7, "name": "step"}]
# Two devices. Device 0: a 100 B tensor (512 B block) with frames, the marks that change no block
# (snapshot, user_defined, oom with device_free and no addr), an annotation. Device 1: a 4096 B
# tensor allocated and freed, frames absent, in its own 2 MiB segment.
good = snap([seg(S, 2 * MiB, [blk(S, 512, "active_allocated", 100), blk(S + 512, 2 * MiB - 512, "inactive")]),
             seg(S + 64 * MiB, 2 * MiB, [blk(S + 64 * MiB, 2 * MiB, "inactive")], device=1)],
            [[ev("segment_alloc", S, 2 * MiB), ev("alloc", S, 100, frames=frames),
              ev("snapshot", 0, 0), ev("user_defined", 0, 0, user_metadata="step 1"),
              {"action": "oom", "device_free": 1024, "size": 80 << 30, "stream": 0, "time_us": 2}],
             [ev("segment_alloc", S + 64 * MiB, 2 * MiB), ev("alloc", S + 64 * MiB, 4096),
              ev("free_requested", S + 64 * MiB, 4096), ev("free_completed", S + 64 * MiB, 4096)]],
            external_annotations=[{"device": 0, "time_us": 1, "stage": "START", "name": "fwd"}])
dump("good", good)

one = lambda trace, segments=(), **kw: snap(list(segments), [trace], **kw)
dump("action", one([ev("alloc", S, 512), ev("free", S, 512)]))
dump("state", one([], [seg(S, 2 * MiB, [blk(S, 2 * MiB, "active_awaiting_free")])]))
dump("segtype", one([], [seg(S, 2 * MiB, [], segment_type="huge")]))
dump("pool", one([], [seg(S, 2 * MiB, [], segment_pool_id=(1, 0))]))
dump("done", one([ev("free_completed", S, 512)], [seg(S, 2 * MiB, [blk(S, 2 * MiB, "inactive")])]))
# pending at the end, its free_requested before the trace: the trace only allocates elsewhere
dump("pending", one([ev("alloc", S + 512, 512)],
                    [seg(S, 2 * MiB, [blk(S, 512, "active_pending_free"), blk(S + 512, 512, "active_allocated"),
                                      blk(S + 1024, 2 * MiB - 1024, "inactive")])]))
dump("expandable", one([], allocator_settings=settings(exp=True)))
dump("maxsplit", one([], allocator_settings=settings(msplit=200 * MiB)))
dump("badconf", one([], allocator_settings=settings(conf="foo:1")))
dump("segexp", one([], [seg(S, 20 * MiB, [], is_expandable=True)]))
r = settings()
r["roundup_power2_divisions"]["256"] = 4
dump("roundup", one([], allocator_settings=r))
# Two 2 MiB segments, both empty once their tensors are freed; only one is released, and
# empty_cache would release both; nor is it garbage collection or the oversize release (which
# come before a new segment, tests/cli/import_limit.sh): the trace ends there.
dump("partial", one([ev("segment_alloc", S, 2 * MiB), ev("alloc", S, 512),
                     ev("segment_alloc", S - 2 * MiB, 2 * MiB), ev("alloc", S - 2 * MiB, 2 * MiB),
                     ev("free_requested", S, 512), ev("free_completed", S, 512),
                     ev("free_requested", S - 2 * MiB, 2 * MiB), ev("free_completed", S - 2 * MiB, 2 * MiB),
                     ev("segment_free", S, 2 * MiB)],
                    [seg(S - 2 * MiB, 2 * MiB, [blk(S - 2 * MiB, 2 * MiB, "inactive")])]))
# A 2 MiB segment freed while its 512 B block is still allocated: more released than is free.
dump("freedlive", one([ev("segment_alloc", S, 2 * MiB), ev("alloc", S, 512), ev("segment_free", S, 2 * MiB),
                       ev("segment_alloc", S, 2 * MiB)],
                      [seg(S, 2 * MiB, [blk(S, 512, "active_allocated"), blk(S + 512, 2 * MiB - 512, "inactive")])]))
# PyTorch before 2.1 wrote no allocator_settings: the defaults, said in the header; but then an
# expandable segment has nothing to say it was configured so
old = copy.deepcopy(good)
del old["allocator_settings"]
dump("nosettings", old)
nosetexp = one([], [seg(S, 20 * MiB, [], is_expandable=True)])
del nosetexp["allocator_settings"]
dump("nosetexp", nosetexp)
nodev = copy.deepcopy(good)
del nodev["segments"][1]["device"]
dump("nodevice", nodev)
PY

# The good one, device 0: one alloc named by its user frame; 100 B requested, its 512 B block
# allocated, one 2 MiB segment; the oom said in the header. Device 1: alloc and free by address.
# Each step keeps its trace entry's time_us (the fixture's events all say 1).
run import "$TMP/good.pickle" -o "$TMP/good.yaml"
got=$(sed -n '/^expect:/,$p' "$TMP/good.yaml")
want="expect:
  requested: {steady: 100, peak: 100}
  torch: {allocated: {steady: 512}, reserved: {steady: 2097152, peak: 2097152}}
steps:
- alloc: {buf: train.py-7, bytes: 100}
  time_us: 1"
[ "$RC" = 0 ] && [ "$got" = "$want" ] && grep -q '^# 1 oom event: ' "$TMP/good.yaml" \
    && ok "import: snapshot, user_defined, oom, annotations, user_metadata change no block (device 0)" \
    || { not_ok "import good device 0" "exit $RC: $(head -1 "$TMP/err")"; diff <(echo "$want") <(echo "$got") | head; }
run check -q "$TMP/good.yaml"
[ "$RC" = 0 ] && ok "check of the good import: its expectations hold" || not_ok "check good" "exit $RC: $(head -2 "$TMP/err")"
run import --device 1 "$TMP/good.pickle" -o "$TMP/good1.yaml"
got=$(sed -n '/^expect:/,$p' "$TMP/good1.yaml")
want="expect:
  requested: {steady: 0, peak: 4096}
  torch: {allocated: {steady: 0}, reserved: {steady: 2097152, peak: 2097152}}
steps:
- alloc: {buf: a7f0004000000, bytes: 4096}
  time_us: 1
- free: a7f0004000000
  time_us: 1"
[ "$RC" = 0 ] && [ "$got" = "$want" ] \
    && ok "import --device 1: that device's trace and segments, no frames: named by address" \
    || { not_ok "import good device 1" "exit $RC: $(head -1 "$TMP/err")"; diff <(echo "$want") <(echo "$got") | head; }

run import "$TMP/nosettings.pickle" -o "$TMP/noset.yaml"
[ "$RC" = 0 ] && grep -qxF "# The snapshot has no allocator_settings (PyTorch before 2.1?): PyTorch's defaults are assumed." "$TMP/noset.yaml" \
    && grep -qxF "torch: {addresses: [$((0x7f0000000000))]}" "$TMP/noset.yaml" \
    && ok "import without allocator_settings: the defaults, said in the header" \
    || not_ok "import without allocator_settings" "exit $RC: $(head -1 "$TMP/err") $(grep -m1 "^torch" "$TMP/noset.yaml")"

bad() {   # NAME FILE WANT [ARGS]: one line, exit 2, no output file
    local name=$1 file=$2 want=$3
    shift 3
    rm -f "$TMP/bad.yaml"
    run import "$TMP/$file.pickle" -o "$TMP/bad.yaml" "$@"
    if [ "$RC" -eq 2 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -qxF -- "$TMP/$file.pickle: error: $want" "$TMP/err" &&
        [ ! -e "$TMP/bad.yaml" ]; then
        ok "import refuses: $name"
    else
        not_ok "import refuses: $name" "exit $RC: $(head -2 "$TMP/err")"
    fi
}
bad "an action PyTorch does not write" action "device_traces[0][1]: action 'free' is not one PyTorch 2.x writes (alloc, free_requested, free_completed, segment_alloc, segment_free, segment_map, segment_unmap, oom, snapshot, user_defined): what it does to the blocks is unknown"
bad "a block state other than the three" state "segments[0].blocks[0]: state 'active_awaiting_free' is not active_allocated, active_pending_free or inactive"
bad "a segment type other than small/large" segtype "segments[0]: 'segment_type' is not 'small' or 'large'"
bad "a CUDA graph's or MemPool's private pool" pool "segments[0]: in the private pool (1, 0) of a CUDA graph or torch.cuda.MemPool, which the torch view does not model"
bad "free_completed without its free_requested" done "device_traces[0][0]: free_completed of 0x7f0000000000 without its free_requested in the trace (freed before recording began, waiting for a stream): the block's state then is unknown"
bad "a block pending since before recording" pending "segments[0].blocks[0]: freed and waiting for a stream, but its free_requested is not the trace's last event at 0x7f0000000000 (freed before recording began?): the rebuilt state would count it allocated"
bad "expandable_segments against the conf string" expandable "allocator_settings: expandable_segments is True, but PYTORCH_CUDA_ALLOC_CONF '' gives False (the settings changed while the program ran?)"
bad "max_split_size against the conf string" maxsplit "allocator_settings: max_split_size is 209715200, but PYTORCH_CUDA_ALLOC_CONF '' gives -1 (the settings changed while the program ran?)"
bad "a conf string PyTorch refuses" badconf "allocator_settings: PYTORCH_CUDA_ALLOC_CONF 'foo:1', byte 0: unknown key 'foo' in PYTORCH_CUDA_ALLOC_CONF"
bad "an expandable segment under a fixed conf" segexp "segments: the segment at 0x7f0000000000 is expandable, but PYTORCH_CUDA_ALLOC_CONF '' makes fixed ones (the settings changed while the program ran?)"
bad "roundup_power2_divisions against the conf string" roundup "allocator_settings: roundup_power2_divisions['256'] is 4, but PYTORCH_CUDA_ALLOC_CONF '' gives 0 (the settings changed while the program ran?)"
bad "a segment_free run that is not empty_cache and no malloc's" partial "device_traces[0][8]: these segment_free events release 1 of the 2 segments that hold no block and no segment_alloc follows: neither empty_cache nor a release PyTorch's malloc makes before a new segment (garbage collection, the oversize blocks before a retry)"
bad "a segment_free of a segment that holds a block" freedlive "device_traces[0][2]: these segment_free events release 1 segment, but 0 hold no block: a segment with a block in it was freed (an incomplete trace?)"
bad "a segment without device in a two-device snapshot" nodevice "segments[1]: 'device' is missing"
bad "an expandable segment without allocator_settings" nosetexp "segments: the segment at 0x7f0000000000 is expandable, but the snapshot has no allocator_settings to say so"
