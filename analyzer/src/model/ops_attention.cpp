// The attention block: qkv (or multi-latent) projections, core attention, output projection.
#include "ops_build.hpp"

#include <algorithm>
#include <cmath>

namespace preflight::analyzer::graph_ops {

void add_attention(const Ctx& c, std::vector<Op>& ops, int layer, const std::string& pre) {
  const ModelSpec& m = c.m;
  int heads = m.num_attention_heads / c.t;
  I64 qk_dim, v_dim;
  int kv_heads;
  if (m.mla.enabled) {
    qk_dim = m.mla.qk_head_dim + m.mla.qk_pos_emb_head_dim;
    v_dim = m.mla.v_head_dim;
    kv_heads = heads;
    // Multi-latent attention (DeepSeek-V2 §2.1; Megatron `multi_latent_attention.py` MLASelfAttention): the
    // down projections are TELinear(parallel_mode="duplicated"), replicated over tp and run on the rank's
    // own tokens (its sequence shard with sequence parallelism); their latents are normalized there and
    // gathered by the column-parallel up projections (TE gathers the input of a sequence-parallel column
    // linear), which split the heads over tp; the rotary key part k_pos_emb is gathered on its own
    // (gather_from_sequence_parallel_region).
    if (m.mla.q_lora_rank > 0) {
      ops.push_back(
          make_duplicated(c, pre + "linear_q_down_proj", OpRole::QDownProj, layer, c.h, m.mla.q_lora_rank));
      if (m.mla.latent_norms)
        ops.push_back(
            make_norm(c, pre + "q_layernorm", OpRole::QDownNorm, layer, c.tok_sp, m.mla.q_lora_rank));
      ops.push_back(make_column(c, pre + "linear_q_up_proj", OpRole::QUpProj, layer, m.mla.q_lora_rank,
                                static_cast<I64>(m.num_attention_heads) * qk_dim, false));
      ops.back().saved = {{"input", c.lin_bytes(c.tok_sp * m.mla.q_lora_rank)}};
    } else {
      ops.push_back(make_column(c, pre + "linear_q_proj", OpRole::QProj, layer, c.h,
                                static_cast<I64>(m.num_attention_heads) * qk_dim, false));
    }
    ops.push_back(make_duplicated(c, pre + "linear_kv_down_proj", OpRole::KvDownProj, layer, c.h,
                                  m.mla.kv_lora_rank + m.mla.qk_pos_emb_head_dim));
    if (c.t > 1 && c.sp) {
      I64 bytes = c.tok * m.mla.qk_pos_emb_head_dim * c.a;
      ops.back().comms.push_back({Collective::AllGather, ParallelDim::TP, Pass::Forward, bytes, 1,
                                  "all-gather of the rotary key part k_pos_emb"});
      ops.back().comms.push_back({Collective::ReduceScatter, ParallelDim::TP, Pass::Backward, bytes, 1,
                                  "reduce-scatter of the k_pos_emb gradient"});
    }
    if (m.mla.latent_norms)
      ops.push_back(
          make_norm(c, pre + "kv_layernorm", OpRole::KvDownNorm, layer, c.tok_sp, m.mla.kv_lora_rank));
    ops.push_back(
        make_column(c, pre + "linear_kv_up_proj", OpRole::KvUpProj, layer, m.mla.kv_lora_rank,
                    static_cast<I64>(m.num_attention_heads) * (m.mla.qk_head_dim + m.mla.v_head_dim), false));
    ops.back().saved = {{"input", c.lin_bytes(c.tok_sp * m.mla.kv_lora_rank)}};
  } else {
    qk_dim = v_dim = m.kv_channels;
    // (tp a multiple of the kv heads: each rank keeps one, Megatron's SelfAttention since 2025-12-06)
    kv_heads = std::max(1, m.num_query_groups / c.t);
    // With --attention-output-gate the projection also yields the gate, one more query's width
    // (Megatron's SelfAttention.linear_qkv_out_dim).
    I64 qkv_out = (static_cast<I64>(m.num_attention_heads) * (m.attention_output_gate ? 2 : 1) +
                   2 * static_cast<I64>(m.num_query_groups)) *
                  m.kv_channels;
    ops.push_back(make_column(c, pre + "linear_qkv", OpRole::Qkv, layer, c.h, qkv_out, m.qkv_bias()));
    if (m.num_query_groups < c.t) {
      // tp > kv heads (SelfAttention.get_query_key_value_tensors): the column-parallel projection's output is
      // all-gathered over tp, each rank then slices its kv group's heads; the gradient goes back by a
      // reduce-scatter.
      const I64 bytes = c.tok * qkv_out * c.a;
      ops.back().comms.push_back({Collective::AllGather, ParallelDim::TP, Pass::Forward, bytes, 1,
                                  "all-gather of the QKV projection (tp > kv heads)"});
      ops.back().comms.push_back({Collective::ReduceScatter, ParallelDim::TP, Pass::Backward, bytes, 1,
                                  "reduce-scatter of the QKV projection's gradient (tp > kv heads)"});
    }
    if (m.qk_layernorm) {
      // Megatron `SelfAttention.q_layernorm` / `k_layernorm`: one norm of width d applied to every head;
      // rows = tokens · local heads.  Each keeps its input (the un-normalized q / k) for backward.
      ops.push_back(make_norm(c, pre + "q_layernorm", OpRole::QNorm, layer, c.tok * heads, m.kv_channels));
      ops.push_back(make_norm(c, pre + "k_layernorm", OpRole::KNorm, layer, c.tok * kv_heads, m.kv_channels));
    }
  }

  Op at;
  at.path = pre + "core_attention";
  at.kind = OpKind::CoreAttention;
  at.role = OpRole::CoreAttention;
  at.layer = layer;
  at.tokens = c.tok;
  at.heads = heads;
  at.kv_heads = kv_heads;
  at.head_dim = qk_dim;
  at.v_head_dim = v_dim;
  at.seq = c.s_loc;
  // Keys each query attends: the sequence, or the sliding window (the graph's attention FLOPs count every
  // query against every attended key, Megatron's and SimuMax's non-causal convention).
  at.kv_seq = m.is_window_layer(layer) ? std::min(c.s, m.sliding_window) : c.s;
  at.in_features = static_cast<I64>(heads) * qk_dim;
  at.out_features = static_cast<I64>(heads) * v_dim;
  I64 q = c.tok * heads * qk_dim * c.a;
  // Math attention in PyTorch eager repeats k, v over the query heads of their group before the bmm.
  int kv_copies = c.torch_cpu ? heads : kv_heads;
  // The sequence pipeline's flash attention takes the keys and values of the whole sequence (the layer's key
  // / value caches with this unit's added: MindFormers llama_transformer.py key_update, value_update) and
  // saves them.
  const I64 kv_tok = c.st.seq_split > 1 ? c.b * c.s : c.tok;
  I64 k = kv_tok * kv_copies * qk_dim * c.a;
  I64 v = kv_tok * kv_copies * v_dim * c.a;
  at.input_bytes = q + c.tok * kv_heads * (qk_dim + v_dim) * c.a;  // the q, k, v projections
  at.output_bytes = c.tok * heads * v_dim * c.a;
  at.saved.push_back({"q", q});
  at.saved.push_back({"k", k});
  at.saved.push_back({"v", v});
  I64 scores = c.b * heads * c.s_loc * c.s;  // elements of QKᵀ on this rank
  if (c.torch_cpu) {
    at.saved.push_back({"softmax", scores * c.a});
    if (m.attention_dropout > 0) {
      at.saved.push_back({"dropout_noise", scores * c.a});
      at.saved.push_back({"dropout_output", scores * c.a});
    }
  } else if (c.st.attention_backend == AttentionBackend::Flash) {
    at.saved.push_back({"lse", c.b * heads * c.s_loc * 4});
    // Legacy ParallelAttention: flash_attn keeps its output; the linear_proj input is a rearranged copy.
    if (c.st.legacy_model) at.saved.push_back({"flash_output", at.output_bytes});
    // All-to-all context parallelism, TransformerEngine >= 2.8: the attention output before its post
    // all-to-all is saved apart from linear_proj's input (same bytes, heads split instead of sequence).
    const std::string& te = c.st.te.version;
    const bool te_2_8 = te.empty() ? (c.st.megatron_version.empty() || c.st.megatron_version >= "2025-09-01")
                                   : version_at_least(te, c.st.te.cp_a2a_save_pre_posta2a_min);
    if (c.st.cp > 1 && c.st.cp_comm_type == CpCommType::AllToAll && c.st.transformer_engine && te_2_8)
      at.saved.push_back({"pre_posta2a_output", at.output_bytes});
  } else {
    // Korthikanti et al. Table 2: softmax output 2as²b, dropout mask as²b, dropout output 2as²b.
    at.saved.push_back({"softmax", scores * c.a});
    if (m.attention_dropout > 0) {
      at.saved.push_back({"dropout_mask", scores});
      at.saved.push_back({"dropout_output", scores * c.a});
    }
  }
  // --attention-output-gate (SelfAttention._apply_output_gate, jit-fused x · sigmoid(gate)): the product
  // keeps its two inputs — the attention output, now a tensor apart from linear_proj's input (the gated
  // output), and the contiguous copy of the gate split from linear_qkv's output.  Outside core attention's
  // checkpoint, so recompute of core_attn keeps them.
  if (m.attention_output_gate && !c.torch_cpu && !m.mla.enabled) {
    at.saved.push_back({"gate_input_output", at.output_bytes});
    at.saved.push_back({"gate", at.output_bytes});
  }
  // QKᵀ and attention·V over the attended keys, non-causal count (as Megatron's and SimuMax's formulas).
  double f =
      2.0 * c.b * heads * static_cast<double>(c.s_loc) * static_cast<double>(at.kv_seq) * (qk_dim + v_dim);
  at.fwd_flops = f;
  at.bwd_input_flops = 2 * f;
  if (c.st.cp > 1) {
    // Ring attention (Megatron `AttnFuncWithCPAndKVP2P`): cp-1 exchanges of the local k,v forward,
    // of k,v and dk,dv backward.
    at.comms.push_back({Collective::SendRecv, ParallelDim::CP, Pass::Forward, k + v, c.st.cp - 1,
                        "ring exchange of key/value chunks"});
    at.comms.push_back({Collective::SendRecv, ParallelDim::CP, Pass::Backward, 2 * (k + v), c.st.cp - 1,
                        "ring exchange of key/value chunks and their gradients"});
  }
  ops.push_back(std::move(at));
  ops.push_back(make_row(c, pre + "linear_proj", OpRole::AttnProj, layer,
                         static_cast<I64>(m.num_attention_heads) * v_dim, c.h, m.proj_bias()));
}

}  // namespace preflight::analyzer::graph_ops
