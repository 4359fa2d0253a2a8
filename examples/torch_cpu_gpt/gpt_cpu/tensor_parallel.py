"""Tensor parallelism over gloo, after ``megatron/core/tensor_parallel`` (mappings.py, layers.py,
cross_entropy.py): column- and row-parallel linears, the vocab-parallel embedding and cross entropy.

Weights are initialised as Megatron does with ``--use-cpu-initialization``: the full ("master") weight is
drawn on every rank and each rank keeps its shard, so a run gives the same model for any tp and pp.  Each
parameter draws from its own generator seeded by (seed, parameter name), which also makes the model
independent of how layers are split over pipeline stages.
"""

import math
import zlib

import torch
import torch.distributed as dist
import torch.nn.functional as F


def all_reduce_(tensor, group, op=dist.ReduceOp.SUM):
    """In-place all-reduce.  Gloo (torch 1.13) has no bf16 reductions: bf16 tensors go through a transient
    fp32 copy."""
    if tensor.dtype == torch.bfloat16:
        buf = tensor.float()
        dist.all_reduce(buf, op=op, group=group)
        tensor.copy_(buf)
    else:
        dist.all_reduce(tensor, op=op, group=group)
    return tensor


class _CopyToModelParallelRegion(torch.autograd.Function):
    """Identity forward, all-reduce of the gradient backward (the input of a column-parallel linear)."""

    @staticmethod
    def forward(ctx, input_, group):
        ctx.group = group
        return input_

    @staticmethod
    def backward(ctx, grad_output):
        if dist.get_world_size(ctx.group) > 1:
            grad_output = all_reduce_(grad_output.contiguous(), ctx.group)
        return grad_output, None


class _ReduceFromModelParallelRegion(torch.autograd.Function):
    """All-reduce forward (in place, as Megatron's ``_reduce``), identity backward."""

    @staticmethod
    def forward(ctx, input_, group):
        if dist.get_world_size(group) > 1:
            all_reduce_(input_, group)
        return input_

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output, None


def copy_to_tensor_model_parallel_region(x, group):
    return _CopyToModelParallelRegion.apply(x, group)


def reduce_from_tensor_model_parallel_region(x, group):
    return _ReduceFromModelParallelRegion.apply(x, group)


def _generator(seed, name):
    return torch.Generator().manual_seed((seed * 1000003 + zlib.crc32(name.encode())) % (2**63))


def init_sharded(param, full_shape, partition_dim, rank, world, std, seed, name, stride=1):
    """Draws the full weight N(0, std) and copies this rank's shard into `param` (Megatron
    ``_initialize_affine_weight_cpu``, with `stride` chunks per partition for the gated fc1)."""
    master = torch.empty(full_shape, dtype=torch.float32)
    master.normal_(0.0, std, generator=_generator(seed, name))
    per = full_shape[partition_dim] // (world * stride)
    chunks = torch.split(master, per, dim=partition_dim)
    mine = chunks[rank::world]
    with torch.no_grad():
        torch.cat(mine, dim=partition_dim, out=param.data)
    del master, chunks, mine


def init_replicated(param, std, seed, name):
    with torch.no_grad():
        param.normal_(0.0, std, generator=_generator(seed, name))


class ColumnParallelLinear(torch.nn.Module):
    """Y = X A^T + b with A split by rows (output features) over tp; the input is the replicated stream."""

    def __init__(self, in_features, out_features, ps, bias, std, seed, name, stride=1, skip_weight=False):
        super().__init__()
        if out_features % ps.tp != 0:
            raise SystemExit("%s: %d output features are not divisible by tp = %d" % (name, out_features, ps.tp))
        self.group = ps.tp_group
        self.out_local = out_features // ps.tp
        if skip_weight:  # the weight is passed to forward (tied output layer)
            self.register_parameter("weight", None)
        else:
            self.weight = torch.nn.Parameter(torch.empty(self.out_local, in_features))
            init_sharded(self.weight, (out_features, in_features), 0, ps.tp_rank, ps.tp, std, seed, name, stride)
        if bias:
            self.bias = torch.nn.Parameter(torch.zeros(self.out_local))
        else:
            self.register_parameter("bias", None)

    def forward(self, x, weight=None):
        x = copy_to_tensor_model_parallel_region(x, self.group)
        return F.linear(x, self.weight if weight is None else weight, self.bias)


class RowParallelLinear(torch.nn.Module):
    """Y = X A^T + b with A split by columns (input features) over tp; the partial outputs are all-reduced
    in place, then the (replicated) bias is added."""

    def __init__(self, in_features, out_features, ps, bias, std, seed, name):
        super().__init__()
        if in_features % ps.tp != 0:
            raise SystemExit("%s: %d input features are not divisible by tp = %d" % (name, in_features, ps.tp))
        self.group = ps.tp_group
        self.weight = torch.nn.Parameter(torch.empty(out_features, in_features // ps.tp))
        init_sharded(self.weight, (out_features, in_features), 1, ps.tp_rank, ps.tp, std, seed, name)
        if bias:
            self.bias = torch.nn.Parameter(torch.zeros(out_features))
            self.bias.tensor_parallel_duplicate = ps.tp_rank > 0
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        out = reduce_from_tensor_model_parallel_region(F.linear(x, self.weight), self.group)
        if self.bias is not None:
            out = out + self.bias
        return out


class VocabParallelEmbedding(torch.nn.Module):
    """Embedding table split by vocabulary rows over tp; out-of-range ids give zeros, then all-reduce."""

    def __init__(self, padded_vocab, hidden, ps, std, seed, name):
        super().__init__()
        self.group, self.tp = ps.tp_group, ps.tp
        per = padded_vocab // ps.tp
        self.start, self.end = ps.tp_rank * per, (ps.tp_rank + 1) * per
        self.weight = torch.nn.Parameter(torch.empty(per, hidden))
        init_sharded(self.weight, (padded_vocab, hidden), 0, ps.tp_rank, ps.tp, std, seed, name)

    def forward(self, ids):
        if self.tp > 1:
            input_mask = (ids < self.start) | (ids >= self.end)
            masked = ids - self.start
            masked = masked.masked_fill(input_mask, 0)
            out = F.embedding(masked, self.weight)
            out = out.masked_fill(input_mask.unsqueeze(-1), 0.0)
        else:
            out = F.embedding(ids, self.weight)
        return reduce_from_tensor_model_parallel_region(out, self.group)


class _VocabParallelCrossEntropy(torch.autograd.Function):
    """Megatron ``_VocabParallelCrossEntropy``: fp32 logits [s, b, V/tp] and targets [s, b] → loss [s, b].
    Saves the softmax (fp32, in the buffer of the shifted logits), the target mask and masked targets."""

    @staticmethod
    def forward(ctx, logits, target, vocab_start, group):
        logits_max = torch.max(logits, dim=-1)[0]
        if dist.get_world_size(group) > 1:
            dist.all_reduce(logits_max, op=dist.ReduceOp.MAX, group=group)
        exp_logits = logits - logits_max.unsqueeze(dim=-1)
        per = logits.size(-1)
        target_mask = (target < vocab_start) | (target >= vocab_start + per)
        masked_target = target - vocab_start
        masked_target[target_mask] = 0
        flat = exp_logits.view(-1, per)
        masked_target_1d = masked_target.view(-1)
        arange = torch.arange(flat.size(0))
        predicted = flat[arange, masked_target_1d].view_as(target)
        predicted[target_mask] = 0.0
        del arange
        if dist.get_world_size(group) > 1:
            dist.all_reduce(predicted, group=group)
        torch.exp(exp_logits, out=exp_logits)
        sum_exp = exp_logits.sum(dim=-1)
        if dist.get_world_size(group) > 1:
            dist.all_reduce(sum_exp, group=group)
        loss = torch.log(sum_exp) - predicted
        exp_logits.div_(sum_exp.unsqueeze(dim=-1))
        ctx.save_for_backward(exp_logits, target_mask, masked_target_1d)
        return loss

    @staticmethod
    def backward(ctx, grad_output):
        softmax, target_mask, masked_target_1d = ctx.saved_tensors
        grad_input = softmax
        per = softmax.size(-1)
        grad_2d = grad_input.view(-1, per)
        arange = torch.arange(grad_2d.size(0))
        update = 1.0 - target_mask.view(-1).float()
        grad_2d[arange, masked_target_1d] -= update
        grad_input.mul_(grad_output.unsqueeze(dim=-1))
        return grad_input, None, None, None


def vocab_parallel_cross_entropy(logits, target, vocab_start, group):
    return _VocabParallelCrossEntropy.apply(logits, target, vocab_start, group)


def padded_vocab_size(vocab, divisible_by, tp):
    """Megatron ``_vocab_size_with_padding``: up to a multiple of divisible_by * tp."""
    multiple = divisible_by * tp
    return int(math.ceil(vocab / multiple) * multiple)
