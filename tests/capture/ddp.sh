#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# memlife capture of DistributedDataParallel on the virtual device (this machine's CPU PyTorch,
# torch's fake process group). tests/capture/programs/gpt.py with MODE=ddp, D=256, L=1, S=64,
# MBS=1, H=4: seven fp32 parameters, 1024 + 786432 + 262144 + 1024 + 1048576 + 1048576 + 1024 =
# 3148800 bytes. What DistributedDataParallel does with them, and what the schedule must show:
#  - at construction the reducer allocates one bucket of all the parameters (3148800 B, in
#    parameter order) and broadcasts the module's state from rank 0;
#  - after the first iteration it rebuilds the buckets in the order the gradients became ready,
#    the first bucket closing at torch's first-bucket cap (1 MiB: 1048576 + the 1024-byte norm
#    weight ready next = 1049600 B), the rest in one bucket under the 25 MiB cap (2099200 B);
#  - every recorded step all-reduces each bucket once: 2 all_reduce steps of 1049600 + 2099200 =
#    3148800 B, every parameter's gradient once;
#  - nothing depends on the world (every rank holds everything): the torch view's peaks at world
#    1 and world 4 are equal, byte for byte.
. "$(dirname "$0")/../cli/lib.bash"

py=$(command -v python3)
if [ -z "$py" ] || ! "$py" -c 'import torch' 2>/dev/null; then
    for n in check buckets world; do echo "skip - capture ddp $n: no python3 with torch (make deps)"; done
    exit 0
fi
G=tests/capture/programs/gpt.py
SIZE=(--set MODE=ddp --set D=256 --set L=1 --set S=64 --set MBS=1 --set H=4)

for w in 1 4; do
    run capture "$G" --world $w "${SIZE[@]}" -o "$TMP/ddp$w.yaml" -q
    cp "$TMP/err" "$TMP/cap$w.err"
    run check "$TMP/ddp$w.yaml" -q
    if [ "$RC" = 0 ]; then
        ok "capture ddp check world $w: the schedule replays the recorded allocated and reserved"
    else
        not_ok "capture ddp check world $w" "exit $RC: $(head -c 300 "$TMP/cap$w.err" "$TMP/err")"
    fi
done

# The step region's all_reduce steps and the bytes of the buffers they reduce.
buckets=$("$py" - "$TMP/ddp4.yaml" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
sizes = dict(re.findall(r"- alloc: \{buf: ([^,]+), bytes: (\d+)\}", text))
step = text[text.index("name: step"):]
bufs = re.findall(r"- all_reduce: \{buf: ([^,]+), op: sum\}", step)
print(len(bufs), " ".join(sizes.get(b, "?") for b in bufs))
PY
)
if [ "$buckets" = "2 1049600 2099200" ]; then
    ok "capture ddp buckets: the step all-reduces 2 rebuilt buckets, 1049600 + 2099200 = 3148800 B"
else
    not_ok "capture ddp buckets" "expected '2 1049600 2099200', got '$buckets'"
fi

peaks() {
    "$MEMLIFE" predict "$1" --format json 2>/dev/null | "$py" -c '
import json, sys
r = json.load(sys.stdin)["schedules"][0]["ranks"][0]["torch"]
print(r["allocated"]["peak"], r["reserved"]["peak"])'
}
p1=$(peaks "$TMP/ddp1.yaml")
p4=$(peaks "$TMP/ddp4.yaml")
if [ -n "$p1" ] && [ "$p1" = "$p4" ]; then
    ok "capture ddp world: torch peaks allocated/reserved $p1 at world 1 and at world 4"
else
    not_ok "capture ddp world" "world 1: '$p1', world 4: '$p4'"
fi
