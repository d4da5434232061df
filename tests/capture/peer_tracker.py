# SPDX-License-Identifier: MIT
"""PyTorch's own estimate of a program's step, for comparison with memlife capture (on a GPU):
FSDPMemTracker (torch.distributed._tools.fsdp2_mem_tracker) for FSDP2 programs, MemTracker
otherwise, run in real mode on the step after a warm-up one, as their docs show. Prints one JSON
line: the tracker's peak total bytes beside the real max_memory_allocated / reserved of the
same step. usage: python3 peer_tracker.py FILE.py[:FUNC] --world N [--set K=V ...]"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import memlife  # noqa: E402,F401  (before torch)
from memlife import _capture  # noqa: E402
import torch  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("program")
ap.add_argument("--world", type=int, default=1)
ap.add_argument("--set", action="append", default=[])
a = ap.parse_args()
lets = {k: (int(v) if v.lstrip("-").isdigit() else v)
        for k, _, v in (kv.partition("=") for kv in a.set)}
path, build = _capture.load_program(a.program)
torch.cuda.set_device(0)
_capture._init_group(a.world, 0)
_capture._ddp_on_fake_group(virtual=False)   # DDP's buckets under the fake group, as capture runs it
_capture._skip_param_verification()
res = {"program": os.path.basename(path), "world": a.world, "lets": lets}
try:
    step = build(**lets)
    step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    dev = torch.device("cuda", 0)
    try:
        from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker
        tracker = FSDPMemTracker(step.model, step.optimizer)
        res["tracker"] = "FSDPMemTracker"
    except Exception:
        from torch.distributed._tools.mem_tracker import MemTracker
        tracker = MemTracker()
        tracker.track_external(step.model, step.optimizer)
        res["tracker"] = "MemTracker"
    with tracker:
        step()
    torch.cuda.synchronize()
    snap = tracker.get_tracker_snapshot("peak")
    res["tracker_peak"] = int(snap[dev]["Total"])
    res["real_peak_allocated"] = torch.cuda.max_memory_allocated()
    res["real_peak_reserved"] = torch.cuda.max_memory_reserved()
except Exception as e:
    res["error"] = f"{type(e).__name__}: {str(e)[:300]}"
print(json.dumps(res), flush=True)
