"""One PyTorch CPU training step, timed, for bench/hook_overhead.py.

A GPT-style stack in Megatron's layout ([seq, batch, hidden], pre-LayerNorm, unfused attention, GELU MLP),
AdamW; runs WARMUP + STEPS steps and prints the median step time in seconds: wall, then CPU (user +
system of the process, which is what the hook adds to; robust when the machine is shared).  Imports the model from the
test script so that both describe the same network.
"""
import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "allocator_hook",
                                "scripts"))
from torch_layer import Float16Module, ToyGPT  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--ffn", type=int, default=1024)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(a.threads)
    model = Float16Module(ToyGPT(a.layers, a.hidden, a.heads, a.ffn))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    times, cpu = [], []
    for step in range(a.warmup + a.steps):
        x = torch.randn(a.seq, a.batch, a.hidden, requires_grad=True)
        t0, c0 = time.perf_counter(), time.process_time()
        model(x).float().pow(2).mean().backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        t1, c1 = time.perf_counter(), time.process_time()
        if step >= a.warmup:
            times.append(t1 - t0)
            cpu.append(c1 - c0)
    print("%.6f %.6f" % (statistics.median(times), statistics.median(cpu)))


if __name__ == "__main__":
    main()
