# SPDX-License-Identifier: MIT
"""Hybrid data parallelism by hand on process groups of new_group, for memlife capture's tests of
collectives on sub-groups without a DeviceMesh. The world is cut two ways, every rank making
every group in the same order (torch requires it):

- `block`: consecutive blocks of K ranks (new_subgroups(K): ranks 0..K-1, K..2K-1, ...);
- `strided`: the ranks equal modulo K (new_group(range(c, world, K)) for c < K);
- `ends`: ranks 0 and world - 1 alone (no partition of the world).

A D x D fp32 linear layer (no bias) and Adam; the step reduce-scatters the gradient (D*D*4 B)
over the block into this rank's shard (D*D*4 / K B), all-reduces the shard over the strided
group, all-gathers it back in place into the gradient (the shard is the gradient's slot of this
rank within its block), and broadcasts a 4-byte flag from rank world - 1 over `ends` (its rank
1 there)."""
import torch
import torch.distributed as dist
import torch.nn as nn


def build(K=2, D=64, MBS=2):
    world, rank = dist.get_world_size(), dist.get_rank()
    if world % K or K < 2 or world < 2 * K:
        raise ValueError(f"K={K} must be at least 2 and divide the world {world} at least twice")
    block, _ = dist.new_subgroups(K)
    strided = None
    for c in range(K):
        g = dist.new_group(list(range(c, world, K)))
        if rank % K == c:
            strided = g
    ends = dist.new_group([0, world - 1])
    dev = torch.device("cuda", torch.cuda.current_device())
    with torch.device(dev):
        model = nn.Linear(D, D, bias=False)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, foreach=True)
    x = torch.randn(MBS, D, device=dev)
    flag = torch.zeros(1, device=dev)
    local = dist.get_rank(block)
    # torch 2.13's names (the _tensor ones are deprecated aliases)
    reduce_scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    all_gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor

    def step():
        model(x).pow(2).mean().backward()
        grad = model.weight.grad.view(-1)
        shard = grad.chunk(K)[local]
        part = torch.empty_like(shard)
        reduce_scatter(part, grad, group=block)
        dist.all_reduce(part, group=strided)
        shard.copy_(part)
        all_gather(grad, shard, group=block)
        if rank in (0, world - 1):
            dist.broadcast(flag, src=world - 1, group=ends)
        opt.step()
        opt.zero_grad(set_to_none=True)

    step.model, step.optimizer = model, opt
    return step
