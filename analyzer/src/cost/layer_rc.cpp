// Recompute flags of one layer for the cost model (SimuMax parse_attention_recompute /
// parse_mlp_recompute, and Megatron's selective recompute modules).
#include <algorithm>

#include "leaves.hpp"

namespace preflight::analyzer::cost::detail {

LayerRc layer_rc(const Ctx& c, int i) {
  LayerRc r;
  const LayerRecompute& rc = c.rc;
  if (rc.scope == RecomputeScope::None || i >= rc.layers) return r;
  if (c.megatron_selective) {
    auto has = [&](const char* m) {
      return std::find(rc.megatron_modules.begin(), rc.megatron_modules.end(), m) !=
             rc.megatron_modules.end();
    };
    r.meg_ln = has("layernorm");
    r.meg_up = has("mla_up_proj");
    r.input_ln = r.q_down = r.kv_down = r.meg_ln;
    r.q_up = r.kv_up = r.q_ln = r.kv_ln = r.rope = r.core = r.meg_up;
    r.core = r.core || has("core_attn");
    r.meg_moe = has("moe");
    r.meg_moe_act = has("moe_act") && !r.meg_moe;
    r.meg_mlp = has("mlp");
    r.meg_gdn_norm = has("gdn_norm_out");
    r.pre_ln = r.meg_ln;
    return r;
  }
  switch (rc.scope) {
    case RecomputeScope::FullBlock:
      r.input_ln = r.q_down = r.kv_down = r.q_up = r.kv_up = r.q_ln = r.kv_ln = r.rope = r.core = r.out =
          true;
      r.pre_ln = r.linear = r.shared = r.router = r.perm = true;
      break;
    case RecomputeScope::AttnOnly:
      r.q_down = r.kv_down = r.q_up = r.kv_up = r.q_ln = r.kv_ln = r.rope = r.core = r.out = true;
      break;
    case RecomputeScope::SdpOnly:
      r.core = true;
      break;
    case RecomputeScope::MlpOnly:
      r.pre_ln = r.shared = r.linear = r.router = r.perm = true;
      break;
    case RecomputeScope::Selective:
      r.input_ln = r.q_down = r.kv_down = rc.attn_norm;
      r.q_up = r.kv_up = r.q_ln = r.kv_ln = r.rope = r.core = rc.attn;
      r.pre_ln = rc.mlp_norm;
      r.shared = rc.mlp_norm;
      r.linear = rc.mlp;
      r.router = rc.mlp_norm;
      break;
    case RecomputeScope::None:
      break;
  }
  return r;
}

}  // namespace preflight::analyzer::cost::detail
