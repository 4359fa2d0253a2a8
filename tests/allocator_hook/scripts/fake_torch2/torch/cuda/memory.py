import ctypes

__all__ = ["memory_stats", "memory_allocated", "max_memory_allocated", "reset_peak_memory_stats"]

current = None  # the allocator given to change_current_allocator


class CUDAPluggableAllocator:
    def __init__(self, path_to_so_file, alloc_fn_name, free_fn_name):
        lib = ctypes.CDLL(path_to_so_file)
        self.alloc_fn = ctypes.cast(getattr(lib, alloc_fn_name), ctypes.c_void_p).value
        self.free_fn = ctypes.cast(getattr(lib, free_fn_name), ctypes.c_void_p).value
        assert self.alloc_fn is not None and self.free_fn is not None
        self.path = path_to_so_file


def change_current_allocator(allocator):
    global current
    current = allocator


def memory_stats(device=None):
    raise RuntimeError("CUDAPluggableAllocator does not yet support getDeviceStats")


def memory_allocated(device=None):
    return memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device=None):
    return memory_stats(device)["allocated_bytes.all.peak"]


def reset_peak_memory_stats(device=None):
    raise RuntimeError("CUDAPluggableAllocator does not yet support resetPeakStats")
