# A step that makes one buffer more at MBS > 1: captures at MBS=1 and MBS=2 do not line up.
import torch


def build(MBS=1):
    dev = torch.device("cuda", torch.cuda.current_device())
    x = torch.zeros(MBS, 64, device=dev)

    def step():
        y = x * 2
        if MBS > 1:
            z = y + 1
            del z
        del y
    return step
