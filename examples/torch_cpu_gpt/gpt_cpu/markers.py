"""Trace markers for preflight's allocation hook (libpreflight_hook.so), no-ops when it is not preloaded.

The schedule pushes one marker per step so that `preflight calibrate` can cut the trace into micro batches:

* ``setup.parameters``   model construction (parameters, including the tied output-layer copy)
* ``setup.grad_buffer``  the fp32 main-grad buffer (Megatron DDP's contiguous grad buffer)
* ``setup.optimizer``    fp32 master parameters (bf16 only) and the Adam moments, allocated eagerly
* ``schedule.iteration``      at the start of each iteration (pushed and popped at once)
* ``schedule.forward_step``   one per micro batch: from the receive of its input (or the data batch) to
  after its output was sent and deallocated
* ``schedule.backward_step``  one per micro batch: from the receive of its output gradient to the backward

Only the start of each step matters to the reader (the hook's PyTorch glue replaces a thread's marker stack
when a top-level module starts its forward), so steps are pushed and popped but never nested.
"""

import ctypes

SETUP_PARAMETERS = "setup.parameters"
SETUP_GRAD_BUFFER = "setup.grad_buffer"
SETUP_OPTIMIZER = "setup.optimizer"
ITERATION = "schedule.iteration"
FORWARD_STEP = "schedule.forward_step"
BACKWARD_STEP = "schedule.backward_step"


class _Hook:
    lib = None
    loaded = False


def _lib():
    if not _Hook.loaded:
        _Hook.loaded = True
        try:
            lib = ctypes.CDLL(None)
            lib.preflight_marker_push.argtypes = [ctypes.c_char_p]
            lib.preflight_marker_push.restype = None
            lib.preflight_marker_pop.argtypes = []
            lib.preflight_marker_pop.restype = None
            _Hook.lib = lib
        except (AttributeError, OSError):
            _Hook.lib = None
    return _Hook.lib


def push(name):
    lib = _lib()
    if lib is not None:
        lib.preflight_marker_push(name.encode())


def pop():
    lib = _lib()
    if lib is not None:
        lib.preflight_marker_pop()


def instant(name):
    """A marker that only timestamps a point of the schedule."""
    push(name)
    pop()


class marker:
    """``with marker(SETUP_PARAMETERS): ...``"""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        push(self.name)
        return self

    def __exit__(self, *exc):
        pop()
        return False
