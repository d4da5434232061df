#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Record allocator snapshots of real programs, for memlife's snapshot importer.

Each case runs in a fresh process; it records with torch.cuda.memory._record_memory_history and
writes NAME.pickle (torch.cuda.memory._dump_snapshot) and NAME.json (a sidecar: memory_stats at
the end, and allocated/reserved/requested after each training phase).

    a_train          a small transformer training step (2 iterations), recorded from the start
    b_fsdp2          the same under FSDP2 fully_shard at world 1 (nccl), recorded from the start
    c_expandable     a_train with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
    d_late           a_train recorded only after the model and optimizer exist
  Under a memory fraction (set_per_process_memory_fraction), with varying sequence lengths (batch
  32, six iterations), so that the allocator must give segments back while the program runs: the
  limit is set between the peak allocated and the peak reserved of an unlimited calibration run of
  the same program (the sidecar's allowed_memory_maximum is the allocator's exact value).
    e_gc             garbage_collection_threshold:0.6 (partial releases by garbage collection)
    f_retry          max_split_size_mb:32 (release_available_cached_blocks: oversize blocks freed
                     before the retry of a cudaMalloc over the limit)
    g_retry_full     default settings (release_cached_blocks: every unsplit free segment, then retry)
    h_oom            f_retry, then a request of the whole limit that fails (caught: an `oom` entry),
                     then one more iteration
  Closer to real training loops:
    i_ddp_amp        DistributedDataParallel at world 1 (nccl: gradient buckets), bf16 autocast,
                     fused AdamW; a wider model (512/8/2048, 4 layers, batch 16, sequence 256),
                     three iterations
    k_ckpt_amp       the same model without DDP, with activation checkpointing per layer, recorded
                     without stacks (context=None: with Python stacks, 2.11's backward through
                     the checkpointed layers failed, "run_backward returned NULL without setting
                     an exception"); buffers are named by address
    k2_ckpt_amp      the same recorded with stacks at allocations only (context="alloc")
    j_wrapped        a_train recorded with max_entries=1500: the ring buffer wraps, so the trace
                     starts in the middle of the program (what a long run's snapshot looks like)

Usage (GPU machine with PyTorch):
    python3 tests/torch/record_snapshots.py --out DIR [--only REGEX] [-j 4]
"""
import argparse
import concurrent.futures
import json
import os
import pickle
import re
import subprocess
import sys
import time

CASES = {
    "a_train": {"conf": "", "fsdp": False, "late": False},
    "b_fsdp2": {"conf": "", "fsdp": True, "late": False},
    "c_expandable": {"conf": "expandable_segments:True", "fsdp": False, "late": False},
    "d_late": {"conf": "", "fsdp": False, "late": True},
    "e_gc": {"conf": "garbage_collection_threshold:0.6", "fsdp": False, "late": False, "limit": 0.5},
    "f_retry": {"conf": "max_split_size_mb:32", "fsdp": False, "late": False, "limit": 0.5},
    "g_retry_full": {"conf": "", "fsdp": False, "late": False, "limit": 0.5},
    "h_oom": {"conf": "max_split_size_mb:32", "fsdp": False, "late": False, "limit": 0.5, "oom": True},
    "i_ddp_amp": {"conf": "", "fsdp": False, "late": False, "ddp": True, "amp": True,
                  "dims": (512, 8, 2048, 4, 16, (256, 256, 256))},
    "k_ckpt_amp": {"conf": "", "fsdp": False, "late": False, "amp": True, "ckpt": True,
                   "dims": (512, 8, 2048, 4, 16, (256, 256, 256)), "context": None},
    "k2_ckpt_amp": {"conf": "", "fsdp": False, "late": False, "amp": True, "ckpt": True,
                    "dims": (512, 8, 2048, 4, 16, (256, 256, 256)), "context": "alloc"},
    "j_wrapped": {"conf": "", "fsdp": False, "late": False, "max_entries": 1500},
}
# The limited cases' program: a longer, variable-length run, so that freed activations of one
# length are cached blocks of the wrong size for the next (what makes the allocator release).
LIMITED_BATCH, LIMITED_SEQS = 32, (256, 384, 192, 448, 320, 128)
MAX_ENTRIES = 100_000
MAX_PICKLE = 4 * 1024 * 1024
D_MODEL, NHEAD, FF, LAYERS, VOCAB, BATCH, SEQ = 256, 8, 1024, 3, 1000, 8, 128
STAT_KEYS = ("allocated_bytes.all.current", "allocated_bytes.all.peak",
             "reserved_bytes.all.current", "reserved_bytes.all.peak",
             "requested_bytes.all.current", "requested_bytes.all.peak",
             "active_bytes.all.current", "active_bytes.all.peak",
             "inactive_split_bytes.all.current", "segment.all.current", "segment.all.peak",
             "num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free")


def child(name, out_dir, calibrate=False):
    import torch
    import torch.nn as nn

    case = CASES[name]
    limited = "limit" in case
    batch, seqs = (LIMITED_BATCH, LIMITED_SEQS) if limited else (BATCH, (SEQ, SEQ))
    d_model, nhead, ff, layers = D_MODEL, NHEAD, FF, LAYERS
    if "dims" in case:
        d_model, nhead, ff, layers, batch, seqs = case["dims"]
    dist_init = case["fsdp"] or case.get("ddp")
    side = {"name": name, "torch": torch.__version__, "conf": case["conf"],
            "env_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
            "model": {"d_model": d_model, "nhead": nhead, "dim_feedforward": ff, "layers": layers,
                      "vocab": VOCAB, "batch": batch, "seq": list(seqs), "optimizer": "AdamW",
                      "iterations": len(seqs), "fsdp2": case["fsdp"],
                      "ddp": bool(case.get("ddp")), "bf16_autocast": bool(case.get("amp")),
                      "checkpoint": bool(case.get("ckpt"))},
            "recorded_from": "after model and optimizer" if case["late"] else "process start",
            "phases": [], "error": None}
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    torch.manual_seed(0)
    side["device"] = torch.cuda.get_device_name(dev)
    if limited and not calibrate:
        # allowed_memory_maximum = (size_t)(fraction * total): the same double product here
        total = torch.cuda.get_device_properties(dev).total_memory
        limit = int(os.environ["MEMLIFE_RECORD_LIMIT"])
        fraction = limit / total
        torch.cuda.set_per_process_memory_fraction(fraction, dev)
        side["limit"] = {"fraction": fraction, "total_memory": total,
                         "allowed_memory_maximum": int(fraction * total), "asked": limit}

    def phase(label):
        torch.cuda.synchronize(dev)
        st = torch.cuda.memory_stats(dev)
        side["phases"].append({"phase": label,
                               "allocated": torch.cuda.memory_allocated(dev),
                               "reserved": torch.cuda.memory_reserved(dev),
                               "requested": st.get("requested_bytes.all.current", 0),
                               "max_allocated": torch.cuda.max_memory_allocated(dev),
                               "max_reserved": torch.cuda.max_memory_reserved(dev)})

    def record():
        torch.cuda.memory._record_memory_history(enabled="all", context=case.get("context", "all"),
                                                 stacks="python",
                                                 max_entries=case.get("max_entries", MAX_ENTRIES))

    try:
        if not case["late"] and not calibrate:
            record()
        phase("start")
        if dist_init:
            import torch.distributed as dist
            os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
            os.environ.setdefault("MASTER_PORT", "29517")
            os.environ.update({"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0"})
            dist.init_process_group("nccl", device_id=dev)
            phase("init_process_group")

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(VOCAB, d_model)
                layer = nn.TransformerEncoderLayer(d_model, nhead, ff, dropout=0.0, batch_first=True)
                self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
                self.head = nn.Linear(d_model, VOCAB)

            def forward(self, x):
                h = self.emb(x)
                if case.get("ckpt"):
                    from torch.utils.checkpoint import checkpoint
                    for block in self.enc.layers:
                        h = checkpoint(block, h, use_reentrant=False)
                    return self.head(h)
                return self.head(self.enc(h))

        model = Net().to(dev)
        if case["fsdp"]:
            from torch.distributed.fsdp import fully_shard
            for layer in model.enc.layers:
                fully_shard(layer)
            fully_shard(model)
        if case.get("ddp"):
            from torch.nn.parallel import DistributedDataParallel
            model = DistributedDataParallel(model, device_ids=[0])
        phase("model")
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=bool(case.get("ddp")))
        phase("optimizer")
        if case["late"]:
            record()
        gen = torch.Generator(device="cpu").manual_seed(1)
        its = list(enumerate(seqs))
        if case.get("oom") and not calibrate:
            its.append(("oom", None))
            its.append((len(seqs), seqs[0]))
        for it, seq in its:
            if seq is None:
                try:  # the whole limit: fails after both releases, PyTorch raises
                    torch.empty(side["limit"]["allowed_memory_maximum"], dtype=torch.uint8, device=dev)
                    side["oom_raised"] = False
                except torch.OutOfMemoryError:
                    side["oom_raised"] = True
                phase("oom")
                continue
            x = torch.randint(0, VOCAB, (batch, seq), generator=gen).to(dev)
            y = torch.randint(0, VOCAB, (batch, seq), generator=gen).to(dev)
            phase(f"iter{it}.inputs")
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bool(case.get("amp"))):
                logits = model(x)
                loss = nn.functional.cross_entropy(logits.view(-1, VOCAB).float(), y.view(-1))
            phase(f"iter{it}.forward")
            loss.backward()
            phase(f"iter{it}.backward")
            opt.step()
            phase(f"iter{it}.step")
            opt.zero_grad(set_to_none=True)
            del logits, loss, x, y
            phase(f"iter{it}.zero_grad")
        torch.cuda.synchronize(dev)
        st = torch.cuda.memory_stats(dev)
        side["final_stats"] = {k: st.get(k) for k in STAT_KEYS}
        if calibrate:
            with open(os.path.join(out_dir, name + ".calib.json"), "w") as f:
                json.dump({"max_allocated": torch.cuda.max_memory_allocated(dev),
                           "max_reserved": torch.cuda.max_memory_reserved(dev)}, f)
            return 0
        side["final"] = {"allocated": torch.cuda.memory_allocated(dev),
                         "reserved": torch.cuda.memory_reserved(dev),
                         "max_allocated": torch.cuda.max_memory_allocated(dev),
                         "max_reserved": torch.cuda.max_memory_reserved(dev),
                         "requested": st.get("requested_bytes.all.current"),
                         "max_requested": st.get("requested_bytes.all.peak")}
        path = os.path.join(out_dir, name + ".pickle")
        torch.cuda.memory._dump_snapshot(path)
        # the sidecar's stats are read before the dump; the dump itself allocates nothing on the GPU
        with open(path, "rb") as f:
            snap = pickle.load(f)
        traces = snap.get("device_traces", [[]])
        side["trace_entries"] = len(traces[0]) if traces else 0
        side["trace_wrapped"] = side["trace_entries"] >= case.get("max_entries", MAX_ENTRIES)
        side["segments"] = len(snap.get("segments", []))
        side["segments_total_size"] = sum(s["total_size"] for s in snap.get("segments", []))
        side["actions"] = {}
        for e in (traces[0] if traces else []):
            side["actions"][e["action"]] = side["actions"].get(e["action"], 0) + 1
        size = os.path.getsize(path)
        if size > MAX_PICKLE:  # keep only the innermost frames of every stack
            for keep in (8, 4, 2, 0):
                for seg in snap.get("segments", []):
                    seg["frames"] = seg.get("frames", [])[:keep]
                    for b in seg.get("blocks", []):
                        b["frames"] = b.get("frames", [])[:keep]
                for e in (traces[0] if traces else []):
                    e["frames"] = e.get("frames", [])[:keep]
                with open(path, "wb") as f:
                    pickle.dump(snap, f)
                side["frames_trimmed_to"] = keep
                if os.path.getsize(path) <= MAX_PICKLE:
                    break
        side["pickle_bytes"] = os.path.getsize(path)
        if dist_init:
            import torch.distributed as dist
            dist.destroy_process_group()
    except Exception as e:
        import traceback
        side["error"] = f"{type(e).__name__}: {e}"
        side["traceback"] = traceback.format_exc()[-4000:]
    with open(os.path.join(out_dir, name + ".json"), "w") as f:
        json.dump(side, f, indent=1)
    return 0 if side["error"] is None else 1


def run_case(name, out_dir, timeout, port):
    env = dict(os.environ)
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    if CASES[name]["conf"]:
        env["PYTORCH_CUDA_ALLOC_CONF"] = CASES[name]["conf"]
    env["PYTHONUNBUFFERED"] = "1"
    env["MASTER_PORT"] = str(port)
    t0 = time.time()
    cmd = [sys.executable, os.path.abspath(__file__), "--child", name, out_dir]
    try:
        if "limit" in CASES[name]:
            # an unlimited, unrecorded run of the same program first: its peaks place the limit
            p = subprocess.run(cmd + ["--calibrate"], env=env, capture_output=True, text=True,
                               timeout=timeout)
            with open(os.path.join(out_dir, name + ".calib.json")) as f:
                cal = json.load(f)
            k = CASES[name]["limit"]
            env["MEMLIFE_RECORD_LIMIT"] = str(int(cal["max_allocated"] +
                                                  k * (cal["max_reserved"] - cal["max_allocated"])))
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        rc, err = p.returncode, p.stderr[-1500:]
    except subprocess.TimeoutExpired:
        rc, err = "timeout", ""
    except (OSError, ValueError, KeyError) as e:
        rc, err = "calibration failed", str(e)
    info = {"name": name, "rc": rc, "seconds": round(time.time() - t0, 1), "stderr_tail": err}
    try:
        with open(os.path.join(out_dir, name + ".json")) as f:
            side = json.load(f)
        info.update({k: side.get(k) for k in ("error", "pickle_bytes", "trace_entries", "segments",
                                              "limit", "oom_raised")})
        info["retries_ooms"] = [(side.get("final_stats") or {}).get(k) for k in ("num_alloc_retries", "num_ooms")]
        info["actions"] = side.get("actions")
    except Exception as e:
        info["error"] = f"no sidecar ({e})"
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out")
    ap.add_argument("--only")
    ap.add_argument("-j", "--jobs", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=150)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--calibrate", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        sys.exit(child(*a.child, calibrate=a.calibrate))
    if not a.out:
        ap.error("--out is required")
    os.makedirs(a.out, exist_ok=True)
    names = [n for n in CASES if not a.only or re.search(a.only, n)]
    infos = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as ex:
        futs = [ex.submit(run_case, n, a.out, a.timeout, 29517 + i) for i, n in enumerate(names)]
        for fut in concurrent.futures.as_completed(futs):
            info = fut.result()
            infos.append(info)
            print(json.dumps({k: v for k, v in info.items() if k != "stderr_tail" or info.get("error")}),
                  flush=True)
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(sorted(infos, key=lambda i: i["name"]), f, indent=1)
    failed = [i for i in infos if i.get("error")]
    print(f"{len(infos)} snapshots, {len(failed)} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
