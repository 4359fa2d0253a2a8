// Megatron arguments, MindSpeed-LLM's dialect (Ascend/MindSpeed-LLM: Megatron-LM patched for Ascend NPUs,
// launched by torchrun with its own flags beside Megatron's).  Its flags are rewritten into Megatron's before
// the readers run; what has no Megatron counterpart is said or refused by name.
#include <algorithm>
#include <set>
#include <sstream>

#include "megatron_flags.hpp"
#include "preflight/analyzer/model/strategy.hpp"
#include "preflight/common/error.hpp"

namespace preflight::analyzer::megatron {

const std::vector<FlagSpec>& mindspeed_flags() {
  static const std::vector<FlagSpec> flags = {
      // Rewritten into Megatron's (translate_mindspeed below).
      {"--first-k-dense-replace", Arity::One},
      {"--n-shared-experts", Arity::One},
      {"--shared-expert-gate", Arity::Switch},
      {"--shared-expert-gate-output-dimension", Arity::One},
      {"--noop-layers", Arity::One},
      {"--num-layer-list", Arity::One},
      {"--context-parallel-algo", Arity::One},
      {"--ulysses-degree-in-cp", Arity::One},
      {"--moe-tp-extend-ep", Arity::Switch},
      {"--swap-optimizer", Arity::Switch},
      {"--swap-optimizer-times", Arity::One},
      {"--reuse-fp32-param", Arity::Switch},
      {"--recompute-activation-function", Arity::Switch},
      {"--recompute-activation-function-num-layers", Arity::One},
      {"--schedules-method", Arity::One},
      {"--geglu", Arity::Switch},
      {"--gelu-tanh", Arity::Switch},
      {"--interleave-sliding-window", Arity::One},
      {"--full-attention-interval", Arity::One},
      {"--mamba-d-conv", Arity::One},
      {"--lora-r", Arity::One},
      {"--lora-load", Arity::One},
      {"--lora-fusion", Arity::Switch},
      {"--lora-ckpt-filter", Arity::Switch},
      {"--lora-modules-to-save", Arity::Many},
      {"--lora-register-forward-hook", Arity::Many},
      {"--stage", Arity::One},
      {"--moe-model-type", Arity::One},
      {"--noisy-gate-policy", Arity::One},
      // Refused by name (models preflight does not price).
      {"--enable-dsa-indexer", Arity::Switch},
      {"--index-n-heads", Arity::One},
      {"--enable-mhc", Arity::Switch},
      {"--hc-mult", Arity::One},
      // No cost as priced: loss terms, routing numerics, fused kernels of the same shapes, host-side
      // settings.
      {"--moe-permutation-async-comm", Arity::Switch},
      {"--seq-aux", Arity::Switch},
      {"--norm-topk-prob", Arity::Switch},
      {"--topk-softmax-in-fp32", Arity::Switch},
      {"--router-gating-in-fp32", Arity::Switch},
      {"--moe-device-level-aux-loss-coeff", Arity::One},
      {"--moe-comm-aux-loss-coeff", Arity::One},
      {"--use-fused-rmsnorm", Arity::Switch},
      {"--use-fused-swiglu", Arity::Switch},
      {"--use-fused-rotary-pos-emb", Arity::Switch},
      {"--gemm-gradient-accumulation-fusion", Arity::Switch},
      {"--mla-fa-without-pad", Arity::Switch},
      {"--add-rmsnorm-offset", Arity::Switch},
      {"--rmsnorm-weight-in-fp32", Arity::Switch},
      {"--input-embeds-norm", Arity::Switch},
      {"--query-pre-attn-scalar", Arity::One},
      {"--output-logit-softcapping", Arity::One},
      {"--attn-logit-softcapping", Arity::One},
      {"--partial-rotary-factor", Arity::One},
      {"--use-triton-gdn", Arity::Switch},
      {"--manual-gc", Arity::Switch},
      {"--manual-gc-interval", Arity::One},
      {"--no-shared-storage", Arity::Switch},
  };
  return flags;
}

namespace {

bool has(const std::map<std::string, std::string>& seen, const char* flag) {
  return seen.count(flag) > 0;
}

I64 int_of(const std::map<std::string, std::string>& seen, const char* flag) {
  return parse_int(flag, seen.at(flag));
}

/// Whole numbers separated by commas and / or blanks ("61,62,63", "10,12,8", `"20 26"`); negative refused.
std::vector<I64> whole_numbers(const std::string& flag, const std::string& v) {
  std::string text = v;
  std::replace_if(
      text.begin(), text.end(), [](char c) { return c == ',' || c == '"'; }, ' ');
  std::vector<I64> out;
  std::stringstream in(text);
  for (std::string w; in >> w;) {
    const I64 n = parse_int(flag, w);
    if (n < 0) throw InputError(flag, "expected whole numbers, got " + w);
    out.push_back(n);
  }
  return out;
}

/// --noop-layers: the set of 0-based global layer numbers.
std::set<I64> layer_set(const std::string& flag, const std::string& v, I64 num_layers) {
  std::set<I64> out;
  for (const I64 n : whole_numbers(flag, v)) {
    if (n >= num_layers)
      throw InputError(flag,
                       "layer " + std::to_string(n) + " is outside 0 … " + std::to_string(num_layers - 1));
    out.insert(n);
  }
  return out;
}

std::string pattern_text(const std::vector<bool>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::string(v[i] ? "1" : "0");
  return s + "]";
}

}  // namespace

void translate_mindspeed(std::map<std::string, std::string>& seen, std::vector<std::string>& warnings) {
  // Models preflight does not price: refused by name, as Megatron's spellings of them are.
  if (has(seen, "--enable-dsa-indexer") || has(seen, "--index-n-heads"))
    throw InputError(
        has(seen, "--enable-dsa-indexer") ? "--enable-dsa-indexer" : "--index-n-heads",
        "DeepSeek sparse attention (an indexer picks the keys each query attends) is not modelled: "
        "preflight prices softmax attention over the causal keys (or a sliding window)");
  if (has(seen, "--enable-mhc") || has(seen, "--hc-mult"))
    throw InputError(
        has(seen, "--enable-mhc") ? "--enable-mhc" : "--hc-mult",
        "hyper-connections (several residual streams per token) are not modelled: preflight prices "
        "one residual stream of the hidden size");
  if (has(seen, "--stage") && seen.at("--stage") != "sft")
    throw InputError("--stage",
                     "'" + seen.at("--stage") +
                         "' (preference optimisation or reinforcement learning: a reference or "
                         "rollout model beside the policy's step) is not modelled; pretraining and "
                         "sft are");

  // Gated MLPs: MindSpeed's --geglu / --gelu-tanh set gated_linear_unit with a GeLU (core/transformer/mlp.py)
  // — SwiGLU's shapes; its FFN size is the flag's (4h by default), not Megatron's SwiGLU rounding.
  if (has(seen, "--geglu") || has(seen, "--gelu-tanh")) {
    if (!has(seen, "--ffn-hidden-size") && has(seen, "--hidden-size"))
      seen["--ffn-hidden-size"] = std::to_string(4 * int_of(seen, "--hidden-size"));
    seen["--swiglu"] = "";
  }
  // Gemma 2's alternating local attention (tasks/models/transformer/transformer_layer.py: layers 1, 3, … of
  // 1-based numbers attend the last W keys, themselves included) — Megatron's window (W − 1, 0) every layer
  // but each 2nd.
  if (has(seen, "--interleave-sliding-window") && !has(seen, "--window-size")) {
    const I64 w = int_of(seen, "--interleave-sliding-window");
    if (w <= 0) throw InputError("--interleave-sliding-window", "must be positive");
    seen["--window-size"] = std::to_string(w - 1) + ",0";
    seen["--window-attn-skip-freq"] = "2";
  }
  // Shared experts: n × the routed expert's FFN (features_manager/moe/shared_expert.py), gated by a scalar.
  if (has(seen, "--n-shared-experts") && !has(seen, "--moe-shared-expert-intermediate-size")) {
    const I64 n = int_of(seen, "--n-shared-experts");
    if (n < 0) throw InputError("--n-shared-experts", "must not be negative");
    const char* ffn = has(seen, "--moe-ffn-hidden-size") ? "--moe-ffn-hidden-size" : "--ffn-hidden-size";
    if (n > 0 && has(seen, ffn))
      seen["--moe-shared-expert-intermediate-size"] = std::to_string(n * int_of(seen, ffn));
  }
  if (has(seen, "--shared-expert-gate")) seen["--moe-shared-expert-gate"] = "";
  // --moe-model-type deepspeed_moe (MindSpeed's and ModelLink's Mixtral scripts): DeepSpeed's gate, each
  // expert's tokens padded or cut to capacity (--moe-train-capacity-factor, 1 by default); megatron_moe is
  // Megatron's own (dropless unless a capacity is given).
  if (has(seen, "--moe-model-type")) {
    const std::string type = seen.at("--moe-model-type");
    if (type == "deepspeed_moe") {
      if (!has(seen, "--moe-expert-capacity-factor"))
        seen["--moe-expert-capacity-factor"] =
            has(seen, "--moe-train-capacity-factor") ? seen.at("--moe-train-capacity-factor") : "1.0";
      seen["--moe-pad-expert-input-to-capacity"] = "";
      warnings.push_back(
          "--moe-model-type deepspeed_moe: DeepSpeed's gate, each expert's tokens padded to capacity "
          "factor " +
          seen.at("--moe-expert-capacity-factor") + " (priced as Megatron's MoE padded to that capacity)");
    } else if (type != "megatron_moe") {
      throw InputError("--moe-model-type", "unknown type '" + type + "' (deepspeed_moe or megatron_moe)");
    }
  }
  if (has(seen, "--moe-token-dispatcher-type") && seen.at("--moe-token-dispatcher-type") == "alltoall_seq")
    seen["--moe-token-dispatcher-type"] = "alltoall";  // Megatron's former sequence-sharded all-to-all
  // Experts over tp × ep ranks, whole (no expert tensor parallelism).
  if (has(seen, "--moe-tp-extend-ep")) {
    const I64 tp =
        has(seen, "--tensor-model-parallel-size") ? int_of(seen, "--tensor-model-parallel-size") : 1;
    const I64 ep =
        has(seen, "--expert-model-parallel-size") ? int_of(seen, "--expert-model-parallel-size") : 1;
    seen["--expert-model-parallel-size"] = std::to_string(tp * ep);
    seen["--expert-tensor-parallel-size"] = "1";
  }
  // Context parallelism's algorithm → Megatron's cp_comm_type.
  if (has(seen, "--context-parallel-algo") && !has(seen, "--cp-comm-type")) {
    const std::string algo = seen.at("--context-parallel-algo");
    if (algo == "megatron_cp_algo") {
      seen["--cp-comm-type"] = "p2p";
    } else if (algo == "ulysses_cp_algo") {
      seen["--cp-comm-type"] = "a2a";
    } else if (algo == "hybrid_cp_algo") {
      seen["--cp-comm-type"] = "a2a+p2p";
      if (has(seen, "--ulysses-degree-in-cp") && has(seen, "--context-parallel-size")) {
        const I64 u = int_of(seen, "--ulysses-degree-in-cp"), cp = int_of(seen, "--context-parallel-size");
        if (u <= 0 || cp % u != 0)
          throw InputError("--ulysses-degree-in-cp",
                           "must divide --context-parallel-size " + std::to_string(cp));
        seen["--hierarchical-context-parallel-sizes"] = std::to_string(u) + " " + std::to_string(cp / u);
      }
    } else if (algo == "adaptive_cp_algo" || algo == "hybrid_adaptive_cp_algo") {
      seen["--cp-comm-type"] = "p2p";
      warnings.push_back(
          "--context-parallel-algo " + algo +
          ": MindSpeed's adaptive placement of the attention blocks is not modelled; priced as "
          "the ring (p2p) context parallelism");
    } else {
      throw InputError("--context-parallel-algo",
                       "unknown algorithm '" + algo +
                           "' (megatron_cp_algo, ulysses_cp_algo, hybrid_cp_algo, adaptive_cp_algo, "
                           "hybrid_adaptive_cp_algo)");
    }
  }
  // LoRA: on when target modules are given (features_manager/finetune/lora.py), rank --lora-r (16).
  if (has(seen, "--lora-target-modules") && !seen.at("--lora-target-modules").empty() &&
      !has(seen, "--lora-rank"))
    seen["--lora-rank"] = has(seen, "--lora-r") ? seen.at("--lora-r") : "16";
  if (has(seen, "--schedules-method") && seen.at("--schedules-method") != "1f1b")
    warnings.push_back(
        "--schedules-method " + seen.at("--schedules-method") +
        ": MindSpeed's DualPipeV (two chunks per rank in a V, forward and backward of two micro "
        "batches overlapped) is not modelled; priced as Megatron's 1F1B");

  // Layers: Qwen3-Next's linear attention, DeepSeek's first dense layers, no-op layers and per-stage counts.
  if (!has(seen, "--num-layers")) {
    // Their layer numbers are the launch's --num-layers' (a preset's count is not assumed to be the
    // script's).
    for (const char* layered :
         {"--noop-layers", "--num-layer-list", "--first-k-dense-replace", "--full-attention-interval"})
      if (has(seen, layered))
        throw InputError(layered, "needs --num-layers (its layer numbers count the launch's layers)");
    return;
  }
  const I64 num_layers = int_of(seen, "--num-layers");
  if (num_layers <= 0) return;  // read_architecture says so
  std::vector<bool> gdn, moe;
  if (has(seen, "--full-attention-interval")) {
    // qwen3_next_feature: 1-based layer n is full attention when n % interval == 0, a gated delta net
    // otherwise.
    const I64 every = int_of(seen, "--full-attention-interval");
    if (every < 0)
      throw InputError("--full-attention-interval", "must not be negative (0: every layer attention)");
    if (every > 0) {
      gdn.resize(static_cast<std::size_t>(num_layers));
      for (I64 i = 0; i < num_layers; ++i) gdn[static_cast<std::size_t>(i)] = (i + 1) % every != 0;
      seen["--experimental-attention-variant"] = "gdn";
      seen["--attention-output-gate"] = "";  // Qwen3-Next's gated full attention
      if (has(seen, "--mamba-d-conv")) seen["--linear-conv-kernel-dim"] = seen.at("--mamba-d-conv");
    }
  } else if (has(seen, "--mamba-d-conv")) {
    warnings.push_back("read past, not modelled (they may change memory or time): --mamba-d-conv");
  }
  if (has(seen, "--first-k-dense-replace") && has(seen, "--num-experts")) {
    // core/transformer/transformer_block.py: when num_experts, first_k_dense_replace and moe_layer_freq are
    // all set (Python truth: -1 counts), 0-based layer i is MoE iff i >= k and i % freq == 0.
    const I64 k = int_of(seen, "--first-k-dense-replace");
    const I64 freq =
        has(seen, "--moe-layer-freq") ? parse_int("--moe-layer-freq", seen.at("--moe-layer-freq")) : 1;
    if (k != 0 && freq != 0) {
      if (k >= num_layers)
        throw InputError(
            "--first-k-dense-replace",
            "must be below --num-layers " + std::to_string(num_layers) + " (MindSpeed asserts it)");
      const I64 f = freq < 0 ? -freq : freq;
      moe.resize(static_cast<std::size_t>(num_layers));
      for (I64 i = 0; i < num_layers; ++i) moe[static_cast<std::size_t>(i)] = i >= k && i % f == 0;
    }
  }
  std::set<I64> noop;
  if (has(seen, "--noop-layers")) noop = layer_set("--noop-layers", seen.at("--noop-layers"), num_layers);
  const I64 real = num_layers - static_cast<I64>(noop.size());
  if (real <= 0) throw InputError("--noop-layers", "leaves no transformer layer");
  auto drop_noop = [&](const std::vector<bool>& v) {
    std::vector<bool> out;
    for (I64 i = 0; i < num_layers; ++i)
      if (!noop.count(i)) out.push_back(v[static_cast<std::size_t>(i)]);
    return out;
  };
  if (!noop.empty()) {
    if (moe.empty() && has(seen, "--num-experts") && has(seen, "--moe-layer-freq")) {
      const std::string v = seen.at("--moe-layer-freq");
      const bool plain = v.find('[') == std::string::npos;
      if (!plain)
        throw InputError("--noop-layers",
                         "with a --moe-layer-freq list: give the list of the layers that remain");
      const I64 freq = parse_int("--moe-layer-freq", v);
      const I64 f = freq < 0 ? -freq : freq;
      if (f == 0) throw InputError("--moe-layer-freq", "must not be 0 (Megatron divides by it)");
      moe.resize(static_cast<std::size_t>(num_layers));
      for (I64 i = 0; i < num_layers; ++i) moe[static_cast<std::size_t>(i)] = i % f == 0;
    }
    for (const char* pattern : {"--window-attn-skip-freq", "--linear-attention-freq"})
      if (has(seen, pattern) && !(std::string(pattern) == "--linear-attention-freq" && !gdn.empty()))
        throw InputError("--noop-layers", std::string("with ") + pattern +
                                              ": not modelled (the pattern's layers would shift); give the "
                                              "layers that remain");
  }
  if (!moe.empty()) seen["--moe-layer-freq"] = pattern_text(noop.empty() ? moe : drop_noop(moe));
  if (!gdn.empty()) seen["--linear-attention-freq"] = pattern_text(noop.empty() ? gdn : drop_noop(gdn));

  // The pipeline split: --num-layer-list gives each stage's layers (disabled by no-op layers, as MindSpeed
  // does); no-op layers leave their chunks short — both as Megatron's pipeline layout of the real layers.
  const I64 pp =
      has(seen, "--pipeline-model-parallel-size") ? int_of(seen, "--pipeline-model-parallel-size") : 1;
  std::vector<I64> per_stage;
  if (has(seen, "--num-layer-list") && noop.empty()) {
    per_stage = whole_numbers("--num-layer-list", seen.at("--num-layer-list"));
    if (static_cast<I64>(per_stage.size()) != pp)
      throw InputError("--num-layer-list", "gives " + std::to_string(per_stage.size()) +
                                               " stages for --pipeline-model-parallel-size " +
                                               std::to_string(pp) + " (MindSpeed raises it)");
    I64 sum = 0;
    for (I64 n : per_stage) sum += n;
    if (sum != num_layers)
      throw InputError("--num-layer-list", "sums to " + std::to_string(sum) + " layers, not --num-layers " +
                                               std::to_string(num_layers));
    if (has(seen, "--num-layers-per-virtual-pipeline-stage"))
      throw InputError("--num-layer-list", "cannot run with a virtual pipeline (MindSpeed raises it)");
  } else if (has(seen, "--num-layer-list")) {
    warnings.push_back("--num-layer-list is disabled by --noop-layers (as MindSpeed does)");
  }
  seen.erase("--num-layer-list");
  if (noop.empty() && per_stage.empty()) return;
  for (const char* other : {"--pipeline-model-parallel-layout", "--decoder-first-pipeline-num-layers",
                            "--decoder-last-pipeline-num-layers", "--num-virtual-stages-per-pipeline-rank"})
    if (has(seen, other))
      throw InputError(other, "cannot be combined with MindSpeed's --noop-layers / --num-layer-list");
  I64 vpp = 1;
  if (has(seen, "--num-layers-per-virtual-pipeline-stage")) {
    const I64 per = int_of(seen, "--num-layers-per-virtual-pipeline-stage");
    if (per <= 0 || pp <= 0 || num_layers % (pp * per) != 0)
      throw InputError("--num-layers-per-virtual-pipeline-stage",
                       "does not split the " + std::to_string(num_layers) +
                           " layers (no-op ones included) into " + std::to_string(pp) +
                           " stages of chunks of " + std::to_string(per));
    vpp = num_layers / (pp * per);
  }
  if (per_stage.empty()) {
    if (pp <= 0 || num_layers % (pp * vpp) != 0)
      throw InputError("--num-layers", std::to_string(num_layers) +
                                           " layers (no-op ones included) do not divide "
                                           "into " +
                                           std::to_string(pp * vpp) + " pipeline chunks");
    per_stage.assign(static_cast<std::size_t>(pp * vpp), num_layers / (pp * vpp));
  }
  // Chunk k in Megatron's order (virtual chunk k / pp of rank k % pp) holds the next per_stage[k] layers.
  std::vector<std::vector<int>> chunks(static_cast<std::size_t>(vpp),
                                       std::vector<int>(static_cast<std::size_t>(pp)));
  I64 at = 0;
  for (I64 k = 0; k < pp * vpp; ++k) {
    int kept = 0;
    for (I64 i = at; i < at + per_stage[static_cast<std::size_t>(k)]; ++i) kept += noop.count(i) ? 0 : 1;
    at += per_stage[static_cast<std::size_t>(k)];
    chunks[static_cast<std::size_t>(k / pp)][static_cast<std::size_t>(k % pp)] = kept;
  }
  const I64 mtp = has(seen, "--mtp-num-layers") ? int_of(seen, "--mtp-num-layers") : 0;
  seen["--pipeline-model-parallel-layout"] =
      format_pipeline_layout(chunks, static_cast<int>(std::max<I64>(mtp, 0)));
  seen.erase("--num-layers-per-virtual-pipeline-stage");
  seen["--num-layers"] = std::to_string(real);
  if (!noop.empty())
    warnings.push_back(
        "--noop-layers: " + std::to_string(noop.size()) + " of the " + std::to_string(num_layers) +
        " layers are MindSpeed's no-op layers (no weights, no work): the model has " + std::to_string(real) +
        " transformer layers, split as " + seen.at("--pipeline-model-parallel-layout"));
}

void mindspeed_after(const Flags& f, MegatronConfig& cfg) {
  if (f.has("--reuse-fp32-param")) {
    // MindSpeed's parameter-copy reuse (mindspeed/optimizer reuse_fp32_param; Ascend/MindSpeed docs
    // reuse_fp32_param.md): fp32 = bf16 + a 16-bit residual, the bf16 half being the model's own parameter —
    // the main copy costs 2 bytes a parameter (sharded over dp with the distributed optimizer), not 4.  bf16
    // only.
    if (cfg.strategy.precision != Precision::BF16)
      throw InputError("--reuse-fp32-param", "needs --bf16 (MindSpeed checks it: the residual is bf16's)");
    cfg.strategy.master_param_bytes = std::min(cfg.strategy.master_param_bytes, 2);
  }
  if (f.has("--recompute-activation-function")) {
    // MindSpeed's activation recompute (mindspeed/core/memory/recompute/activation: CheckpointWithoutOutput
    // around the MLP's activation): its output, fc2's input, is dropped and made again in backward — the
    // dense MLP's (preflight's "mlp_act") and the grouped experts' (Megatron's moe_act).  Layers under full
    // recompute keep only their input anyway.
    Strategy& st = cfg.strategy;
    const ModelSpec& m = cfg.model;
    if (st.recompute_granularity == RecomputeGranularity::Full) {
      if (st.recompute_method == RecomputeMethod::Block)
        cfg.warnings.push_back(
            "--recompute-activation-function: the layers outside the full-recompute block keep their MLP "
            "activation here (not modelled with --recompute-method block): memory here is high");
    } else {
      const std::vector<std::string> base = st.recompute_granularity == RecomputeGranularity::Selective
                                                ? st.recompute_modules
                                                : std::vector<std::string>{};
      st.per_layer_recompute.assign(static_cast<std::size_t>(m.num_layers), {});
      for (int layer = 0; layer < m.num_layers; ++layer) {
        auto& choice = st.per_layer_recompute[static_cast<std::size_t>(layer)];
        choice.modules = base;
        if (!m.is_moe_layer(layer))
          choice.modules.push_back("mlp_act");
        else if (st.moe_grouped_gemm)
          choice.modules.push_back("moe_act");
      }
      if (f.has("--recompute-activation-function-num-layers"))
        cfg.warnings.push_back(
            "--recompute-activation-function-num-layers: the activation recompute is priced on every layer, "
            "not on that many: memory here is low");
    }
  }
  if (f.has("--swap-optimizer")) {
    // MindSpeed keeps the optimizer states on the host and swaps them in, --swap-optimizer-times parts, for
    // the step: off the device at the activation peak, as Megatron's optimizer offload.
    cfg.strategy.optimizer_cpu_offload_fraction = 1.0;
    cfg.warnings.push_back(
        "--swap-optimizer: the optimizer states are priced on the host (MindSpeed swaps them in by parts for "
        "the "
        "step: that part and the transfers are not priced)");
  }
}

}  // namespace preflight::analyzer::megatron

namespace preflight::analyzer {

bool is_mindspeed_launch(const std::vector<std::string>& args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string name = args[i].substr(0, args[i].find('='));
    if (name == "--spec" && i + 1 < args.size() && args[i + 1].rfind("mindspeed_llm", 0) == 0) return true;
    for (const auto& flag : megatron::mindspeed_flags())
      if (name == flag.name) return true;
  }
  return false;
}

}  // namespace preflight::analyzer
