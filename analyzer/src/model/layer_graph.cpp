#include "preflight/analyzer/model/layer_graph.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <utility>

#include "ops_build.hpp"
#include "preflight/common/error.hpp"

namespace preflight::analyzer {

std::int64_t ParamTensor::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return shape.empty() ? 0 : n;
}
std::int64_t ParamTensor::full_numel() const {
  std::int64_t n = 1;
  for (auto d : full_shape) n *= d;
  return full_shape.empty() ? 0 : n;
}
std::int64_t Op::param_numel() const {
  std::int64_t n = 0;
  for (const auto& p : params) n += p.numel();
  return n;
}
std::int64_t Op::saved_bytes() const {
  std::int64_t n = 0;
  for (const auto& s : saved) n += s.bytes;
  return n;
}
std::int64_t Op::kept_input_bytes() const {
  std::int64_t n = 0;
  for (const auto& t : kept)
    if (t.is_input) n += t.bytes;
  return n;
}
std::int64_t StageGraph::param_numel() const {
  std::int64_t n = 0;
  for (const auto& op : ops) n += op.param_numel();
  return n;
}
std::int64_t StageGraph::frozen_param_numel(bool expert) const {
  std::int64_t n = 0;
  for (const auto& op : ops)
    for (const auto& p : op.params)
      if (p.frozen && p.expert == expert) n += p.numel();
  return n;
}
std::int64_t StageGraph::expert_param_numel() const {
  std::int64_t n = 0;
  for (const auto& op : ops)
    for (const auto& p : op.params)
      if (p.expert) n += p.numel();
  return n;
}
std::int64_t StageGraph::kept_activation_bytes() const {
  std::int64_t n = 0;
  for (const auto& op : ops) n += op.kept_bytes;
  return n;
}
std::int64_t StageGraph::largest_layer_kept_bytes() const {
  std::map<std::pair<int, int>, std::int64_t> per_layer;  // (layer, MTP layer) → kept bytes
  for (const auto& op : ops)
    if (op.layer >= 0 || op.mtp_layer >= 0) per_layer[{op.layer, op.mtp_layer}] += op.kept_bytes;
  std::int64_t largest = 0;
  for (const auto& [layer, bytes] : per_layer) largest = std::max(largest, bytes);
  return largest;
}
std::vector<const StageGraph*> LayerGraph::stage(int pp_rank) const {
  std::vector<const StageGraph*> out;
  for (const auto& c : chunks)
    if (c.pp_rank == pp_rank) out.push_back(&c);
  return out;
}

namespace graph_ops {

/// Builds the ops of one chunk and applies recompute.
StageGraph build_chunk(const Ctx& c, int pp_rank, int vchunk, int first_layer, int num_layers, bool embedding,
                       bool head) {
  const Strategy& st = c.st;
  StageGraph g;
  g.pp_rank = pp_rank;
  g.vchunk = vchunk;
  g.first_layer = first_layer;
  g.num_layers = num_layers;
  g.has_embedding = embedding;
  g.has_output_layer = head;

  if (embedding) {
    add_embedding(c, g.ops, "embedding.", true);
    finish_kept(g.ops);
  }

  int selective_checkpoints = 0;
  for (int i = 0; i < num_layers; ++i) {
    std::vector<Op> ops;
    if (st.layer_in_bf16(first_layer + i, c.m.num_layers)) {
      // --first-last-layers-bf16: this layer's linears keep 16-bit inputs.
      Ctx sixteen = c;
      sixteen.lin_a = c.a;
      sixteen.lin_a_den = 1;
      ops = build_layer(sixteen, first_layer + i);
    } else {
      ops = build_layer(c, first_layer + i);
      apply_precision_overrides(c, ops, i);
    }
    finish_kept(ops);
    if (!st.per_layer_recompute.empty()) {
      // The layer's own choice: a full checkpoint of its own (keeping its input), or selective modules.
      const auto& choice = st.per_layer_recompute[static_cast<std::size_t>(first_layer + i)];
      if (choice.full) {
        const int id = next_checkpoint_id(g.ops);
        for (auto& op : ops) {
          op.recompute = true;
          op.checkpoint = id;
          set_kept(op, {});
        }
        set_kept(ops.front(), {{"input", c.tok_sp * c.h * c.a, true}});
      } else if (!choice.modules.empty()) {
        apply_selective(c, ops, choice.modules);
        selective_checkpoints = number_selective_checkpoints(ops, std::max(selective_checkpoints, next_checkpoint_id(g.ops)));
      }
    } else if (st.recompute_granularity == RecomputeGranularity::Full) {
      apply_full(c, ops, i);
    } else if (st.recompute_granularity == RecomputeGranularity::Selective) {
      apply_selective(c, ops);
      // Consecutive recomputed ops are one checkpoint call (core_attn; the whole MLP).
      selective_checkpoints = number_selective_checkpoints(ops, selective_checkpoints);
    }
    for (auto& op : ops) g.ops.push_back(std::move(op));
  }

  if (head) add_head(c, g.ops, embedding);
  freeze_params(c, g.ops);  // LoRA: the embedding and the head too
  apply_offload(c, g);  // after recompute, over the chunk's layers and MTP layers in forward order
  if (st.delta_offload_bytes_across_pp_ranks > 0 && vchunk == 0)
    g.offload_delta_bytes = static_cast<I64>(pp_rank) * st.delta_offload_bytes_across_pp_ranks;

  if (c.torch_cpu)
    set_torch_cpu_transients(c, g);
  else
    set_megatron_transients(c, g);

  if (st.seq_split > 1) {
    // The sequence pipeline's per-layer caches of the whole sequence's keys and values and of their gradients
    // (MindFormers llama_transformer.py key_cache, value_cache, key_cache_grad, value_cache_grad: parameters
    // without gradients, kv heads split over tp), resident for the whole run.
    const I64 kv_heads = std::max<I64>(1, c.m.num_query_groups / c.t);
    g.runtime_buffer_bytes +=
        static_cast<I64>(g.num_layers) * 4 * c.b * c.s * kv_heads * c.m.kv_channels * c.a;
  }

  if (head && st.defer_embedding_wgrad) {
    // --defer-embedding-wgrad-compute: each deferred call keeps the output layer's input (sequence-parallel
    // shard) and its output gradient (the logits' gradient, vocabulary split over tp) until the flush.
    const I64 calls = st.deferred_output_wgrads(c.m.mtp_num_layers);
    g.runtime_buffer_bytes += calls * (c.tok_sp * c.h * c.a + c.tok * (c.vocab / c.vt) * c.a);
  }

  if (st.cpu_offload_layers > 0) {
    // Megatron's CPU offloading (TransformerEngine's double-buffered group offload): the first N layers'
    // saved activations leave the device after their forward and return for their backward; two layers'
    // worth stay resident (the one being offloaded or reloaded and the one computed).
    std::map<int, I64> offloaded;
    for (auto& op : g.ops)
      if (op.layer >= 0 && op.layer < st.cpu_offload_layers) {
        offloaded[op.layer] += op.kept_bytes;
        set_kept(op, {});
      }
    I64 largest = 0;
    for (const auto& [layer, bytes] : offloaded) largest = std::max(largest, bytes);
    g.runtime_buffer_bytes += 2 * largest;
  }

  if (st.pp > 1) {
    I64 bytes = c.tok_sp * c.h * c.a;
    bool first_in_pipe = pp_rank == 0 && vchunk == 0;
    bool last_in_pipe = pp_rank == st.pp - 1 && vchunk == st.vpp - 1;
    if (!first_in_pipe) {
      g.p2p.push_back({Collective::SendRecv, ParallelDim::PP, Pass::Forward, bytes, 1,
                       "receive activations from the previous stage"});
      g.p2p.push_back({Collective::SendRecv, ParallelDim::PP, Pass::Backward, bytes, 1,
                       "send input gradients to the previous stage"});
    }
    if (!last_in_pipe) {
      g.p2p.push_back({Collective::SendRecv, ParallelDim::PP, Pass::Forward, bytes, 1,
                       "send activations to the next stage"});
      g.p2p.push_back({Collective::SendRecv, ParallelDim::PP, Pass::Backward, bytes, 1,
                       "receive output gradients from the next stage"});
    }
  }
  return g;
}

}  // namespace graph_ops

using graph_ops::build_chunk;
using graph_ops::Ctx;
using graph_ops::make_ctx;

LayerGraph build_layer_graph(const ModelSpec& model, const Strategy& strategy) {
  model.validate();
  strategy.validate(model);

  LayerGraph graph;
  graph.model = model;
  graph.strategy = strategy;
  graph.padded_vocab = model.padded_vocab_size(strategy.tp);

  const Strategy& st = graph.strategy;
  Ctx c = make_ctx(graph.model, st);

  // Layer offsets: virtual chunk v of rank r follows all ranks' chunks < v, then ranks < r of chunk v.
  const std::vector<std::vector<int>> chunk_layers = st.layers_per_chunk(model.num_layers);
  for (int r = 0; r < st.pp; ++r) {
    for (int v = 0; v < st.vpp; ++v) {
      const int offset = chunk_first_layer(chunk_layers, v, r);
      bool emb = r == 0 && v == 0;
      bool head = r == st.pp - 1 && v == st.vpp - 1;
      graph.chunks.push_back(build_chunk(c, r, v, offset, chunk_layers[v][r], emb, head));
    }
  }
  return graph;
}

std::vector<Op> build_layer_ops(const ModelSpec& model, const Strategy& strategy, int layer) {
  Ctx c = make_ctx(model, strategy);
  std::vector<Op> ops = graph_ops::build_layer(c, layer);
  graph_ops::finish_kept(ops);
  return ops;
}

std::vector<Op> build_layer_ops(const ModelSpec& model, const Strategy& strategy, int layer,
                                int local_index) {
  Ctx c = make_ctx(model, strategy);
  std::vector<Op> ops = graph_ops::build_layer(c, layer);
  if (!strategy.layer_in_bf16(layer, model.num_layers))
    graph_ops::apply_precision_overrides(c, ops, local_index);
  graph_ops::finish_kept(ops);
  return ops;
}

std::uint64_t sixteen_bit_linears(const ModelSpec& model, const Strategy& strategy, int layer,
                                  int local_index) {
  if (strategy.precision_overrides.empty() || strategy.layer_in_bf16(layer, model.num_layers)) return 0;
  const std::vector<Op> ops = build_layer_ops(model, strategy, layer, local_index);
  std::uint64_t bits = 0;
  for (std::size_t i = 0; i < ops.size() && i < 64; ++i)
    if (ops[i].sixteen_bit) bits |= std::uint64_t{1} << i;
  return bits;
}

std::vector<Op> build_embedding_ops(const ModelSpec& model, const Strategy& strategy) {
  Ctx c = make_ctx(model, strategy);
  return build_chunk(c, 0, 0, 0, 0, true, false).ops;
}

std::vector<Op> build_head_ops(const ModelSpec& model, const Strategy& strategy, bool with_embedding) {
  if (with_embedding) {
    // The one-stage chunk's ops after its embedding's.
    Ctx c = make_ctx(model, strategy);
    std::vector<Op> ops = build_chunk(c, 0, 0, 0, 0, true, true).ops;
    const auto embedding = static_cast<std::ptrdiff_t>(build_chunk(c, 0, 0, 0, 0, true, false).ops.size());
    ops.erase(ops.begin(), ops.begin() + embedding);
    return ops;
  }
  // pp > 1 so that the output layer owns its weight, as the last stage of a pipeline does.
  Strategy st = strategy;
  if (st.pp == 1) {
    st.pp = 2;
    st.world_size *= 2;  // the same data-parallel size (a world of exactly tp · cp ranks left dp 0)
    st.chunk_layout.clear();
  }
  Ctx c = make_ctx(model, st);
  return build_chunk(c, st.pp - 1, st.vpp - 1, 0, 0, false, true).ops;
}

std::int64_t count_parameters(const ModelSpec& model) {
  Strategy st;
  st.world_size = 1;
  st.gpus_per_node = 1;
  st.seq_length = 1;
  st.micro_batch_size = 1;
  ModelSpec m = model;
  if (m.position_embedding == PositionEmbedding::LearnedAbsolute && m.max_position_embeddings <= 0)
    m.max_position_embeddings = 1;
  LayerGraph g = build_layer_graph(m, st);
  std::int64_t n = 0;
  for (const auto& c : g.chunks) n += c.param_numel();
  return n;
}

const char* to_string(OpKind k) {
  switch (k) {
    case OpKind::Embedding:
      return "Embedding";
    case OpKind::PositionEmbedding:
      return "PositionEmbedding";
    case OpKind::Dropout:
      return "Dropout";
    case OpKind::Norm:
      return "Norm";
    case OpKind::LinearColumn:
      return "ColumnParallelLinear";
    case OpKind::LinearRow:
      return "RowParallelLinear";
    case OpKind::CoreAttention:
      return "CoreAttention";
    case OpKind::Activation:
      return "Activation";
    case OpKind::BiasDropoutAdd:
      return "BiasDropoutAdd";
    case OpKind::Router:
      return "Router";
    case OpKind::TokenDispatch:
      return "TokenDispatch";
    case OpKind::GroupedLinearColumn:
      return "GroupedLinearColumn";
    case OpKind::GroupedLinearRow:
      return "GroupedLinearRow";
    case OpKind::TokenCombine:
      return "TokenCombine";
    case OpKind::CrossEntropy:
      return "CrossEntropy";
    case OpKind::SelectiveScan:
      return "SelectiveScan";
    case OpKind::GatedDeltaRule:
      return "GatedDeltaRule";
  }
  return "?";
}
const char* to_string(OpRole r) {
  switch (r) {
    case OpRole::WordEmbedding:
      return "word_embedding";
    case OpRole::PositionEmbedding:
      return "position_embedding";
    case OpRole::EmbeddingDropout:
      return "embedding_dropout";
    case OpRole::InputNorm:
      return "input_norm";
    case OpRole::Qkv:
      return "qkv";
    case OpRole::QNorm:
      return "q_norm";
    case OpRole::KNorm:
      return "k_norm";
    case OpRole::QDownProj:
      return "q_down_proj";
    case OpRole::QDownNorm:
      return "q_down_norm";
    case OpRole::QUpProj:
      return "q_up_proj";
    case OpRole::QProj:
      return "q_proj";
    case OpRole::KvDownProj:
      return "kv_down_proj";
    case OpRole::KvDownNorm:
      return "kv_down_norm";
    case OpRole::KvUpProj:
      return "kv_up_proj";
    case OpRole::CoreAttention:
      return "core_attention";
    case OpRole::AttnProj:
      return "attn_proj";
    case OpRole::AttnBda:
      return "attn_bda";
    case OpRole::PreMlpNorm:
      return "pre_mlp_norm";
    case OpRole::PostAttnNorm:
      return "post_attn_norm";
    case OpRole::PostMlpNorm:
      return "post_mlp_norm";
    case OpRole::Fc1:
      return "fc1";
    case OpRole::Act:
      return "act";
    case OpRole::Fc2:
      return "fc2";
    case OpRole::MlpBda:
      return "mlp_bda";
    case OpRole::Router:
      return "router";
    case OpRole::SharedFc1:
      return "shared_fc1";
    case OpRole::SharedAct:
      return "shared_act";
    case OpRole::SharedFc2:
      return "shared_fc2";
    case OpRole::LatentDown:
      return "fc1_latent_proj";
    case OpRole::LatentUp:
      return "fc2_latent_proj";
    case OpRole::Dispatch:
      return "dispatch";
    case OpRole::ExpertsFc1:
      return "experts_fc1";
    case OpRole::ExpertsAct:
      return "experts_act";
    case OpRole::ExpertsFc2:
      return "experts_fc2";
    case OpRole::Combine:
      return "combine";
    case OpRole::FinalNorm:
      return "final_norm";
    case OpRole::OutputLayer:
      return "output_layer";
    case OpRole::Loss:
      return "loss";
    case OpRole::MtpEmbedding:
      return "mtp_embedding";
    case OpRole::MtpENorm:
      return "mtp_enorm";
    case OpRole::MtpHNorm:
      return "mtp_hnorm";
    case OpRole::MtpEhProj:
      return "mtp_eh_proj";
    case OpRole::MtpFinalNorm:
      return "mtp_final_norm";
    case OpRole::MtpOutputLayer:
      return "mtp_output_layer";
    case OpRole::MtpLoss:
      return "mtp_loss";
    case OpRole::MambaInProj:
      return "mamba_in_proj";
    case OpRole::MambaScan:
      return "mamba_scan";
    case OpRole::MambaNorm:
      return "mamba_norm";
    case OpRole::MambaOutProj:
      return "mamba_out_proj";
    case OpRole::MambaBda:
      return "mamba_bda";
    case OpRole::GdnInProj:
      return "gdn_in_proj";
    case OpRole::GdnRule:
      return "gdn_rule";
    case OpRole::GdnNorm:
      return "gdn_norm";
    case OpRole::GdnOutProj:
      return "gdn_out_proj";
  }
  return "?";
}

bool is_inner_norm(OpRole r) {
  return r == OpRole::QNorm || r == OpRole::KNorm || r == OpRole::QDownNorm || r == OpRole::KvDownNorm;
}

const char* to_string(ParallelDim d) {
  switch (d) {
    case ParallelDim::TP:
      return "tp";
    case ParallelDim::CP:
      return "cp";
    case ParallelDim::EP:
      return "ep";
    case ParallelDim::ETP:
      return "etp";
    case ParallelDim::DP:
      return "dp";
    case ParallelDim::EDP:
      return "edp";
    case ParallelDim::PP:
      return "pp";
  }
  return "?";
}

}  // namespace preflight::analyzer
