"""Megatron-style gradient buffer, gradient finalisation, clipping and Adam, after
``megatron/core/distributed/distributed_data_parallel.py``, ``finalize_model_grads.py``,
``megatron/core/optimizer`` (clip_grads.py, optimizer.py).

* One contiguous fp32 ``main_grad`` buffer per stage; each parameter's gradient is added into its slice by
  a hook on its AccumulateGrad node and then dropped (Megatron DDP).
* After the last micro batch: the buffer is all-reduced over the data-parallel group and divided by dp;
  with tied embeddings and pp > 1 the word-embedding gradient is all-reduced over the embedding group.
* Gradient norm over the model-parallel group, counting tensor-parallel duplicates and the shared
  embedding copy once (Megatron ``clip_grad_norm_fp32``); gradients are scaled when it exceeds --clip-grad.
* Adam(W) with fp32 moments allocated when the optimizer is built (not lazily at the first step); with
  --bf16 an fp32 master copy of every parameter is stepped and copied back (Megatron's mixed-precision
  optimizer): bytes per parameter 4 + 4 + 8 (fp32) or 2 + 4 + 4 + 8 (bf16).
"""

import math

import torch
import torch.distributed as dist


class GradBuffer:
    def __init__(self, params):
        self.params = list(params)
        total = sum(p.numel() for p in self.params)
        self.buffer = torch.zeros(total, dtype=torch.float32)
        self.grad_accs = []
        offset = 0
        for p in self.params:
            p.main_grad = self.buffer[offset:offset + p.numel()].view(p.shape)
            offset += p.numel()
            acc = p.expand_as(p).grad_fn.next_functions[0][0]
            acc.register_hook(self._make_hook(p))
            self.grad_accs.append(acc)

    @staticmethod
    def _make_hook(p):
        def hook(*unused):
            if p.grad is not None:
                p.main_grad.add_(p.grad.data)
                p.grad = None
        return hook

    def zero(self):
        self.buffer.zero_()


def finalize_grads(grad_buffer, model, ps):
    if ps.dp > 1:
        grad_buffer.buffer.div_(ps.dp)
        dist.all_reduce(grad_buffer.buffer, group=ps.dp_group)
    if ps.pp > 1 and model.share_embeddings and (ps.is_first_stage or ps.is_last_stage):
        dist.all_reduce(model.shared_embedding_weight().main_grad, group=ps.embedding_group)


def initialize_embedding_copy(model, ps):
    """Sums the first stage's word embedding into the last stage's zero copy (tied embeddings, pp > 1)."""
    if ps.pp > 1 and model.share_embeddings and (ps.is_first_stage or ps.is_last_stage):
        dist.all_reduce(model.shared_embedding_weight().data, group=ps.embedding_group)


def clip_grad_norm(params, max_norm, ps):
    """Global L2 norm of the main grads; scales them by max_norm / norm when larger.  Returns the norm."""
    sq = 0.0
    for p in params:
        duplicate = getattr(p, "tensor_parallel_duplicate", False) or getattr(p, "shared_embedding", False)
        if not duplicate:
            sq += float(p.main_grad.norm()) ** 2
    total = torch.tensor([sq], dtype=torch.float64)
    if ps.tp * ps.pp > 1:
        dist.all_reduce(total, group=ps.mp_group)
    norm = math.sqrt(total.item())
    if max_norm > 0:
        coeff = max_norm / (norm + 1e-6)
        if coeff < 1.0:
            for p in params:
                p.main_grad.mul_(coeff)
    return norm


class Adam(torch.optim.Optimizer):
    """AdamW over `params` (fp32: the model's own; bf16: fp32 master copies), states made up front."""

    def __init__(self, model_params, lr, betas, eps, weight_decay, master_weights):
        self.model_params = list(model_params)
        if master_weights:
            steps = [p.detach().float() for p in self.model_params]  # fp32 master copies
        else:
            steps = self.model_params
        super().__init__(steps, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))
        self.master_weights = master_weights
        for p in steps:
            self.state[p]["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            self.state[p]["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        self.steps_taken = 0

    def attach_grads(self):
        """Points the stepped parameters' .grad at the main_grad views (no copy)."""
        for model_p, step_p in zip(self.model_params, self.param_groups[0]["params"]):
            step_p.grad = model_p.main_grad

    @torch.no_grad()
    def step(self, closure=None):
        self.steps_taken += 1
        t = self.steps_taken
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
            bc1 = 1 - beta1 ** t
            bc2_sqrt = math.sqrt(1 - beta2 ** t)
            for p in group["params"]:
                g = p.grad
                st = self.state[p]
                if wd != 0:
                    p.mul_(1 - lr * wd)
                st["exp_avg"].mul_(beta1).add_(g, alpha=1 - beta1)
                st["exp_avg_sq"].mul_(beta2).addcmul_(g, g, value=1 - beta2)
                denom = st["exp_avg_sq"].sqrt().div_(bc2_sqrt).add_(eps)
                p.addcdiv_(st["exp_avg"], denom, value=-lr / bc1)
                p.grad = None
        if self.master_weights:
            for model_p, master in zip(self.model_params, self.param_groups[0]["params"]):
                model_p.data.copy_(master)
        return None
