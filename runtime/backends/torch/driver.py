#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""driver.py — memlife's torch backend on the Python side (runtime/backends/torch.c is the C side).

Each memlife rank starts one driver and drives it op by op over two pipes: the executor
(runtime/exec) still walks the plan, validates every collective, generates and judges data and
counts requested bytes; this process only holds torch tensors and calls torch.distributed.
So the data patterns and checks are memlife's one implementation (runtime/ir/data.h), not a
second one here that could disagree with it.

Protocol: one request line on stdin, one reply line on stdout ("ok ..." or "err MESSAGE"),
bytes after `write` requests and `read` replies. Buffers are torch.empty tensors of the
schedule's dtype (uint32/uint64 are stored as int32/int64: torch has no unsigned 32/64-bit
types; the bits are the same for sum and prod), views are slices of their bytes. Collectives
are torch.distributed calls through ProcessGroupNCCL on GPUs and gloo on CPUs; what gloo lacks
(reduce_scatter_tensor, all_gather_into_tensor) is emulated from all_reduce and all_gather, and
the hello line says so. A schedule's communicators are torch groups: `group` requests (every
group of every communicator, in one order, on every rank) make them with new_group, and a
collective names its communicator, its counts and root in the group's terms. Streams are torch.cuda.Stream with torch.cuda.Event; on CPUs every op
completes before the next, as on memlife's host backend.

Standard library and torch only. Exit codes: 0 after `quit`, 9 when torch cannot be imported
(memlife then tries the next interpreter), 3 on a failure it could not report."""
import datetime
import math
import os
import sys
import time

try:
    import torch
    import torch.distributed as dist
except ImportError:  # memlife tries the next python3, and names them all if none has torch
    sys.exit(9)

DTYPES = {
    "int8": torch.int8, "uint8": torch.uint8, "int32": torch.int32, "uint32": torch.int32,
    "int64": torch.int64, "uint64": torch.int64, "float16": torch.float16,
    "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64,
}
OPS = {"sum": dist.ReduceOp.SUM, "prod": dist.ReduceOp.PRODUCT, "max": dist.ReduceOp.MAX,
       "min": dist.ReduceOp.MIN}
if hasattr(dist.ReduceOp, "AVG"):   # NCCL has it; gloo refuses it when called
    OPS["avg"] = dist.ReduceOp.AVG


class Driver:
    def __init__(self, rank, world, timeout):
        self.rank, self.world = rank, world
        self.cuda = torch.cuda.is_available() and os.environ.get("MEMLIFE_TORCH_DEVICE") != "cpu"
        if self.cuda:
            local = int(os.environ.get("LOCAL_RANK", os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", "0")))
            self.device = torch.device("cuda", local % torch.cuda.device_count())
            torch.cuda.set_device(self.device)
            free, total = torch.cuda.mem_get_info(self.device)
            self.device_at_start = total - free
        else:
            self.device = torch.device("cpu")
            self.device_at_start = 0
        backend = "nccl" if self.cuda else "gloo"
        dist.init_process_group(backend, rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=timeout))
        self.backend = backend
        self.bufs = {}      # id -> (uint8 view of the whole buffer, dtype name)
        self.groups = {}    # communicator -> this rank's group of it (new_group)
        self.streams = {}   # index -> torch.cuda.Stream (0: the current default stream)
        self.events = {}
        self.align_buf = None   # bench's aligning all_reduce (time_begin)
        self.worked = set()     # streams given work since the last time_begin
        # MEMLIFE_TORCH_SNAPSHOT=FILE (a GPU only): PyTorch's own allocator history from the
        # schedule's first allocation on, dumped to FILE at the end, so that where cudaMalloc put
        # each segment can be read after a run (tests/torch/segment_order.py); recording keeps
        # host-side metadata only and changes no allocator decision
        self.snapshot = os.environ.get("MEMLIFE_TORCH_SNAPSHOT") or None
        self.recording = False
        if self.snapshot:
            if not self.cuda:
                raise ValueError("MEMLIFE_TORCH_SNAPSHOT needs a GPU: on CPUs torch has no "
                                 "caching allocator to record")
            folder = os.path.dirname(os.path.abspath(self.snapshot))
            if not os.access(folder, os.W_OK):
                raise ValueError("MEMLIFE_TORCH_SNAPSHOT=%s: the folder %s is not writable"
                                 % (self.snapshot, folder))
        # what this process group lacks, emulated from what it has
        self.emulated = []
        if backend == "gloo":
            self.emulated = ["reduce_scatter=all_reduce", "all_gather=all_gather_list"]

    # ---- helpers ---------------------------------------------------------------------------
    def stream(self, s):
        if not self.cuda:
            return None
        if s == 0:
            return torch.cuda.default_stream(self.device)
        if s not in self.streams:
            self.streams[s] = torch.cuda.Stream(self.device)
        return self.streams[s]

    def event(self, e):
        if e not in self.events:
            self.events[e] = torch.cuda.Event()
        return self.events[e]

    def span(self, buf, off, nbytes):
        raw = self.bufs[buf][0]
        if off < 0 or off + nbytes > raw.numel():
            raise ValueError("bytes [%d, %d) outside buffer %d of %d bytes" % (off, off + nbytes, buf, raw.numel()))
        return raw[off:off + nbytes]

    def view(self, buf, off, count, dtype):
        dt = DTYPES[dtype]
        es = torch.tensor([], dtype=dt).element_size()
        return self.span(buf, off, count * es).view(dt)

    # ---- requests --------------------------------------------------------------------------
    def alloc(self, buf, nbytes, count, dtype, stream):
        if self.snapshot and not self.recording:
            # the settings record_snapshots.py recorded the fixtures with
            torch.cuda.memory._record_memory_history(enabled="all", context="all",
                                                     stacks="python", max_entries=1000000)
            self.recording = True
        dt = DTYPES[dtype]
        es = torch.tensor([], dtype=dt).element_size()
        ctx = torch.cuda.stream(self.stream(stream)) if self.cuda else _null()
        with ctx:
            if count * es == nbytes:
                t = torch.empty(count, dtype=dt, device=self.device)
            else:
                t = torch.empty(nbytes, dtype=torch.uint8, device=self.device)
        self.bufs[buf] = (t.view(torch.uint8), dtype, t)
        return ""

    def free(self, buf):
        del self.bufs[buf]
        return ""

    def group(self, comm, index, *ranks):
        # every rank asks for every group of every communicator, in one order: torch's
        # new_group is collective over the whole world, members or not
        members = [int(r) for r in ranks]
        pg = dist.new_group(ranks=members)
        if self.rank in members:
            self.groups[int(comm)] = (pg, members)
        return ""

    def on(self, comm):
        """Communicator comm as this rank sees it: the process group (None: the world), its
        size, this rank's rank in memlife's (NCCL's) order of the members, the world rank of
        each member in that order, and order[t]: the member that torch's rank t is. torch
        numbers a group's members by their world ranks (new_group sorts them), NCCL by the
        split's key: where they differ the shards are permuted around torch's calls."""
        if not comm:
            return None, self.world, self.rank, list(range(self.world)), None
        if comm not in self.groups:
            raise ValueError("this rank is in no group of communicator %d" % comm)
        pg, members = self.groups[comm]
        order = [members.index(r) for r in sorted(members)]
        return (pg, len(members), members.index(self.rank), members,
                None if order == sorted(order) else order)

    @staticmethod
    def _permuted(t, order, inverse=False):
        """t's len(order) equal chunks in torch's rank order (chunk order[k] at k), or back."""
        chunks = t.chunk(len(order))
        if not inverse:
            return torch.cat([chunks[m] for m in order])
        out = [None] * len(order)
        for k, m in enumerate(order):
            out[m] = chunks[k]
        return torch.cat(out)

    def coll(self, name, sbuf, soff, rbuf, roff, send_count, recv_count, dtype, op, root, stream,
             in_place, comm=0):
        # the element counts of both sides come from memlife's table (runtime/ir/coll.c), for
        # the group's size; root is the group's rank (NCCL's convention), torch wants the world's
        pg, w, me, members, order = self.on(comm)
        root = members[root] if 0 <= root < w else root
        send = self.view(sbuf, soff, send_count, dtype)
        recv = self.view(rbuf, roff, recv_count, dtype)
        if dtype in ("uint32", "uint64") and op in ("max", "min"):
            raise ValueError("%s of %s: torch has no unsigned %s type, and a signed %s would order "
                             "the values differently" % (op, dtype, dtype[1:], op))
        rop = OPS[op]
        self.worked.add(stream)
        ctx = torch.cuda.stream(self.stream(stream)) if self.cuda else _null()
        with ctx:
            if name == "all_reduce":
                if not in_place:
                    recv.copy_(send)
                dist.all_reduce(recv, op=rop, group=pg)
            elif name == "reduce_scatter":
                if self.backend == "gloo":   # emulated: all_reduce of a copy, then this rank's shard
                    tmp = send.clone()
                    dist.all_reduce(tmp, op=rop, group=pg)
                    recv.copy_(tmp[me * recv_count:(me + 1) * recv_count])
                elif order:   # torch's rank t gets the shard of member order[t]
                    dist.reduce_scatter_tensor(recv, self._permuted(send, order), op=rop, group=pg)
                else:
                    dist.reduce_scatter_tensor(recv, send, op=rop, group=pg)
            elif name == "all_gather":
                if self.backend == "gloo":   # emulated: all_gather into a list, then concatenated
                    parts = [torch.empty_like(send) for _ in range(w)]
                    dist.all_gather(parts, send.clone(), group=pg)
                    got = torch.cat(parts)
                    recv.copy_(self._permuted(got, order, inverse=True) if order else got)
                elif order:
                    got = torch.empty_like(recv)
                    dist.all_gather_into_tensor(got, send, group=pg)
                    recv.copy_(self._permuted(got, order, inverse=True))
                else:
                    dist.all_gather_into_tensor(recv, send, group=pg)
            elif name == "broadcast":
                if self.rank == root and not in_place:
                    recv.copy_(send)
                dist.broadcast(recv, src=root, group=pg)
            elif name == "reduce":
                # torch's reduce works in place on its tensor; NCCL's out-of-place reduce leaves
                # send alone, so the reduction runs on a copy that becomes recv on the root
                tmp = send if in_place and self.backend == "nccl" else send.clone()
                dist.reduce(tmp, dst=root, op=rop, group=pg)
                if self.rank == root and tmp is not recv:
                    recv.copy_(tmp)
            elif name == "all_to_all":   # never in place: send and recv are apart
                if order:
                    got = torch.empty_like(recv)
                    dist.all_to_all_single(got, self._permuted(send, order), group=pg)
                    recv.copy_(self._permuted(got, order, inverse=True))
                else:
                    dist.all_to_all_single(recv, send, group=pg)
            else:
                raise ValueError("no collective '%s' in the torch backend" % name)
        if not self.cuda:
            pass   # gloo's calls above completed before returning
        return ""

    def sync(self, kind, s, e):
        if self.cuda:
            if kind == "device":
                torch.cuda.synchronize(self.device)
            elif kind == "stream":
                self.stream(s).synchronize()
            else:
                self.event(e).synchronize()
        return ""

    def record(self, e, s):
        if self.cuda:
            self.event(e).record(self.stream(s))
        return ""

    def wait(self, e, s):
        if self.cuda:
            self.stream(s).wait_event(self.event(e))
        return ""

    def write(self, buf, off, data):
        src = torch.frombuffer(bytearray(data), dtype=torch.uint8) if data else torch.empty(0, dtype=torch.uint8)
        self.span(buf, off, len(data)).copy_(src)
        return ""

    def read(self, buf, off, n):
        if self.cuda:
            torch.cuda.synchronize(self.device)
        return self.span(buf, off, n).cpu().numpy().tobytes() if n else b""

    def copy(self, dbuf, doff, sbuf, soff, n, stream):
        self.worked.add(stream)
        ctx = torch.cuda.stream(self.stream(stream)) if self.cuda else _null()
        with ctx:
            self.span(dbuf, doff, n).copy_(self.span(sbuf, soff, n))
        return ""

    def conf(self, *words):
        text = " ".join(words)
        # a schedule's `torch: {conf:}` ("-": none), before its first allocation: PyTorch reads
        # these keys again when they are set at run time
        if self.cuda and text != "-":
            # 2.11 deprecates the torch.cuda name (a FutureWarning on every run) for this one
            setter = getattr(torch._C, "_accelerator_setAllocatorSettings", None)
            (setter or torch.cuda.memory._set_allocator_settings)(text)
        return ""

    def limit(self, n):
        # the schedule's torch `limit:` (the torch view's allowed maximum) as PyTorch's own:
        # set_per_process_memory_fraction makes allowed_memory_maximum (size_t)(fraction * total),
        # total from cudaMemGetInfo; the fraction is the double whose product is exactly the
        # limit above what the allocator holds now (the view starts from an empty allocator)
        if not self.cuda:
            return ""
        total = torch.cuda.mem_get_info(self.device)[1]
        want = n + torch.cuda.memory_reserved(self.device)
        if want > total:
            raise ValueError("torch limit %d bytes is more than the device's %d" % (want, total))
        f = want / total
        for _ in range(64):
            got = int(f * total)
            if got == want:
                torch.cuda.set_per_process_memory_fraction(f, self.device)
                return "%d" % got
            f = math.nextafter(f, 2.0 if got < want else 0.0)
        raise ValueError("no memory fraction gives exactly %d of %d bytes" % (want, total))

    def open_streams(self, n):
        # streams 1 .. n-1 now, before the baseline (stream 0 is the default stream)
        for s in range(1, n):
            self.stream(s)
        if self.cuda:
            torch.cuda.synchronize(self.device)
        return ""

    def record_stream(self, buf, s):
        if self.cuda:
            self.bufs[buf][2].record_stream(self.stream(s))
        return ""

    def empty_cache(self):
        if self.cuda:
            torch.cuda.empty_cache()
        return ""

    def mem(self):
        if not self.cuda:
            return "0 0 0 0 0 0 0"
        free, total = torch.cuda.mem_get_info(self.device)
        st = torch.cuda.memory_stats(self.device)
        return "1 %d %d %d %d %d %d" % (
            total - free, torch.cuda.memory_allocated(self.device),
            torch.cuda.max_memory_allocated(self.device), torch.cuda.memory_reserved(self.device),
            torch.cuda.max_memory_reserved(self.device), st.get("requested_bytes.all.current", 0))

    def time_begin(self, align):
        # the start of one timed span of `memlife bench` (torch.c's t_time_begin): with align, a
        # one-element all_reduce first lines the ranks up (on the device under NCCL, on the host
        # under gloo, whose calls return when done), so that skew stays out of the span
        if align:
            if self.align_buf is None:   # once: later spans allocate nothing
                self.align_buf = torch.zeros(1, dtype=torch.float32, device=self.device)
            dist.all_reduce(self.align_buf)
        self.worked = set()
        if self.cuda:
            # an event on the default stream that every other stream waits for, as memlife's
            # cuda backend marks a span's start
            self.span_start = torch.cuda.Event(enable_timing=True)
            self.span_start.record(self.stream(0))
            for s in self.streams.values():
                s.wait_event(self.span_start)
        else:
            self.span_t0 = time.perf_counter()
        return ""

    def time_end(self):
        # seconds from the span's start to the end of its last stream; on CPUs every op ended
        # before its reply, so the clock here is the span (it holds the requests' round trips,
        # which are part of driving torch from memlife, in both bench modes)
        if self.cuda:
            # the default stream and the streams the span gave work to: an idle stream's end
            # event would complete at this request's host time, not at the GPU's (as in memlife's
            # cuda backend)
            ends = []
            for s in [self.stream(0)] + [self.stream(k) for k in sorted(self.worked) if k]:
                e = torch.cuda.Event(enable_timing=True)
                e.record(s)
                ends.append(e)
            torch.cuda.synchronize(self.device)
            return "%.9f" % (max(self.span_start.elapsed_time(e) for e in ends) / 1000.0)
        return "%.9f" % (time.perf_counter() - self.span_t0)

    def warmup(self, *names):
        # one small call of each collective the plans use, on each communicator ("C:name";
        # the world's bare), so that NCCL connects before the baseline (as memlife's cuda
        # backend does)
        for word in names:
            comm, name = word.split(":") if ":" in word else (0, word)
            self.warm(int(comm), name)
        if self.cuda:
            torch.cuda.synchronize(self.device)
            # the baseline starts from an empty caching allocator, as the torch view does
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats(self.device)
            free, total = torch.cuda.mem_get_info(self.device)
            return "%d" % max(0, total - free - self.device_at_start)
        return "0"

    def warm(self, comm, name):
        pg, w, _, members, _ = self.on(comm)
        x = torch.zeros(w * 2, dtype=torch.float32, device=self.device)
        if name == "all_reduce":
            dist.all_reduce(x, group=pg)
        elif name == "reduce_scatter" and self.backend == "nccl":
            dist.reduce_scatter_tensor(x[:2], x, group=pg)
        elif name == "all_gather" and self.backend == "nccl":
            dist.all_gather_into_tensor(x, x[:2].clone(), group=pg)
        elif name == "broadcast":
            dist.broadcast(x, src=members[0], group=pg)
        elif name == "reduce":
            dist.reduce(x, dst=members[0], group=pg)
        elif name == "all_to_all":
            dist.all_to_all_single(torch.empty_like(x), x, group=pg)


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def main():
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    timeout = float(os.environ.get("MEMLIFE_TIMEOUT", "60"))
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    try:
        d = Driver(rank, world, timeout)
    except Exception as e:  # noqa: BLE001 - every failure goes back as one line
        out.write(("err %s: %s\n" % (type(e).__name__, str(e).replace("\n", " "))).encode())
        out.flush()
        return 3
    out.write(("hello %s %s %s %s\n" % (torch.__version__, d.backend, d.device,
                                        ",".join(d.emulated) or "-")).encode())
    out.flush()
    ints = {"alloc": (0, 1, 2, 4), "free": (0,), "coll": (1, 2, 3, 4, 5, 6, 9, 10, 11, 12),
            "sync": (1, 2), "record": (0, 1), "wait": (0, 1), "write": (0, 1, 2),
            "read": (0, 1, 2), "copy": (0, 1, 2, 3, 4, 5), "record_stream": (0, 1), "open_streams": (0,), "limit": (0,),
            "time_begin": (0,)}
    while True:
        line = inp.readline()
        if not line:
            return 0   # memlife is gone
        words = line.decode().split()
        cmd, args = words[0], words[1:]
        if cmd == "quit":
            break
        try:
            for k in ints.get(cmd, ()):
                args[k] = int(args[k])
            if cmd == "write":
                data = inp.read(args[2]) if args[2] else b""
                reply, payload = d.write(args[0], args[1], data), None
            elif cmd == "read":
                payload = d.read(*args)
                reply = "%d" % len(payload)
            else:
                reply, payload = getattr(d, cmd)(*args), None
            out.write(("ok %s\n" % reply).encode())
            if payload:
                out.write(payload)
        except Exception as e:  # noqa: BLE001
            out.write(("err %s: %s\n" % (type(e).__name__, str(e).replace("\n", " "))).encode())
        out.flush()
    if d.recording:
        try:
            torch.cuda.memory._dump_snapshot(d.snapshot)
        except Exception as e:  # noqa: BLE001 - the run's result stands; say what is missing
            sys.stderr.write("memlife torch driver: MEMLIFE_TORCH_SNAPSHOT=%s not written: %s\n"
                             % (d.snapshot, e))
    try:
        dist.destroy_process_group()
    except Exception:  # noqa: BLE001
        pass
    out.write(b"ok\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
