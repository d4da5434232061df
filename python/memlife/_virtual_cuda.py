# SPDX-License-Identifier: MIT
"""One CUDA device that exists only as far as a program's Python code can tell, for capturing on
a host without a GPU: under FakeTensorMode, tensors on "cuda" carry shapes, dtypes and a device
but no data, and what is left to stand in for is the Python API around them (torch.cuda's
device queries, streams, events, the caching allocator's counters, torch.accelerator).

Streams and events keep their real semantics where memory depends on them: an allocation belongs
to the stream current at the time (the caching allocator keeps one pool per stream), and
record_stream is reported to the recorder. Nothing waits, since nothing runs.

The device's properties are those of the GPU named by `gpu` (an H100 80 GB by default): programs
that pick kernels or sizes from them (compute capability, SM count, memory) see the target's.
"""
import contextlib
import itertools
import types

import torch

GPUS = {
    # name: (device name, total memory in bytes, (major, minor), multiprocessors)
    "h100-80gb": ("NVIDIA H100 80GB HBM3", 85029158912, (9, 0), 132),
    "h200": ("NVIDIA H200", 150110011392, (9, 0), 132),
    "a100-80gb": ("NVIDIA A100-SXM4-80GB", 85198045184, (8, 0), 108),
    "a100-40gb": ("NVIDIA A100-SXM4-40GB", 42298834944, (8, 0), 108),
}


class VirtualStream:
    """A stand-in for torch.cuda.Stream. `stream_id` is what the recorder writes as the stream of
    the allocations made while this stream is current: 0 for the default stream, then 1, 2, ...
    in creation order (a real snapshot has the cudaStream_t's address; memlife renames both to
    s1, s2, ... in order of first use)."""

    _ids = itertools.count(1)

    def __init__(self, device=None, priority=0, stream_id=None, **kwargs):
        self.stream_id = next(VirtualStream._ids) if stream_id is None else stream_id
        self.priority = priority
        self.device = torch.device("cuda", 0)
        self.device_index = 0
        self.device_type = 1  # c10::DeviceType::CUDA

    def wait_stream(self, stream):
        _notify("wait_stream", self, stream)

    def wait_event(self, event):
        _notify("wait_event", self, event)

    def record_event(self, event=None):
        event = event or VirtualEvent()
        event.record(self)
        return event

    def query(self):
        return True

    def synchronize(self):
        _notify("sync_stream", self)

    def is_capturing(self):
        return False

    def __eq__(self, other):
        return isinstance(other, VirtualStream) and other.stream_id == self.stream_id

    def __hash__(self):
        return hash(("virtual-stream", self.stream_id))

    def __repr__(self):
        return f"<virtual cuda stream {self.stream_id}>"


class VirtualEvent:
    def __init__(self, enable_timing=False, blocking=False, interprocess=False, **kwargs):
        self.stream = None

    def record(self, stream=None):
        self.stream = stream or _state.current
        _notify("record", self.stream, self)
        return self

    def wait(self, stream=None):
        _notify("wait_event", stream or _state.current, self)

    def query(self):
        return True

    def synchronize(self):
        _notify("sync_event", self)

    def elapsed_time(self, other):
        return 0.0


def cublas_workspace_bytes(capability):
    """The workspace PyTorch gives each cuBLAS handle and stream (CUDABlasHandlePool's
    getChosenWorkspaceSize): CUBLAS_WORKSPACE_CONFIG's `:SIZE_KiB:COUNT` pairs when set, else
    :4096:8 (32 MiB) from sm90 on and :4096:2:16:8 before. Measured on an H100 with PyTorch 2.11:
    two blocks of 33554432 bytes, from the first matmul of the forward thread and of autograd's
    device thread, held to the end."""
    import os
    conf = os.environ.get("CUBLAS_WORKSPACE_CONFIG", "")
    if not conf:
        conf = ":4096:8" if capability >= (9, 0) else ":4096:2:16:8"
    parts = [p for p in conf.split(":") if p]
    try:
        return sum(int(parts[k]) * 1024 * int(parts[k + 1]) for k in range(0, len(parts) - 1, 2))
    except ValueError:
        return 0


class _State:
    def __init__(self):
        self.default = VirtualStream(stream_id=0)
        self.current = self.default
        self.on_record_stream = None  # recorder's callback(tensor, stream)
        self.listener = None          # recorder's callback(what, *objects): events and syncs
        self.workspace = 0            # cuBLAS's workspace per thread and stream (bytes)


_state = _State()


def _notify(what, *objs):
    if _state.listener is not None:
        _state.listener(what, *objs)


def current_stream_id():
    return _state.current.stream_id


class _StreamContext:
    def __init__(self, stream):
        self.stream, self.saved = stream, None

    def __enter__(self):
        self.saved = _state.current
        if self.stream is not None:
            _state.current = self.stream
        return self.stream

    def __exit__(self, *exc):
        _state.current = self.saved
        return False


def _set_stream(stream):
    if stream is not None:
        _state.current = stream


@contextlib.contextmanager
def virtual_cuda(gpu="h100-80gb", on_record_stream=None):
    """Within this context torch.cuda says one device of kind `gpu` is there. Restores every
    attribute it replaced on exit."""
    if gpu not in GPUS:
        raise ValueError(f"unknown GPU '{gpu}' (known: {', '.join(sorted(GPUS))})")
    name, total, capability, sms = GPUS[gpu]
    props = types.SimpleNamespace(name=name, total_memory=total, major=capability[0],
                                  minor=capability[1], multi_processor_count=sms,
                                  is_integrated=False, is_multi_gpu_board=False,
                                  L2_cache_size=50 << 20, gcnArchName="", uuid="virtual",
                                  warp_size=32, max_threads_per_multi_processor=2048)
    from . import _hooks
    why = _hooks.install()
    if why:
        raise RuntimeError(why)
    _state.__init__()
    _state.on_record_stream = on_record_stream
    _state.workspace = cublas_workspace_bytes(capability)
    cuda = torch.cuda

    def record_stream(tensor, stream):
        if _state.on_record_stream is not None:
            _state.on_record_stream(tensor, stream)

    patches = [
        (cuda, "is_available", lambda: True),
        (cuda, "is_initialized", lambda: True),
        (cuda, "_lazy_init", lambda: None),
        (cuda, "init", lambda: None),
        (cuda, "device_count", lambda: 1),
        (cuda, "current_device", lambda: 0),
        (cuda, "set_device", lambda device: None),
        (cuda, "synchronize", lambda device=None: _notify("sync_device")),
        (cuda, "get_device_properties", lambda device=None: props),
        (cuda, "get_device_name", lambda device=None: name),
        (cuda, "get_device_capability", lambda device=None: capability),
        (cuda, "is_bf16_supported", lambda including_emulation=True: True),
        (cuda, "manual_seed", lambda seed: None),
        (cuda, "manual_seed_all", lambda seed: None),
        (cuda, "seed", lambda: None),
        (cuda, "seed_all", lambda: None),
        (cuda, "Stream", VirtualStream),
        (cuda, "Event", VirtualEvent),
        (cuda, "current_stream", lambda device=None: _state.current),
        (cuda, "default_stream", lambda device=None: _state.default),
        (cuda, "stream", lambda stream: _StreamContext(stream)),
        (cuda, "set_stream", _set_stream),
        (cuda, "empty_cache", lambda: None),
        (cuda, "is_current_stream_capturing", lambda: False),
        (torch._C, "_get_accelerator", lambda check=False: torch.device("cuda")),
        (torch.accelerator, "current_accelerator",
         lambda check_available=False: torch.device("cuda")),
        (torch.accelerator, "is_available", lambda: True),
        (torch.accelerator, "device_count", lambda: 1),
        (torch.accelerator, "current_device_index", lambda: 0),
        (torch.accelerator, "set_device_index", lambda device: None),
        (torch.accelerator, "current_stream", lambda device=None: _state.current),
        (torch.accelerator, "set_stream", _set_stream),
        (torch.accelerator, "synchronize", lambda device=None: _notify("sync_device")),
        (torch.Tensor, "record_stream", record_stream),
        (torch.nn.functional, "scaled_dot_product_attention",
         _sdpa(torch.nn.functional.scaled_dot_product_attention, capability)),
        (torch.nn.functional, "rms_norm", _rms_norm(torch.nn.functional.rms_norm)),
    ]
    saved = []
    for obj, attr, value in patches:
        if hasattr(obj, attr):
            saved.append((obj, attr, getattr(obj, attr)))
        setattr(obj, attr, value)
    try:
        yield props
    finally:
        for obj, attr, value in reversed(saved):
            setattr(obj, attr, value)
        _state.on_record_stream = None


# Random ops need a CUDA generator, which a build without CUDA does not have. Their values do not
# matter here, their outputs' memory does: an in-place one returns its input; any other runs on
# the meta device for its outputs' shapes and strides, which are then allocated on the virtual
# device (the same storages as the real op's outputs).
_aten = torch.ops.aten
RANDOM_IN_PLACE = {_aten.uniform_, _aten.normal_, _aten.random_, _aten.bernoulli_,
                   _aten.exponential_, _aten.geometric_, _aten.log_normal_, _aten.cauchy_}
RANDOM_OUT = {_aten.rand, _aten.randn, _aten.randint, _aten.randperm, _aten.normal,
              _aten.bernoulli, _aten.native_dropout, _aten.rand_like, _aten.randn_like,
              _aten.randint_like, _aten.multinomial, _aten.poisson}
NOT_RANDOM = object()


def _to_meta(x):
    if isinstance(x, torch.Tensor):
        return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="meta")
    if isinstance(x, torch.device) and x.type == "cuda":
        return torch.device("meta")
    return x


def random_stand_in(func, args, kwargs):
    """The op's result on the virtual device if it is a random op, else NOT_RANDOM."""
    packet = func.overloadpacket
    if packet in RANDOM_IN_PLACE:
        return args[0]
    if packet not in RANDOM_OUT:
        return NOT_RANDOM
    from torch.utils._pytree import tree_map
    margs, mkwargs = tree_map(_to_meta, (args, kwargs))
    mkwargs.pop("generator", None)
    if "device" in kwargs:
        mkwargs["device"] = torch.device("meta")
    out = func(*margs, **mkwargs)

    def back(o):
        if isinstance(o, torch.Tensor):
            return torch.empty_strided(o.shape, o.stride(), dtype=o.dtype, device="cuda")
        return o
    return tree_map(back, out)


def runs_on_host(args, kwargs):
    """True for an op on host tensors only (no fake tensor among its inputs, no device but the
    CPU): such ops run for real, outside FakeTensorMode, so that host values the program reads
    (a DeviceMesh's ranks, an optimizer's step count) are there as on a GPU host."""
    from torch._subclasses.fake_tensor import FakeTensor
    from torch.utils._pytree import tree_flatten
    flat, _ = tree_flatten((args, kwargs))
    for x in flat:
        if isinstance(x, FakeTensor):
            return False
        if isinstance(x, torch.Tensor) and x.device.type != "cpu":
            return False
        if isinstance(x, torch.device) and x.type != "cpu":
            return False
        if isinstance(x, str) and x.startswith(("cuda", "meta")):
            return False
    return True


def _sdpa(orig, capability):
    """scaled_dot_product_attention as a CUDA build picks its kernel: on a build without CUDA the
    choice (_fused_sdp_choice) falls to the math path, which materializes the S x S attention
    matrix in fp32 where the fused kernels keep only a log-sum-exp per row. The order is the
    one measured on an H100 with PyTorch 2.11 (cuDNN attention there, where flash attention was
    expected) and sdp_utils.cpp's conditions for the common cases: cuDNN attention (sm90 and
    newer, fp16 or bf16, head size a multiple of 8 up to 128), flash attention (sm80 and newer,
    fp16 or bf16, no mask, head size a multiple of 8 up to 256), memory-efficient attention (any
    float dtype, a mask allowed, head size a multiple of 8, or 4 in fp32), else math; each only
    while torch.backends.cuda enables it (sdpa_kernel)."""
    aten = torch.ops.aten
    backends = torch.backends.cuda

    def sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
             enable_gqa=False):
        if not (_on_virtual(query) and query.dim() == 4 and key.dim() == 4 and value.dim() == 4):
            return orig(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p,
                        is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
        head = query.size(-1)
        same = head == key.size(-1) == value.size(-1) and query.size(1) == key.size(1)
        half = query.dtype in (torch.float16, torch.bfloat16)
        grad = query.requires_grad or key.requires_grad or value.requires_grad
        if (backends.cudnn_sdp_enabled() and capability >= (9, 0) and half and same
                and head % 8 == 0 and head <= 128 and not enable_gqa):
            return aten._scaled_dot_product_cudnn_attention(
                query, key, value, attn_mask, grad, dropout_p, is_causal, False, scale=scale)[0]
        if (backends.flash_sdp_enabled() and capability >= (8, 0) and half and attn_mask is None
                and same and head % 8 == 0 and head <= 256 and not enable_gqa):
            return aten._scaled_dot_product_flash_attention(
                query, key, value, dropout_p, is_causal, False, scale=scale)[0]
        align = 8 if half else 4
        if (backends.mem_efficient_sdp_enabled() and same and head % align == 0
                and query.dtype in (torch.float16, torch.bfloat16, torch.float32)
                and not enable_gqa):
            return aten._scaled_dot_product_efficient_attention(
                query, key, value, attn_mask, query.requires_grad or key.requires_grad or
                value.requires_grad, dropout_p, is_causal, scale=scale)[0]
        return orig(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p,
                    is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
    return sdpa


def _on_virtual(t):
    return isinstance(t, torch.Tensor) and t.device.type == "cuda"


def _rms_norm(orig):
    """rms_norm as a CUDA build runs it: one fused kernel (aten::_fused_rms_norm: the output and
    an fp32 reciprocal RMS per row, saved with the input for _fused_rms_norm_backward; measured
    on an H100 with PyTorch 2.11). A build without CUDA has no such kernel for the device and
    decomposes the op above the dispatcher (an fp32 copy of the input, its square, mean and
    product, each a tensor); here the two ops run below autograd, under an autograd.Function
    with the fused kernel's formula, so only their outputs are allocated."""
    aten = torch.ops.aten
    if not hasattr(aten, "_fused_rms_norm") or not hasattr(aten, "_fused_rms_norm_backward"):
        return orig

    class FusedRMSNorm(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input, weight, shape, eps):
            with torch._C._AutoDispatchBelowAutograd():
                out, rstd = aten._fused_rms_norm.default(input, shape, weight, eps)
            ctx.save_for_backward(input, weight, rstd)
            ctx.shape = shape
            return out

        @staticmethod
        def backward(ctx, grad):
            input, weight, rstd = ctx.saved_tensors
            mask = [ctx.needs_input_grad[0], weight is not None and ctx.needs_input_grad[1]]
            with torch._C._AutoDispatchBelowAutograd():
                gi, gw = aten._fused_rms_norm_backward.default(grad, input, ctx.shape, rstd,
                                                               weight, mask)
            return gi, gw, None, None

    def rms_norm(input, normalized_shape, weight=None, eps=None):
        if not _on_virtual(input):
            return orig(input, normalized_shape, weight=weight, eps=eps)
        return FusedRMSNorm.apply(input, weight, list(normalized_shape), eps)
    return rms_norm
