# SPDX-License-Identifier: MIT
"""The smallest FSDP2 step whose memory can be worked out by hand (tests/capture/capture.sh):
one D x D linear layer without bias in fp32, fully_shard at the world captured, Adam, an input
of MBS x D. MODE=plain skips FSDP (no collectives)."""
import torch
import torch.nn as nn


def build(D=64, MBS=2, MODE="fsdp"):
    dev = torch.device("cuda", torch.cuda.current_device())
    with torch.device(dev):
        model = nn.Sequential(nn.Linear(D, D, bias=False))
    if MODE == "fsdp":
        from torch.distributed.fsdp import fully_shard
        fully_shard(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True)
    x = torch.randn(MBS, D, device=dev)

    def step():
        model(x).sum().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    step.model, step.optimizer = model, opt
    return step
