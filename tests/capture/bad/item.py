# A step that reads a value off the device: no value exists without a GPU (exit 3 at the line).
import torch


def build():
    x = torch.ones(4, device=torch.device("cuda", torch.cuda.current_device()))

    def step():
        if x.sum().item() > 0:
            return
    return step
