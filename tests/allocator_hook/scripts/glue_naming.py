"""Module naming and markers of the preflight_hook glue, for test_hook_torch.cpp.

Allocations made (each 1 MiB = 262144 fp32, so that they stand out with PREFLIGHT_TRACE_MIN_BYTES):
  * two model chunks of the same class, like Megatron's virtual pipeline: chunk 0 keeps plain paths,
    chunk 1 gets the prefix "chunk1."; each `Block.proj` allocates 1 MiB per forward
  * a submodule called on its own before its parent: first named by its class ("Probe"), then, once the
    parent runs, by its path in the parent ("probe")
  * `with preflight_hook.marker("data loading")`: 2 x 1 MiB
  * a forward under torch.no_grad(): phase "other", not a forward pass
"""
import os
import sys

import torch
from torch import nn

import preflight_hook

N = 262144  # fp32 elements in 1 MiB


class Proj(nn.Module):
    def forward(self, x):
        return x + 1.0  # a new 1 MiB tensor, allocated in this module


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = Proj()

    def forward(self, x):
        return self.proj(x)


class Chunk(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x):
        return self.block(x)


class Wrapper(nn.Module):  # like DDP / Float16Module: holds the model as .module
    def __init__(self, module):
        super().__init__()
        self.module = module

    def forward(self, x):
        return self.module(x)


class Probe(nn.Module):
    def forward(self, x):
        return x * 2.0


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.probe = Probe()

    def forward(self, x):
        return self.probe(x)


def main():
    x = torch.zeros(N, requires_grad=True)
    chunks = [Wrapper(Chunk()), Wrapper(Chunk())]
    outs = [c(x) for c in chunks]
    outer = Outer()
    y1 = outer.probe(x)  # before its parent ever ran
    y2 = outer(x)
    with preflight_hook.marker("data loading"):
        batch = [torch.empty(N), torch.empty(N)]
    with torch.no_grad():
        z = chunks[0](x)
    keep = (outs, y1, y2, batch, z)
    sys.stdout.write("ok %d\n" % len(keep))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
