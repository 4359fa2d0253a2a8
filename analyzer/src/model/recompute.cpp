// Recompute: selective (Megatron-core recompute modules) and full (checkpointed layers).
#include "ops_build.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

namespace preflight::analyzer::graph_ops {

namespace {

/// The ops a whole-MLP checkpoint covers (dense or MoE).
bool in_mlp(OpRole r) {
  switch (r) {
    case OpRole::Fc1:
    case OpRole::Act:
    case OpRole::Fc2:
    case OpRole::Router:
    case OpRole::SharedFc1:
    case OpRole::SharedAct:
    case OpRole::SharedFc2:
    case OpRole::Dispatch:
    case OpRole::ExpertsFc1:
    case OpRole::ExpertsAct:
    case OpRole::ExpertsFc2:
    case OpRole::Combine:
    case OpRole::LatentDown:
    case OpRole::LatentUp:
      return true;
    default:
      return false;
  }
}

}  // namespace

/// Applies selective recompute to one layer's ops (Megatron-core `TransformerLayer` recompute modules).
void apply_selective(const Ctx& c, std::vector<Op>& ops) {
  apply_selective(c, ops, c.st.recompute_modules);
}

void apply_selective(const Ctx& c, std::vector<Op>& ops, const std::vector<std::string>& modules) {
  auto has = [&](const char* m) { return std::find(modules.begin(), modules.end(), m) != modules.end(); };
  bool moe_layer = std::any_of(ops.begin(), ops.end(), [](const Op& o) { return o.moe; });
  for (auto& op : ops) {
    if (op.role == OpRole::CoreAttention && has("core_attn")) {
      op.recompute = true;
      if (c.torch_cpu) {
        // torch.utils.checkpoint(core_attention, qkv_output, mask): keeps its input and the RNG state.
        std::string block = op.path.substr(0, op.path.rfind('.'));  // SelfAttention calls checkpoint
        set_kept(op, {{"input", op.input_bytes, true}, {"rng_state", kTorchCpuRngStateBytes, false, block}});
      } else {
        // checkpoint(core_attention)(q, k, v): only the inputs stay.
        std::vector<SavedTensor> kept;
        for (const auto& t : op.saved)
          if (t.name == "q" || t.name == "k" || t.name == "v" || t.name == "gate" ||
              t.name == "gate_input_output")
            kept.push_back(t);
        set_kept(op, kept);
      }
    }
  }
  // Whole-MLP checkpoint keeps only the pre-MLP norm output (held as the first MLP op's input).
  bool whole = (!moe_layer && has("mlp")) || (moe_layer && has("moe"));
  if (whole) {
    bool first = true;
    for (auto& op : ops) {
      if (!in_mlp(op.role)) continue;
      op.recompute = true;
      if (first)
        set_kept(op, {{"input", op.input_bytes, true}});
      else
        set_kept(op, {});
      first = false;
    }
  }
  if (moe_layer && !whole && has("moe_act")) {
    // CheckpointWithoutOutput on the expert activation: its output (fc2's input) is discarded.
    for (auto& op : ops)
      if (op.role == OpRole::ExpertsAct || op.role == OpRole::SharedAct) op.recompute = true;
    for (auto& op : ops)
      if (op.role == OpRole::ExpertsFc2) set_kept(op, {});
  }
  if (!moe_layer && !whole && has("mlp_act")) {
    // The dense MLP's activation recomputed (MindSpore select_recompute): its output, fc2's input, is
    // dropped and made again in backward; its own input (fc1's output) stays.
    for (auto& op : ops)
      if (op.role == OpRole::Act) op.recompute = true;
    for (auto& op : ops)
      if (op.role == OpRole::Fc2) {
        std::vector<SavedTensor> kept;
        for (const auto& t : op.kept)
          if (t.name != "input") kept.push_back(t);
        set_kept(op, kept);
      }
  }
  if (moe_layer && !whole && has("shared_experts")) {
    for (auto& op : ops)
      if (op.role == OpRole::SharedFc1 || op.role == OpRole::SharedAct || op.role == OpRole::SharedFc2) {
        op.recompute = true;
        set_kept(op, {});  // its input (the norm output) is kept by the router anyway
      }
  }
  if (has("mla_up_proj") && c.m.mla.enabled) {
    // Megatron MLASelfAttention with recompute_up_proj: the up projections and rope run under
    // CheckpointWithoutOutput, whose outputs (query, key, value) are discarded once core attention has run
    // (discard_output_and_register_recompute) and made again before its backward — the q, k, v the
    // attention kernel saved cost nothing; the latents (the checkpoint's inputs) stay with their norms.
    for (auto& op : ops) {
      if (op.role == OpRole::QUpProj || op.role == OpRole::QProj || op.role == OpRole::KvUpProj)
        op.recompute = true;
      if (op.role == OpRole::CoreAttention) {
        std::vector<SavedTensor> kept;
        for (const auto& t : op.kept)
          if (t.name != "q" && t.name != "k" && t.name != "v") kept.push_back(t);
        set_kept(op, kept);
      }
    }
  }
  if (has("gdn_norm_out")) {
    // A gated delta net's output norm and gate under CheckpointWithoutOutput
    // (GatedDeltaNet.recompute_norm_out): the checkpoint keeps its inputs (the rule's output; z is kept by
    // the rule), the gated output — out_proj's input — is discarded and made again before out_proj's
    // backward.
    for (std::size_t i = 0; i + 1 < ops.size(); ++i) {
      if (ops[i].role != OpRole::GdnNorm) continue;
      ops[i].recompute = true;
      std::vector<SavedTensor> kept;
      for (const auto& t : ops[i].kept)
        if (t.name == "input") kept.push_back(t);
      set_kept(ops[i], kept);
      Op& next = ops[i + 1];
      std::vector<SavedTensor> rest;
      for (const auto& t : next.kept)
        if (t.name != "input") rest.push_back(t);
      set_kept(next, rest);
    }
  }
  if (has("layernorm")) {
    // CheckpointWithoutOutput on both norms: the norm output, saved as the next linear's input, is
    // discarded and recomputed in backward.
    for (std::size_t i = 0; i + 1 < ops.size(); ++i) {
      if (ops[i].role != OpRole::InputNorm && ops[i].role != OpRole::PreMlpNorm) continue;
      ops[i].recompute = true;
      Op& next = ops[i + 1];
      if (next.kind == OpKind::LinearColumn || next.kind == OpKind::Router) {
        std::vector<SavedTensor> kept;
        for (const auto& t : next.kept)
          if (t.name != "input") kept.push_back(t);
        set_kept(next, kept);
      }
    }
  }
}

void apply_offload(const Ctx& c, StageGraph& g) {
  const auto& mods = c.st.offload_modules;
  if (mods.empty()) return;
  auto has = [&](const char* m) { return std::find(mods.begin(), mods.end(), m) != mods.end(); };
  // The offload group an op belongs to (Megatron's module name), or none.
  auto module_of = [&](OpRole r) -> const char* {
    switch (r) {
      case OpRole::InputNorm:
        return has("attn_norm") ? "attn_norm" : nullptr;
      case OpRole::Qkv:
        return has("qkv_linear") ? "qkv_linear" : nullptr;
      case OpRole::CoreAttention:
        return has("core_attn") ? "core_attn" : nullptr;
      case OpRole::AttnProj:
        return has("attn_proj") ? "attn_proj" : nullptr;
      case OpRole::PreMlpNorm:
        return has("mlp_norm") ? "mlp_norm" : nullptr;
      case OpRole::ExpertsFc1:
        return has("fused_group_mlp") ? "fused_group_mlp" : has("expert_fc1") ? "expert_fc1" : nullptr;
      case OpRole::ExpertsAct:
        return has("fused_group_mlp") ? "fused_group_mlp" : has("moe_act") ? "moe_act" : nullptr;
      case OpRole::ExpertsFc2:
        return has("fused_group_mlp") ? "fused_group_mlp" : nullptr;
      default:
        return nullptr;
    }
  };
  const double min_bytes = static_cast<double>(c.st.min_offloaded_tensor_elements) * static_cast<double>(c.a);
  // Every tensor autograd saves inside the module's offload context goes to the host when it holds at least
  // --min-offloaded-tensor-size elements (fine_grained_activation_offload.py: saved_tensors_hooks,
  // tensor_need_offloading_checker): the module's input, and what it saves of its own (unfused attention's
  // softmax and dropout tensors beside q, k, v).  Tensors of another op (attn_proj's input, core attention's
  // output) go with that op's module.
  auto offloadable = [&](const SavedTensor& t) { return static_cast<double>(t.bytes) >= min_bytes; };
  // Offload groups in forward order: one per module per layer (MTP layers too), with their bytes.
  struct Group {
    std::string module;
    std::vector<std::size_t> ops;
    std::int64_t bytes = 0;
  };
  std::vector<Group> groups;
  std::map<std::tuple<int, int, std::string>, std::size_t> index;
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const Op& op = g.ops[i];
    const char* module = module_of(op.role);
    if (!module || (op.layer < 0 && op.mtp_layer < 0)) continue;
    std::int64_t bytes = 0;
    for (const auto& t : op.kept)
      if (offloadable(t)) bytes += t.bytes;
    if (bytes == 0) continue;
    auto [it, fresh] = index.try_emplace({op.layer, op.mtp_layer, module}, groups.size());
    if (fresh) groups.push_back({module, {}, 0});
    groups[it->second].ops.push_back(i);
    groups[it->second].bytes += bytes;
  }
  // --activation-offload-fraction: the last ⌊n · (1 − fraction)⌋ groups stay (Python's int() of the product).
  const auto n = static_cast<std::int64_t>(groups.size());
  const auto stay =
      static_cast<std::int64_t>(static_cast<double>(n) * (1.0 - c.st.activation_offload_fraction));
  std::map<std::string, std::int64_t> last_of_module;
  for (std::int64_t k = 0; k < n - stay; ++k) {
    Group& grp = groups[static_cast<std::size_t>(k)];
    for (std::size_t i : grp.ops) {
      Op& op = g.ops[i];
      std::vector<SavedTensor> kept;
      for (const auto& t : op.kept)
        if (!offloadable(t)) kept.push_back(t);
      set_kept(op, kept);
    }
    g.offloaded_bytes += grp.bytes;
    last_of_module[grp.module] = grp.bytes;
  }
  // The offload margin: the last group of each module name in the micro batch whose backward runs first stays
  // on the device, so that its reload does not stall the compute stream.
  for (const auto& [module, bytes] : last_of_module) g.offload_pinned_bytes += bytes;
}

void apply_full(const Ctx& c, std::vector<Op>& ops, int i) {
  const Strategy& st = c.st;
  // Megatron `TransformerBlock._checkpointed_forward`: uniform checkpoints consecutive groups of
  // recompute_num_layers layers (each keeps its input); block checkpoints the first recompute_num_layers
  // layers of the chunk one by one.
  bool checkpointed, keeps_input;
  if (st.recompute_method == RecomputeMethod::Uniform) {
    checkpointed = true;
    keeps_input = i % st.recompute_num_layers == 0;
  } else {
    checkpointed = i < st.recompute_num_layers;
    keeps_input = true;
  }
  if (!checkpointed) return;
  // One checkpoint call per group of layers (uniform) or per layer (block).
  int group = st.recompute_method == RecomputeMethod::Uniform ? i / st.recompute_num_layers : i;
  for (auto& op : ops) {
    op.recompute = true;
    op.checkpoint = group;
    set_kept(op, {});
  }
  if (keeps_input) {
    std::vector<SavedTensor> kept = {{"input", c.tok_sp * c.h * c.a, true}};
    if (c.torch_cpu)  // TransformerBlock ("decoder") calls checkpoint
      kept.push_back({"rng_state", kTorchCpuRngStateBytes, false, "decoder"});
    set_kept(ops.front(), kept);
  }
}

int next_checkpoint_id(const std::vector<Op>& ops) {
  int id = 0;
  for (const Op& op : ops) id = std::max(id, op.checkpoint + 1);
  return id;
}

int number_selective_checkpoints(std::vector<Op>& ops, int next) {
  for (std::size_t k = 0; k < ops.size(); ++k)
    if (ops[k].recompute) ops[k].checkpoint = k > 0 && ops[k - 1].recompute ? ops[k - 1].checkpoint : next++;
  return next;
}

}  // namespace preflight::analyzer::graph_ops
