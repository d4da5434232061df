# SPDX-License-Identifier: MIT
"""Runs a capture program's training step for real on the GPU, as `memlife capture` runs it
(build, one warm-up step, K more) but without recording, and prints one JSON line with what
the GPU showed: the caching allocator's peaks, its retries and out-of-memory count, and the
device's used memory (NVML, torch.cuda.device_memory_used) after the last step.

--limit BYTES caps the caching allocator as torch.cuda.set_per_process_memory_fraction does (the
fraction is chosen so that PyTorch's own product, fraction x total, truncates to exactly BYTES),
so an out-of-memory here is the real program's. usage:
  python3 run_real.py FILE.py[:FUNC] --world N [--group fake|nccl] [--set K=V]... [--limit BYTES]"""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import memlife  # noqa: E402,F401  (before torch)
from memlife import _capture  # noqa: E402
import torch  # noqa: E402


def fraction_for(limit, total):
    """The double f with int(f * total) == limit (the allocator computes
    static_cast<size_t>(f * total)), or None when no double gives it."""
    f = limit / total
    for _ in range(4):
        got = int(f * total)
        if got == limit:
            return f
        f = math.nextafter(f, 2.0 if got < limit else 0.0)
    return None


ap = argparse.ArgumentParser()
ap.add_argument("program")
ap.add_argument("--world", type=int, default=1)
ap.add_argument("--group", default="fake")
ap.add_argument("--steps", type=int, default=1)
ap.add_argument("--set", action="append", default=[])
ap.add_argument("--limit", type=int, default=0)
a = ap.parse_args()
lets = {k: (int(v) if v.lstrip("-").isdigit() else v)
        for k, _, v in (kv.partition("=") for kv in a.set)}
path, build = _capture.load_program(a.program)
torch.cuda.set_device(0)
torch.cuda.init()
res = {"program": os.path.basename(path), "world": a.world, "group": a.group, "lets": lets,
       "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__}
free, total = torch.cuda.mem_get_info()
res["device_total"] = total
# the device's used bytes and the allocator's reserved at each stage: where a difference from
# memlife's total lies (context, communicator, libraries' handles and kernels, the allocator)
stages = res["stages"] = []


def stage(name):
    torch.cuda.synchronize()
    stages.append({"stage": name, "used": total - torch.cuda.mem_get_info()[0],
                   "reserved": torch.cuda.memory_reserved()})


stage("cuda init")
if a.limit:
    f = fraction_for(a.limit, total)
    if f is None:
        sys.exit(f"no fraction of {total} B gives exactly {a.limit} B")
    torch.cuda.set_per_process_memory_fraction(f, 0)
    res["limit"] = a.limit
_capture._init_group(a.world, 0, a.group)
stage("group")
if a.group == "fake":
    _capture._ddp_on_fake_group(virtual=False)
_capture._skip_param_verification()
try:
    step = build(**lets)
    stage("built")
    for k in range(a.steps + 1):
        step()
        stage(f"step {k}")
    res["oom"] = False
except torch.OutOfMemoryError as e:
    res["oom"] = True
    res["error"] = str(e).splitlines()[0][:300]
st = torch.cuda.memory_stats()
res["peak_allocated"] = torch.cuda.max_memory_allocated()
res["peak_reserved"] = torch.cuda.max_memory_reserved()
res["reserved"] = torch.cuda.memory_reserved()
res["alloc_retries"] = st.get("num_alloc_retries", 0)
res["ooms"] = st.get("num_ooms", 0)
try:
    res["device_used"] = torch.cuda.device_memory_used(0)
except Exception as e:  # no NVML
    res["device_used_error"] = f"{type(e).__name__}: {e}"
res["mem_get_info_used"] = total - torch.cuda.mem_get_info()[0]
print(json.dumps(res), flush=True)
