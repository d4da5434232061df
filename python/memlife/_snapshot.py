# SPDX-License-Identifier: MIT
"""The recorder's events as a snapshot-shaped dict (PyTorch's _dump_snapshot layout), the input
of memlife's importer, with memlife's annotations:

- an alloc entry may carry `memlife_name`: the buffer's name (module path and role);
- `{"action": "memlife_step", "step": {...}}` entries stand where a collective was issued or a
  region begins or ends; a collective names its buffers by the address of their alloc;
- the top-level `memlife_capture` says what was captured (program, world, rank, torch, mode).

on="cuda": the allocator's own trace is the sequence (every block, segment and deferred free,
exact); the recorder's storages are matched to its alloc entries by address, in order, and each
collective and region goes right after the trace entry of the last storage event before it.
Trace entries that no storage explains (cuBLAS workspaces, kernels' own scratch) keep their
frames. on="fake": the recorder's events are the trace, at made-up addresses, and there are no
segments (the torch model makes them).
"""
import os

import torch

from . import _groups
from ._record import Storage

ROLE_NAMES = {"init": "init", "act": "act", "temp": "temp", "opt": "opt"}


def _clean(text):
    out = []
    for c in text:
        out.append(c if c.isalnum() or c in "_-./" else "_")
    s = "".join(out).strip("/") or "x"
    if not s[0].isalpha():
        s = "t" + s
    return s[:100]


def _module_of(where):
    """ModTracker's 'model.layers.0.attn' or 'model.layers.0.attn (backward)' -> the path."""
    if isinstance(where, tuple):
        where = where[0]
    return where.split(" ")[0]


def name_storages(rec, owners):
    """Buffer names: what the program's objects say a storage is (owners: storage sid -> name),
    else its role and the innermost module it was made in."""
    names = {}
    # a buffer no object owns that a collective reads or writes is named after it:
    # all_gather/model.layers.3 (its output), reduce_scatter.send/... (its input)
    for kind, obj in rec.events:
        if kind == "step" and "collective" in obj:
            for side in ("recv", "send"):
                st = obj[side][0]
                if st is not None and st.sid not in owners and st.sid not in names:
                    suffix = "" if side == "recv" else ".send"
                    mod = _module_of(st.where)
                    names[st.sid] = _clean(f"{obj['collective']}{suffix}/{mod}" if mod
                                           else obj["collective"] + suffix)
    for kind, obj in rec.events:
        if kind != "alloc" or obj.sid in names:
            continue
        if obj.sid in owners:
            names[obj.sid] = _clean(owners[obj.sid])
            continue
        mod = _module_of(obj.where)
        role = ROLE_NAMES.get(obj.role, obj.role)
        names[obj.sid] = _clean(f"{role}/{mod}" if mod else role)
    return names


def program_objects(step):
    """The training step's objects by the names the program gave them: its closure's variables
    (`model`, `opt`, `x`) and the attributes model / optimizer, as (name, object) pairs."""
    out = []
    code = getattr(step, "__code__", None)
    cells = getattr(step, "__closure__", None) or ()
    for var, cell in zip(code.co_freevars if code else (), cells):
        if _safe_cell(cell):
            out.append((var, cell.cell_contents))
    for attr in ("model", "optimizer"):
        obj = getattr(step, attr, None)
        if obj is not None and all(o is not obj for _, o in out):
            out.append((attr, obj))
    return out


def owners_of(rec, step):
    """Names from the program's own objects, read while they are alive: parameters (local
    shards under FSDP2) and buffers by module path, their gradients (`.../grad`), the
    optimizer's state (`adam.exp_avg/...`), FSDP2's unsharded parameters (`.../unsharded`),
    and tensors the step holds by its variable name."""
    import torch.nn as nn
    owners = {}
    pname = {}

    def own(t, name):
        if not isinstance(t, torch.Tensor):
            return
        local = getattr(t, "_local_tensor", t)
        s = rec.live.get(local.untyped_storage())
        if s is not None and s.sid not in owners:
            owners[s.sid] = name

    objs = program_objects(step)
    for var, m in objs:
        if not isinstance(m, nn.Module):
            continue
        for n, p in m.named_parameters():
            pname[id(p)] = f"{var}.{n}"
            own(p, f"{var}.{n}")
            if p.grad is not None:
                own(p.grad, f"{var}.{n}/grad")
        for n, b in m.named_buffers():
            own(b, f"{var}.{n}")
        for n, sub in m.named_modules():
            state = getattr(sub, "_get_fsdp_state", None)
            try:
                group = state()._fsdp_param_group if state else None
            except Exception:
                group = None
            for fp in getattr(group, "fsdp_params", None) or []:
                base = pname.get(id(getattr(fp, "sharded_param", None)), "param")
                un = getattr(fp, "_unsharded_param", None)
                if un is not None:
                    own(un, base + "/unsharded")
    for var, o in objs:
        if isinstance(o, torch.optim.Optimizer):
            oname = type(o).__name__.lower()
            for p, st in o.state.items():
                for k, v in st.items():
                    own(v, f"{oname}.{k}/{pname.get(id(p), 'param')}")
        elif isinstance(o, torch.Tensor):
            own(o, var)
    return owners


def seed_module_names(rec, step):
    """Modules are named by the program's variable and their path (`model.layers.3.attn`), not
    by their class, in ModTracker's names (what act/ and temp/ buffers are named after)."""
    import torch.nn as nn
    for var, m in program_objects(step):
        if isinstance(m, nn.Module):
            for n, sub in m.named_modules():
                rec.mods._known_modules[sub] = f"{var}.{n}" if n else var


def _safe_cell(c):
    try:
        c.cell_contents
        return True
    except ValueError:
        return False


def _step_entry(step, addr_of):
    if "region" in step:
        return {"action": "memlife_step", "step": {"region": step["region"],
                                                   "begin": step["begin"]}}
    if "record_stream" in step:
        return None   # the allocator's trace says it (a deferred free_completed), on cuda
    if "module" in step:
        return None
    if "record" in step or "wait" in step or "sync" in step or "compute" in step:
        return {"action": "memlife_step", "step": step}
    out = {"collective": step["collective"], "group": step["group"], "op": step["op"],
           "stream": step["stream"]}
    if step.get("root") is not None:
        out["root"] = int(step["root"])
    for side in ("send", "recv"):
        rec, (off, count, esize) = step[side]
        if rec is None or addr_of(rec) is None:
            return None
        out[side] = {"addr": addr_of(rec), "offset": off * esize, "bytes": count * esize}
    return {"action": "memlife_step", "step": out}


def build(rec, snap, about):
    """The snapshot-shaped dict for the recorder `rec` (and the allocator's snapshot on cuda)."""
    owners = getattr(rec, "owners", {})
    names = name_storages(rec, owners)
    conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
    if snap is None:
        trace, addr = [], {}

        def addr_of(s):
            return addr.get(s.sid)

        for kind, obj in rec.events:
            if kind == "alloc":
                addr[obj.sid] = (obj.sid + 1) << 12
                trace.append({"action": "alloc", "addr": addr[obj.sid], "size": obj.nbytes,
                              "stream": obj.stream, "memlife_name": names[obj.sid],
                              "memlife_op": obj.op})
            elif kind == "free":
                e = {"addr": addr[obj.sid], "size": obj.nbytes, "stream": obj.stream}
                trace.append(dict(e, action="free_requested"))
                trace.append(dict(e, action="free_completed"))
            else:
                e = _step_entry(obj, addr_of)
                if e:
                    trace.append(e)
        out = {"segments": [], "device_traces": [trace],
               "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": conf}}
    else:
        out = _merge_cuda(rec, snap, names)
    out["memlife_capture"] = dict(about, **_groups.describe(
        rec.groups, rec.meshes, rec.group_calls, about["world"], about["rank"], rec.mesh_names))
    return out


def _merge_cuda(rec, snap, names):
    trace = snap["device_traces"][0]
    # storage events in order, each with the address it had
    queue = {}
    for i, (kind, obj) in enumerate(rec.events):
        if kind == "alloc":
            ptr = obj.where[1] if isinstance(obj.where, tuple) else None
            queue.setdefault(ptr, []).append((i, obj))
    pos = {}          # recorder event index -> trace index
    sid_addr = {}
    live_at = {}      # addr -> recorder alloc index being matched
    for j, e in enumerate(trace):
        a = e.get("action")
        if a == "alloc":
            q = queue.get(e.get("addr"))
            if q:
                i, obj = q.pop(0)
                pos[i] = j
                sid_addr[obj.sid] = e["addr"]
                e["memlife_name"] = names[obj.sid]
                e["memlife_op"] = obj.op
    # frees: the recorder's free of a matched storage stands at that address's next
    # free_requested after its alloc
    for i, (kind, obj) in enumerate(rec.events):
        if kind == "free" and obj.sid in sid_addr:
            a = sid_addr[obj.sid]
            start = max((j for ii, j in pos.items() if ii < i), default=0)
            for j in range(start, len(trace)):
                if trace[j].get("action") == "free_requested" and trace[j].get("addr") == a:
                    pos[i] = j
                    break
    inserts = {}
    last = -1
    for i, (kind, obj) in enumerate(rec.events):
        if i in pos:
            last = max(last, pos[i])
        elif kind == "step":
            e = _step_entry(obj, lambda s: sid_addr.get(s.sid))
            if e:
                inserts.setdefault(last, []).append(e)
    merged = list(inserts.get(-1, []))
    for j, e in enumerate(trace):
        merged.append(e)
        merged.extend(inserts.get(j, []))
    out = dict(snap)
    out["device_traces"] = [merged] + list(snap["device_traces"][1:])
    return out
