// The torch_cpu implementation of the layer graph (examples/torch_cpu_gpt): what autograd keeps per op,
// computed here by hand from the shapes, and what the implementation refuses.
#include <gtest/gtest.h>

#include <map>

#include "preflight/analyzer/model/layer_graph.hpp"
#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/common/error.hpp"
#include "torch_cpu_example.hpp"

using namespace preflight::analyzer;
using Words = std::vector<std::string>;
using preflight::test::graph_of;
using preflight::test::torch_cpu_example_args;

namespace {

const Op& op_named(const LayerGraph& g, const std::string& path) {
  for (const auto& c : g.chunks)
    for (const auto& op : c.ops)
      if (op.path == path) return op;
  throw std::runtime_error("no op " + path);
}

std::map<std::string, std::int64_t> kept_of(const Op& op) {
  std::map<std::string, std::int64_t> m;
  for (const auto& t : op.kept) m[t.name] += t.bytes;
  return m;
}

using Kept = std::map<std::string, std::int64_t>;
// torch_cpu_example_args(): s 64 · b 2 = T 128 tokens, h 64, 4 bytes (fp32).
constexpr std::int64_t T = 128, h = 64, e = 4;

}  // namespace

TEST(TorchCpuGraph, LayerOpsKeepWhatAutogradSaves) {
  LayerGraph g = graph_of(torch_cpu_example_args());
  EXPECT_EQ(g.strategy.attention_backend, AttentionBackend::Math);
  const std::string L = "decoder.layers.1.";
  // LayerNorm: input + mean + rstd in the activation dtype.
  EXPECT_EQ(kept_of(op_named(g, L + "input_layernorm")),
            (Kept{{"input", T * h * e}, {"mean", T * e}, {"rstd", T * e}}));
  EXPECT_EQ(kept_of(op_named(g, L + "self_attention.linear_qkv")), (Kept{{"input", T * h * e}}));
  // 2 local heads: q, k, v copies [b·2, s, 16]; softmax, dropout noise and output [b·2, s, s].
  std::int64_t qkv = 2 * 2 * 64 * 16 * e, scores = 2 * 2 * 64 * 64 * e;
  EXPECT_EQ(kept_of(op_named(g, L + "self_attention.core_attention")), (Kept{{"q", qkv},
                                                                             {"k", qkv},
                                                                             {"v", qkv},
                                                                             {"softmax", scores},
                                                                             {"dropout_noise", scores},
                                                                             {"dropout_output", scores}}));
  EXPECT_EQ(kept_of(op_named(g, L + "self_attention.linear_proj")), (Kept{{"input", T * 32 * e}}));
  EXPECT_EQ(kept_of(op_named(g, L + "self_attn_bda")), (Kept{{"noise", T * h * e}}));
  EXPECT_EQ(kept_of(op_named(g, L + "mlp.linear_fc1")), (Kept{{"input", T * h * e}}));
  EXPECT_EQ(kept_of(op_named(g, L + "mlp.activation_func")), (Kept{{"input", T * 128 * e}}));
  EXPECT_EQ(kept_of(op_named(g, L + "mlp.linear_fc2")), (Kept{{"input", T * 128 * e}}));
  EXPECT_EQ(kept_of(op_named(g, L + "mlp_bda")), (Kept{{"noise", T * h * e}}));
  // The whole layer: 591,872 bytes per micro batch on each rank.
  std::int64_t layer = 0;
  for (const auto& c : g.chunks)
    for (const auto& op : c.ops)
      if (op.layer == 1) layer += op.kept_bytes;
  EXPECT_EQ(layer, 591872);
  EXPECT_EQ(op_named(g, L + "input_layernorm").kept_input_bytes(), T * h * e);
  EXPECT_EQ(op_named(g, L + "self_attention.core_attention").kept_input_bytes(), 0);
}

TEST(TorchCpuGraph, EmbeddingAndHead) {
  LayerGraph g = graph_of(torch_cpu_example_args());
  // tp 2: the vocab-parallel lookup keeps shifted ids (int64) and the out-of-range mask (bool).
  EXPECT_EQ(kept_of(op_named(g, "embedding.word_embeddings")),
            (Kept{{"masked_ids", T * 8}, {"out_of_range_mask", T}}));
  EXPECT_EQ(kept_of(op_named(g, "embedding.embedding_dropout")), (Kept{{"noise", T * h * e}}));
  // Vocab-parallel cross entropy over 512 / 2 = 256 local logits: fp32 softmax, target mask, masked targets.
  EXPECT_EQ(kept_of(op_named(g, "loss")),
            (Kept{{"softmax_fp32", T * 256 * 4}, {"target_mask", T}, {"masked_target", T * 8}}));
  // tp 1: F.embedding keeps the token ids it was given (allocated by the data, so an input).
  LayerGraph g1 = graph_of(torch_cpu_example_args(),
                           {"--tensor-model-parallel-size", "1", "--pipeline-model-parallel-size", "1"});
  const Op& emb = op_named(g1, "embedding.word_embeddings");
  EXPECT_EQ(kept_of(emb), (Kept{{"token_ids", T * 8}}));
  EXPECT_EQ(emb.kept_input_bytes(), T * 8);
}

TEST(TorchCpuGraph, Bf16GqaSwiglu) {
  // bf16: 2-byte activations and statistics; GQA with 2 groups on tp 2 (1 local group) still copies k, v to
  // both local heads; SwiGLU keeps fc1's 2f output and the SiLU output.
  LayerGraph g =
      graph_of(torch_cpu_example_args(), {"--bf16", "--group-query-attention", "--num-query-groups", "2",
                                          "--swiglu", "--ffn-hidden-size", "128"});
  const std::string L = "decoder.layers.0.";
  EXPECT_EQ(kept_of(op_named(g, L + "input_layernorm")),
            (Kept{{"input", T * h * 2}, {"mean", T * 2}, {"rstd", T * 2}}));
  std::int64_t copy = 2 * 2 * 64 * 16 * 2;
  Kept at = kept_of(op_named(g, L + "self_attention.core_attention"));
  EXPECT_EQ(at["k"], copy);
  EXPECT_EQ(at["v"], copy);
  EXPECT_EQ(kept_of(op_named(g, L + "mlp.activation_func")),
            (Kept{{"input", T * 128 * 2}, {"silu_output", T * 64 * 2}}));
  // qkv projection out = (4 + 2·2)·16 = 128 features, 64 per tp rank.
  EXPECT_EQ(op_named(g, L + "self_attention.linear_qkv").params[0].shape,
            (std::vector<std::int64_t>{64, 64}));
}

TEST(TorchCpuGraph, NoDropoutKeepsNoNoise) {
  LayerGraph g = graph_of(torch_cpu_example_args(), {"--attention-dropout", "0", "--hidden-dropout", "0"});
  EXPECT_EQ(kept_of(op_named(g, "decoder.layers.0.self_attn_bda")), Kept{});
  Kept at = kept_of(op_named(g, "decoder.layers.0.self_attention.core_attention"));
  EXPECT_EQ(at.count("dropout_noise"), 0u);
  EXPECT_EQ(at.count("dropout_output"), 0u);
  EXPECT_EQ(at["softmax"], 2 * 2 * 64 * 64 * e);
}

TEST(TorchCpuGraph, SelectiveRecomputeKeepsQkvOutputAndRngState) {
  LayerGraph g = graph_of(torch_cpu_example_args(), {"--recompute-granularity", "selective"});
  const Op& at = op_named(g, "decoder.layers.0.self_attention.core_attention");
  // checkpoint(core_attention, qkv_output, mask): qkv output [T, 3·64/2] and the 5056-byte CPU RNG state.
  EXPECT_EQ(kept_of(at), (Kept{{"input", T * 96 * e}, {"rng_state", 5056}}));
  EXPECT_EQ(at.kept_input_bytes(), T * 96 * e);
}

TEST(TorchCpuGraph, FullRecomputeKeepsCheckpointInputs) {
  // uniform, 2 layers per checkpoint: the first layer of each group keeps its input and one RNG state.
  LayerGraph g = graph_of(torch_cpu_example_args(), {"--recompute-granularity", "full", "--recompute-method",
                                                     "uniform", "--recompute-num-layers", "2"});
  std::int64_t l0 = 0, l1 = 0;
  for (const auto& c : g.chunks)
    for (const auto& op : c.ops) {
      if (op.layer == 0) l0 += op.kept_bytes;
      if (op.layer == 1) l1 += op.kept_bytes;
    }
  EXPECT_EQ(l0, T * h * e + 5056);
  EXPECT_EQ(l1, 0);
  // block, 1 layer: only the first layer of each stage is checkpointed.
  LayerGraph b = graph_of(torch_cpu_example_args(), {"--recompute-granularity", "full", "--recompute-method",
                                                     "block", "--recompute-num-layers", "1"});
  std::int64_t b0 = 0, b1 = 0;
  for (const auto& c : b.chunks)
    for (const auto& op : c.ops) {
      if (op.layer == 0) b0 += op.kept_bytes;
      if (op.layer == 1) b1 += op.kept_bytes;
    }
  EXPECT_EQ(b0, T * h * e + 5056);
  EXPECT_EQ(b1, 591872);
}

TEST(TorchCpuGraph, RefusesWhatTheExampleDoesNotRun) {
  auto where = [](const Words& extra) -> std::string {
    try {
      graph_of(torch_cpu_example_args(), extra);
    } catch (const preflight::InputError& e) {
      return e.where();
    }
    return "";
  };
  EXPECT_EQ(where({"--fp16"}), "--fp16");
  EXPECT_EQ(where({"--sequence-parallel"}), "--sequence-parallel");
  EXPECT_EQ(where({"--use-distributed-optimizer"}), "--use-distributed-optimizer");
  EXPECT_EQ(where({"--normalization", "RMSNorm"}), "--normalization");
  EXPECT_EQ(where({"--position-embedding-type", "rope"}), "--position-embedding-type");
  EXPECT_EQ(where({"--attention-backend", "flash"}), "--attention-backend");
  EXPECT_EQ(where({"--transformer-impl", "tensorflow"}), "--transformer-impl");
  EXPECT_EQ(where({"--recompute-granularity", "selective", "--recompute-modules", "mlp"}),
            "--recompute-modules");
  EXPECT_EQ(where({}), "");
}
