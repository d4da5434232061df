# SPDX-License-Identifier: MIT
"""Compares captures on the virtual device with the GPU's own record of the same step
(tools/capture_gpu_truth.sh's tarball, unpacked into DIR). For each configuration: the GPU
capture imported and checked (memlife check: its torch view replays the allocator exactly),
then the torch view's peaks of the fake capture against the GPU capture's, the counts of
blocks, the step's real peaks as PyTorch measured them, and PyTorch's FSDPMemTracker on the
same step. Prints a Markdown table. usage: python3 compare.py DIR [MEMLIFE]"""
import collections
import glob
import json
import os
import subprocess
import sys


def predict(memlife, yaml_path):
    r = subprocess.run([memlife, "predict", yaml_path, "--format", "json"],
                       capture_output=True, text=True)
    if r.returncode not in (0, 1):
        raise RuntimeError(r.stderr.strip()[:400])
    doc = json.loads(r.stdout)
    rank = doc["schedules"][0]["ranks"][0]
    out = {"requested": rank["requested"]["peak"]}
    for view in ("allocated", "reserved"):
        out["torch_" + view] = rank.get("torch", {}).get(view, {}).get("peak")
    return out, doc


def blocks(path):
    d = json.load(open(path))
    t = d["device_traces"][0]
    ops = collections.Counter(e.get("memlife_op") for e in t if e.get("action") == "alloc")
    n = sum(1 for e in t if e.get("action") == "alloc")
    return n, ops, d.get("memlife_capture", {})


def main():
    d = sys.argv[1]
    memlife = sys.argv[2] if len(sys.argv) > 2 else "./memlife"
    tracker = {}
    for line in open(os.path.join(d, "tracker.jsonl")) if os.path.exists(
            os.path.join(d, "tracker.jsonl")) else []:
        r = json.loads(line)
        tracker[(r["lets"].get("MODE"), r["world"])] = r
    print("| config | world | GPU allocated peak | fake | diff | GPU reserved peak | fake | diff "
          "| blocks GPU / fake | check GPU capture | step peak allocated (PyTorch) | tracker |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|")
    # cuda_MODE_wW.json: under the fake group; cudanccl_MODE_wW.json: on a real NCCL group
    for cuda in sorted(glob.glob(os.path.join(d, "cuda*_*.json"))):
        kind, tag = os.path.basename(cuda)[:-5].split("_", 1)
        mode, w = tag.rsplit("_w", 1)
        fake = os.path.join(d, f"fake_{tag}.json")
        row = [mode + (" (nccl)" if kind == "cudanccl" else ""), w]
        ycuda = cuda[:-5] + ".yaml"
        subprocess.run([memlife, "import", cuda, "-o", ycuda, "-q"], check=True)
        chk = subprocess.run([memlife, "check", ycuda, "-q"], capture_output=True, text=True)
        pc, _ = predict(memlife, ycuda)
        nc, opsc, about = blocks(cuda)
        if os.path.exists(fake):
            yfake = fake[:-5] + ".yaml"
            subprocess.run([memlife, "import", fake, "-o", yfake, "-q"], check=True)
            pf, _ = predict(memlife, yfake)
            nf, opsf, _ = blocks(fake)
        else:
            pf, nf, opsf = {}, 0, collections.Counter()
        for view in ("torch_allocated", "torch_reserved"):
            g, f = pc.get(view), pf.get(view)
            row += [str(g), str(f), f"{(f - g) / g * 100:+.2f}%" if g and f else "-"]
        row.append(f"{nc} / {nf}")
        row.append("pass" if chk.returncode == 0 else "FAIL: " + chk.stderr.strip()[:120])
        m = about.get("measured", {})
        row.append(str(m.get("steps_peak_allocated", "-")))
        t = tracker.get((mode, int(w)), {})
        row.append(str(t.get("tracker_peak", t.get("error", "-")))[:60])
        print("| " + " | ".join(row) + " |")
        diff = {k: opsc.get(k, 0) - opsf.get(k, 0) for k in set(opsc) | set(opsf)
                if opsc.get(k, 0) != opsf.get(k, 0)}
        if diff:
            print(f"|  ops (GPU - fake) {tag}: " + ", ".join(
                f"{k}: {v:+d}" for k, v in sorted(diff.items(), key=lambda kv: -abs(kv[1]))[:12]) + " |")


if __name__ == "__main__":
    main()
