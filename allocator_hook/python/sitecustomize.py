"""preflight: start the allocation-trace glue at Python start-up.

This folder goes on PYTHONPATH next to LD_PRELOAD=libpreflight_hook.so (``preflight wrap --mode trace`` sets
both).  With PREFLIGHT_TRACE_DIR set it imports ``preflight_hook``, which waits for ``import torch``; then it
runs the sitecustomize module this file shadows (Debian ships one), so nothing else changes.
"""
import os
import sys


def _preflight_start():
    if not os.environ.get("PREFLIGHT_TRACE_DIR"):
        return
    try:
        import preflight_hook
        preflight_hook.activate()
    except Exception as e:  # never stop the program
        sys.stderr.write("preflight_hook: not active: %r\n" % (e,))


def _run_shadowed_sitecustomize():
    import importlib.machinery
    import importlib.util
    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None or spec.origin is None:
        return
    if os.path.abspath(spec.origin) == os.path.abspath(__file__):
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


_preflight_start()
try:
    _run_shadowed_sitecustomize()
except Exception as e:
    sys.stderr.write("preflight_hook: the shadowed sitecustomize failed: %r\n" % (e,))
