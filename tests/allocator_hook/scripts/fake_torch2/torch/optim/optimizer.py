_pre, _post = [], []


def register_optimizer_step_pre_hook(hook):
    _pre.append(hook)


def register_optimizer_step_post_hook(hook):
    _post.append(hook)


class Optimizer:
    def step(self, fn):
        for h in _pre:
            h(self, (), {})
        fn()
        for h in _post:
            h(self, (), {})
