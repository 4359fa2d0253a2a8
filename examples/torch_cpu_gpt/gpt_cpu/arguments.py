"""Megatron-LM argument names (``megatron/training/arguments.py``) for the subset this example implements.

Unknown arguments are an error, as in Megatron.  Defaults follow Megatron where it has one (dropout 0.1,
LayerNorm, learned absolute positions, tied embeddings, ffn = 4h or the SwiGLU rounding, vocab padded to a
multiple of 128·tp, NullTokenizer's vocabulary exactly --vocab-size as Megatron-LM's since 2026-04-22).
"""

import argparse
import math


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Megatron-shaped GPT pretraining on CPU (torchrun + gloo)",
                                allow_abbrev=False)
    a = p.add_argument
    # model
    a("--num-layers", type=int, required=True)
    a("--hidden-size", type=int, required=True)
    a("--ffn-hidden-size", type=int, default=None)
    a("--num-attention-heads", type=int, required=True)
    a("--group-query-attention", action="store_true")
    a("--num-query-groups", type=int, default=1)
    a("--kv-channels", type=int, default=None)
    a("--seq-length", type=int, required=True)
    a("--max-position-embeddings", type=int, default=None)
    a("--position-embedding-type", choices=["learned_absolute", "none"], default="learned_absolute")
    a("--swiglu", action="store_true")
    a("--untie-embeddings-and-output-weights", action="store_true")
    a("--disable-bias-linear", action="store_true")
    a("--add-qkv-bias", action="store_true")
    a("--normalization", choices=["LayerNorm"], default="LayerNorm")
    a("--layernorm-epsilon", type=float, default=1e-5)
    a("--attention-dropout", type=float, default=0.1)
    a("--hidden-dropout", type=float, default=0.1)
    a("--init-method-std", type=float, default=0.02)
    a("--vocab-size", type=int, default=None)
    a("--tokenizer-type", choices=["NullTokenizer"], default="NullTokenizer")
    a("--make-vocab-size-divisible-by", type=int, default=128)
    # implementation (accepted for the analyzer; this program runs exactly one implementation)
    a("--transformer-impl", choices=["torch_cpu"], default="torch_cpu")
    a("--attention-backend", choices=["unfused", "local", "auto"], default="unfused")
    a("--use-cpu-initialization", action="store_true")
    a("--mock-data", action="store_true")
    # parallelism and batch
    a("--tensor-model-parallel-size", type=int, default=1)
    a("--pipeline-model-parallel-size", type=int, default=1)
    a("--decoder-first-pipeline-num-layers", type=int, default=None)
    a("--decoder-last-pipeline-num-layers", type=int, default=None)
    a("--micro-batch-size", type=int, required=True)
    a("--global-batch-size", type=int, default=None)
    # numerics, recompute
    a("--fp32", action="store_true", help="fp32 parameters and activations (the default)")
    a("--bf16", action="store_true")
    a("--recompute-granularity", choices=["full", "selective"], default=None)
    a("--recompute-method", choices=["uniform", "block"], default=None)
    a("--recompute-num-layers", type=int, default=1)
    a("--recompute-activations", action="store_true", help="= --recompute-granularity selective")
    # optimizer and schedule
    a("--optimizer", choices=["adam"], default="adam")
    a("--lr", type=float, default=1e-3)
    a("--min-lr", type=float, default=0.0)
    a("--lr-decay-style", choices=["constant", "cosine", "linear"], default="constant")
    a("--lr-warmup-iters", type=int, default=0)
    a("--weight-decay", type=float, default=0.01)
    a("--adam-beta1", type=float, default=0.9)
    a("--adam-beta2", type=float, default=0.999)
    a("--adam-eps", type=float, default=1e-8)
    a("--clip-grad", type=float, default=1.0)
    a("--train-iters", type=int, required=True)
    a("--seed", type=int, default=1234)
    a("--log-interval", type=int, default=1)
    a("--log-memory-interval", type=int, default=None)
    args = p.parse_args(argv)
    return finish(p, args)


def finish(parser, args):
    err = parser.error
    if args.bf16 and args.fp32:
        err("--bf16 and --fp32 are exclusive")
    if args.recompute_activations:
        args.recompute_granularity = "selective"
    if args.recompute_granularity == "full" and args.recompute_method is None:
        err("--recompute-granularity full needs --recompute-method uniform or block (as in Megatron)")
    if not args.group_query_attention:
        args.num_query_groups = args.num_attention_heads
    if args.num_attention_heads % args.num_query_groups != 0:
        err("--num-query-groups %d does not divide --num-attention-heads %d"
            % (args.num_query_groups, args.num_attention_heads))
    if args.kv_channels is None:
        if args.hidden_size % args.num_attention_heads != 0:
            err("--hidden-size is not divisible by --num-attention-heads (give --kv-channels)")
        args.kv_channels = args.hidden_size // args.num_attention_heads
    if args.ffn_hidden_size is None:
        if args.swiglu:  # Megatron: int((4h · 2/3) / 64) · 64
            args.ffn_hidden_size = int((4 * args.hidden_size * 2 / 3) / 64) * 64
        else:
            args.ffn_hidden_size = 4 * args.hidden_size
    if args.max_position_embeddings is None:
        args.max_position_embeddings = args.seq_length
    if args.seq_length > args.max_position_embeddings and args.position_embedding_type == "learned_absolute":
        err("--seq-length exceeds --max-position-embeddings")
    if args.vocab_size is None:
        err("--vocab-size is required (NullTokenizer)")
    args.tokenizer_vocab_size = args.vocab_size  # NullTokenizer (Megatron-LM since 2026-04-22; before: + 1)
    tp = args.tensor_model_parallel_size
    args.padded_vocab_size = int(math.ceil(args.tokenizer_vocab_size / (args.make_vocab_size_divisible_by * tp))
                                 * args.make_vocab_size_divisible_by * tp)
    for name, n in (("--num-attention-heads", args.num_attention_heads), ("--num-query-groups", args.num_query_groups),
                    ("--ffn-hidden-size", args.ffn_hidden_size)):
        if n % tp != 0:
            err("%s %d is not divisible by --tensor-model-parallel-size %d" % (name, n, tp))
    args.output_std = args.init_method_std / math.sqrt(2.0 * args.num_layers)
    args.add_bias_linear = not args.disable_bias_linear
    return args


def layers_per_stage(args):
    """Megatron's split: even, or given first/last stage layers with the rest even over the middle stages."""
    pp, L = args.pipeline_model_parallel_size, args.num_layers
    first, last = args.decoder_first_pipeline_num_layers, args.decoder_last_pipeline_num_layers
    if first is None and last is None:
        if L % pp != 0:
            raise SystemExit("--num-layers %d is not divisible by --pipeline-model-parallel-size %d" % (L, pp))
        return [L // pp] * pp
    counts = [None] * pp
    rest, middle = L, pp
    if first is not None:
        counts[0] = first
        rest, middle = rest - first, middle - 1
    if last is not None and pp > 1:
        counts[-1] = last
        rest, middle = rest - last, middle - 1
    if middle > 0:
        if rest % middle != 0 or rest < 0:
            raise SystemExit("%d remaining layers do not split evenly over %d middle stages" % (rest, middle))
        counts = [c if c is not None else rest // middle for c in counts]
    elif rest != 0:
        raise SystemExit("first/last stage layers do not add up to --num-layers")
    return counts
