#pragma once
// The bundled small configuration of examples/torch_cpu_gpt (pretrain_gpt_cpu.sh defaults, seq 64) as
// Megatron-LM arguments, and its layer graph.
#include <string>
#include <vector>

#include "preflight/analyzer/model/layer_graph.hpp"
#include "preflight/analyzer/frontends/megatron_args.hpp"

namespace preflight::test {

/// h 64, 4 heads (d 16), s 64, b 2, gb 8, tp 2, pp 2 on 4 processes, vocab 511 + 1 EOD → 512 (a multiple
/// of 128·2), `--transformer-impl torch_cpu`; `extra` is appended (a later flag overrides an earlier one).
inline std::vector<std::string> torch_cpu_example_args(const std::vector<std::string>& extra = {}) {
  std::vector<std::string> w = {"--nproc_per_node",
                                "4",
                                "--num-layers",
                                "4",
                                "--hidden-size",
                                "64",
                                "--num-attention-heads",
                                "4",
                                "--seq-length",
                                "64",
                                "--max-position-embeddings",
                                "64",
                                "--micro-batch-size",
                                "2",
                                "--global-batch-size",
                                "8",
                                "--tensor-model-parallel-size",
                                "2",
                                "--pipeline-model-parallel-size",
                                "2",
                                "--tokenizer-type",
                                "NullTokenizer",
                                "--vocab-size",
                                "511",
                                "--transformer-impl",
                                "torch_cpu"};
  w.insert(w.end(), extra.begin(), extra.end());
  return w;
}

/// The layer graph of Megatron-LM arguments `w` followed by `extra` (no environment).
inline analyzer::LayerGraph graph_of(std::vector<std::string> w, const std::vector<std::string>& extra = {}) {
  w.insert(w.end(), extra.begin(), extra.end());
  analyzer::MegatronConfig c = analyzer::parse_megatron_args(w, {});
  return analyzer::build_layer_graph(c.model, c.strategy);
}

}  // namespace preflight::test
