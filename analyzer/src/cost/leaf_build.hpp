#pragma once
// Private to the cost model: what the files of each op family share (leaves.cpp: sums, context, linear,
// norm and quantizer formulas, the leaf builders, one layer; leaves_attention.cpp; leaves_mlp.cpp: dense
// MLP and MoE; leaves_embedding_head.cpp: embedding, head, loss, multi-token prediction; layer_rc.cpp:
// recompute flags).  Formulas cite SimuMax v1.2 (simumax/core/transformer/{dense,moe}_module.py,
// function.py); notes/simumax.md §2.3, §3.
#include <string>
#include <vector>

#include "leaves.hpp"

namespace preflight::analyzer::cost::detail {

constexpr double kFp32 = 4;

std::string fmt_int(double v);
/// The three passes of a leaf, plus recompute = forward time when the leaf recomputes (0 for a
/// variance tail).  SimuMax: base_struct.py MetaModule._comp_cost_info_impl.
void price_passes(const Ctx& c, Leaf& l, const char* fwd_op, const char* bwd_op, const char* w_op,
                  const std::string& k_fwd = "", const std::string& k_act = "", const std::string& k_w = "");
/// Recompute FLOPs / bytes / network time follow the forward ones, except for a variance tail
/// (MetaModule._comp_compute_info).
void finish_recompute(Leaf& l);
/// Time of one collective of `bytes` over `n` ranks on `network` (ms).
double net(const Ctx& c, Collective op, double bytes, int n, const std::string& network, CommGroup g);
/// Weight / grad / optimizer bytes of `numel` parameters, before ZeRO sharding (applied per chunk by
/// the caller, detail::shard(), so that priced leaves do not depend on the data-parallel size).
void dense_params(const Ctx& c, Leaf& l, double numel, double w_bytes, double stat_numel);
/// Transformer Engine's dummy weight-gradient buffer of a linear (gradient accumulation fusion).
void te_dummy(const Ctx& c, Leaf& l, bool grouped);
/// The efficiency-table key of a GEMM.
std::string gemm_key(double b, double m, double k, double n, const char* layout, bool acc, const char* dtype);
/// The three passes of a dense linear's GEMMs (`matmul`, `fp8_matmul` under fp8) with their efficiency keys:
/// `b` × `m` rows of l.in → l.out (forward TN, activation gradient NN, weight gradient NT).
void price_gemm_passes(const Ctx& c, Leaf& l, double b, double m);

// Formulas per leaf kind; price() dispatches on LeafKind.
void price_linear(const Ctx& c, Leaf& l, bool column);        // leaves.cpp
void price_norm(const Ctx& c, Leaf& l);                       // leaves.cpp
void price_quantizer(const Ctx& c, Leaf& l);                  // leaves.cpp
void price_bias_dropout_add(const Ctx& c, Leaf& l);           // leaves.cpp
void price_position_embedding(const Ctx& c, Leaf& l);         // leaves_embedding_head.cpp
void price_attention(const Ctx& c, Leaf& l, bool mla);        // leaves_attention.cpp
void price_swiglu(const Ctx& c, Leaf& l);                     // leaves_mlp.cpp
void price_gelu(const Ctx& c, Leaf& l);                       // leaves_mlp.cpp
void price_router(const Ctx& c, Leaf& l);                     // leaves_mlp.cpp
void price_permute(const Ctx& c, Leaf& l, bool un);           // leaves_mlp.cpp
void price_group_linear(const Ctx& c, Leaf& l, bool column);  // leaves_mlp.cpp
void price_embedding(const Ctx& c, Leaf& l);                  // leaves_embedding_head.cpp
void price_ce(const Ctx& c, Leaf& l);                         // leaves_embedding_head.cpp
void price_mamba_scan(const Ctx& c, Leaf& l);                 // leaves_mamba.cpp
void price_gdn_rule(const Ctx& c, Leaf& l);                   // leaves_mamba.cpp
void price(const Ctx& c, Leaf& l);

/// The graph ops a leaf builder prices, found by role.  Every op a leaf is built from is marked; what is
/// left unmarked when the builders are done is what the cost model did not price (report_unpriced()).
class RoleCursor {
 public:
  explicit RoleCursor(const std::vector<Op>& ops);
  /// The first unmarked op of role `r`, marked; nullptr when there is none.
  const Op* find(OpRole r);
  /// find(), or std::logic_error naming the role: the layer graph and the cost model disagree.
  const Op& need(OpRole r);
  /// Whether an op of role `r` is there (nothing marked).
  bool has(OpRole r) const;
  /// Marks every op of role `r` as priced at no cost (e.g. a residual add SimuMax folds into its
  /// neighbours).
  void free(OpRole r);
  /// Appends "<path with layers.* for the layer index> (<role>): <reason>" for each unmarked op.
  void report_unpriced(Unpriced* out) const;

 private:
  std::vector<const Op*> ops_;
  std::vector<bool> used_;
};

/// Appends leaves while tracking SimuMax's module indices for names.
struct Builder {
  const Ctx& c;
  std::vector<Leaf>& out;
  bool variance_all;  // StrategyConfig.recompute_variance

  void push(Leaf l);
  static std::string idx(int i, const char* cls) { return " -> (" + std::to_string(i) + ")" + cls; }
};

inline double mbs(const Ctx& c) {
  return c.st->micro_batch_size;
}

/// The Float8Quantizer in front of an fp8 GEMM: `numel` bf16 input elements (2 bytes each) to fp8.
/// `grad_numel`: elements of the output gradient its GEMM quantizes in backward (0: priced as SimuMax,
/// forward only — the experts' grouped GEMMs).
Leaf quantizer_leaf(double numel, bool recompute, std::string name, std::string path, double grad_numel = 0);
/// A column/row linear, preceded by its fp8 quantizer when the strategy uses fp8 GEMMs.
/// `tokens_full` = b·s_full, `in_tokens` = rows of the (un-gathered) input.
void add_linear(Builder& bld, bool column, const std::string& name, const std::string& parent_path, int index,
                double tokens_full, double in_tokens, double in, double out, bool recompute, bool has_cached,
                bool is_last, bool use_var, bool breakpoint, bool fp8_allowed = true,
                bool sixteen_bit = false);
/// A linear replicated over tp (Leaf::duplicated) on `tokens` rows of this rank, otherwise as add_linear
/// (SimuMax's LinearCol name and path, which it is at tp 1).
void add_duplicated_linear(Builder& bld, const std::string& name, const std::string& parent_path, int index,
                           double tokens, double in, double out, bool recompute, bool has_cached,
                           bool is_last, bool use_var, bool breakpoint, double sp_gather_bytes = 0,
                           bool sixteen_bit = false);
Leaf norm_leaf(double tokens, double width, bool recompute, std::string name, std::string path);
Leaf layout_leaf(LeafKind kind, double input_bytes, bool recompute, const std::string& path, const char* cls);

/// The attention block's leaves (MHA/GQA or multi-latent), SimuMax module 1 of the layer.
void attention_leaves(Builder& bld, RoleCursor& ops, const LayerRc& rc);
/// The MLP block's leaves (dense MLP or MoE), SimuMax module 3 of the layer.
void mlp_leaves(Builder& bld, RoleCursor& ops, const LayerRc& rc);
/// A hybrid model's Mamba-2 mixer (in_proj, the fused scan, the gated norm, out_proj), module 1 of its layer.
void mamba_leaves(Builder& bld, RoleCursor& ops, const LayerRc& rc);
/// A gated delta net in the attention slot (in_proj, the delta rule, the gated norm, out_proj), module 1.
void gdn_leaves(Builder& bld, RoleCursor& ops, const LayerRc& rc);

}  // namespace preflight::analyzer::cost::detail
