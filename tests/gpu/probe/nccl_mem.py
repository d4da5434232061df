#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""nccl_mem.py — NCCL's device memory at world 1, stage by stage, under NCCL settings; and the
CUDA context. Each setting runs in a fresh process (python3 nccl_mem.py --one JSONENV) so that
nothing NCCL or CUDA set up survives between settings. Through ctypes only (libcudart,
libnccl, libnvidia-ml): no framework allocates behind our back.

Per setting it prints one JSON line:
  {"env": {...}, "nvml_before": B, "stages": [[name, cudaMemGetInfo used, nvml used], ...]}
stages: context (cudaSetDevice + cudaFree(0)), init (ncclCommInitAll over 1 GPU), then the first
use of each collective in the order memlife's warm-up uses them (AllReduce, ReduceScatter,
AllGather; 1 element, then 16 Mi floats), then 256 MiB cudaMalloc (the seed's buffer).
The context's own bytes are nvml(context) - nvml_before: cudaMemGetInfo needs a context.

  python3 nccl_mem.py                 # every setting of SETTINGS, one line each
  python3 nccl_mem.py --one '{"NCCL_BUFFSIZE": "1048576"}'
  python3 nccl_mem.py --summary OUT.jsonl   # the deltas, one line per setting
  python3 nccl_mem.py --split         # a world communicator and two split from it, by setting
                                      # and NCCL_COMM_SPLIT_SHARE_RESOURCES 0 / 1
"""
import ctypes
import json
import os
import subprocess
import sys

SETTINGS = [
    {},
    {"NCCL_BUFFSIZE": "1048576"},
    {"NCCL_MAX_NCHANNELS": "2"},
    {"NCCL_RUNTIME_CONNECT": "0"},
    {"NCCL_LL128_BUFFSIZE": "1048576"},
    {"NCCL_WORK_FIFO_BYTES": "4194304"},
    {"NCCL_MIN_NCHANNELS": "32"},
    {"CUDA_MODULE_LOADING": "EAGER"},
    # Predicted before they were measured (analyzer/predict/commmodel.c): 708, 224, 244 MiB.
    {"NCCL_RUNTIME_CONNECT": "0", "NCCL_BUFFSIZE": "1048576"},
    {"NCCL_RUNTIME_CONNECT": "0", "NCCL_MAX_NCHANNELS": "2"},
    {"NCCL_MAX_NCHANNELS": "8"},
]


def lib(*names):
    for n in names:
        try:
            return ctypes.CDLL(n)
        except OSError:
            pass
    raise SystemExit("cannot load any of %s" % (names,))


def one(env):
    cudart = lib("libcudart.so.13", "/usr/local/cuda/lib64/libcudart.so.13", "libcudart.so")
    nccl = lib("libnccl.so.2", "/usr/lib/x86_64-linux-gnu/libnccl.so.2")
    nvml = lib("libnvidia-ml.so.1")

    class NvmlMem(ctypes.Structure):
        _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                    ("used", ctypes.c_ulonglong)]

    assert nvml.nvmlInit_v2() == 0
    h = ctypes.c_void_p()
    assert nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h)) == 0

    def nvml_used():
        m = NvmlMem()
        assert nvml.nvmlDeviceGetMemoryInfo(h, ctypes.byref(m)) == 0
        return m.used

    def cuda_used():
        f, t = ctypes.c_size_t(), ctypes.c_size_t()
        assert cudart.cudaMemGetInfo(ctypes.byref(f), ctypes.byref(t)) == 0
        return t.value - f.value

    out = {"env": env, "nvml_before": nvml_used(), "stages": []}

    def stage(name):
        assert cudart.cudaDeviceSynchronize() == 0
        out["stages"].append([name, cuda_used(), nvml_used()])

    assert cudart.cudaSetDevice(0) == 0
    assert cudart.cudaFree(None) == 0
    stage("context")
    comm = ctypes.c_void_p()
    dev = (ctypes.c_int * 1)(0)
    r = nccl.ncclCommInitAll(ctypes.byref(comm), 1, dev)
    assert r == 0, "ncclCommInitAll: %d" % r
    stage("init")
    n = 16 << 20
    buf = ctypes.c_void_p()
    assert cudart.cudaMalloc(ctypes.byref(buf), ctypes.c_size_t(4 * n)) == 0
    stage("scratch 64 MiB")
    stream = ctypes.c_void_p()
    assert cudart.cudaStreamCreateWithFlags(ctypes.byref(stream), 1) == 0
    stage("stream")
    F32, SUM = 7, 0
    for count, tag in ((1, "1"), (n, "16Mi")):
        assert nccl.ncclAllReduce(buf, buf, ctypes.c_size_t(count), F32, SUM, comm, stream) == 0
        stage("all_reduce " + tag)
    for count, tag in ((1, "1"), (n, "16Mi")):
        assert nccl.ncclReduceScatter(buf, buf, ctypes.c_size_t(count), F32, SUM, comm, stream) == 0
        stage("reduce_scatter " + tag)
    for count, tag in ((1, "1"), (n, "16Mi")):
        assert nccl.ncclAllGather(buf, buf, ctypes.c_size_t(count), F32, comm, stream) == 0
        stage("all_gather " + tag)
    assert cudart.cudaFree(buf) == 0
    stage("scratch freed")
    big = ctypes.c_void_p()
    assert cudart.cudaMalloc(ctypes.byref(big), ctypes.c_size_t(256 << 20)) == 0
    stage("cudaMalloc 256 MiB")
    # Send/receive to itself: does NCCL launch a kernel at world 1 then, and what does it add
    # (p2p channels, the first kernel's local memory)?
    a, b = ctypes.c_void_p(), ctypes.c_void_p()
    assert cudart.cudaMalloc(ctypes.byref(a), ctypes.c_size_t(4 << 20)) == 0
    assert cudart.cudaMalloc(ctypes.byref(b), ctypes.c_size_t(4 << 20)) == 0
    stage("two 4 MiB buffers")
    assert nccl.ncclGroupStart() == 0
    assert nccl.ncclSend(a, ctypes.c_size_t(1 << 20), F32, 0, comm, stream) == 0
    assert nccl.ncclRecv(b, ctypes.c_size_t(1 << 20), F32, 0, comm, stream) == 0
    assert nccl.ncclGroupEnd() == 0
    stage("send/recv self")
    print(json.dumps(out), flush=True)
    nccl.ncclCommDestroy(comm)


SPLIT_SETTINGS = [
    {},
    {"NCCL_MAX_NCHANNELS": "2"},
    {"NCCL_RUNTIME_CONNECT": "0"},
    {"NCCL_BUFFSIZE": "1048576"},
]


def split(env):
    """A world communicator, then two communicators split from it (ncclCommSplit, color 0,
    key 0, config NULL: splitShare is NCCL_COMM_SPLIT_SHARE_RESOURCES's), each measured after
    its creation and after its first AllReduce, ReduceScatter and AllGather (16 Mi floats)."""
    cudart = lib("libcudart.so.13", "/usr/local/cuda/lib64/libcudart.so.13", "libcudart.so")
    nccl = lib("libnccl.so.2", "/usr/lib/x86_64-linux-gnu/libnccl.so.2")

    def cuda_used():
        f, t = ctypes.c_size_t(), ctypes.c_size_t()
        assert cudart.cudaMemGetInfo(ctypes.byref(f), ctypes.byref(t)) == 0
        return t.value - f.value

    out = {"env": env, "mode": "split", "stages": []}

    def stage(name):
        assert cudart.cudaDeviceSynchronize() == 0
        out["stages"].append([name, cuda_used(), 0])

    assert cudart.cudaSetDevice(0) == 0
    assert cudart.cudaFree(None) == 0
    n = 16 << 20
    buf = ctypes.c_void_p()
    assert cudart.cudaMalloc(ctypes.byref(buf), ctypes.c_size_t(4 * n)) == 0
    stream = ctypes.c_void_p()
    assert cudart.cudaStreamCreateWithFlags(ctypes.byref(stream), 1) == 0
    stage("context")
    world = ctypes.c_void_p()
    dev = (ctypes.c_int * 1)(0)
    assert nccl.ncclCommInitAll(ctypes.byref(world), 1, dev) == 0
    stage("init world")
    comms = [("world", world)]
    for k in (1, 2):
        c = ctypes.c_void_p()
        r = nccl.ncclCommSplit(world, 0, 0, ctypes.byref(c), None)
        assert r == 0, "ncclCommSplit: %d" % r
        stage("split %d" % k)
        comms.append(("split%d" % k, c))
    F32, SUM = 7, 0
    for name, c in comms:
        assert nccl.ncclAllReduce(buf, buf, ctypes.c_size_t(n), F32, SUM, c, stream) == 0
        stage(name + " all_reduce")
        assert nccl.ncclReduceScatter(buf, buf, ctypes.c_size_t(n), F32, SUM, c, stream) == 0
        stage(name + " reduce_scatter")
        assert nccl.ncclAllGather(buf, buf, ctypes.c_size_t(n), F32, c, stream) == 0
        stage(name + " all_gather")
    for name, c in reversed(comms):
        nccl.ncclCommDestroy(c)
        stage("destroyed " + name)
    print(json.dumps(out), flush=True)


def summary(path):
    """One line per setting: the context, then every stage that changed the device's used bytes."""
    for line in open(path):
        try:
            d = json.loads(line)
        except ValueError:
            print(line[:200].rstrip())
            continue
        if "error" in d:
            print(d["env"], "ERROR", d["error"][-300:])
            continue
        st = d["stages"]
        parts = ["ctx(nvml)=%d" % (st[0][2] - d["nvml_before"])]
        for k in range(1, len(st)):
            v = st[k][1] - st[k - 1][1]
            if v:
                parts.append("%s=%.3fMiB" % (st[k][0].replace(" ", "_"), v / 2**20))
        print(json.dumps(d["env"]), " ".join(parts))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--summary":
        summary(sys.argv[2])
        return 0
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        one(json.loads(sys.argv[2]))
        return 0
    if len(sys.argv) == 3 and sys.argv[1] == "--split-one":
        split(json.loads(sys.argv[2]))
        return 0
    if len(sys.argv) == 2 and sys.argv[1] == "--split":
        for base in SPLIT_SETTINGS:
            for share in ("0", "1"):
                env = dict(base, NCCL_COMM_SPLIT_SHARE_RESOURCES=share)
                e = dict(os.environ, NCCL_NVLS_ENABLE="0", **env)
                p = subprocess.run([sys.executable, __file__, "--split-one", json.dumps(env)],
                                   env=e, capture_output=True, text=True, timeout=120)
                sys.stdout.write(p.stdout)
                if p.returncode:
                    print(json.dumps({"env": env, "error": p.stderr[-2000:]}), flush=True)
        return 0
    for env in SETTINGS:
        e = dict(os.environ, NCCL_NVLS_ENABLE="0", **env)
        p = subprocess.run([sys.executable, __file__, "--one", json.dumps(env)], env=e,
                           capture_output=True, text=True, timeout=120)
        sys.stdout.write(p.stdout)
        if p.returncode:
            print(json.dumps({"env": env, "error": p.stderr[-2000:]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
