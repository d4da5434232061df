# SPDX-License-Identifier: MIT
"""Loads memlife's virtual CUDA hooks (_virtual_cuda_hooks.cpp) into a process whose PyTorch was
built without CUDA, before torch is imported: ATen reads its CUDA hooks once, at its first use,
so they must be registered first. Imports nothing of torch; finds it on sys.path.

install() returns None when the hooks are in (or not needed: a CUDA build), else the reason
they could not be (torch already imported, no compiler); capture on the virtual device then
refuses with that reason."""
import hashlib
import importlib.util
import os
import subprocess
import sys
import sysconfig

_state = {"done": False, "why": None}


def _torch_dir():
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def needed():
    """True for a PyTorch without CUDA (no libtorch_cuda beside libtorch_cpu)."""
    tdir = _torch_dir()
    return bool(tdir) and not os.path.exists(os.path.join(tdir, "lib", "libtorch_cuda.so"))


def install():
    if _state["done"]:
        return _state["why"]
    _state["done"] = True
    if not needed():
        return None
    if "torch" in sys.modules:
        _state["why"] = ("this PyTorch has no CUDA, and capturing without a GPU needs memlife "
                         "imported before torch (or `memlife capture`, which does that)")
        return _state["why"]
    tdir = _torch_dir()
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.join(here, "_virtual_cuda_hooks.cpp")
    version = ""
    vfile = os.path.join(tdir, "version.py")
    if os.path.exists(vfile):
        version = open(vfile).read()
    key = hashlib.sha256(version.encode() + tdir.encode() + sys.version.encode() +
                         open(src, "rb").read()).hexdigest()[:16]
    cache = os.environ.get("MEMLIFE_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "memlife")
    name = "memlife_virtual_cuda_hooks"
    so = os.path.join(cache, f"{name}-{key}{sysconfig.get_config_var('EXT_SUFFIX')}")
    if not os.path.exists(so):
        try:
            os.makedirs(cache, exist_ok=True)
        except OSError as e:
            _state["why"] = f"cannot make the cache folder {cache}: {e.strerror}"
            return _state["why"]
        tmp = f"{so}.{os.getpid()}.tmp"
        lib = os.path.join(tdir, "lib")
        cmd = [os.environ.get("CXX", "g++"), "-O1", "-shared", "-fPIC", "-std=c++17",
               "-I" + os.path.join(tdir, "include"), "-I" + sysconfig.get_paths()["include"],
               src, "-o", tmp, "-L" + lib, "-lc10", "-ltorch_cpu", "-Wl,-rpath," + lib]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as e:
            _state["why"] = f"a C++ compiler is needed for the virtual device ({cmd[0]}: {e.strerror})"
            return _state["why"]
        if r.returncode != 0:
            last = (r.stderr.strip().splitlines() or ["?"])[-1]
            _state["why"] = f"compiling memlife's virtual CUDA hooks failed: {last}"
            return _state["why"]
        os.replace(tmp, so)
    spec = importlib.util.spec_from_file_location(name, so)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    return None
