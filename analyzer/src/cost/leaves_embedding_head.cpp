// The embedding and the head: word embedding, final norm, output layer, vocab-parallel cross entropy, and
// multi-token-prediction layers (Megatron-core MultiTokenPredictionLayer, priced with the same formulas:
// SimuMax v1.2 has no MTP).  SimuMax: dense_module.py Embedding, ParallelCE.
#include <map>

#include "leaf_build.hpp"

namespace preflight::analyzer::cost::detail {

// --- Embedding (dense_module.py Embedding) -----------------------------------------------------
void price_embedding(const Ctx& c, Leaf& l) {
  double bs = l.b * l.s, w = l.in * l.out * c.e;  // in = local vocab, out = hidden
  double in_b = bs * 4, out_b = bs * l.out * c.e;
  l.cache = 0;
  l.fwd_peak = in_b + out_b + (c.st->weight_in_linear_peak ? w : 0);
  l.bwd_peak = w;
  dense_params(c, l, l.in * l.out, c.e, l.in * l.out * c.tp);
  Pass& p = l.pass;
  p.fwd_bytes = in_b + w + out_b;
  p.bwd_w_bytes = 2 * (l.in * l.out * 4);
  double s_out = c.sp ? l.s / c.tp : l.s;
  double comm = l.b * s_out * l.out * c.e;
  if (c.tp > 1) p.fwd_net_ms += net(c, Collective::AllReduce, comm, c.tp, c.nets.tp, CommGroup::Tp);
  if (c.sp && c.tp > 1) p.bwd_w_net_ms += net(c, Collective::AllGather, comm, c.tp, c.nets.tp, CommGroup::Tp);
  finish_recompute(l);
  price_passes(c, l, "default", "default", "default");
}

// --- Learned absolute position embedding (Megatron's LanguageModelEmbedding, not SimuMax) ----------
// Geometry: in = max positions, out = hidden, b·s = tokens looked up (the full sequence, before the
// sequence-parallel scatter).  The table is replicated on the tp ranks (a plain torch Embedding); forward
// reads the rows and adds them to the word embeddings (read both, write the sum); backward scatters the
// output gradient into the table's fp32 main gradient.
void price_position_embedding(const Ctx& c, Leaf& l) {
  const double x = l.b * l.s * l.out * c.e, table = l.in * l.out;
  l.cache = 0;
  l.fwd_peak = x;
  l.bwd_peak = table * c.e;
  dense_params(c, l, table, c.e, table);
  Pass& p = l.pass;
  p.fwd_bytes = 3 * x;
  p.bwd_w_bytes = x + table * c.e + 2 * table * 4;
  finish_recompute(l);
  price_passes(c, l, "default", "default", "default");
}

// --- ParallelCE ----------------------------------------------------------------------------------
void price_ce(const Ctx& c, Leaf& l) {
  double b = l.b, s = l.s, V = l.in, L = b * s * V;
  Pass& p = l.pass;
  bool fused = c.st->cross_entropy_loss_fusion;
  if (fused) {
    double logits = L * c.e;
    l.cache = logits;
    l.fwd_peak = logits + b * s * 4 + 3 * b * s * 4 + (c.tp > 1 ? 3 * b * s * c.tp * 4 : 0);
    l.bwd_peak = 0;
    p.fwd_bytes = 2 * L * c.e + b * s * 4;
    p.bwd_act_bytes = p.fwd_bytes;
  } else {
    l.cache = L * 4;
    l.fwd_peak = l.cache + L * c.e;
    l.bwd_peak = 0;
    p.fwd_bytes =
        L * 4 + L * 2 + (L + b * s) * 4 + (L + b * s + L) * 4 + (2 * L) * 4 + (L + b) * 4 + (L + b + L) * 4;
    p.bwd_act_bytes = (L + b + L) * 4 + L * 4 + L * 2;
  }
  if (c.tp > 1) {
    double scalar = b * s * 4;
    p.fwd_net_ms += net(c, Collective::AllReduce, scalar, c.tp, c.nets.tp, CommGroup::Tp);
    if (fused) {
      p.fwd_net_ms += net(c, Collective::AllReduce, 2 * scalar, c.tp, c.nets.tp, CommGroup::Tp);
    } else {
      p.fwd_net_ms += net(c, Collective::AllReduce, scalar, c.tp, c.nets.tp, CommGroup::Tp);
      p.fwd_net_ms += net(c, Collective::AllReduce, scalar, c.tp, c.nets.tp, CommGroup::Tp);
    }
  }
  finish_recompute(l);
  const char* op = fused ? "ce_fusion" : "ce";
  price_passes(c, l, op, op, "default");
}

namespace {

Leaf embedding_leaf(const Ctx& c, const Op& op, std::string name, std::string path) {
  Leaf l;
  l.kind = LeafKind::Embedding;
  l.b = mbs(c);
  l.s = op.tokens / l.b;
  l.in = op.in_features;
  l.out = op.out_features;
  l.input_bytes = op.tokens * 2;
  l.name = std::move(name);
  l.path = std::move(path);
  return l;
}

Leaf ce_leaf(const Ctx& c, const Op& op, std::string name, std::string path) {
  Leaf l;
  l.kind = LeafKind::CrossEntropy;
  l.b = mbs(c);
  l.s = op.tokens / l.b;
  l.in = op.in_features;
  l.input_bytes = op.tokens * op.in_features * 2;
  l.name = std::move(name);
  l.path = std::move(path);
  return l;
}

/// A leaf of an op that uses weights another op holds (MTP's lookup and output layer on a stage that also
/// holds the embedding / output layer): its time, none of its weight memory.
void shared_weights(Leaf& l) {
  l.mem = Mem{};
}

/// A column-parallel linear of the head: bf16 (Megatron's own ColumnParallelLinear, outside the fp8
/// autocast) unless `--fp8-output-proj` runs it as an MXFP8 Transformer Engine linear.
void head_linear(Builder& bld, const Op& op, bool recompute, const std::string& name,
                 const std::string& path) {
  const Ctx& c = bld.c;
  double in_tokens = (c.sp && c.tp > 1) ? op.tokens / c.tp : op.tokens;
  add_linear(bld, true, name, "", 0, op.tokens, in_tokens, op.in_features, op.out_features, recompute, false,
             false, false, false, /*fp8_allowed=*/c.st->fp8_output_proj);
  bld.out.back().path = path;
  // An output layer without parameters multiplies by another op's weight (tied to the embedding, or MTP's
  // embedding copy): its time, none of its weight memory.  SimuMax prices tied embeddings as untied.
  if (op.params.empty() && !c.st->simumax_compat) shared_weights(bld.out.back());
}

/// Multi-token-prediction layer k (its ops, in forward order): lookup, enorm, hnorm, eh_proj, one
/// transformer layer priced as the decoder's, final norm, the shared output layer and the loss.  Full
/// recompute checkpoints enorm … final norm (MultiTokenPredictionLayer._checkpointed_forward).
void mtp_leaves(Builder& bld, int k, const std::vector<Op>& ops, Unpriced* unpriced) {
  const Ctx& c = bld.c;
  std::vector<Op> own, layer;
  for (const auto& op : ops) {
    switch (op.role) {
      case OpRole::MtpEmbedding:
      case OpRole::PositionEmbedding:
      case OpRole::EmbeddingDropout:
      case OpRole::MtpENorm:
      case OpRole::MtpHNorm:
      case OpRole::MtpEhProj:
      case OpRole::MtpFinalNorm:
      case OpRole::MtpOutputLayer:
      case OpRole::MtpLoss:
        own.push_back(op);
        break;
      default:
        layer.push_back(op);
    }
  }
  const std::string name = "mtp.layers." + std::to_string(k) + ".";
  const std::string path = "MTPLayer" + std::to_string(k);
  const bool full = c.rc.scope == RecomputeScope::FullBlock && c.rc.layers > 0;
  RoleCursor cur(own);
  const std::size_t first_leaf = bld.out.size();
  const Op& lookup = cur.need(OpRole::MtpEmbedding);
  Leaf emb = embedding_leaf(c, lookup, name + "embedding", path + Builder::idx(0, "Embedding"));
  bld.push(std::move(emb));
  if (lookup.params.empty()) shared_weights(bld.out.back());
  for (OpRole r : {OpRole::MtpENorm, OpRole::MtpHNorm}) {
    const Op& n = cur.need(r);
    bld.push(norm_leaf(n.tokens, n.in_features, full, name + (r == OpRole::MtpENorm ? "enorm" : "hnorm"),
                       path + Builder::idx(r == OpRole::MtpENorm ? 1 : 2, "LayerNorm")));
  }
  head_linear(bld, cur.need(OpRole::MtpEhProj), full, name + "eh_proj", path + Builder::idx(3, "LinearCol"));
  for (Leaf& l : layer_leaves(c, layer, layer_rc(c, 0), unpriced)) {
    if (!c.search_mode) l.name = name + "transformer_layer." + l.name;
    bld.out.push_back(std::move(l));
  }
  const Op& fn = cur.need(OpRole::MtpFinalNorm);
  bld.push(norm_leaf(fn.tokens, fn.in_features, full, name + "final_layernorm",
                     path + Builder::idx(5, "LayerNorm")));
  head_linear(bld, cur.need(OpRole::MtpOutputLayer), false, name + "output_layer",
              path + Builder::idx(6, "LinearCol"));
  shared_weights(bld.out.back());
  bld.push(ce_leaf(c, cur.need(OpRole::MtpLoss), name + "loss", path + Builder::idx(7, "ParallelCE")));
  // --mtp-use-repeated-layer: the depths after the first run depth 0's weights again.
  if (c.m->mtp_repeated_layer && k > 0 && !c.st->simumax_compat)
    for (std::size_t i = first_leaf; i < bld.out.size(); ++i) shared_weights(bld.out[i]);
  cur.report_unpriced(unpriced);
}

}  // namespace

std::vector<Leaf> embedding_leaves(const Ctx& c, const std::vector<Op>& ops, Unpriced* unpriced) {
  std::vector<Leaf> out;
  Builder bld{c, out, c.rc.variance};
  RoleCursor cur(ops);
  bld.push(embedding_leaf(c, cur.need(OpRole::WordEmbedding), "embedding", "Embedding"));
  if (const Op* pos = c.st->simumax_compat ? nullptr : cur.find(OpRole::PositionEmbedding)) {
    Leaf l;
    l.kind = LeafKind::PositionEmbedding;
    l.b = mbs(c);
    l.s = static_cast<double>(pos->tokens) / l.b;
    l.in = static_cast<double>(pos->in_features);
    l.out = static_cast<double>(pos->out_features);
    l.input_bytes = static_cast<double>(pos->tokens) * 8;
    l.name = "position_embeddings";
    l.path = Builder::idx(2, "PositionEmbedding");
    bld.push(std::move(l));
  }
  if (const Op* drop = c.st->simumax_compat ? nullptr : cur.find(OpRole::EmbeddingDropout)) {
    // Plain dropout, priced as a bias-dropout-add (one more read of the residual: within the noise).
    Leaf l;
    l.kind = LeafKind::BiasDropoutAdd;
    l.n_in = l.n_out = static_cast<double>(drop->tokens) * static_cast<double>(drop->in_features);
    l.input_bytes = l.n_in * c.e;
    l.name = "embedding_dropout";
    l.path = Builder::idx(1, "Dropout");
    bld.push(std::move(l));
  }
  cur.report_unpriced(unpriced);  // under --simumax-compat: a learned position table, embedding dropout
  return out;
}

std::vector<Leaf> head_leaves(const Ctx& c, const std::vector<Op>& ops, Unpriced* unpriced) {
  std::vector<Leaf> out;
  Builder bld{c, out, c.rc.variance};
  std::vector<Op> own;
  std::map<int, std::vector<Op>> mtp;
  for (const auto& op : ops) (op.mtp_layer < 0 ? own : mtp[op.mtp_layer]).push_back(op);
  RoleCursor cur(own);
  const Op& fn = cur.need(OpRole::FinalNorm);
  bld.push(norm_leaf(fn.tokens, fn.in_features, false, "layernorm", "LayerNorm"));
  head_linear(bld, cur.need(OpRole::OutputLayer), false, "linear_out", "LinearCol");
  bld.push(ce_leaf(c, cur.need(OpRole::Loss), "parallel_ce", "ParallelCE"));
  cur.report_unpriced(unpriced);
  for (const auto& [k, mtp_ops] : mtp) mtp_leaves(bld, k, mtp_ops, unpriced);
  return out;
}

}  // namespace preflight::analyzer::cost::detail
