// Embedding, head (final norm, output layer, loss) and multi-token prediction.
#include "ops_build.hpp"

#include <algorithm>

namespace preflight::analyzer::graph_ops {

namespace {

/// Vocab-parallel cross entropy on the output layer's logits (fp32 softmax, or the fused kernel's logits).
Op make_cross_entropy(const Ctx& c, std::string path, OpRole role) {
  const Strategy& st = c.st;
  Op ce;
  ce.path = std::move(path);
  ce.kind = OpKind::CrossEntropy;
  ce.role = role;
  ce.tokens = c.tok;
  ce.in_features = c.vocab / c.vt;
  ce.out_features = 1;
  ce.input_bytes = c.tok * (c.vocab / c.vt) * c.a;
  ce.output_bytes = c.tok * 4;
  if (st.cross_entropy_loss_fusion)
    ce.saved.push_back({"logits", c.tok * (c.vocab / c.vt) * c.a});
  else
    ce.saved.push_back({"softmax_fp32", c.tok * (c.vocab / c.vt) * 4});
  if (c.torch_cpu) {
    ce.saved.push_back({"target_mask", c.tok});
    ce.saved.push_back({"masked_target", c.tok * 8});
  }
  if (c.vt > 1)
    ce.comms.push_back({Collective::AllReduce, ParallelDim::TP, Pass::Forward, c.tok * 4,
                        st.cross_entropy_loss_fusion ? 2 : 3, "all-reduce of logit max / target / sum-exp"});
  return ce;
}

}  // namespace

void add_embedding(const Ctx& c, std::vector<Op>& ops, const std::string& prefix, bool with_weights,
                   int mtp_layer) {
  const ModelSpec& m = c.m;
  const std::size_t first = ops.size();
  Op emb;
  emb.path = prefix + "word_embeddings";
  emb.kind = OpKind::Embedding;
  emb.role = mtp_layer >= 0 ? OpRole::MtpEmbedding : OpRole::WordEmbedding;
  emb.tokens = c.tok;
  emb.in_features = c.vocab / c.vt;
  emb.out_features = c.h;
  if (with_weights) emb.params.push_back(param("weight", {c.vocab / c.vt, c.h}, {c.vocab, c.h}, c.vt == 1 && c.t > 1));
  emb.input_bytes = c.tok * 8;
  emb.output_bytes = c.tok_sp * c.h * c.a;
  if (c.torch_cpu && c.vt > 1) {
    // VocabParallelEmbedding: F.embedding keeps the shifted ids, masked_fill the out-of-range mask.
    emb.saved.push_back({"masked_ids", c.tok * 8});
    emb.saved.push_back({"out_of_range_mask", c.tok});
  } else {
    emb.saved.push_back({"token_ids", c.tok * 8, c.torch_cpu});
  }
  if (c.vt > 1) {
    I64 bytes = c.tok * c.h * c.a;
    if (c.sp) {
      emb.comms.push_back({Collective::ReduceScatter, ParallelDim::TP, Pass::Forward, bytes, 1,
                           "reduce-scatter of the vocab-parallel lookup"});
      emb.comms.push_back({Collective::AllGather, ParallelDim::TP, Pass::Backward, bytes, 1,
                           "all-gather of the output gradient"});
    } else {
      emb.comms.push_back({Collective::AllReduce, ParallelDim::TP, Pass::Forward, bytes, 1,
                           "all-reduce of the vocab-parallel lookup"});
    }
  }
  ops.push_back(std::move(emb));
  if (m.position_embedding == PositionEmbedding::LearnedAbsolute) {
    Op pos;
    pos.path = prefix + "position_embeddings";
    pos.kind = OpKind::PositionEmbedding;
    pos.role = OpRole::PositionEmbedding;
    pos.tokens = c.tok;
    pos.in_features = m.max_position_embeddings;
    pos.out_features = c.h;
    if (with_weights)
      pos.params.push_back(
          param("weight", {m.max_position_embeddings, c.h}, {m.max_position_embeddings, c.h}, true));
    pos.output_bytes = c.tok * c.h * c.a;
    ops.push_back(std::move(pos));
  }
  if (m.hidden_dropout > 0) {
    Op drop;
    drop.path = prefix + "embedding_dropout";
    drop.kind = OpKind::Dropout;
    drop.role = OpRole::EmbeddingDropout;
    drop.tokens = c.tok_sp;
    drop.in_features = drop.out_features = c.h;
    drop.input_bytes = drop.output_bytes = c.tok_sp * c.h * c.a;
    if (c.torch_cpu)
      drop.saved.push_back({"noise", c.tok_sp * c.h * c.a});
    else
      drop.saved.push_back({"mask", c.tok_sp * c.h});
    ops.push_back(std::move(drop));
  }
  for (std::size_t i = first; i < ops.size(); ++i) ops[i].mtp_layer = mtp_layer;
}

namespace {

/// One multi-token-prediction layer on the last stage (Megatron-core `MultiTokenPredictionLayer`), ops
/// appended to `ops` with recompute applied.  `embedding_weights`: this chunk holds no first-stage
/// embedding, so the MTP lookup carries the word embedding's own copy (kept in sync over the embedding
/// group, like a tied output layer).  Activations, per Korthikanti et al. 2022's conventions:
///  - the lookup keeps its token ids; enorm keeps its input (the new embedding output);
///  - hnorm's input is the hidden state that the output layer of the main model (k = 0) or of the previous
///    MTP layer also keeps as its input: listed once, there; hnorm keeps only its statistics;
///  - eh_proj keeps the concatenation [enorm, hnorm] (2h wide); its output is all-gathered over tp
///    (`gather_from_tensor_model_parallel_region`) and re-split for sequence parallelism;
///  - one transformer layer built like the decoder's last layer; final_layernorm; the shared output layer
///    keeps its input; its own cross entropy.
/// Full recompute checkpoints enorm … final_layernorm (`MultiTokenPredictionLayer._checkpointed_forward`),
/// keeping the embedding output; selective recompute applies to the transformer layer as in the decoder.

void add_mtp_layer(const Ctx& c, std::vector<Op>& ops, int k, bool embedding_weights) {
  const ModelSpec& m = c.m;
  const std::string pre = "mtp.layers." + std::to_string(k) + ".";
  std::vector<Op> block;
  add_embedding(c, block, pre + "embedding.", embedding_weights, k);
  const std::size_t checkpoint_from = block.size();  // enorm
  block.push_back(make_norm(c, pre + "enorm", OpRole::MtpENorm, -1, c.tok_sp, c.h));
  Op hnorm = make_norm(c, pre + "hnorm", OpRole::MtpHNorm, -1, c.tok_sp, c.h);
  std::erase_if(hnorm.saved, [](const SavedTensor& t) { return t.is_input; });
  block.push_back(std::move(hnorm));
  Op eh = make_column(c, pre + "eh_proj", OpRole::MtpEhProj, -1, 2 * c.h, c.h, false);
  if (c.t > 1)
    eh.comms.push_back({Collective::AllGather, ParallelDim::TP, Pass::Forward, c.tok * c.h * c.a, 1,
                        "all-gather of the eh_proj output over tp"});
  block.push_back(std::move(eh));
  apply_precision_overrides(c, block, -1);
  finish_kept(block);

  // A hybrid model's depth is its MTP pattern's layers (e.g. "*E": attention, then MoE — together one
  // transformer layer); otherwise one layer built like the decoder's last.
  std::vector<Op> layer;
  const int n_mtp = static_cast<int>(m.mtp_hybrid_pattern.size());
  for (int j = 0; j < std::max(1, n_mtp); ++j) {
    const int index = n_mtp > 0 ? m.num_layers + j : m.num_layers - 1;
    const std::size_t decoder_prefix = ("decoder.layers." + std::to_string(index) + ".").size();
    const std::string inner =
        n_mtp > 0 ? "mtp_model_layer.layers." + std::to_string(j) + "." : "transformer_layer.";
    for (auto& op : build_layer(c, index)) {
      op.path = pre + inner + op.path.substr(decoder_prefix);
      op.layer = -1;
      layer.push_back(std::move(op));
    }
  }
  apply_precision_overrides(c, layer, -1);
  finish_kept(layer);
  if (c.st.recompute_granularity == RecomputeGranularity::Selective) {
    apply_selective(c, layer);
    number_selective_checkpoints(layer, next_checkpoint_id(ops));
  }
  for (auto& op : layer) block.push_back(std::move(op));  // offloading: apply_offload over the whole chunk

  std::vector<Op> tail;
  tail.push_back(make_norm(c, pre + "final_layernorm", OpRole::MtpFinalNorm, -1, c.tok_sp, c.h));
  const std::size_t checkpoint_to = block.size() + 1;  // past final_layernorm
  Op out = make_column(c, pre + "output_layer", OpRole::MtpOutputLayer, -1, c.h, c.vocab, false, c.vt > 1);
  out.saved = {{"input", c.tok_sp * c.h * c.a, true}};  // never fp8, as the model's output layer
  out.params.clear();                                   // the model's output layer, called once more
  tail.push_back(std::move(out));
  tail.push_back(make_cross_entropy(c, pre + "loss", OpRole::MtpLoss));
  finish_kept(tail);
  for (auto& op : tail) block.push_back(std::move(op));

  if (c.st.recompute_granularity == RecomputeGranularity::Full) {
    int id = next_checkpoint_id(ops);
    for (std::size_t i = checkpoint_from; i < checkpoint_to; ++i) {
      block[i].recompute = true;
      block[i].checkpoint = id;
      set_kept(block[i], {});
    }
    set_kept(block[checkpoint_from], {{"input", c.tok_sp * c.h * c.a, true}});  // the embedding output
  }
  for (std::size_t i = checkpoint_from; i < block.size(); ++i) block[i].mtp_layer = k;
  // --mtp-use-repeated-layer: depth 0's layer applied again — no weights of its own.
  if (m.mtp_repeated_layer && k > 0)
    for (std::size_t i = checkpoint_from; i < block.size(); ++i) block[i].params.clear();
  for (auto& op : block) ops.push_back(std::move(op));
}

}  // namespace

void add_head(const Ctx& c, std::vector<Op>& ops, bool has_embedding) {
  const ModelSpec& m = c.m;
  std::size_t first = ops.size();
  ops.push_back(make_norm(c, "decoder.final_layernorm", OpRole::FinalNorm, -1, c.tok_sp, c.h));
  // Tied embeddings with pp = 1 reuse the embedding weight; with pp > 1 the last stage holds its own
  // copy, kept in sync by the embedding group (Megatron
  // `LanguageModule.setup_embeddings_and_output_layer`).
  // With MTP the last stage builds its own embedding (for the MTP layers' lookups), which a tied output
  // layer shares (Megatron `GPTModel.shared_embedding_or_output_weight`).
  bool own_weight = m.untie_embeddings_and_output_weights ||
                    (!has_embedding && (m.mtp_num_layers == 0 || !m.mtp_embedding_copy));
  Op out = make_column(c, "output_layer", OpRole::OutputLayer, -1, c.h, c.vocab, false, c.vt > 1);
  out.saved = {{"input", c.tok_sp * c.h * c.a, true}};  // never fp8 (Megatron keeps the LM head in bf16)
  if (!own_weight) out.params.clear();
  ops.push_back(std::move(out));
  ops.push_back(make_cross_entropy(c, "loss", OpRole::Loss));
  for (std::size_t i = first; i < ops.size(); ++i) set_kept(ops[i], ops[i].saved);
  for (int k = 0; k < m.mtp_num_layers; ++k)
    add_mtp_layer(c, ops, k, !has_embedding && k == 0 && m.mtp_embedding_copy);
}

}  // namespace preflight::analyzer::graph_ops
