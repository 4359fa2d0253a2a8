from . import _utils, memory  # noqa: F401
from .memory import *  # noqa: F401,F403


def is_available():
    return True


def current_device():
    return 0
