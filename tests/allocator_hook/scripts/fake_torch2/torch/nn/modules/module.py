_global_forward_pre_hooks = []
_global_forward_hooks = []


def register_module_forward_pre_hook(hook):
    _global_forward_pre_hooks.append(hook)


def register_module_forward_hook(hook):
    _global_forward_hooks.append(hook)


class Module:
    def __init__(self):
        self._children = {}

    def add(self, name, child):
        self._children[name] = child
        return child

    def named_modules(self, prefix=""):
        yield prefix, self
        for name, child in self._children.items():
            yield from child.named_modules(prefix + ("." if prefix else "") + name)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def __call__(self, fn):
        """Runs fn() as this module's forward, with the global hooks around it."""
        for h in _global_forward_pre_hooks:
            h(self, ())
        out = fn()
        for h in _global_forward_hooks:
            h(self, (), out)
        return out
