# SPDX-License-Identifier: MIT
"""The recorder: every tensor storage's birth and death, in program order, with its size, the
stream it was allocated on and what it is (a parameter, a gradient, an optimizer state, an
activation of a module, a temporary), and every collective with the storages it reads and
writes. It sees ops through a TorchDispatchMode (the outputs' storages are new allocations),
deaths through weak references to the storages (a storage dies when its last tensor does, as its
memory does), and storage resizes through UntypedStorage.resize_ (FSDP2 frees and re-allocates
unsharded parameters that way; no op is dispatched for it). Modules come from torch's
ModTracker, the optimizer step from the optimizer's global step hooks.

It holds no strong reference to any tensor: what the program frees, the recorder sees freed at
the same point.
"""
import weakref

import torch
from torch.distributed._tools.common_utils import get_untyped_storages
from torch.distributed._tools.fake_collectives import CollectiveOp, collective_ops, sync_ops
from torch.distributed._tools.mod_tracker import ModTracker
from torch._guards import active_fake_mode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.weak import WeakIdKeyDictionary

from . import _virtual_cuda

c10d = torch.ops.c10d
fc = torch.ops._c10d_functional

# Collective ops by what memlife calls them and where their tensors are:
# op -> (memlife step, how to find (send, recv) in args / result).
def _args0(a, r):
    return a[0]


COLLECTIVES = {
    c10d._allgather_base_.default: ("all_gather", lambda a, r: (a[1], a[0])),
    c10d._reduce_scatter_base_.default: ("reduce_scatter", lambda a, r: (a[1], a[0])),
    c10d.allreduce_.default: ("all_reduce", lambda a, r: (a[0][0], a[0][0])),
    c10d.broadcast_.default: ("broadcast", lambda a, r: (a[0][0], a[0][0])),
    c10d.alltoall_base_.default: ("all_to_all", lambda a, r: (a[1], a[0])),
    fc.all_gather_into_tensor.default: ("all_gather", lambda a, r: (a[0], r)),
    fc.reduce_scatter_tensor.default: ("reduce_scatter", lambda a, r: (a[0], r)),
    fc.all_reduce.default: ("all_reduce", lambda a, r: (a[0], r)),
    fc.all_reduce_.default: ("all_reduce", lambda a, r: (a[0], a[0])),
    fc.broadcast.default: ("broadcast", lambda a, r: (a[0], r)),
    fc.all_to_all_single.default: ("all_to_all", lambda a, r: (a[0], r)),
}

# The root of a rooted collective, its rank within the group (c10d's root_rank, the functional
# broadcast's src, which torch.distributed.broadcast turns into the group's rank).
ROOTS = {c10d.broadcast_.default: lambda a: a[2], fc.broadcast.default: lambda a: a[1]}

# The ops that run cuBLAS, whose first call on a thread and stream makes PyTorch allocate that
# handle's workspace (_virtual_cuda.cublas_workspace_bytes).
MATMULS = {torch.ops.aten.mm, torch.ops.aten.addmm, torch.ops.aten.bmm, torch.ops.aten.baddbmm,
           torch.ops.aten.addbmm, torch.ops.aten._addmm_activation, torch.ops.aten.addmv,
           torch.ops.aten.mv}

REDUCE_OPS = {"SUM": "sum", "AVG": "avg", "PRODUCT": "prod", "MIN": "min", "MAX": "max",
              "PREMUL_SUM": "sum"}


class Storage:
    """One storage's life. `sid` numbers storages in birth order; `nbytes` is the size the
    caching allocator is asked for (0: no allocation)."""
    __slots__ = ("sid", "nbytes", "stream", "role", "where", "ref", "dead", "op", "__weakref__")

    def __init__(self, sid, nbytes, stream, role, where):
        self.sid, self.nbytes, self.stream, self.role, self.where = sid, nbytes, stream, role, where
        self.ref, self.dead, self.op = None, False, None


class Recorder(TorchDispatchMode):
    def __init__(self, stream_of=None, ptr_of=None, virtual=False, stream_id=None):
        super().__init__()
        self.stream_id = stream_id or (lambda s: s.stream_id)   # a stream object's trace id
        self.next_event = 1
        self.virtual = virtual        # on the virtual device: random ops stand in (_virtual_cuda)
        self.events = []              # ("alloc", Storage) ("free", Storage) ("step", dict)
        self.live = WeakIdKeyDictionary()   # storage object -> Storage
        self.next_sid = 0
        self.stream_of = stream_of or _virtual_cuda.current_stream_id
        self.ptr_of = ptr_of          # on a GPU: the storage's address, to match the allocator
        self.mods = ModTracker()
        self.entered = {}             # module name -> when it last began its forward or backward
        self.clock = 0
        self.phase = "build"          # build | forward | backward | optimizer
        self.depth = 0
        self.groups = {}              # process group name -> its world ranks, in first use order
        self.meshes = []              # (dim names, shape, ranks) of each root DeviceMesh made
        self.group_calls = []         # the ranks of each new_group / split_group call, in order
        self.mesh_names = {}          # a 1-D slice's or flattening's group -> its dimension name
        self.owners = {}              # Storage.sid -> name from the program's objects
        self.program = None           # the training step, whose objects name storages
        self.closed = False           # past the recorded steps: deaths are the teardown's
        self.op = None                # the op whose outputs are being tracked
        self.workspaces = {}          # (thread, stream) -> its cuBLAS workspace
        self.suspended = 0            # inside DTensor's sharding propagation: nothing is real
        self._undo = []
        self._orig_resize = None
        self._opt_hooks = []

    # --- births and deaths ------------------------------------------------------------------
    def _where(self):
        """The innermost module running: of ModTracker's parents, those with no child among
        them, and of those the one that began last. In the backward pass a module whose
        gradient hooks have not fired yet is still among them (model.layers.1 while
        model.layers.0 runs), and the parents are a set, whose order changes from process to
        process: the name must not."""
        parents = [p for p in self.mods.parents if p != "Global"]
        inner = [p for p in parents if not any(q.startswith(p + ".") for q in parents)]
        return max(inner, key=lambda p: (self.entered.get(p, 0), p)) if inner else ""

    def _began(self, mod, *_):
        name = self.mods.get_known_fqn(mod) if mod is not None else None
        if name is not None:
            self.clock += 1
            self.entered[name] = self.clock

    def _role(self):
        if self.phase == "optimizer":
            return "opt"
        if self.phase == "build":
            return "init"
        return "act" if not self.mods.is_bw else "temp"

    def _born(self, st, nbytes=None):
        nbytes = st.nbytes() if nbytes is None else nbytes
        rec = Storage(self.next_sid, nbytes, self.stream_of(), self._role(), self._where())
        rec.op = self.op
        self.next_sid += 1
        if self.ptr_of is not None:
            rec.where = (rec.where, self.ptr_of(st))
        self.live[st] = rec
        rec.ref = weakref.ref(st, lambda _r, rec=rec: self._died(rec))
        if nbytes > 0:
            self.events.append(("alloc", rec))
        return rec

    def _died(self, rec):
        if rec.nbytes > 0 and not rec.dead and not self.closed:
            self.events.append(("free", rec))
        rec.dead = True

    def track(self, t):
        if not isinstance(t, torch.Tensor) or t.device.type != "cuda":
            return
        for st in get_untyped_storages(t):
            if st not in self.live:
                self._born(st)

    def storage_of(self, t):
        sts = list(get_untyped_storages(t))
        if len(sts) != 1:
            return None
        st = sts[0]
        if st not in self.live:
            self._born(st)
        return self.live[st]

    def _resize(self, st, size):
        rec = self.live.get(st)
        old = st.nbytes()
        self._orig_resize(st, size)
        if rec is None or old == size:
            return
        # The storage's memory is replaced: a new block first (the data is copied into it),
        # then the old one freed; resize_(0) only frees, resize_ from 0 only allocates.
        new = Storage(self.next_sid, size, self.stream_of(), self._role(), self._where())
        self.next_sid += 1
        if self.ptr_of is not None:
            new.where = (new.where, self.ptr_of(st))
        if size > 0:
            self.events.append(("alloc", new))
        self._died(rec)
        rec.ref = None
        new.ref = weakref.ref(st, lambda _r, rec=new: self._died(rec))
        self.live[st] = new
        if rec.sid in self.owners:
            self.owners.setdefault(new.sid, self.owners[rec.sid])

    def record_stream(self, t, stream):
        rec = self.storage_of(t)
        if rec is not None and rec.nbytes > 0:
            self.events.append(("step", {"record_stream": rec, "stream": stream.stream_id}))

    def _cublas_workspace(self):
        """On the virtual device: the cuBLAS workspace a GPU run allocates at the first matmul of
        each thread (the program's, autograd's device thread) and stream, never freed."""
        import threading
        key = (threading.get_ident(), self.stream_of())
        if key in self.workspaces or _virtual_cuda._state.workspace <= 0:
            return
        rec = Storage(self.next_sid, _virtual_cuda._state.workspace, key[1], "cublas", "")
        self.next_sid += 1
        self.workspaces[key] = rec
        self.owners[rec.sid] = "cublas.workspace"
        self.events.append(("alloc", rec))

    # --- events and synchronization ------------------------------------------------------
    def _eid(self, event, new=False):
        eid = getattr(event, "_memlife_event", None)
        if eid is None or new:
            eid = self.next_event
            self.next_event += 1
            try:
                event._memlife_event = eid
            except AttributeError:
                pass
        return eid

    def on_sync(self, what, *objs):
        """A stream or event call of the program (_virtual_cuda's, or torch.cuda's on a GPU):
        the allocator's pools do not depend on them, but lint's races and the time model do."""
        sid = self.stream_id
        ev = self.events
        if what == "record":
            stream, event = objs
            ev.append(("step", {"record": self._eid(event), "stream": sid(stream)}))
        elif what == "wait_event":
            stream, event = objs
            if getattr(event, "_memlife_event", None) is not None:
                ev.append(("step", {"wait": event._memlife_event, "stream": sid(stream)}))
        elif what == "wait_stream":
            stream, other = objs
            eid = self.next_event
            self.next_event += 1
            ev.append(("step", {"record": eid, "stream": sid(other)}))
            ev.append(("step", {"wait": eid, "stream": sid(stream)}))
        elif what == "sync_device":
            ev.append(("step", {"sync": "device"}))
        elif what == "sync_stream":
            ev.append(("step", {"sync": "stream", "stream": sid(objs[0])}))
        elif what == "sync_event":
            if getattr(objs[0], "_memlife_event", None) is not None:
                ev.append(("step", {"sync": "event", "event": objs[0]._memlife_event}))

    # --- collectives ------------------------------------------------------------------------
    def _group(self, func, args):
        """The process group's name ("world" for one of every rank in order) and size."""
        try:
            pg = CollectiveOp.get_process_group(func, args)
        except Exception:
            return "world", None
        dist = torch.distributed
        name = getattr(pg, "group_name", None) or "world"
        try:
            size = pg.size()
        except Exception:
            size = None
        try:
            ranks = dist.get_process_group_ranks(pg)
        except Exception:
            ranks = None
        # A group of every rank in order is the world's communicator (FSDP2's default mesh
        # makes its own group of all ranks).
        if size == dist.get_world_size() and ranks in (None, list(range(size))):
            name = "world"
        if name != "world" and name not in self.groups:
            if ranks is None:
                raise RuntimeError(f"process group '{name}' of a {func.name()} has no ranks "
                                   "that torch.distributed.get_process_group_ranks can tell")
            self.groups[name] = ranks
        return name, size

    def _made_group(self, ranks, sort_ranks=True):
        """A new_group call: every rank makes every group, so these calls are the partitions."""
        if ranks is None:
            ranks = range(torch.distributed.get_world_size())
        ranks = [int(r) for r in ranks]
        self.group_calls.append(sorted(ranks) if sort_ranks else ranks)

    def _made_mesh(self, mesh):
        if getattr(mesh, "_root_mesh", None) is not None:
            # a slice or a flattening of a root mesh: its group is of the root's dimensions,
            # and a flattening's name ("dp" for dp_out x dp_in) is the program's for it
            names = mesh.mesh_dim_names or ()
            if len(names) == 1:
                try:
                    self.mesh_names.setdefault(mesh.get_group(0).group_name, names[0])
                except Exception:
                    pass
            return
        try:
            ranks = [int(r) for r in mesh.mesh.flatten().tolist()]
        except Exception:
            ranks = None
        self.meshes.append((tuple(mesh.mesh_dim_names or ()), tuple(mesh.shape), ranks))

    def _patch_groups(self):
        """Sees the program's meshes and new_group / split_group calls."""
        import torch.distributed.distributed_c10d as c10d_mod
        from torch.distributed import device_mesh
        recorder = self
        orig_tag = c10d_mod._new_group_with_tag

        def new_group_with_tag(ranks=None, *a, **k):
            recorder._made_group(ranks, k.get("sort_ranks", True))
            return orig_tag(ranks, *a, **k)
        self._undo.append((c10d_mod, "_new_group_with_tag", orig_tag))
        c10d_mod._new_group_with_tag = new_group_with_tag
        orig_split = c10d_mod.split_group

        def split_group(parent_pg=None, split_ranks=None, *a, **k):
            if parent_pg is None and split_ranks:
                for g in split_ranks:
                    recorder._made_group(g)
            return orig_split(parent_pg, split_ranks, *a, **k)
        for mod in (c10d_mod, torch.distributed, device_mesh):
            if getattr(mod, "split_group", None) is orig_split:
                self._undo.append((mod, "split_group", orig_split))
                setattr(mod, "split_group", split_group)
        cls = getattr(device_mesh, "DeviceMesh", None)
        if cls is not None and "__init__" in cls.__dict__:
            orig_init = cls.__dict__["__init__"]

            def init(mesh, *a, **k):
                orig_init(mesh, *a, **k)
                recorder._made_mesh(mesh)
            self._undo.append((cls, "__init__", orig_init))
            cls.__init__ = init

    def _collective(self, func, args, kwargs, res):
        kind, where = COLLECTIVES[func]
        send_t, recv_t = where(args, res)
        send, recv = self.storage_of(send_t), self.storage_of(recv_t)
        group, size = self._group(func, args)
        op = None
        for a in args:
            if isinstance(a, torch.distributed.ReduceOp) or type(a).__name__ == "ReduceOp":
                op = REDUCE_OPS.get(str(a).split(".")[-1].upper(), "sum")
            elif isinstance(a, str) and a.upper() in REDUCE_OPS and kind != "broadcast":
                op = REDUCE_OPS[a.upper()]
        step = {"collective": kind, "send": (send, _view(send_t)), "recv": (recv, _view(recv_t)),
                "group": group, "group_size": size, "stream": self.stream_of(), "op": op,
                "root": ROOTS[func](args) if func in ROOTS else None,
                "dtype": str(send_t.dtype).replace("torch.", "")}
        self.events.append(("step", step))

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        # A tensor subclass (DTensor) first desugars into ops on its local tensors, which are
        # what holds memory.
        if any(t is not torch.Tensor and issubclass(t, torch.Tensor) and
               getattr(t, "__torch_dispatch__", None) is not None and
               t.__name__ == "DTensor" for t in types):
            return NotImplemented
        kwargs = kwargs or {}
        # DTensor's sharding propagation runs ops under a FakeTensorMode of its own to learn the
        # outputs' shapes; they allocate nothing on the device (MemTracker skips them alike).
        if self.suspended or active_fake_mode() is not self._fake_on_entry:
            return func(*args, **kwargs)
        res = _virtual_cuda.random_stand_in(func, args, kwargs) if self.virtual else \
            _virtual_cuda.NOT_RANDOM
        if res is _virtual_cuda.NOT_RANDOM:
            if self.virtual and _virtual_cuda.runs_on_host(args, kwargs):
                from torch._subclasses.fake_tensor import unset_fake_temporarily
                with unset_fake_temporarily():
                    res = func(*args, **kwargs)
            else:
                res = func(*args, **kwargs)
        flat, _ = tree_flatten(res)
        self.op = func.name()
        for t in flat:
            self.track(t)
        self.op = None
        if self.virtual and func.overloadpacket in MATMULS:
            self._cublas_workspace()
        if func in COLLECTIVES:
            self._collective(func, args, kwargs, res)
        elif func in collective_ops and func not in sync_ops:
            # a collective the schedule language has no row for (allgather_ into a list of
            # tensors, as DistributedDataParallel's start issues): its buffers are the
            # program's already, so it stands as work on its stream
            self.events.append(("step", {"compute": func.name(), "stream": self.stream_of()}))
        return res

    # --- phases -----------------------------------------------------------------------------
    def name_owners(self):
        """Names from the program's objects that are alive now (gradients are, right before
        the optimizer step; optimizer state after the first)."""
        if self.program is not None:
            from ._snapshot import owners_of
            for sid, name in owners_of(self, self.program).items():
                self.owners.setdefault(sid, name)

    def _opt_pre(self, opt, args, kwargs):
        self.name_owners()
        self.phase = "optimizer"
        self.events.append(("step", {"region": "optimizer", "begin": True}))

    def _opt_post(self, opt, args, kwargs):
        self.events.append(("step", {"region": "optimizer", "begin": False}))
        self.phase = "step"

    def _mod_event(self, kind):
        def hook(mod, *a):
            name = self.mods._get_mod_name(mod)
            self.events.append(("step", {"module": name, "kind": kind}))
        return hook

    def __enter__(self):
        self._orig_resize = torch.UntypedStorage.resize_
        orig = self._orig_resize
        recorder = self

        def resize_(st, size):
            return recorder._resize(st, size) if recorder._orig_resize else orig(st, size)

        torch.UntypedStorage.resize_ = resize_
        from torch.optim.optimizer import (register_optimizer_step_post_hook,
                                           register_optimizer_step_pre_hook)
        self._opt_hooks = [register_optimizer_step_pre_hook(self._opt_pre),
                           register_optimizer_step_post_hook(self._opt_post)]
        self.mods.register_user_hooks(pre_fw_hook=self._began, pre_bw_hook=self._began)
        self.mods.__enter__()
        self._fake_on_entry = active_fake_mode()
        self._suspend_in_sharding_propagation()
        if torch.distributed.is_initialized():
            self._patch_groups()
        return super().__enter__()

    def _suspend_in_sharding_propagation(self):
        """DTensor learns its outputs' global shapes by running the op on fake tensors, under
        the fake mode already active when there is one (ours, on the virtual device): those
        tensors are no memory of the program's."""
        try:
            from torch.distributed.tensor._sharding_prop import ShardingPropagator
        except ImportError:
            return
        recorder = self
        for name in ("_propagate_tensor_meta_non_cached", "_propagate_tensor_meta"):
            orig = ShardingPropagator.__dict__.get(name)
            if orig is None:
                continue

            def wrapped(*a, _orig=orig, **k):
                recorder.suspended += 1
                try:
                    return _orig(*a, **k)
                finally:
                    recorder.suspended -= 1
            setattr(ShardingPropagator, name, wrapped)
            self._undo.append((ShardingPropagator, name, orig))

    def __exit__(self, *exc):
        r = super().__exit__(*exc)
        self.mods.__exit__(*exc)
        self.mods.clear_user_hooks()
        for h in self._opt_hooks:
            h.remove()
        torch.UntypedStorage.resize_ = self._orig_resize
        self._orig_resize = None
        for obj, name, orig in reversed(self._undo):
            setattr(obj, name, orig)
        self._undo = []
        return r


def _view(t):
    """(element offset, element count, element size) of a tensor within its storage."""
    return (t.storage_offset(), t.numel(), t.element_size())


def patch_cuda(rec):
    """On a GPU: torch.cuda's stream and event calls also tell the recorder. Returns the undo."""
    cuda = torch.cuda
    saved = []

    def wrap(obj, name, what, order):
        orig = getattr(obj, name)

        def call(*args, **kwargs):
            objs = order(args, kwargs)
            if objs is not None:
                rec.on_sync(what, *objs)
            return orig(*args, **kwargs)
        saved.append((obj, name, orig))
        setattr(obj, name, call)

    cur = cuda.current_stream
    wrap(cuda.Stream, "wait_event", "wait_event", lambda a, k: (a[0], a[1]))
    wrap(cuda.Stream, "wait_stream", "wait_stream", lambda a, k: (a[0], a[1]))
    wrap(cuda.Stream, "synchronize", "sync_stream", lambda a, k: (a[0],))
    wrap(cuda.Event, "record", "record",
         lambda a, k: ((a[1] if len(a) > 1 and a[1] is not None else k.get("stream") or cur()), a[0]))
    wrap(cuda.Event, "wait", "wait_event",
         lambda a, k: ((a[1] if len(a) > 1 and a[1] is not None else k.get("stream") or cur()), a[0]))
    wrap(cuda.Event, "synchronize", "sync_event", lambda a, k: (a[0],))
    wrap(cuda, "synchronize", "sync_device", lambda a, k: ())
    # torch.accelerator's streams are torch.Stream, whose methods cannot be wrapped: the current
    # one is handed out as torch.cuda's, the same stream.
    saved.append((torch.accelerator, "current_stream", torch.accelerator.current_stream))
    torch.accelerator.current_stream = lambda device=None: cuda.current_stream()

    def undo():
        for obj, name, orig in reversed(saved):
            setattr(obj, name, orig)
    return undo
