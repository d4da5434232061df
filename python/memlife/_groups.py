# SPDX-License-Identifier: MIT
"""The process groups a capture's collectives ran on, as facts the importer turns into a
schedule's communicators (`mesh:`, `comms:`).

The recorder sees three things: each process group a collective ran on, with its world ranks in
the group's order (torch.distributed.get_process_group_ranks); every DeviceMesh the program made
(its shape and dimension names); every new_group / split_group call, in order, with the ranks it
named (torch requires every rank to make every group, in the same order, so the calls rank R
sees are the ones every rank makes, its own group among them).

A group is described by the first of:
- `mesh_dims`: the dimensions of the program's mesh whose ranks it is (the ranks of rank R's
  coordinate that differ only in those dimensions, row-major); a flattened sub-mesh names
  several, and `name` is the program's name for it (DeviceMesh._flatten's). Only a mesh whose ranks are 0..world-1 row-major (init_device_mesh's) is one the
  schedule's `mesh:` can say; the first mesh that explains a group is the schedule's;
- `partition`: the groups of the new_group calls around the group's own that together hold every
  rank of the world exactly once (the importer tells whether a color expression makes them);
- the group's ranks alone (every description carries them).
"""
import itertools


def _strides(shape):
    st, acc = [], 1
    for n in reversed(shape):
        st.append(acc)
        acc *= n
    return st[::-1]


def mesh_dims_of(shape, ranks, rank):
    """The dimensions (indices, outermost first) of a row-major mesh of `shape` whose group
    through `rank` is `ranks`, in that order; the fewest dimensions that do; None if none."""
    st = _strides(shape)
    coord = [rank // st[i] % shape[i] for i in range(len(shape))]
    for size in range(1, len(shape) + 1):
        for dims in itertools.combinations(range(len(shape)), size):
            base = sum(coord[i] * st[i] for i in range(len(shape)) if i not in dims)
            members = [base + sum(c * st[d] for c, d in zip(cs, dims))
                       for cs in itertools.product(*(range(shape[d]) for d in dims))]
            if members == ranks:
                return list(dims)
    return None


def partition_of(calls, ranks, world):
    """The groups of consecutive new_group calls that hold `ranks` (as a set) and cover the world
    once: the calls are cut where one overlaps the run before it or the run covers the world."""
    want = set(ranks)
    run, seen = [], set()
    for call in calls:
        if seen & set(call):
            run, seen = [], set()
        run.append(list(call))
        seen |= set(call)
        if len(seen) == world and sum(len(g) for g in run) == world:
            if any(set(g) == want for g in run):
                return run
            run, seen = [], set()
    return None


def _dim_names(names, n):
    """The mesh's dimension names, d0, d1, ... where the program gave none (or one that is no
    schedule name)."""
    out = []
    for i in range(n):
        name = names[i] if names and i < len(names) else None
        ok = isinstance(name, str) and name[:1].isalpha() and \
            all(c.isalnum() or c in "_-." for c in name) and name != "world"
        out.append(name if ok and name not in out else f"d{i}")
    return out


def describe(groups, meshes, calls, world, rank, mesh_names=None):
    """memlife_capture's `mesh` and `groups` (absent where every collective ran on the world):
    groups maps a process group's name to its ranks, meshes holds (dim names, shape, ranks) of
    each root mesh the program made, calls the ranks of each new_group call, mesh_names the
    program's name of a flattened sub-mesh's group (its `name`)."""
    out = {}
    usable = [(names, list(shape)) for names, shape, mranks in meshes
              if len(shape) and mranks == list(range(world))]
    chosen = None
    for name, ranks in groups.items():
        if name == "world":
            continue
        d = {"ranks": list(ranks)}
        for m in ([chosen] if chosen else usable):
            dims = mesh_dims_of(m[1], list(ranks), rank)
            if dims is not None:
                chosen = m
                names = _dim_names(m[0], len(m[1]))
                d["mesh_dims"] = [names[i] for i in dims]
                flat = (mesh_names or {}).get(name)
                if len(dims) > 1 and flat and _dim_names([flat], 1) == [flat]:
                    d["name"] = flat
                break
        else:
            part = partition_of(calls, ranks, world)
            if part is not None:
                d["partition"] = part
        out.setdefault("groups", {})[name] = d
    if chosen:
        out["mesh"] = {"dims": _dim_names(chosen[0], len(chosen[1])), "shape": chosen[1]}
    return out
