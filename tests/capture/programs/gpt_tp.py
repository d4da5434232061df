# SPDX-License-Identifier: MIT
"""A GPT-style training step on a 2-D DeviceMesh, for memlife capture's tests of collectives on
sub-groups. L blocks of RMSNorm, causal SDPA attention (q, k, v and output projections, 4·D²
weights) and a GELU MLP (8·D²), no biases; the world is a mesh (dp, tp) with tp = TP and
dp = world / TP, ranks row-major (tp innermost). MODE picks the parallelism:

- fsdp_tp: tensor parallel on tp (Megatron's: q, k, v and fc1 column-wise, the output
  projection and fc2 row-wise, each block's heads split over tp; SP=1, the default, adds
  sequence parallelism), then FSDP2 on dp (bf16 compute, fp32 shards, Adam);
- fsdp_tp_3d: the same on a 3-D mesh (dp_out, dp_in, tp) = (2, world / (2 TP), TP), FSDP2 on
  the flattening of dp_out and dp_in (one group of world / TP ranks, as fsdp_tp's dp);
- hsdp: FSDP2 on the whole 2-D mesh as HSDP, its dimensions named (replicate, shard) then:
  parameters sharded over the TP ranks of a replica, gradients all-reduced between replicas.

build(...) returns one training step (forward, backward, optimizer step)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from gpt import training_step


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.hd = d // heads
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.proj = nn.Linear(d, d, bias=False)

    def forward(self, h):
        # under tensor parallelism q, k, v are this rank's heads: the local width over the
        # head size
        b, s, _ = h.shape
        q, k, v = (t.view(b, s, -1, self.hd).transpose(1, 2) for t in (self.q(h), self.k(h), self.v(h)))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(a.transpose(1, 2).reshape(b, s, -1))


class MLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc1 = nn.Linear(d, 4 * d, bias=False)
        self.fc2 = nn.Linear(4 * d, d, bias=False)

    def forward(self, h):
        return self.fc2(F.gelu(self.fc1(h)))


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.norm1 = nn.RMSNorm(d)
        self.attn = Attention(d, heads)
        self.norm2 = nn.RMSNorm(d)
        self.mlp = MLP(d)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class GPT(nn.Module):
    def __init__(self, d, layers, heads):
        super().__init__()
        self.layers = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.norm = nn.RMSNorm(d)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


def tp_plan(sp):
    """Megatron's tensor parallelism of a block; with sequence parallelism (sp) the norms and
    the residual stream hold S / TP of the sequence: each attention and MLP all-gathers its
    input over tp and reduce-scatters its output."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput,
                                                   RowwiseParallel, SequenceParallel)
    plan = {"attn.q": ColwiseParallel(), "attn.k": ColwiseParallel(), "attn.v": ColwiseParallel(),
            "attn.proj": RowwiseParallel(output_layouts=Shard(1) if sp else Replicate()),
            "mlp.fc1": ColwiseParallel(),
            "mlp.fc2": RowwiseParallel(output_layouts=Shard(1) if sp else Replicate())}
    if sp:
        gather = PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),))
        plan.update({"norm1": SequenceParallel(), "norm2": SequenceParallel(), "attn": gather,
                     "mlp": gather})
    return plan


def build(MODE="fsdp_tp", TP=2, SP=1, MBS=2, S=64, D=64, L=2, H=4):
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    world = dist.get_world_size()
    if world % TP or (MODE == "fsdp_tp_3d" and world % (2 * TP)):
        raise ValueError(f"TP={TP} (twice it for fsdp_tp_3d) does not divide the world {world}")
    if MODE == "fsdp_tp_3d":
        mesh = init_device_mesh("cuda", (2, world // (2 * TP), TP),
                                mesh_dim_names=("dp_out", "dp_in", "tp"))
        dp_mesh = mesh["dp_out", "dp_in"]._flatten("dp")
    else:
        names = ("replicate", "shard") if MODE == "hsdp" else ("dp", "tp")
        mesh = init_device_mesh("cuda", (world // TP, TP), mesh_dim_names=names)
        dp_mesh = mesh["dp"] if MODE == "fsdp_tp" else mesh
    dev = torch.device("cuda", torch.cuda.current_device())
    torch.manual_seed(0)
    with torch.device(dev):
        model = GPT(D, L, H)
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    tp = MODE in ("fsdp_tp", "fsdp_tp_3d")
    if tp:
        from torch.distributed.tensor.parallel import SequenceParallel, parallelize_module
        for layer in model.layers:
            parallelize_module(layer, mesh["tp"], tp_plan(SP))
        if SP:
            parallelize_module(model.norm, mesh["tp"], SequenceParallel())
    elif MODE != "hsdp":
        raise ValueError(f"MODE is fsdp_tp, fsdp_tp_3d or hsdp, not {MODE!r}")
    for layer in model.layers:
        fully_shard(layer, mesh=dp_mesh, mp_policy=mp)
    fully_shard(model, mesh=dp_mesh, mp_policy=mp)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, foreach=True)
    # under sequence parallelism each tp rank holds S / TP of the sequence
    seq = S // TP if tp and SP else S
    return training_step(model, opt, torch.randn(MBS, seq, D, device=dev, dtype=torch.bfloat16))
