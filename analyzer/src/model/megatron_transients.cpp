// Transient memory of Megatron-LM's implementation (Megatron-core and the 2023 `megatron/model` code it
// replaced; they allocate alike): what each op allocates on top of the tensors it keeps for backward, and
// the persistent global memory buffer.  Read off Megatron-LM's code; the citations are per term below.
#include "ops_build.hpp"

#include <algorithm>
#include <set>

namespace preflight::analyzer::graph_ops {

void set_megatron_transients(const Ctx& c, StageGraph& g) {
  const I64 e = c.a;
  // Weight gradients are made in the parameter dtype (then added into main_grad by DDP's hook) unless the
  // wgrad GEMM accumulates into main_grad itself (`--gradient-accumulation-fusion`, the default).
  const I64 pe = c.st.precision == Precision::FP32 ? 4 : 2;
  const bool fused_wgrad = c.st.gradient_accumulation_fusion;
  // Before 2024-06-13 `_VocabParallelCrossEntropy.forward` subtracted the max out of place: one more fp32
  // copy of the logits next to the caller's `.float()` copy (megatron/core/tensor_parallel/cross_entropy.py,
  // commit 9634c0e "Reduce logit memory pressure by using in-place operation").
  const bool old_cross_entropy = !c.st.megatron_version.empty() && c.st.megatron_version < "2024-06-13";
  const bool flash = c.st.attention_backend == AttentionBackend::Flash;
  const std::string& version = c.st.megatron_version;  // "" = current
  // Megatron's own linears return `torch.empty` of the weight's shape as the fused wgrad's "gradient"
  // (since 2023-08-07, `grad_added_to_main_grad`); TransformerEngine >= 2.3 a cached dummy per shape.
  const bool empty_wgrad = version.empty() || version >= "2023-08-07";
  const std::string& te = c.st.te.version;
  const bool te_dummy = c.st.transformer_engine && !c.st.legacy_model &&
                        (te.empty() ? (version.empty() || version >= "2025-05-01") : version_at_least(te, "2.3"));
  std::set<std::pair<I64, I64>> dummy_shapes;
  I64 buffer = 0;  // the global memory buffer ("mpu"): its largest request
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    Op& op = g.ops[i];
    const Op* next = i + 1 < g.ops.size() ? &g.ops[i + 1] : nullptr;
    const I64 P = op.param_numel() * pe;
    I64 wgrad = fused_wgrad ? 0 : P;
    const bool output_layer = op.role == OpRole::OutputLayer || op.role == OpRole::MtpOutputLayer;
    if (fused_wgrad && (op.kind == OpKind::LinearColumn || op.kind == OpKind::LinearRow)) {
      const bool te_linear = c.st.transformer_engine && !c.st.legacy_model && !output_layer;
      if (te_linear) {
        if (te_dummy && P > 0) dummy_shapes.insert({op.out_features, op.in_features});
      } else if (empty_wgrad && (P > 0 || output_layer)) {
        // The weight's shape even when the output layer shares the embedding's weight.
        wgrad = (output_layer ? (c.vocab / c.vt) * c.h : op.params.front().numel()) * pe;
      }
    }
    const I64 grad_in = op.input_bytes;
    switch (op.kind) {
      case OpKind::Embedding: {
        // VocabParallelEmbedding (tensor_parallel/layers.py): the masked ids and the full output before its
        // all-reduce / reduce-scatter; backward: F.embedding's dense weight gradient in the parameter dtype
        // (never fused), and with sequence parallelism the all-gathered output gradient.
        const bool split = c.vt > 1;
        op.fwd_transient_bytes = split ? c.tok * c.h * e + c.tok * 8 : 0;
        op.bwd_transient_bytes = P + (c.sp && split ? c.tok * c.h * e : 0);
        break;
      }
      case OpKind::PositionEmbedding:
        op.fwd_transient_bytes = c.tok * c.h * e;  // the word + position sum
        op.bwd_transient_bytes = P;
        break;
      case OpKind::Dropout:
        op.bwd_transient_bytes = grad_in;
        break;
      case OpKind::Norm:
        op.bwd_transient_bytes = grad_in;  // + per-row statistics and [h] weight gradients (small)
        break;
      case OpKind::LinearColumn: {
        // Sequence parallel: the input is all-gathered into the global memory buffer (forward, and again for
        // the wgrad in backward; `LinearWithGradAccumulationAndAsyncCommunication`), the full input gradient
        // is reduce-scattered into the local one.
        const I64 gathered = op.input_bytes < c.tok * op.in_features * e ? c.tok * op.in_features * e : 0;
        buffer = std::max(buffer, gathered);
        const bool output_kept = next && next->kept_input_bytes() >= op.output_bytes;
        // The output layer's logits stay alive through the loss (counted there).
        const bool logits = op.role == OpRole::OutputLayer || op.role == OpRole::MtpOutputLayer;
        op.fwd_transient_bytes = output_kept || logits ? 0 : op.output_bytes;
        op.bwd_transient_bytes = grad_in + gathered + wgrad;
        break;
      }
      case OpKind::LinearRow: {
        // The partial output in full before its all-reduce (in place) or reduce-scatter; it lives on as the
        // bias-dropout-add's input.  Backward: sequence parallel all-gathers the output gradient.
        const I64 full = c.sp ? c.tok * op.out_features * e : 0;
        op.fwd_transient_bytes = full + op.output_bytes;
        op.bwd_transient_bytes = grad_in + full + wgrad;
        break;
      }
      case OpKind::CoreAttention: {
        const I64 q = c.b * op.heads * op.seq * op.head_dim * e;
        const I64 kv = c.b * op.kv_heads * op.kv_seq * op.head_dim * e;
        const I64 v = c.b * op.kv_heads * op.kv_seq * (op.v_head_dim > 0 ? op.v_head_dim : op.head_dim) * e;
        if (flash) {
          // FlashAttention-2 backward (flash_attn_interface._flash_attn_backward): dq, dk, dv, the fp32
          // dq accumulator, and with grouped kv heads dk/dv expanded to every query head before the sum.
          const I64 expanded = op.kv_heads < op.heads ? 2 * q : 0;
          op.bwd_transient_bytes = q + kv + v + q / e * 4 + expanded;
        } else {
          // Unfused attention (DotProductAttention / legacy CoreAttention): the scores are written by baddbmm
          // into the global memory buffer; softmax, dropout mask and output are kept.  Backward: bmm gives the
          // probabilities' gradient and grad_v, dropout a new gradient, the fused softmax backward runs in place,
          // baddbmm gives grad_q and grad_k.
          const I64 scores = c.b * op.heads * op.seq * op.kv_seq * e;
          buffer = std::max(buffer, scores);
          const int score_grads = c.m.attention_dropout > 0 ? 2 : 1;
          op.bwd_transient_bytes = std::max(score_grads * scores + v, scores + q + kv + v);
        }
        break;
      }
      case OpKind::Activation:
        op.bwd_transient_bytes = grad_in;  // fused bias-GeLU / bias-SwiGLU backward: one input gradient
        break;
      case OpKind::BiasDropoutAdd: {
        // The branch output arriving (held by the row linear's transient until here) and, with dropout, the
        // dropout output before the residual add.
        const bool dropout = c.m.hidden_dropout > 0;
        op.fwd_transient_bytes = dropout ? op.input_bytes : 0;
        op.bwd_transient_bytes = dropout ? grad_in : 0;
        break;
      }
      case OpKind::TokenDispatch:
      case OpKind::TokenCombine: {
        // megatron/core/transformer/moe/token_dispatcher.py.  Allgather dispatcher: the dispatch gathers the
        // expert-tp × ep group's hidden states into the global memory buffer (`use_global_buffer=True`) and
        // its routing map (bool) and probabilities as new tensors; the combine unpermutes into a tensor of
        // the gathered size before the reduce-scatter; backward, each makes the gathered size again (the
        // dispatch unpermutes its gradient before the reduce-scatter, the combine all-gathers the output
        // gradient).  All-to-all: the tensor sent (permuted tokens, expert outputs) lives beside the one
        // received.  DeepEP / HybridEP receive into their own preallocated buffers (not priced here).
        const bool dispatch = op.kind == OpKind::TokenDispatch;
        const int etp = c.st.expert_tp();
        if (c.st.moe_dispatcher == MoeDispatcher::AllGather && c.st.ep * etp > 1) {
          const I64 gathered_tokens = c.tok_sp * c.st.ep * etp;
          const I64 gathered = gathered_tokens * c.h * e;
          if (dispatch) buffer = std::max(buffer, gathered);
          op.fwd_transient_bytes =
              dispatch ? gathered_tokens * static_cast<I64>(c.m.moe.num_experts) * (1 + e) : gathered;
          op.bwd_transient_bytes = grad_in + gathered;
        } else if (c.st.moe_dispatcher == MoeDispatcher::AllToAll && c.st.ep > 1) {
          const I64 sent = dispatch ? op.output_bytes : op.input_bytes;  // the routed rows
          op.fwd_transient_bytes = sent;
          op.bwd_transient_bytes = grad_in + sent;
        } else {
          op.bwd_transient_bytes = grad_in;
        }
        break;
      }
      case OpKind::CrossEntropy: {
        // The logits (the output layer's output, alive until the loss returns) and their fp32 copy
        // (`.float()`, which becomes the kept softmax); before 2024-06-13 one more fp32 tensor.  Backward:
        // the softmax buffer is the gradient, cast back to the logits' dtype by autograd.
        const I64 n = op.in_features * op.tokens;
        const I64 logits = n * e;
        op.fwd_transient_bytes = logits + (old_cross_entropy && !c.st.fp16_lm_cross_entropy ? n * 4 : 0);
        op.bwd_transient_bytes = grad_in;
        break;
      }
      case OpKind::SelectiveScan: {
        // mamba_split_conv1d_scan_combined: forward makes the chunk states in fp32 (batch × chunks × heads ×
        // head_dim × state) and per-head fp32 dt / its cumulative sums over the tokens; backward recomputes
        // the convolution's output (x, B, C) and the states, beside the input gradient (z, x, B, C, dt).
        // With context parallelism a rank holds the whole sequence of heads / cp (the same products), and the
        // all-to-alls around the scan hold their outputs and the concatenation beside the tensor they shard
        // (MambaContextParallel.pre_conv_ssm, and the gradients' way back).
        const MambaSpec& mb = c.m.mamba;
        const I64 heads_l = mb.heads(c.h) / c.t;
        const I64 chunks = (c.s_loc + mb.chunk_size - 1) / mb.chunk_size;
        const I64 states = c.b * chunks * heads_l * mb.head_dim * mb.state_dim * 4;
        const I64 per_head = 2 * c.tok * heads_l * 4;
        const I64 scan_in = mb.scan_input_width(c.h, c.t, c.st.cp);
        const I64 conv_out = c.tok * (scan_in - mb.d_inner(c.h) / c.t - heads_l) * e;
        const I64 exchange = c.st.cp > 1 ? 2 * c.tok * scan_in * e : 0;
        op.fwd_transient_bytes = states + per_head + conv_out + exchange;
        op.bwd_transient_bytes = grad_in + conv_out + 2 * states + per_head + wgrad + exchange;
        break;
      }
      case OpKind::GatedDeltaRule: {
        // FLA's chunk_gated_delta_rule forward makes the WY factors w, u (a key and a value row per value
        // head and token) and the chunk states h (batch × chunks × value heads × dk × dv), beside the
        // convolution's output (q, k, v before the L2 norm); backward recomputes them with the state
        // gradients dh, beside the input gradient (fla/ops/gated_delta_rule/chunk.py: the autograd function
        // keeps q, k, v, the cumulative g, beta and A; chunk_gated_delta_rule_bwd recomputes w, u and h).
        const GdnSpec& gd = c.m.gdn;
        const I64 nv_l = gd.num_value_heads / c.t;
        const I64 chunks = (c.s_loc + GdnSpec::kChunk - 1) / GdnSpec::kChunk;
        const I64 states = c.b * chunks * nv_l * gd.key_head_dim * gd.value_head_dim * e;
        const I64 wy = c.tok * nv_l * (gd.key_head_dim + gd.value_head_dim) * e;
        const I64 conv_out = c.tok * (gd.conv_dim() / c.t) * e;
        // With context parallelism the all-to-all before the convolution holds its output beside the
        // sequence-sharded projections (a2a_cp_to_hp), and the gradients' way back the same.
        const I64 exchange = c.st.cp > 1 ? 2 * c.tok * op.in_features * e : 0;
        op.fwd_transient_bytes = conv_out + wy + states + exchange;
        op.bwd_transient_bytes = grad_in + conv_out + wy + 2 * states + wgrad + exchange;
        break;
      }
      default:
        op.bwd_transient_bytes = grad_in + wgrad;
        break;
    }
  }
  for (const auto& [rows, cols] : dummy_shapes) buffer += rows * cols * pe;
  const double overhead_mib = c.st.runtime_overhead_mib >= 0 ? c.st.runtime_overhead_mib : 64.0;
  g.runtime_buffer_bytes = buffer + static_cast<I64>(overhead_mib * 1048576.0);
}

}  // namespace preflight::analyzer::graph_ops
