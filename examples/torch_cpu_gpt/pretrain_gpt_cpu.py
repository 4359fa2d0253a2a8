"""Pretrain a Megatron-shaped GPT on CPU with tensor, pipeline (1F1B) and data parallelism over gloo.

    torchrun --nproc_per_node 4 pretrain_gpt_cpu.py --tensor-model-parallel-size 2 \\
        --pipeline-model-parallel-size 2 --num-layers 4 --hidden-size 64 ...   (see pretrain_gpt_cpu.sh)

Takes Megatron-LM's argument names (gpt_cpu/arguments.py) and prints Megatron's log lines: the iteration
line on the last rank and ``[Rank N] (after K iterations) memory (MB) | …`` on data-parallel rank 0 of each
stage.  On CPU the memory figures are the process's host heap from glibc (mallinfo2): allocated = bytes in
use, reserved = bytes the heap holds from the system; "max" values are the largest seen at the end of each
schedule step (sampled, not exact: the exact peak is what `preflight trace summarize` reads from a trace).
"""

import ctypes
import datetime
import math
import os
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gpt_cpu import markers  # noqa: E402
from gpt_cpu.arguments import layers_per_stage, parse_args  # noqa: E402
from gpt_cpu.data import SyntheticData  # noqa: E402
from gpt_cpu.model import GPTModel  # noqa: E402
from gpt_cpu.optimizer import Adam, GradBuffer, clip_grad_norm, finalize_grads, initialize_embedding_copy  # noqa: E402
from gpt_cpu.parallel_state import ParallelState  # noqa: E402
from gpt_cpu.schedules import P2P, forward_backward_1f1b  # noqa: E402


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                               "fsmblks", "uordblks", "fordblks", "keepcost")]


class HostMemory:
    """Host heap figures standing in for torch.cuda.memory_allocated()/memory_reserved()."""

    def __init__(self):
        try:
            libc = ctypes.CDLL("libc.so.6")
            libc.mallinfo2.restype = _Mallinfo2
            self.mallinfo2 = libc.mallinfo2
        except (OSError, AttributeError):
            self.mallinfo2 = None
        self.max_allocated = self.max_reserved = 0

    def current(self):
        if self.mallinfo2 is None:
            return 0, 0
        m = self.mallinfo2()
        return m.uordblks + m.hblkhd, m.arena + m.hblkhd

    def sample(self):
        allocated, reserved = self.current()
        self.max_allocated = max(self.max_allocated, allocated)
        self.max_reserved = max(self.max_reserved, reserved)

    def line(self, rank, iteration):
        self.sample()
        allocated, reserved = self.current()
        mb = 1024.0 * 1024.0
        return ("[Rank {}] (after {} iterations) memory (MB) | allocated: {:.2f} | max allocated: {:.2f} | "
                "reserved: {:.2f} | max reserved: {:.2f}".format(rank, iteration, allocated / mb,
                                                                 self.max_allocated / mb, reserved / mb,
                                                                 self.max_reserved / mb))


def learning_rate(args, iteration):
    """Megatron's OptimizerParamScheduler: linear warm-up, then constant / linear / cosine decay to min-lr."""
    if args.lr_warmup_iters > 0 and iteration <= args.lr_warmup_iters:
        return args.lr * iteration / args.lr_warmup_iters
    if args.lr_decay_style == "constant":
        return args.lr
    span = max(1, args.train_iters - args.lr_warmup_iters)
    ratio = min(1.0, (iteration - args.lr_warmup_iters) / span)
    if args.lr_decay_style == "linear":
        coeff = 1.0 - ratio
    else:
        coeff = 0.5 * (math.cos(math.pi * ratio) + 1.0)
    return args.min_lr + coeff * (args.lr - args.min_lr)


def emit(text):
    """One write per line, so that lines of concurrent ranks do not interleave on a shared stdout."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def print_rank_0(ps, text):
    if ps.rank == 0:
        emit(text)


def main():
    args = parse_args()
    dist.init_process_group(backend="gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    tp, pp = args.tensor_model_parallel_size, args.pipeline_model_parallel_size
    ps = ParallelState(tp, pp, world, rank)
    if args.global_batch_size is None:
        args.global_batch_size = args.micro_batch_size * ps.dp
    if args.global_batch_size % (args.micro_batch_size * ps.dp) != 0:
        raise SystemExit("--global-batch-size %d is not divisible by micro batch %d × dp %d"
                         % (args.global_batch_size, args.micro_batch_size, ps.dp))
    num_microbatches = args.global_batch_size // (args.micro_batch_size * ps.dp)
    ps.build_groups()
    print_rank_0(ps, "using world size: {}, data-parallel size: {}, context-parallel size: 1, "
                     "tensor-model-parallel size: {}, pipeline-model-parallel size: {}".format(world, ps.dp, tp, pp))
    print_rank_0(ps, "setting number of micro-batches to constant {}".format(num_microbatches))

    counts = layers_per_stage(args)
    first_layer = sum(counts[:ps.pp_rank])
    dtype = torch.bfloat16 if args.bf16 else torch.float32
    # PyTorch sends bf16 matmuls to oneDNN when the CPU has AVX-512 (BW/VL/DQ), and oneDNN then allocates
    # reorder and scratch buffers whose sizes depend on the ISA it picks (with avx512_bf16: +15 % peak on
    # a 2-layer model).  Without oneDNN the matmuls allocate what autograd's formulas say on every CPU, so
    # the example's memory is the same on every machine (the model in layer_graph.hpp is of that).
    torch.backends.mkldnn.enabled = False
    s, b, h = args.seq_length, args.micro_batch_size, args.hidden_size

    # Inputs shared by every micro batch (Megatron builds them per batch in get_batch).
    causal_mask = torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1)
    position_ids = torch.arange(s, dtype=torch.long)
    data = SyntheticData(args.tokenizer_vocab_size, s, args.seed)

    torch.manual_seed(args.seed)
    with markers.marker(markers.SETUP_PARAMETERS):
        model = GPTModel(args, ps, first_layer, counts[ps.pp_rank], args.seed)
        initialize_embedding_copy(model, ps)
        if args.bf16:
            model.bfloat16()  # Megatron Float16Module: bf16 parameters
    params = [p for p in model.parameters() if p.requires_grad]
    n_params = sum(p.numel() for p in params)
    if ps.dp_rank == 0:
        emit(" > number of parameters on (tensor, pipeline) model parallel rank ({}, {}): {}".format(
            ps.tp_rank, ps.pp_rank, n_params))
    with markers.marker(markers.SETUP_GRAD_BUFFER):
        grads = GradBuffer(params)
    with markers.marker(markers.SETUP_OPTIMIZER):
        optimizer = Adam(params, args.lr, (args.adam_beta1, args.adam_beta2), args.adam_eps, args.weight_decay,
                         master_weights=args.bf16)
    # Dropout draws from the default generator: the same on every tensor-parallel rank (replicated
    # activations need identical masks), different per pipeline stage (Megatron: seed + 100 · pp rank).
    torch.manual_seed(args.seed + 100 * ps.pp_rank)
    model.train()
    p2p = P2P(ps, (s, b, h), dtype)
    memory = HostMemory()

    iteration_holder = [0]

    def forward_step(microbatch, input_tensor):
        it = iteration_holder[0]
        ids = labels = None
        if ps.is_first_stage or ps.is_last_stage:
            ids, labels = data.micro_batch(it, microbatch, args.global_batch_size, b, ps.dp, ps.dp_rank)
            if not ps.is_first_stage:
                ids = None
            if not ps.is_last_stage:
                labels = None
        out = model(ids, position_ids, input_tensor, causal_mask, labels)
        del ids, labels
        memory.sample()
        if ps.is_last_stage:
            return out / num_microbatches, out.detach()
        return out, None

    print_rank_0(ps, "training ...")
    consumed = 0
    for iteration in range(1, args.train_iters + 1):
        iteration_holder[0] = iteration - 1
        markers.instant(markers.ITERATION)
        start = time.time()
        lr = learning_rate(args, iteration)
        for group in optimizer.param_groups:
            group["lr"] = lr
        grads.zero()
        losses = forward_backward_1f1b(forward_step, ps, p2p, num_microbatches)
        memory.sample()
        finalize_grads(grads, model, ps)
        grad_norm = clip_grad_norm(params, args.clip_grad, ps)
        optimizer.attach_grads()
        optimizer.step()
        memory.sample()
        consumed += args.global_batch_size
        elapsed_ms = (time.time() - start) * 1000.0

        if ps.is_last_stage:
            loss = torch.stack(losses).mean() if losses else torch.zeros(())
            loss = loss.float().reshape(1)
            if ps.dp > 1:
                dist.all_reduce(loss, group=ps.dp_group)
                loss /= ps.dp
        if iteration % args.log_interval == 0:
            if rank == world - 1:
                line = " [{}]".format(datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"))
                line += " iteration {:8d}/{:8d} |".format(iteration, args.train_iters)
                line += " consumed samples: {:12d} |".format(consumed)
                line += " elapsed time per iteration (ms): {:.1f} |".format(elapsed_ms)
                line += " learning rate: {:.6E} |".format(lr)
                line += " global batch size: {:5d} |".format(args.global_batch_size)
                line += " lm loss: {:.6E} |".format(loss.item())
                line += " loss scale: 1.0 |"
                line += " grad norm: {:.3f} |".format(grad_norm)
                line += " number of skipped iterations:   0 | number of nan iterations:   0 |"
                emit(line)
            first_log = iteration == args.log_interval
            periodic = args.log_memory_interval and iteration % args.log_memory_interval == 0
            if ps.dp_rank == 0 and (first_log or periodic or iteration == args.train_iters):
                emit(memory.line(rank, iteration))
    dist.barrier()
    print_rank_0(ps, "[after training is done] datetime: {}".format(
        datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
