"""Label the allocations recorded by libpreflight_hook.so with PyTorch module paths, training phase and
iteration, and route CUDA allocations through the library.

Loaded by the ``sitecustomize.py`` next to this package when ``PREFLIGHT_TRACE_DIR`` is set (``preflight
wrap --mode trace`` puts that folder on ``PYTHONPATH`` and the library in ``LD_PRELOAD``).  Standard library
and torch only; works with torch 1.13 (Debian's python3-torch) and newer.

What it installs, right after the program imports torch (a Python process that never imports torch gets
nothing but one meta-path entry, removed at the first ``import torch``):

* global module forward pre-/post-hooks: every allocation made inside ``module.forward`` carries the marker
  of the innermost module, named by its path from the top-level module (``decoder.layers.3.mlp.linear_fc1``);
  leading ``module.`` wrappers (DDP, Float16Module) and FSDP/checkpoint/compile wrapper attributes are
  dropped; the top-level module itself is named by its class (``GPTModel``); a second top-level module of
  the same class (a virtual-pipeline model chunk) gets the prefix ``chunk<k>.``.
* backward attribution without changing the autograd graph: a tensor hook on each module output marks the
  start of that module's backward on the thread running it, a hook on each input its end.
* phases: forward (a top-level module runs with grad enabled), backward (first module gradient),
  optimizer (inside ``torch.optim.Optimizer.step``), other; the iteration counter increases at the first
  forward after an optimizer step.
* with CUDA present, ``PREFLIGHT_TRACE_CUDA`` not 0 and torch >= 2.0: ``CUDAPluggableAllocator`` over
  ``preflight_cuda_malloc/free``, plus ``torch.cuda.memory_allocated``/``max_memory_allocated``/
  ``memory_stats``/``reset_peak_memory_stats`` answered from the library's counters (the pluggable
  allocator does not support them).

Hooks return None and never raise: a failure prints one warning and the program runs on unchanged.
"""

import collections
import ctypes
import functools
import importlib
import importlib.abc
import importlib.util
import os
import sys
import threading
import weakref

__all__ = ["activate", "install", "marker", "PHASE_OTHER", "PHASE_FORWARD", "PHASE_BACKWARD",
           "PHASE_OPTIMIZER"]

PHASE_OTHER, PHASE_FORWARD, PHASE_BACKWARD, PHASE_OPTIMIZER = 0, 1, 2, 3

_WRAPPER_ATTRIBUTES = frozenset(("_fsdp_wrapped_module", "_checkpoint_wrapped_module", "_orig_mod"))


class _State:
    lib = None
    installed = False
    phase = PHASE_OTHER
    iteration = 0
    optimizer_ran = False
    warned = set()


_state = _State()
_tls = threading.local()
_infos = weakref.WeakKeyDictionary()  # module -> _Info
_roots = []                           # [(weakref to top-level module, label, chunk)]
_lock = threading.Lock()


def _warn(key, message):
    if key not in _state.warned:
        _state.warned.add(key)
        sys.stderr.write("preflight_hook: %s\n" % message)


# --------------------------------------------------------------------------------------------- library

def _load_library():
    """The already preloaded library, else PREFLIGHT_HOOK_LIB opened with ctypes (CUDA tracing only)."""
    lib = None
    try:
        candidate = ctypes.CDLL(None)
        candidate.preflight_marker_id  # noqa: B018 - raises AttributeError when not preloaded
        lib = candidate
    except (AttributeError, OSError):
        path = os.environ.get("PREFLIGHT_HOOK_LIB")
        if path:
            lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    if lib is None:
        return None
    lib.preflight_marker_id.argtypes = [ctypes.c_char_p]
    lib.preflight_marker_id.restype = ctypes.c_uint32
    lib.preflight_marker_push.argtypes = [ctypes.c_char_p]
    lib.preflight_marker_push.restype = None
    lib.preflight_marker_push_id.argtypes = [ctypes.c_uint32]
    lib.preflight_marker_push_id.restype = None
    lib.preflight_marker_pop.argtypes = []
    lib.preflight_marker_pop.restype = None
    lib.preflight_marker_set_id.argtypes = [ctypes.c_uint32]
    lib.preflight_marker_set_id.restype = None
    lib.preflight_phase.argtypes = [ctypes.c_int, ctypes.c_uint64]
    lib.preflight_phase.restype = None
    lib.preflight_trace_active.restype = ctypes.c_int
    lib.preflight_trace_path.restype = ctypes.c_char_p
    lib.preflight_hook_library_path.restype = ctypes.c_char_p
    lib.preflight_cuda_memory_stats.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_uint64)]
    lib.preflight_cuda_memory_stats.restype = ctypes.c_int
    lib.preflight_cuda_reset_peak.argtypes = [ctypes.c_int]
    lib.preflight_cuda_reset_peak.restype = None
    return lib


def _library():
    if _state.lib is None:
        _state.lib = _load_library()
    return _state.lib


class marker:
    """``with preflight_hook.marker("data loading"): ...`` labels the allocations of a block of code."""

    def __init__(self, name):
        self.name = name.encode()

    def __enter__(self):
        lib = _library()
        if lib is not None:
            lib.preflight_marker_push(self.name)
        return self

    def __exit__(self, *exc):
        lib = _library()
        if lib is not None:
            lib.preflight_marker_pop()
        return False


# --------------------------------------------------------------------------------------------- phases

def _set_phase(phase):
    if _state.phase != phase:
        _state.phase = phase
        _state.lib.preflight_phase(phase, _state.iteration)


def _begin_forward(grad_enabled):
    if not grad_enabled:
        _set_phase(PHASE_OTHER)
        return
    if _state.optimizer_ran:
        _state.optimizer_ran = False
        _state.iteration += 1
        _state.phase = PHASE_FORWARD
        _state.lib.preflight_phase(PHASE_FORWARD, _state.iteration)
    else:
        _set_phase(PHASE_FORWARD)


def _backward_done():
    # Runs when the autograd graph task finishes: later allocations of this thread belong to no module.
    _tls.backward = None
    _tls.callback_queued = False
    _state.lib.preflight_marker_set_id(0)


def _enter_backward():
    _set_phase(PHASE_BACKWARD)
    if not getattr(_tls, "callback_queued", False):
        try:
            import torch
            torch.autograd.Variable._execution_engine.queue_callback(_backward_done)
            _tls.callback_queued = True
        except Exception:  # outside a graph task (a hook fired by hand): nothing to clean up
            pass


def _optimizer_step_begin():
    _state.lib.preflight_marker_set_id(0)
    _tls.depth = 0
    _set_phase(PHASE_OPTIMIZER)


def _optimizer_step_end():
    _state.optimizer_ran = True
    _set_phase(PHASE_OTHER)


# --------------------------------------------------------------------------------------------- modules

class _Info:
    __slots__ = ("id", "path", "parent", "root", "start", "end", "__weakref__")

    def __init__(self, marker_id, path, parent, root):
        self.id = marker_id
        self.path = path
        self.parent = parent
        self.root = root
        self.start = _make_backward_start(self)
        self.end = _make_backward_end(self)

    def within(self, other):
        node = self
        while node is not None:
            if node is other:
                return True
            node = node.parent
        return False


def _make_backward_start(info):
    def on_output_grad(grad):
        # the gradient w.r.t. this module's output is ready: the module's backward starts on this thread
        try:
            _enter_backward()
            _tls.backward = info
            _state.lib.preflight_marker_set_id(info.id)
        except Exception as e:  # never break the program
            _warn("backward", "backward hook failed: %r" % (e,))
        return None
    return on_output_grad


def _make_backward_end(info):
    def on_input_grad(grad):
        # the gradient w.r.t. this module's input is complete: its backward is over
        try:
            current = getattr(_tls, "backward", None)
            if current is not None and current.within(info):
                parent = info.parent
                _tls.backward = parent
                _state.lib.preflight_marker_set_id(parent.id if parent is not None else 0)
        except Exception as e:
            _warn("backward", "backward hook failed: %r" % (e,))
        return None
    return on_input_grad


def _strip(name):
    parts = [p for p in name.split(".") if p and p not in _WRAPPER_ATTRIBUTES]
    while parts and parts[0] == "module":
        parts.pop(0)
    return ".".join(parts)


def _register_tree(root):
    """Names every module under `root` relative to it and makes `root` a top-level module."""
    entries = list(root.named_modules())
    label = type(root).__name__
    for name, m in entries:
        if _strip(name) == "":
            label = type(m).__name__  # the deepest wrapped module gives the name (DDP(Float16Module(GPT)))
    covered = set(id(m) for _, m in entries)
    alive = []
    for ref, lab, chunk in _roots:
        m = ref()
        if m is not None and id(m) not in covered:
            alive.append((ref, lab, chunk))
    chunk = 0
    taken = set(c for _, lab, c in alive if lab == label)
    while chunk in taken:
        chunk += 1
    alive.append((weakref.ref(root), label, chunk))
    _roots[:] = alive
    prefix = "chunk%d." % chunk if chunk else ""
    lib = _state.lib
    by_path = {}
    root_info = None
    for name, m in entries:
        path = _strip(name)
        full = prefix + (path if path else label)
        if path == "":
            if root_info is None:
                root_info = _Info(lib.preflight_marker_id(full.encode()), full, None, True)
            info = root_info
        else:
            parent_path = path.rpartition(".")[0]
            parent = by_path.get(parent_path, root_info)
            info = _Info(lib.preflight_marker_id(full.encode()), full, parent, False)
        by_path.setdefault(path, info)
        _infos[m] = info
    return _infos[root]


def _info_of(module):
    info = _infos.get(module)
    if info is not None:
        return info
    with _lock:
        info = _infos.get(module)
        if info is not None:
            return info
        # a module added after its top-level module was named: rename that tree
        for ref, _, _ in list(_roots):
            root = ref()
            if root is not None and any(m is module for m in root.modules()):
                _register_tree(root)
                return _infos[module]
        return _register_tree(module)


def _tensors(value, depth=0):
    import torch
    if isinstance(value, torch.Tensor):
        yield value
    elif depth < 2 and isinstance(value, (tuple, list)):
        for v in value:
            yield from _tensors(v, depth + 1)
    elif depth < 2 and isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v, depth + 1)


def _hook_tensors(value, callback):
    for t in _tensors(value):
        if t.requires_grad:
            t.register_hook(callback)


def _forward_pre(module, inputs):
    try:
        import torch
        info = _info_of(module)
        lib = _state.lib
        depth = getattr(_tls, "depth", 0)
        grad = torch.is_grad_enabled()
        if info.root and (depth == 0 or getattr(_tls, "root", None) is info):
            _begin_forward(grad)
            _tls.root = info
            _tls.depth = 1
            lib.preflight_marker_set_id(info.id)
        else:
            _tls.depth = depth + 1
            lib.preflight_marker_push_id(info.id)
        if grad:
            _hook_tensors(inputs, info.end)
    except Exception as e:
        _warn("forward", "forward pre-hook failed: %r" % (e,))
    return None


def _forward_post(module, inputs, output):
    try:
        import torch
        info = _infos.get(module)
        if info is None:
            return None
        depth = getattr(_tls, "depth", 0)
        if depth > 0:
            depth -= 1
            _tls.depth = depth
            _state.lib.preflight_marker_pop()
        if depth == 0:
            _tls.root = None
        if torch.is_grad_enabled():
            _hook_tensors(output, info.start)
    except Exception as e:
        _warn("forward", "forward hook failed: %r" % (e,))
    return None


# --------------------------------------------------------------------------------------------- optimizer

def _install_optimizer_hooks(torch):
    optimizer_module = importlib.import_module("torch.optim.optimizer")
    pre = getattr(optimizer_module, "register_optimizer_step_pre_hook", None)
    post = getattr(optimizer_module, "register_optimizer_step_post_hook", None)
    if pre is not None and post is not None:  # torch >= 2.0
        pre(lambda optimizer, args, kwargs: _optimizer_step_begin())
        post(lambda optimizer, args, kwargs: _optimizer_step_end())
        return
    # torch 1.13: wrap `step` of every Optimizer subclass when its first instance is made
    base = torch.optim.Optimizer
    original_init = base.__init__

    def wrap_step(cls):
        step = cls.__dict__.get("step")
        if step is None or getattr(step, "_preflight_wrapped", False):
            return

        @functools.wraps(step)
        def traced_step(self, *args, **kwargs):
            _optimizer_step_begin()
            try:
                return step(self, *args, **kwargs)
            finally:
                _optimizer_step_end()

        traced_step._preflight_wrapped = True
        cls.step = traced_step

    @functools.wraps(original_init)
    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        try:
            for cls in type(self).__mro__:
                if cls is base:
                    break
                if issubclass(cls, base):
                    wrap_step(cls)
                    break
        except Exception as e:
            _warn("optimizer", "optimizer hook failed: %r" % (e,))

    base.__init__ = init


# --------------------------------------------------------------------------------------------- CUDA

def _device_index(torch, device):
    if device is None:
        return torch.cuda.current_device()
    return torch.cuda._utils._get_device_index(device, optional=True)


def _patch_cuda_stats(torch):
    """Answers torch.cuda memory queries from the library (the pluggable allocator cannot)."""
    lib = _library()

    def counters(device):
        out = (ctypes.c_uint64 * 4)()
        if lib.preflight_cuda_memory_stats(_device_index(torch, device), out) != 0:
            return 0, 0, 0, 0
        return out[0], out[1], out[2], out[3]

    def memory_stats(device=None):
        live, peak, allocs, ooms = counters(device)
        stats = collections.OrderedDict()
        for kind in ("allocated_bytes", "reserved_bytes", "active_bytes", "requested_bytes"):
            stats[kind + ".all.current"] = live
            stats[kind + ".all.peak"] = peak
        stats["allocation.all.allocated"] = allocs
        stats["num_alloc_retries"] = 0
        stats["num_ooms"] = ooms
        return stats

    def memory_allocated(device=None):
        return counters(device)[0]

    def max_memory_allocated(device=None):
        return counters(device)[1]

    def reset_peak_memory_stats(device=None):
        lib.preflight_cuda_reset_peak(_device_index(torch, device))

    replacements = {
        "memory_stats": memory_stats,
        "memory_allocated": memory_allocated,
        "max_memory_allocated": max_memory_allocated,
        "memory_reserved": memory_allocated,
        "max_memory_reserved": max_memory_allocated,
        "reset_peak_memory_stats": reset_peak_memory_stats,
        "reset_max_memory_allocated": reset_peak_memory_stats,
    }
    for name, fn in replacements.items():
        setattr(torch.cuda.memory, name, fn)
        setattr(torch.cuda, name, fn)


def _install_cuda_allocator(torch):
    if os.environ.get("PREFLIGHT_TRACE_CUDA", "1") == "0":
        return
    if not torch.cuda.is_available():
        return
    pluggable = getattr(torch.cuda.memory, "CUDAPluggableAllocator", None)
    if pluggable is None:
        _warn("cuda", "torch %s has no CUDAPluggableAllocator (needs 2.0): CUDA allocations are not traced; "
                      "PYTORCH_NO_CUDA_MEMORY_CACHING=1 makes them visible to other tools" % torch.__version__)
        return
    path = _state.lib.preflight_hook_library_path().decode()
    allocator = pluggable(path, "preflight_cuda_malloc", "preflight_cuda_free")
    torch.cuda.memory.change_current_allocator(allocator)
    _patch_cuda_stats(torch)


# --------------------------------------------------------------------------------------------- set-up

def install(torch):
    """Installs everything on an imported torch module (idempotent)."""
    if _state.installed:
        return
    _state.installed = True
    if _library() is None:
        _warn("lib", "libpreflight_hook.so is not loaded (LD_PRELOAD it, or set PREFLIGHT_HOOK_LIB): no markers")
        return
    try:
        _install_cuda_allocator(torch)
    except Exception as e:
        _warn("cuda", "CUDA allocator not installed: %r" % (e,))
    from torch.nn.modules import module as module_module
    module_module.register_module_forward_pre_hook(_forward_pre)
    module_module.register_module_forward_hook(_forward_post)
    try:
        _install_optimizer_hooks(torch)
    except Exception as e:
        _warn("optimizer", "optimizer hooks not installed: %r" % (e,))


class _TorchLoader(importlib.abc.Loader):
    def __init__(self, inner):
        self.inner = inner

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        module.__loader__ = self.inner
        if module.__spec__ is not None:
            module.__spec__.loader = self.inner
        self.inner.exec_module(module)
        try:
            install(module)
        except Exception as e:
            _warn("install", "not installed: %r" % (e,))


class _TorchImportWatcher(importlib.abc.MetaPathFinder):
    """Installs the hooks as soon as the program has imported torch (before it can touch CUDA)."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        spec = importlib.util.find_spec("torch")
        if spec is None or spec.loader is None:
            return None
        spec.loader = _TorchLoader(spec.loader)
        return spec


def activate():
    """Called by sitecustomize: install now if torch is loaded, else at `import torch`."""
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "nn"):
        install(torch)
    elif not any(isinstance(f, _TorchImportWatcher) for f in sys.meta_path):
        sys.meta_path.insert(0, _TorchImportWatcher())
