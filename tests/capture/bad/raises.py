# A step that raises: capture exits 3 and names this file's line.
import torch


def build():
    x = torch.zeros(4, device=torch.device("cuda", torch.cuda.current_device()))

    def step():
        raise RuntimeError("the step failed")
    return step
