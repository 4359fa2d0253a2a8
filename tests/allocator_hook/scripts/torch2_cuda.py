"""Runs against the stand-in torch 2 (fake_torch2/) under libpreflight_hook.so, for test_hook_torch.cpp.

`import torch` must make the glue install the pluggable allocator, the module hooks and the optimizer step
hooks.  Then, as torch would, CUDA memory is taken through the allocator's function pointers:
  iteration 0  forward of Net: 1 MiB in Net.layer (stream 0x30), 512 KiB in Net itself
               optimizer step: 2 MiB
  iteration 1  forward of Net: 1 MiB in Net.layer
and the memory queries are answered.  Prints key/value lines."""
import ctypes

import torch

a = torch.cuda.memory.current
print("allocator_installed", int(a is not None))
print("allocator_is_hook", int(a is not None and a.path.endswith("libpreflight_hook.so")))
ALLOC = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p)
FREE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p)
alloc, free = ALLOC(a.alloc_fn), FREE(a.free_fn)
MiB = 1 << 20
stream = 0x30

net = torch.nn.Module()
layer = net.add("layer", torch.nn.Module())
blocks = []


def net_forward():
    blocks.append((alloc(MiB // 2, 0, stream), MiB // 2))
    layer(lambda: blocks.append((alloc(MiB, 0, stream), MiB)))


net(net_forward)
torch.optim.Optimizer().step(lambda: blocks.append((alloc(2 * MiB, 0, stream), 2 * MiB)))
net(lambda: layer(lambda: blocks.append((alloc(MiB, 0, stream), MiB))))
print("allocated", torch.cuda.memory_allocated(0))
print("peak", torch.cuda.max_memory_allocated(0))
for ptr, size in blocks[:2]:
    free(ptr, size, 0, stream)
torch.cuda.reset_peak_memory_stats(0)
print("peak_after_reset", torch.cuda.max_memory_allocated(0))
print("stats_current", torch.cuda.memory_stats(0)["allocated_bytes.all.current"])
for ptr, size in blocks[2:]:
    free(ptr, size, 0, stream)
