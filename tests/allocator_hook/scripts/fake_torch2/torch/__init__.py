"""A stand-in for torch >= 2.0 with CUDA, only as much as preflight_hook touches (test_hook_torch.cpp):
the global module hooks, the optimizer step hooks, torch.cuda.memory.CUDAPluggableAllocator (which, as the
real one, opens the library with ctypes and looks both functions up) and the memory queries a pluggable
allocator cannot answer."""
__version__ = "2.4.0+stand-in"

from . import autograd, cuda, nn, optim  # noqa: F401


class Tensor:
    requires_grad = False


def is_grad_enabled():
    return True
