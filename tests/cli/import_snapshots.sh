#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# memlife import (analyzer/snapshot/import.h) on the twelve snapshots recorded on an H200
# (tests/torch/fixtures/snapshots/README.md): each imports, its expectations are the snapshot's
# own numbers, and, where the torch view is built in, `memlife check` passes and the predicted
# reserved bytes equal the snapshot's after every trace event (tests/torch/import_replay.py).
# Then a synthetic snapshot with a deferred free (record_stream), a second stream and an
# empty_cache, and bad snapshots: one-line errors, exit 2, no file written.
. "$(dirname "$0")/lib.bash"

SNAP=tests/torch/fixtures/snapshots
# name, reserved peak, requested peak, final allocated: the README's table ("peak allocated /
# reserved", "peak requested", from memory_stats() at the end of each recording; e_gc .. k2: the
# sidecar's final max_reserved, max_requested and allocated). j_wrapped's trace starts mid-program
# (max_entries 1500): its requested peak is not the program's 163312296 but the import's own,
# 169869312, the moment its rebuild holds the 24 segments alive when recording began whole
# (docs/snapshot.md: the prelude's placeholders count).
CASES="a_train 192937984 163312296 102745088
b_fsdp2 218103808 165671496 102745088
c_expandable 188743680 163312296 102745088
d_late 192937984 163312296 102745088
e_gc 1145044992 937325224 102745088
f_retry 1663041536 937325224 102745088
g_retry_full 1300234240 937325224 102745088
h_oom 1663041536 937325224 102745088
i_ddp_amp 796917760 687466260 286668288
j_wrapped 192937984 169869312 102745088
k_ckpt_amp 505413632 423739096 236163072
k2_ckpt_amp 505413632 423739096 236163072"

# The torch view is in when predict knows --torch-conf (the views branch).
TORCH_VIEW=0
"$MEMLIFE" predict --help 2>/dev/null | grep -q -- --torch-conf && TORCH_VIEW=1

while read -r name reserved requested allocated; do
    run import "$SNAP/$name.pickle" -o "$TMP/$name.yaml" --bytes
    if [ "$RC" -ne 0 ]; then
        not_ok "import $name" "exit $RC: $(head -1 "$TMP/err")"
        continue
    fi
    line=$(cat "$TMP/out")
    prelude=$(sed -n 's/.*(\([0-9]*\) before recording.*/\1/p' "$TMP/out")
    want="expect requested peak $requested B, torch reserved peak $reserved B"
    case $line in
    *"$want") ok "import $name: $want" ;;
    *) not_ok "import $name" "summary '$line', want '... $want'" ;;
    esac
    # d_late: 6 segments were allocated before recording (the README); the others start empty
    if [ "$name" = d_late ]; then
        case $line in *"before recording: 6 segments, 39 blocks"*) ok "import d_late: 6 segments and 39 blocks before recording" ;;
        *) not_ok "import d_late: state before recording" "$line" ;; esac
    fi
    if ! grep -q "^  torch: {allocated: {steady: $allocated}, reserved: {steady: [0-9]*, peak: $reserved}}" "$TMP/$name.yaml"; then
        not_ok "import $name: torch expectations" "$(grep -A2 '^expect:' "$TMP/$name.yaml" | tr '\n' ' ')"
    else
        ok "import $name: torch allocated steady $allocated (the final allocated), reserved peak $reserved"
    fi
    # Under a memory fraction (e_gc, f_retry, h_oom): the interval of constants the import infers
    # holds the allocator's true allowed_memory_maximum (the sidecar's); g_retry_full released
    # whole runs only (release_cached_blocks before its retries), empty_cache steps: no constant.
    truth=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1])).get('limit', {}).get('allowed_memory_maximum', ''))" "$SNAP/$name.json" 2>/dev/null)
    iv=$(sed -n "s/.* one of \([0-9]*\)\.\.\([0-9]*\) bytes,\$/\1 \2/p" "$TMP/$name.yaml")
    if [ -n "$truth" ] && [ -n "$iv" ]; then
        read -r lo hi <<<"$iv"
        [ "$lo" -le "$truth" ] && [ "$truth" -le "$hi" ] \
            && ok "import $name: the inferred interval $lo..$hi holds the true allowed_memory_maximum $truth" \
            || not_ok "import $name: interval" "$lo..$hi against $truth"
    elif [ "$name" = g_retry_full ]; then
        grep -q '^torch: {addresses: \[' "$TMP/$name.yaml" && [ -z "$iv" ] \
            && ok "import g_retry_full: whole releases only, empty_cache steps, no constant" \
            || not_ok "import g_retry_full" "$(grep -m1 '^torch' "$TMP/$name.yaml" | cut -c1-100)"
    elif [ -n "$truth$iv" ]; then
        not_ok "import $name: interval" "'$iv', sidecar limit '$truth'"
    fi
    if [ "$TORCH_VIEW" = 0 ]; then
        echo "skip - check $name: this memlife has no torch view"
        continue
    fi
    run check -q "$TMP/$name.yaml"
    if [ "$RC" -eq 0 ]; then ok "check $name: every expectation holds"; else
        not_ok "check $name" "exit $RC: $(head -3 "$TMP/err" | tr '\n' ' ')"; fi
    if command -v python3 >/dev/null; then
        python3 tests/torch/import_replay.py "$MEMLIFE" "$SNAP/$name.pickle" "$TMP/$name.yaml" "$prelude"
    else
        echo "skip - replay $name: no python3"
    fi
done <<<"$CASES"

# The pickle's trace is digested as it is read (import.h: import_digest), a JSON snapshot's is
# read whole from the tree: the same snapshot as JSON (python3's json of pickle.load's dict) must
# import to the same schedule, byte for byte, from the same path.
if command -v python3 >/dev/null; then
    mkdir -p "$TMP/same"
    while read -r name _; do
        python3 -c 'import json, pickle, sys; json.dump(pickle.load(open(sys.argv[1], "rb")), open(sys.argv[2], "w"))' \
            "$SNAP/$name.pickle" "$TMP/same/$name.snap"
        run import "$TMP/same/$name.snap" -o "$TMP/same/$name.json.yaml" -q
        cp "$SNAP/$name.pickle" "$TMP/same/$name.snap"
        run import "$TMP/same/$name.snap" -o "$TMP/same/$name.pickle.yaml" -q
        if cmp -s "$TMP/same/$name.json.yaml" "$TMP/same/$name.pickle.yaml" && [ -s "$TMP/same/$name.json.yaml" ]; then
            ok "import $name: the pickle (digested) and its JSON give the same schedule"
        else
            not_ok "import $name: pickle and JSON differ" \
                "$(diff "$TMP/same/$name.json.yaml" "$TMP/same/$name.pickle.yaml" 2>&1 | head -3 | tr '\n' ' ')"
        fi
    done <<<"$CASES"
else
    echo "skip - import: pickle against JSON: python3 not found"
fi

# Without --bytes the summary's sizes are for people: a_train's 163312296 B requested peak is
# 155.75 MiB ("~156 MiB", rounded), its 192937984 B reserved peak exactly 184 MiB.
run import "$SNAP/a_train.pickle" -o "$TMP/a_human.yaml"
case $(cat "$TMP/out") in
*"expect requested peak ~156 MiB, torch reserved peak 184 MiB") ok "import's summary prints sizes for people (~156 MiB, 184 MiB)" ;;
*) not_ok "import's summary prints sizes for people" "$(cat "$TMP/out")" ;;
esac

# Names: the first frame in user code (record_snapshots.py, not torch/nn/...), made unique.
dups=$(grep '^- alloc:' "$TMP/a_train.yaml" | grep -o 'buf: [^,]*' | sort | uniq -d | head -1)
if grep -q '^- alloc: {buf: record_snapshots.py-[0-9]*, ' "$TMP/a_train.yaml" && [ -z "$dups" ] &&
    ! grep -q '^- alloc: {buf: module.py' "$TMP/a_train.yaml"; then
    ok "import names: record_snapshots.py-LINE from the first user frame (not torch/), unique per alloc"
else
    not_ok "import names" "duplicate '$dups'; $(grep -m3 '^- alloc' "$TMP/a_train.yaml" | tr '\n' ' ')"
fi
run import --names addr "$SNAP/a_train.pickle"
if [ "$RC" -eq 0 ] && grep -q '^- alloc: {buf: a7f[0-9a-f]*, bytes:' "$TMP/out"; then
    ok "import --names addr: a<hex address>"
else
    not_ok "import --names addr" "exit $RC: $(grep -m1 '^- alloc' "$TMP/out")"
fi

# A synthetic snapshot as JSON: stream 5 for A; A's free waits (record_stream: free_completed
# only after B's alloc, so B lands at +512 and C takes A's block back); everything freed and the
# segment returned by empty_cache. Reserved: 2 MiB peak, 0 at the end; requested peak B + C =
# 512 + 500 = 1012.
S=139000000000000
A=a$(printf %x $S) B=a$(printf %x $((S + 512)))
cat >"$TMP/synthetic.json" <<JSON
{"device_traces": [[
 {"action": "segment_alloc", "addr": $S, "size": 2097152, "stream": 5},
 {"action": "alloc", "addr": $S, "size": 512, "stream": 5},
 {"action": "free_requested", "addr": $S, "size": 512, "stream": 5},
 {"action": "alloc", "addr": $((S + 512)), "size": 512, "stream": 5},
 {"action": "free_completed", "addr": $S, "size": 512, "stream": 5},
 {"action": "alloc", "addr": $S, "size": 500, "stream": 5},
 {"action": "free_requested", "addr": $((S + 512)), "size": 512, "stream": 5},
 {"action": "free_completed", "addr": $((S + 512)), "size": 512, "stream": 5},
 {"action": "free_requested", "addr": $S, "size": 500, "stream": 5},
 {"action": "free_completed", "addr": $S, "size": 500, "stream": 5},
 {"action": "segment_free", "addr": $S, "size": 2097152, "stream": 5}]],
 "segments": [], "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:64"}}
JSON
run import "$TMP/synthetic.json" -o "$TMP/synthetic.yaml"
want="streams: [s1, recorded]
events: [f0]
torch: {conf: 'max_split_size_mb:64', addresses: [139000000000000]}
expect:
  requested: {steady: 0, peak: 1012}
  torch: {allocated: {steady: 0}, reserved: {steady: 0, peak: 2097152}}
steps:
- alloc: {buf: $A, bytes: 512, stream: s1}
- record_stream: {buf: $A, stream: recorded}
- compute: {stream: recorded}
- free: $A
- record: {event: f0, stream: recorded}
- alloc: {buf: $B, bytes: 512, stream: s1}
- sync: {event: f0}
- alloc: {buf: ${A}_2, bytes: 500, stream: s1}
- free: $B
- free: ${A}_2
- empty_cache: {}"
got=$(sed -n '/^streams:/,$p' "$TMP/synthetic.yaml")
if [ "$RC" -eq 0 ] && [ "$got" = "$want" ]; then
    ok "import synthetic: stream, deferred free as record_stream + event, empty_cache"
else
    not_ok "import synthetic" "exit $RC"
    diff <(echo "$want") <(echo "$got") | sed 's/^/  /' | head -20
fi
if [ "$TORCH_VIEW" = 1 ]; then
    run check -q "$TMP/synthetic.yaml"
    if [ "$RC" -eq 0 ]; then ok "check synthetic: the torch view holds A until f0, then reuses it"; else
        not_ok "check synthetic" "exit $RC: $(head -3 "$TMP/err" | tr '\n' ' ')"; fi
fi

# Bad snapshots: one line, exit 2, no output file.
bad() {
    local name=$1 file=$2 want=$3
    shift 3
    rm -f "$TMP/bad.yaml"
    run import "$file" -o "$TMP/bad.yaml" "$@"
    local lines
    lines=$(wc -l <"$TMP/err")
    if [ "$RC" -eq 2 ] && [ "$lines" -eq 1 ] && grep -qF -- "$want" "$TMP/err" && [ ! -e "$TMP/bad.yaml" ]; then
        ok "import bad: $name"
    else
        not_ok "import bad: $name" "exit $RC, $lines lines: $(head -2 "$TMP/err")"
    fi
}
echo '[1, 2]' >"$TMP/list.json"
bad "not a dict" "$TMP/list.json" "list.json: error: the snapshot is not a dict"
echo '{"segments": []}' >"$TMP/nodt.json"
bad "no device_traces" "$TMP/nodt.json" "nodt.json: error: 'device_traces' is missing"
echo '{"device_traces": [[{"action": "alloc", "addr": 5, "size": -1}]]}' >"$TMP/neg.json"
bad "negative size" "$TMP/neg.json" "neg.json: error: device_traces[0][0]: 'size' is not a non-negative integer"
echo '{"device_traces": [[{"action": "alloc", "size": 5}]]}' >"$TMP/noaddr.json"
bad "no addr" "$TMP/noaddr.json" "noaddr.json: error: device_traces[0][0]: 'addr' is missing"
echo '{"device_traces": [[{"action": 3}]]}' >"$TMP/action.json"
bad "action not a string" "$TMP/action.json" "action.json: error: device_traces[0][0]: 'action' is missing or not a string"
echo '{"device_traces": [[]], "segments": [{"address": 0, "total_size": 512, "blocks": [{"size": 512}]}]}' >"$TMP/state.json"
bad "block without state" "$TMP/state.json" "state.json: error: segments[0].blocks[0]: 'state' is missing or not a string"
echo '{"device_traces": [[{"action": "alloc", "addr": 8, "size": 5}, {"action": "alloc", "addr": 8, "size": 5}]]}' >"$TMP/twice.json"
bad "alloc twice" "$TMP/twice.json" "twice.json: error: device_traces[0][1]: alloc at 0x8, which is allocated already"
echo '{"device_traces": [[{"action": "segment_alloc", "addr": 8, "size": 2097152}]]}' >"$TMP/segalloc.json"
bad "a segment_alloc of a segment the final state lacks" "$TMP/segalloc.json" "segalloc.json: error: device 0: the trace's segment events add 2097152 bytes, more than the 0 bytes of the final segments"
echo '{"device_traces": [[]], "segments": [{"address": 0, "total_size": 512, "blocks": 3}]}' >"$TMP/blocks.json"
bad "blocks not a list" "$TMP/blocks.json" "blocks.json: error: segments[0]: 'blocks' is not a list"
bad "device out of range" "$SNAP/a_train.pickle" "a_train.pickle: error: device 1: the snapshot has traces of 1 device" --device 1
printf '\x80\x04\x8c\x02os\x94\x8c\x06system\x94\x93\x94.' >"$TMP/evil.pickle"
bad "a pickle that imports (STACK_GLOBAL)" "$TMP/evil.pickle" "evil.pickle: byte 16: error: pickle opcode STACK_GLOBAL (0x93) is not allowed"
