# A program that brings up its own process group: capture has one up already (exit 3 here).
import torch.distributed as dist


def build():
    dist.init_process_group("gloo")
    return lambda: None
