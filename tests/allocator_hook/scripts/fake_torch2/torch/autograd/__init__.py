class _Engine:
    def queue_callback(self, fn):
        raise RuntimeError("not inside a backward pass")


class Variable:
    _execution_engine = _Engine()
