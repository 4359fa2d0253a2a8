// Transient memory of the TorchCpu implementation (examples/torch_cpu_gpt).
#include "ops_build.hpp"

#include <algorithm>

namespace preflight::analyzer::graph_ops {

/// Transient bytes of the torch_cpu ops (Op::fwd_transient_bytes, Op::bwd_transient_bytes), read off the
/// eager code of examples/torch_cpu_gpt/gpt_cpu/model.py and PyTorch's autograd formulas (1.13), and
/// checked against allocation traces of real runs (tests/calibrate).  e = activation bytes, T = tokens.
void set_torch_cpu_transients(const Ctx& c, StageGraph& g) {
  const I64 e = c.a;
  const I64 TH = c.tok * c.h * e;
  const bool bf16_tp = c.st.precision == Precision::BF16 && c.t > 1;  // gloo reduces bf16 through fp32
  bool has_position = false;
  for (const auto& op : g.ops) has_position = has_position || op.kind == OpKind::PositionEmbedding;
  I64 qkv_output = 0;  // the attention block's qkv output, referenced until the block returns
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    Op& op = g.ops[i];
    const Op* next = i + 1 < g.ops.size() ? &g.ops[i + 1] : nullptr;
    I64 P = op.param_numel() * e;  // weight gradients, in the parameter dtype, before main_grad
    I64 grad_in = op.input_bytes;
    switch (op.kind) {
      case OpKind::Embedding:
        // lookup output (tp > 1: also the shifted ids and the masked copy of the output) until the
        // position add; backward: the dense weight gradient (+ the masked_fill gradient)
        op.fwd_transient_bytes = c.t > 1 ? 2 * TH + c.tok * 8 : TH;
        if (!has_position) op.fwd_transient_bytes += TH;  // the [s, b, h] contiguous copy
        op.bwd_transient_bytes = P + (c.t > 1 ? TH : 0);
        break;
      case OpKind::PositionEmbedding:
        // word output + position output + their sum; backward: the weight gradient and the add/transpose
        op.fwd_transient_bytes = 2 * TH + c.s * c.h * e;
        op.bwd_transient_bytes = P + TH;
        break;
      case OpKind::Dropout:
        op.fwd_transient_bytes = TH;  // its input, the [s, b, h] copy
        op.bwd_transient_bytes = TH;
        break;
      case OpKind::Norm:
        op.bwd_transient_bytes = grad_in + P;
        break;
      case OpKind::LinearColumn: {
        bool output_kept = next && next->kept_input_bytes() >= op.output_bytes;
        op.fwd_transient_bytes = output_kept ? 0 : op.output_bytes;
        if (op.role == OpRole::Qkv) qkv_output = output_kept ? 0 : op.output_bytes;
        op.bwd_transient_bytes = grad_in + P + (bf16_tp ? op.input_bytes / e * 4 : 0);
        break;
      }
      case OpKind::CoreAttention: {
        I64 q = c.b * op.heads * op.seq * op.head_dim * e;  // one [b·heads, s, d] tensor
        I64 scores = c.b * op.heads * op.seq * op.kv_seq * e;
        I64 saved = op.saved_bytes();
        if (op.recompute && c.st.recompute_granularity == RecomputeGranularity::Selective) {
          // forward under no_grad: q, k, v, scores, softmax, noise, dropout output, then the context
          int probs = c.m.attention_dropout > 0 ? 4 : 2;
          op.fwd_transient_bytes = std::max(3 * q + probs * scores, 5 * q + (probs - 1) * scores);
          // backward: the re-run forward (what it saves, scores, context) then grad_v + grad_probs
          op.bwd_transient_bytes = saved + scores + 2 * q;
        } else {
          op.fwd_transient_bytes = qkv_output + scores + q;  // qkv output, scores, bmm context
          op.bwd_transient_bytes = q + scores;               // grad_v + grad_probs
        }
        break;
      }
      case OpKind::LinearRow: {
        bool bias = op.params.size() > 1;
        bool is_proj = op.role == OpRole::AttnProj;
        op.fwd_transient_bytes = (bias ? 2 : 1) * op.output_bytes + (is_proj ? qkv_output : 0) +
                                 (bf16_tp ? op.output_bytes / e * 4 : 0);
        op.bwd_transient_bytes = grad_in + P;
        break;
      }
      case OpKind::Activation:
        // SwiGLU: grad of SiLU output and of up, SiLU backward, then the concatenated [T, 2f] gradient
        op.bwd_transient_bytes = c.m.gated() ? 2 * grad_in : grad_in;
        break;
      case OpKind::BiasDropoutAdd: {
        bool dropout = c.m.hidden_dropout > 0;
        op.fwd_transient_bytes = (dropout ? 2 : 1) * TH;  // the branch output (+ its dropout output)
        op.bwd_transient_bytes = dropout ? TH : 0;
        break;
      }
      case OpKind::CrossEntropy: {
        I64 fp32_copy = c.st.precision == Precision::FP32 ? 0 : op.input_bytes / e * 4;
        op.fwd_transient_bytes = op.input_bytes + fp32_copy;  // the logits (and their fp32 copy)
        op.bwd_transient_bytes = fp32_copy ? op.input_bytes : 0;
        break;
      }
      default:
        break;
    }
  }
}

}  // namespace preflight::analyzer::graph_ops
