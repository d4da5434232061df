#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Probe ProcessGroupNCCL at world 1: does a collective recordStream its tensors, and what does
NCCL itself take (memory outside the caching allocator)?

For each collective (all_reduce, reduce_scatter_tensor, all_gather_into_tensor; 64 MiB) and each
way of calling it (async_op=False; async_op=True then wait()), the default stream is first made
busy with torch.cuda._sleep, so the NCCL stream (which waits on the default stream) cannot have
finished when the tensor is freed right after the call. If the process group called
recordStream on the tensor, its block is not reusable at the next malloc (a new block is taken,
and the trace shows free_requested without free_completed); if it did not, the same block is
reused at once. A second variant ("idle") synchronizes before the free, as a control. A third
("del_before_wait", async only) frees the Python reference before wait(): the work object may
stash the tensors.

Each setting of TORCH_NCCL_AVOID_RECORD_STREAMS (unset, 0, 1) runs in its own process, one after
another (the mem_get_info deltas must not see other processes).

    python3 tests/torch/probe_pg_nccl.py --out FILE.json
"""
import argparse
import json
import os
import subprocess
import sys
import time

SIZE = 64 * 1024 * 1024
BUSY_CYCLES = 300_000_000
# (TORCH_NCCL_AVOID_RECORD_STREAMS, eager): eager passes device_id to init_process_group, which
# makes the communicator there instead of at the first collective
SETTINGS = [(None, False), ("0", False), ("1", False), (None, True)]


def child(out_path):
    import torch
    import torch.distributed as dist

    res = {"torch": torch.__version__, "env": {k: os.environ.get(k) for k in (
        "TORCH_NCCL_AVOID_RECORD_STREAMS", "NCCL_NVLS_ENABLE", "PYTORCH_CUDA_ALLOC_CONF",
        "PROBE_EAGER_INIT")},
        "init": [], "cases": [], "error": None}
    dev = torch.device("cuda", 0)

    def mem(label):
        torch.cuda.synchronize(dev)
        free, total = torch.cuda.mem_get_info(dev)
        res["init"].append({"point": label, "mem_get_info_free": free, "total": total,
                            "reserved": torch.cuda.memory_reserved(dev),
                            "allocated": torch.cuda.memory_allocated(dev)})

    seen = [0]

    def trace():
        tr = torch.cuda.memory._snapshot()["device_traces"]
        tr = tr[0] if tr else []
        new = [[e["action"], e["size"], e["addr"]] for e in tr[seen[0]:] if e["action"] != "snapshot"]
        seen[0] = len(tr)
        return new

    try:
        torch.cuda.set_device(dev)
        torch.cuda.init()
        torch.cuda.synchronize(dev)
        res["device"] = torch.cuda.get_device_name(dev)
        try:
            v = torch.cuda.nccl.version()
            res["nccl_version"] = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
        except Exception as e:
            res["nccl_version"] = f"unknown ({e})"
        mem("cuda_context")
        os.environ.update({"MASTER_ADDR": "127.0.0.1", "RANK": "0", "WORLD_SIZE": "1",
                           "LOCAL_RANK": "0"})
        os.environ.setdefault("MASTER_PORT", "29601")
        eager = os.environ.get("PROBE_EAGER_INIT") == "1"
        res["eager_init"] = eager
        if eager:
            dist.init_process_group("nccl", device_id=dev)
        else:
            dist.init_process_group("nccl")  # no device_id: the communicator is made lazily
        mem("after_init_process_group")
        one = torch.ones(1, device=dev)
        mem("after_1_float_tensor")
        dist.all_reduce(one)
        mem("after_first_all_reduce_1_float")
        big = torch.ones(SIZE // 4, device=dev)
        dist.all_reduce(big)
        mem("after_all_reduce_64MiB")
        out = torch.empty_like(big)
        dist.reduce_scatter_tensor(out, big)
        mem("after_first_reduce_scatter_64MiB")
        dist.all_gather_into_tensor(out, big)
        mem("after_first_all_gather_64MiB")
        del big, out, one
        torch.cuda.synchronize(dev)
        torch.cuda.empty_cache()
        mem("after_empty_cache")

        torch.cuda.memory._record_memory_history(enabled="all", context=None, max_entries=1_000_000)
        trace()
        n = SIZE // 4

        def launch(coll, inp, out, async_op):
            if coll == "all_reduce":
                return dist.all_reduce(inp, async_op=async_op)
            if coll == "reduce_scatter_tensor":
                return dist.reduce_scatter_tensor(out, inp, async_op=async_op)
            return dist.all_gather_into_tensor(out, inp, async_op=async_op)

        def run_case(c, coll, mode):
            torch.cuda.synchronize(dev)
            torch.cuda.empty_cache()
            trace()
            inp = torch.empty(n, device=dev)
            out = None if coll == "all_reduce" else torch.empty(n, device=dev)
            c["inp_addr"] = inp.data_ptr()
            c["out_addr"] = out.data_ptr() if out is not None else None
            c["reserved_before"] = torch.cuda.memory_reserved(dev)
            c["allocated_before"] = torch.cuda.memory_allocated(dev)
            if mode.endswith("_busy"):
                torch.cuda._sleep(BUSY_CYCLES)  # on the default stream; NCCL's stream waits on it
            async_op = mode.startswith("async")
            w = launch(coll, inp, out, async_op)
            c["alloc_trace_during_call"] = trace()
            if mode == "async_del_before_wait_busy":
                del inp, out
                c["allocated_after_del_before_wait"] = torch.cuda.memory_allocated(dev)
                c["trace_del_before_wait"] = trace()
                w.wait()
                c["allocated_after_wait"] = torch.cuda.memory_allocated(dev)
                del w
                c["allocated_after_del_work"] = torch.cuda.memory_allocated(dev)
                c["trace_after_wait_and_del_work"] = trace()
                inp = torch.empty(n, device=dev)
                c["realloc_same_inp_block"] = inp.data_ptr() == c["inp_addr"]
                c["realloc_addr_is_old_out"] = inp.data_ptr() == c["out_addr"]
                c["reserved_after_realloc"] = torch.cuda.memory_reserved(dev)
                c["trace_realloc"] = trace()
                c["default_stream_idle_at_end"] = torch.cuda.current_stream(dev).query()
                del inp
            else:
                if async_op:
                    w.wait()
                del w
                if mode.endswith("_idle"):
                    torch.cuda.synchronize(dev)
                c["stream_idle_before_free"] = torch.cuda.current_stream(dev).query()
                del inp
                if out is not None:
                    del out
                c["allocated_after_free"] = torch.cuda.memory_allocated(dev)
                c["trace_free"] = trace()
                x = torch.empty(n, device=dev)
                c["realloc_same_inp_block"] = x.data_ptr() == c["inp_addr"]
                c["realloc_addr_is_old_out"] = x.data_ptr() == c["out_addr"]
                c["reserved_after_realloc"] = torch.cuda.memory_reserved(dev)
                c["reserved_grew"] = c["reserved_after_realloc"] > c["reserved_before"]
                c["trace_realloc"] = trace()
                c["default_stream_idle_at_realloc"] = torch.cuda.current_stream(dev).query()
                del x

        for coll in ("all_reduce", "reduce_scatter_tensor", "all_gather_into_tensor"):
            for mode in ("sync_busy", "async_wait_busy", "sync_idle", "async_wait_idle",
                         "async_del_before_wait_busy"):
                c = {"collective": coll, "mode": mode, "bytes": SIZE}
                try:
                    run_case(c, coll, mode)
                except Exception as e:
                    c["error"] = f"{type(e).__name__}: {e}"
                res["cases"].append(c)
        dist.destroy_process_group()
    except Exception as e:
        import traceback
        res["error"] = f"{type(e).__name__}: {e}"
        res["traceback"] = traceback.format_exc()[-4000:]
    with open(out_path, "w") as f:
        json.dump(res, f, indent=1)
    return 0 if res["error"] is None else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        sys.exit(child(a.child))
    if not a.out:
        ap.error("--out is required")
    runs = []
    for i, (setting, eager) in enumerate(SETTINGS):
        env = dict(os.environ)
        env.pop("TORCH_NCCL_AVOID_RECORD_STREAMS", None)
        env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
        env["PROBE_EAGER_INIT"] = "1" if eager else "0"
        if setting is not None:
            env["TORCH_NCCL_AVOID_RECORD_STREAMS"] = setting
        env["MASTER_PORT"] = str(29601 + i)
        env["PYTHONUNBUFFERED"] = "1"
        tmp = a.out + f".part{i}"
        t0 = time.time()
        try:
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", tmp], env=env,
                               capture_output=True, text=True, timeout=90)
            rc, err = p.returncode, p.stderr[-1500:]
        except subprocess.TimeoutExpired:
            rc, err = "timeout", ""
        try:
            with open(tmp) as f:
                r = json.load(f)
            os.remove(tmp)
        except Exception as e:
            r = {"error": f"no result ({e})"}
        r.update({"setting": setting, "eager_init": eager, "rc": rc, "seconds": round(time.time() - t0, 1)})
        if r.get("error"):
            r["stderr_tail"] = err
        runs.append(r)
        print(f"TORCH_NCCL_AVOID_RECORD_STREAMS={setting} eager_init={eager}: rc {rc}, error {r.get('error')}", flush=True)
        for c in r.get("cases", []):
            print(f"  {c['collective']:24s} {c['mode']:28s} reused={c.get('realloc_same_inp_block')} "
                  f"reserved {c['reserved_before']}->{c.get('reserved_after_realloc')}", flush=True)
    with open(a.out, "w") as f:
        json.dump({"runs": runs}, f, indent=1)
    sys.exit(1 if any(r.get("error") for r in runs) else 0)


if __name__ == "__main__":
    main()
