# SPDX-License-Identifier: MIT
"""memlife.capture: one training step of a real PyTorch program, as rank R of world N, recorded
as the data a memlife schedule is written from.

The program is a function (FUNC in FILE.py, `build` by default) that builds the model, applies
its parallelism and returns a zero-argument function running one training step. capture brings
up torch's fake process group at world N, rank R (one process: collectives run no communication,
every buffer is allocated as at world N), calls FUNC with the lets as keyword arguments, runs the
step once to warm up (optimizer state) and records the next `steps` calls.

on="cuda" (one GPU of any size that holds one rank): the caching allocator's own trace
(torch.cuda.memory._record_memory_history) is the ground truth of every block and segment; the
recorder adds the names, the collectives and the modules, matched to the trace by address.
on="fake" (no GPU): the same step under FakeTensorMode on a virtual CUDA device
(memlife._virtual_cuda): no data, the same storages in the same order.

The result is a snapshot-shaped dict (PyTorch's `_dump_snapshot` layout: device_traces,
segments, allocator_settings) with memlife's annotations: a name on each alloc entry, and
`memlife_step` entries for collectives and regions. `memlife import` (and `memlife capture`,
which runs this module) turns it into a schedule.
"""
import datetime
import importlib.util
import json
import os
import sys
import traceback

FORMAT = 1


class ProgramError(Exception):
    """The user's program failed (exit 3): message names the place in the user's file."""


class UsageError(Exception):
    """The capture cannot start (exit 2): a missing FUNC, a bad let, an unknown GPU."""


def _user_frame(tb_or_frames, path):
    """The innermost frame of the user's file, as 'FILE:LINE' (else the innermost frame)."""
    frames = traceback.extract_tb(tb_or_frames) if not isinstance(tb_or_frames, list) else tb_or_frames
    path = os.path.abspath(path)
    mine = [f for f in frames if os.path.abspath(f.filename) == path]
    f = (mine or frames or [None])[-1]
    return f"{f.filename}:{f.lineno}" if f else path


def load_program(spec):
    """FILE.py[:FUNC] -> (path, the function). FUNC defaults to `build`."""
    path, func = spec, "build"
    if ":" in spec and not spec.endswith(".py"):
        path, func = spec.rsplit(":", 1)
    if not os.path.isfile(path):
        raise UsageError(f"{path}: error: no such file")
    sp = importlib.util.spec_from_file_location("memlife_program", path)
    mod = importlib.util.module_from_spec(sp)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        sp.loader.exec_module(mod)
    except SyntaxError as e:
        raise UsageError(f"{e.filename}:{e.lineno}:{e.offset or 1}: error: {e.msg}") from None
    except Exception as e:
        raise ProgramError(f"{_user_frame(e.__traceback__, path)}: error: importing the program "
                           f"raised {type(e).__name__}: {e}") from None
    fn = getattr(mod, func, None)
    if not callable(fn):
        raise UsageError(f"{path}:1:1: error: the program defines no function '{func}'")
    return path, fn


def _init_group(world, rank, backend="fake"):
    """torch's fake process group at world N, rank R; at world 1 a real one may stand in
    (backend nccl or gloo, with --on cuda: a run whose communicator is real)."""
    import torch.distributed as dist
    if dist.is_initialized():
        dist.destroy_process_group()
    if backend == "fake":
        from torch.testing._internal.distributed.fake_pg import FakeStore
        dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=world)
        return
    if world != 1:
        raise UsageError(f"error: a real process group ({backend}) only at world 1")
    store = dist.HashStore()
    dist.init_process_group(backend, store=store, rank=0, world_size=1)


def _fake_optimizer_values():
    """Adam and its kin read their step count with .item() for the bias correction, a scalar
    that no memory depends on; under FakeTensorMode it has no value, so it reads as 1."""
    import torch.optim.optimizer as optim
    orig = optim._get_value

    def get_value(x):
        from torch._subclasses.fake_tensor import FakeTensor
        if isinstance(x, FakeTensor):
            return 1.0
        return orig(x)
    optim._get_value = get_value
    return lambda: setattr(optim, "_get_value", orig)


def _skip_param_verification():
    """DistributedDataParallel checks at construction that every rank holds parameters of the
    same shapes: a collective of a tensor it builds on the host and copies to the device, which
    FakeTensorMode runs for real (a constant) on a device that does not exist. One process
    records one rank, so there is nothing to compare: the check is left out (it allocates a few
    bytes once, before the recorded steps)."""
    import torch.distributed as dist
    orig = dist._verify_params_across_processes

    def verify(process_group, tensors, logger=None):
        return None
    dist._verify_params_across_processes = verify

    def undo():
        dist._verify_params_across_processes = orig
    return undo


def _ddp_on_fake_group(virtual):
    """DistributedDataParallel's reducer reads the result of each bucket's all-reduce from the
    process group's future, which torch's fake process group completes with no value (the
    reducer then stops on an internal assert). Under the fake group a DistributedDataParallel
    that has no comm hook at its first forward gets the hook that does what the built-in path
    does to the bucket: divide it by the group's size in place, all-reduce it in place (the
    recorded collective), hand the same buffer back. No allocation differs: both work in the
    bucket. At the first forward, not at construction, so that a program may still register
    its own hook (the reducer takes one only). virtual: the reducer's timing statistics are left
    out too (the CPU build has no CUDA timer for the virtual device)."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    orig = DDP.forward

    def hook(group, bucket):
        buf = bucket.buffer()
        buf.div_(dist.get_world_size(group))
        dist.all_reduce(buf, group=group)
        fut = torch.futures.Future()
        fut.set_result(buf)
        return fut

    class Logger:
        """The reducer's logger but for its runtime statistics, which time the backward with
        the device's timer: the CPU build of torch has no CUDA timer to give the virtual
        device (the reducer's is then null and the logger asserts). Timing only, no memory."""
        def __init__(self, real):
            self._real = real

        def set_runtime_stats_and_log(self):
            pass

        def __getattr__(self, name):
            return getattr(self._real, name)

    def forward(self, *args, **kwargs):
        if not getattr(self, "_memlife_hooked", False):
            self._memlife_hooked = True
            if not self._comm_hooks and dist.get_backend(self.process_group) == "fake":
                self.register_comm_hook(self.process_group, hook)
            if virtual and self.logger is not None:
                self.logger = Logger(self.logger)
        return orig(self, *args, **kwargs)
    DDP.forward = forward

    def undo():
        DDP.forward = orig
    return undo


def capture(program, world=1, rank=0, on="fake", lets=None, steps=1, gpu="h100-80gb",
            group="fake"):
    """Runs the program and returns the snapshot-shaped dict (see the module's doc)."""
    import torch
    from . import _record, _snapshot, _virtual_cuda
    lets = dict(lets or {})
    if not (1 <= world <= 1 << 20) or not (0 <= rank < world):
        raise UsageError(f"error: rank {rank} is not in world {world}")
    if on not in ("fake", "cuda"):
        raise UsageError(f"error: --on takes fake or cuda, not '{on}'")
    if callable(program):
        path, build = getattr(program, "__code__", None) and program.__code__.co_filename, program
    else:
        path, build = load_program(program)
    if on == "cuda" and not torch.cuda.is_available():
        raise UsageError("error: --on cuda needs a GPU (torch.cuda.is_available() is False); "
                         "--on fake captures without one")
    if on == "fake" and group != "fake":
        # a real backend would run its collectives on tensors that have no data
        raise UsageError(f"error: --group {group} needs --on cuda; --on fake runs torch's fake "
                         f"group, whose memory at world 1 is the same")
    _init_group(world, rank, group)
    undo = []
    if on == "fake":
        from torch._subclasses.fake_tensor import FakeTensorMode
        vc = _virtual_cuda.virtual_cuda(gpu, on_record_stream=None)
        vc.__enter__()
        undo.append(lambda: vc.__exit__(None, None, None))
        fake = FakeTensorMode(allow_non_fake_inputs=True)
        fake.__enter__()
        undo.append(lambda: fake.__exit__(None, None, None))
        undo.append(_fake_optimizer_values())
        undo.append(_skip_param_verification())
        undo.append(_ddp_on_fake_group(virtual=True))
        rec = _record.Recorder(virtual=True)
        _virtual_cuda._state.on_record_stream = rec.record_stream
        _virtual_cuda._state.listener = rec.on_sync
    else:
        torch.cuda.set_device(0)
        torch.cuda.init()
        if group == "fake":
            undo.append(_ddp_on_fake_group(virtual=False))
        # DDP's shape check is a collective of a small tensor made in C++ before any recorded
        # step; recorded on a GPU it does not import (its view is larger than the block the
        # trace gives it): left out here too, one process recording one rank.
        undo.append(_skip_param_verification())
        rec = _record.Recorder(stream_of=lambda: torch.cuda.current_stream().cuda_stream,
                               ptr_of=lambda st: st.data_ptr(),
                               stream_id=lambda s: s.cuda_stream)
        undo.append(_record.patch_cuda(rec))
        orig_rs = torch.Tensor.record_stream

        def record_stream(t, s):
            rec.record_stream(t, type("S", (), {"stream_id": s.cuda_stream})())
            return orig_rs(t, s)
        torch.Tensor.record_stream = record_stream
        undo.append(lambda: setattr(torch.Tensor, "record_stream", orig_rs))
        torch.cuda.memory._record_memory_history(max_entries=10_000_000, stacks="python")
    about = {"format": FORMAT, "program": os.path.basename(path or "<function>"),
             "lets": lets, "world": world, "rank": rank, "on": on, "torch": torch.__version__,
             "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
             "steps": steps, "gpu": gpu if on == "fake" else torch.cuda.get_device_name(0)}
    try:
        with rec:
            try:
                step = build(**lets)
            except TypeError as e:
                if "unexpected keyword argument" in str(e):
                    raise UsageError(f"{path}:1:1: error: {e} (a --set the program does not take)")
                raise
            if not callable(step):
                raise UsageError(f"{path}:1:1: error: the program's function returned "
                                 f"{type(step).__name__}, not a training step to call")
            rec.phase = "step"
            rec.program = step
            _snapshot.seed_module_names(rec, step)
            rec.name_owners()
            for k in range(steps + 1):
                name = "warmup" if k == 0 else ("step" if steps == 1 else f"step{k}")
                if on == "cuda" and k == 1:
                    torch.cuda.synchronize()
                    torch.cuda.reset_peak_memory_stats()
                rec.events.append(("step", {"region": name, "begin": True}))
                step()
                if on == "cuda":
                    torch.cuda.synchronize()
                rec.events.append(("step", {"region": name, "begin": False}))
            rec.name_owners()
            rec.program = None
            rec.closed = True
            del step
        snap = None
        if on == "cuda":
            snap = torch.cuda.memory._snapshot()
            st = torch.cuda.memory_stats()
            free, total = torch.cuda.mem_get_info()
            about["measured"] = {
                "steps_peak_allocated": torch.cuda.max_memory_allocated(),
                "steps_peak_reserved": torch.cuda.max_memory_reserved(),
                "allocated": torch.cuda.memory_allocated(),
                "reserved": torch.cuda.memory_reserved(),
                "alloc_retries": st.get("num_alloc_retries", 0),
                "device_used": total - free, "device_total": total}
    except (UsageError, ProgramError):
        raise
    except Exception as e:
        if os.environ.get("MEMLIFE_CAPTURE_TRACEBACK"):
            traceback.print_exc()
        where = _user_frame(e.__traceback__, path) if path else "<program>"
        msg = str(e).strip().splitlines()[0][:400] if str(e).strip() else ""
        raise ProgramError(f"{where}: error: the program raised {type(e).__name__}: {msg}") from None
    finally:
        if on == "cuda":
            torch.cuda.memory._record_memory_history(enabled=None)
        for u in reversed(undo):
            u()
    return _snapshot.build(rec, snap, about)


def main(argv=None):
    """python -m memlife.capture FILE.py[:FUNC] --world N --rank R --on fake|cuda
    --set K=V ... --steps K --gpu NAME -o OUT.json: what `memlife capture` runs."""
    import argparse
    ap = argparse.ArgumentParser(prog="memlife-capture")
    ap.add_argument("program")
    ap.add_argument("--world", type=int, default=1)
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--on", default="fake")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument("--gpu", default="h100-80gb")
    ap.add_argument("--group", default="fake", choices=("fake", "nccl", "gloo"))
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args(argv)
    lets = {}
    for kv in a.set:
        k, eq, v = kv.partition("=")
        if not eq or not k.isidentifier():
            print(f"error: --set takes NAME=VALUE, not '{kv}'", file=sys.stderr)
            return 2
        try:
            lets[k] = int(v, 0)
        except ValueError:
            try:
                lets[k] = float(v)
            except ValueError:
                lets[k] = v
    try:
        snap = capture(a.program, world=a.world, rank=a.rank, on=a.on, lets=lets,
                       steps=a.steps, gpu=a.gpu, group=a.group)
    except UsageError as e:
        print(str(e), file=sys.stderr)
        return 2
    except ProgramError as e:
        print(str(e), file=sys.stderr)
        return 3
    tmp = a.output + ".tmp"
    with open(tmp, "w") as f:
        json.dump(snap, f, separators=(",", ":"))
    os.replace(tmp, a.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
