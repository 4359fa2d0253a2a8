#pragma once
/// @file compat_get_training_info.hpp
/// `preflight analyze --compat get_training_info ARGS…`: the exact stdout of the "MegatronLM GPTModel
/// Training Analysis Tool", NVIDIA/Megatron-LM pull request 482, `tools/get_training_info/
/// get_training_info.py` (branch head 9771366921a8, code from bbbfed70c99c, Sept 2023), run with
/// CPython 3.11 on the same words.  Notes: ../shared/notes/megatron_info.md §2–§4.
///
/// Faithful, quirks included — this mode exists to be diffed against the original:
///  - its own argument parsing (argparse `parse_known_args`): unknown words are ignored; unique
///    prefixes of its flags are taken (`--num-lay 4`), ambiguous ones are an error; `--flag=value`;
///    only the spellings it defines count (`--nproc_per_node` and `--make_vocab_size_divisible_by`
///    with underscores; `--nproc-per-node` and `--make-vocab-size-divisible-by` are ignored);
///    `--use-flash-attn --use-distributed-optimizer --swiglu` are required (it asserts them);
///  - the vocabulary is the entry count of the `--vocab-file` JSON (Python's json.load + len),
///    padded to a multiple of make_vocab_size_divisible_by × tp;
///  - its formulas, counting bugs included (qkv bias h, input_layernorm h + b, 10·sbh activation
///    rows, unsharded TP cells, DP volume when dp = 1, first-stage-only memory), evaluated with
///    Python's int/float semantics (arbitrary-precision ints, correctly rounded int/int division);
///  - Python float repr and round(), str.ljust padding, box-drawing characters, tabs and trailing
///    spaces exactly as printed.
/// Not reproduced: the argparse `-h/--help` text (exit 2 instead), and hangs of the original on
/// absurd sizes (its vocabulary padding loop; we compute the padded size directly).
///
/// Where the original stops with an error — argparse errors (exit 2 there), failed asserts, or a
/// Python exception such as the IndexError when --num-layers is not divisible by
/// --pipeline-model-parallel-size — nothing is printed and InputError is thrown instead.

#include <string>
#include <vector>

namespace preflight::analyzer {

/// Renders the original tool's complete stdout for `args` (the words after the program name, as
/// torchrun + Megatron would receive them).  Reads the `--vocab-file` JSON from the file system.
/// @return the bytes to write to stdout (UTF-8, '\n' line ends)
/// @throws InputError naming the flag (or vocab file:line:column) where the original would exit
///         with an argparse error, fail an assert or crash; the message names the Python error.
std::string render_get_training_info(const std::vector<std::string>& args);

}  // namespace preflight::analyzer
