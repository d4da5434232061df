# SPDX-License-Identifier: MIT
"""A GPT-style training step for memlife capture's tests: L blocks of RMSNorm, causal SDPA
attention (a fused QKV projection, 4·D² weights) and a GELU MLP (8·D²): 12·D² parameters per
block, no biases. MODE picks the parallelism: fsdp (FSDP2, bf16 compute, fp32 shards, Adam),
fsdp_ac (the same with activation checkpointing of every block), ddp (DistributedDataParallel,
fp32, Adam). build(...) returns one training step (forward, backward, optimizer step)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.RMSNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.proj = nn.Linear(d, d, bias=False)
        self.norm2 = nn.RMSNorm(d)
        self.fc1 = nn.Linear(d, 4 * d, bias=False)
        self.fc2 = nn.Linear(4 * d, d, bias=False)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(d, dim=-1)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class GPT(nn.Module):
    def __init__(self, d, layers, heads, ac=False):
        super().__init__()
        self.layers = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.norm = nn.RMSNorm(d)
        self.ac = ac

    def forward(self, x):
        for layer in self.layers:
            if self.ac:
                x = torch.utils.checkpoint.checkpoint(layer, x, use_reentrant=False)
            else:
                x = layer(x)
        return self.norm(x)


def build(MODE="fsdp", MBS=2, S=256, D=256, L=2, H=4):
    dev = torch.device("cuda", torch.cuda.current_device())
    torch.manual_seed(0)
    with torch.device(dev):
        model = GPT(D, L, H, ac=MODE == "fsdp_ac")
    if MODE in ("fsdp", "fsdp_ac"):
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        for layer in model.layers:
            fully_shard(layer, mp_policy=mp)
        fully_shard(model, mp_policy=mp)
        dtype = torch.bfloat16
    elif MODE == "ddp":
        from torch.nn.parallel import DistributedDataParallel
        model = DistributedDataParallel(model)
        dtype = torch.float32
    else:
        raise ValueError(f"MODE is fsdp, fsdp_ac or ddp, not {MODE!r}")
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, foreach=True)
    return training_step(model, opt, torch.randn(MBS, S, D, device=dev, dtype=dtype))


def training_step(model, opt, x):
    """One step on input x: forward, backward, optimizer step; its variables name the buffers
    (model.*, adam.*, x)."""
    def step():
        model(x).float().pow(2).mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    step.model, step.optimizer = model, opt
    return step
