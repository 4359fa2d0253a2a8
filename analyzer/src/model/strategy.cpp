#include "preflight/analyzer/model/strategy.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <map>
#include <numeric>
#include <regex>
#include <sstream>
#include <string>

#include "preflight/common/error.hpp"

namespace preflight::analyzer {

namespace {
std::string num(std::int64_t v) {
  return std::to_string(v);
}

/// What examples/torch_cpu_gpt implements (Strategy::validate documents the list).
void validate_torch_cpu(const Strategy& st, const ModelSpec& model) {
  auto refuse = [](const char* flag, const std::string& what) {
    throw InputError(flag,
                     "--transformer-impl torch_cpu (examples/torch_cpu_gpt) does not implement " + what);
  };
  if (st.precision == Precision::FP16) refuse("--fp16", "fp16 (use --bf16 or fp32)");
  if (st.fp8 != Fp8Format::None) refuse(st.fp4() ? "--fp4-format" : "--fp8-format", st.fp4() ? "fp4" : "fp8");
  if (st.cp != 1) refuse("--context-parallel-size", "context parallelism");
  if (st.ep != 1 || model.moe.enabled()) refuse("--num-experts", "mixture of experts");
  if (st.vpp != 1) refuse("--num-layers-per-virtual-pipeline-stage", "the interleaved schedule");
  if (st.sequence_parallel) refuse("--sequence-parallel", "sequence parallelism");
  if (st.distributed_optimizer) refuse("--use-distributed-optimizer", "the distributed optimizer");
  if (st.optimizer != Optimizer::Adam) refuse("--optimizer", "optimizers other than adam");
  if (model.hybrid()) refuse("--hybrid-layer-pattern", "hybrid (Mamba) models");
  if (model.has_gdn()) refuse("--experimental-attention-variant", "gated delta net layers");
  if (st.attention_backend != AttentionBackend::Math) refuse("--attention-backend", "flash attention");
  if (st.cross_entropy_loss_fusion) refuse("--cross-entropy-loss-fusion", "the fused cross entropy");
  if (st.grad_reduce_in_bf16) refuse("--grad-reduce-in-bf16", "bf16 gradient buffers");
  if (!st.chunk_layout.empty()) refuse("--pipeline-model-parallel-layout", "a custom pipeline layout");
  if (!st.stage_layers.empty() || st.account_for_embedding_in_pipeline_split ||
      st.account_for_loss_in_pipeline_split)
    refuse("--account-for-embedding-in-pipeline-split", "this pipeline split");
  if (model.normalization != Normalization::LayerNorm) refuse("--normalization", "RMSNorm");
  if (model.position_embedding == PositionEmbedding::Rope)
    refuse("--position-embedding-type", "rotary position embeddings");
  if (model.mla.enabled) refuse("--multi-latent-attention", "multi-latent attention");
  if (model.qk_layernorm) refuse("--qk-layernorm", "qk layernorm");
  if (model.mtp_num_layers > 0) refuse("--mtp-num-layers", "multi-token prediction");
  if (model.lora.enabled()) refuse("--lora-rank", "LoRA");
  if (model.activation == Activation::SquaredReLU) refuse("--squared-relu", "squared ReLU");
  if (st.recompute_granularity == RecomputeGranularity::Selective &&
      (st.recompute_modules.size() != 1 || st.recompute_modules[0] != "core_attn"))
    refuse("--recompute-modules", "selective recompute of modules other than core_attn");
}

}  // namespace

int Strategy::main_grad_bytes() const {
  // Megatron DDP: grads accumulate in fp32 for bf16 (forced) unless --grad-reduce-in-bf16; fp16 grads
  // stay fp16 unless --accumulate-allreduce-grads-in-fp32; fp32 models use fp32 grads.
  switch (precision) {
    case Precision::FP32:
      return 4;
    case Precision::BF16:
      return grad_reduce_in_bf16 ? 2 : 4;
    case Precision::FP16:
      return accumulate_allreduce_grads_in_fp32 ? 4 : 2;
  }
  return 4;
}

std::vector<std::vector<int>> parse_pipeline_layout(const std::string& layout, int pp, int num_layers,
                                                    int mtp_num_layers, const std::string& megatron_version) {
  const std::string flag = "--pipeline-model-parallel-layout";
  if (pp < 1) throw InputError(flag, "needs --pipeline-model-parallel-size >= 1");
  std::string text;
  for (char c : layout)
    if (c != ',' && c != ' ' && c != '"' && c != '\'') text += c;
  // Unroll "(x)*n" (innermost first; Megatron's own regex takes no nesting), then "c*n".
  auto unroll = [&](const std::regex& re) {
    std::string out;
    std::smatch m;
    std::string rest = text;
    while (std::regex_search(rest, m, re)) {
      out += m.prefix().str();
      const long n = std::stol(m[2].str());
      if (n < 0 || n > 100000) throw InputError(flag, "repeat count " + m[2].str() + " is out of range");
      for (long i = 0; i < n; ++i) out += m[1].str();
      rest = m.suffix().str();
    }
    text = out + rest;
  };
  unroll(std::regex(R"(\(([^()]+)\)\*(\d+))"));
  unroll(std::regex(R"(([^|()*])\*(\d+))"));
  if (text.find_first_of("()*") != std::string::npos)
    throw InputError(flag, "cannot read '" + layout + "' (expected e.g. \"Et*3|(tt|)*29,m|L\")");
  std::vector<std::string> segs(1);
  for (char c : text) {
    if (c == '|') {
      segs.emplace_back();
      continue;
    }
    if (c != 'E' && c != 't' && c != 'm' && c != 'L')
      throw InputError(flag,
                       std::string("unknown layer '") + c + "' (E embedding, t transformer, m MTP, L loss)");
    segs.back() += c;
  }
  const int n = static_cast<int>(segs.size());
  if (n % pp != 0)
    throw InputError(flag, num(n) + " stages do not divide over --pipeline-model-parallel-size " + num(pp));
  const std::string flat = std::accumulate(segs.begin(), segs.end(), std::string());
  auto count = [&](char c) { return static_cast<int>(std::count(flat.begin(), flat.end(), c)); };
  if (flat.empty() || flat.front() != 'E' || count('E') != 1)
    throw InputError(flag, "the embedding E must be the first layer, once");
  if (flat.back() != 'L' || count('L') != 1)
    throw InputError(flag, "the loss L must be the last layer, once");
  if (count('t') != num_layers)
    throw InputError(
        flag, "places " + num(count('t')) + " transformer layers but --num-layers is " + num(num_layers));
  // pipeline_parallel_layer_layout.py: MTP entered the layout on 2025-08-26 (d7bf5aaaa8); before, the MTP
  // block was built on the last stage beside the loss, never named.
  const bool implicit_mtp = !megatron_version.empty() && megatron_version < "2025-08-26";
  if (implicit_mtp && count('m') > 0)
    throw InputError(flag, "names MTP layers, which Megatron-LM of " + megatron_version +
                               " does not support in a layout (\"MTP layer is not supported for flexible "
                               "pipeline layout\"; since 2025-08-26)");
  if (!implicit_mtp && count('m') != mtp_num_layers)
    throw InputError(
        flag,
        "places " + num(count('m')) + " MTP layers but --mtp-num-layers is " + num(mtp_num_layers) +
            (count('m') == 0 ? " (Megatron-LM asserts it since 2025-08-26; before, the MTP layers sat on "
                               "the last stage unnamed: --megatron-version YYYY-MM-DD for such a checkout)"
                             : ""));
  if (count('m') > 0) {
    if (flat.find('t', flat.find('m')) != std::string::npos)
      throw InputError(flag, "transformer layers must come before the MTP layers");
    if (static_cast<int>(std::count(segs.back().begin(), segs.back().end(), 'm')) != mtp_num_layers)
      throw InputError(flag, "MTP layers are modelled on the last stage only (with the loss)");
  }
  const int vpp = n / pp;
  std::vector<std::vector<int>> out(vpp, std::vector<int>(pp, 0));
  for (int i = 0; i < n; ++i)
    out[i / pp][i % pp] = static_cast<int>(std::count(segs[i].begin(), segs[i].end(), 't'));
  return out;
}

int chunk_first_layer(const std::vector<std::vector<int>>& chunk_layers, int v, int r) {
  int first = 0;
  for (int w = 0; w < v; ++w)
    first += std::accumulate(chunk_layers[static_cast<std::size_t>(w)].begin(),
                             chunk_layers[static_cast<std::size_t>(w)].end(), 0);
  for (int q = 0; q < r; ++q) first += chunk_layers[static_cast<std::size_t>(v)][static_cast<std::size_t>(q)];
  return first;
}

std::vector<std::vector<int>> Strategy::layers_per_chunk(int num_layers) const {
  if (!chunk_layout.empty()) {
    if (static_cast<int>(chunk_layout.size()) != vpp)
      throw InputError(
          "--pipeline-model-parallel-layout",
          "gives " + num(chunk_layout.size()) + " virtual chunks per rank but vpp is " + num(vpp));
    int sum = 0;
    for (const auto& row : chunk_layout) {
      if (static_cast<int>(row.size()) != pp)
        throw InputError("--pipeline-model-parallel-layout",
                         "a chunk row does not have pp = " + num(pp) + " ranks");
      for (int x : row) {
        if (x < 0) throw InputError("--pipeline-model-parallel-layout", "negative layer count");
        sum += x;
      }
    }
    if (sum != num_layers)
      throw InputError("--pipeline-model-parallel-layout",
                       "places " + num(sum) + " layers but the model has " + num(num_layers));
    return chunk_layout;
  }
  const std::vector<int> per_stage = layers_per_stage(num_layers);
  std::vector<std::vector<int>> out(vpp, std::vector<int>(pp, 0));
  const bool emb = account_for_embedding_in_pipeline_split, loss = account_for_loss_in_pipeline_split;
  if (vpp > 1 && (emb || loss) && stage_layers.empty() && first_stage_layers < 0 && last_stage_layers < 0) {
    // Each chunk holds the same number of slots; the embedding / loss take one of the first / last chunk's.
    const int per_chunk = (num_layers + (emb ? 1 : 0) + (loss ? 1 : 0)) / (pp * vpp);
    for (auto& row : out) std::fill(row.begin(), row.end(), per_chunk);
    if (emb) out[0][0] -= 1;
    if (loss) out[static_cast<std::size_t>(vpp - 1)][static_cast<std::size_t>(pp - 1)] -= 1;
    return out;
  }
  for (int v = 0; v < vpp; ++v)
    for (int r = 0; r < pp; ++r) out[v][r] = per_stage[r] / vpp;
  return out;
}

std::vector<int> Strategy::layers_per_stage(int num_layers) const {
  std::vector<int> out(pp, 0);
  if (!chunk_layout.empty()) {
    const auto chunks = layers_per_chunk(num_layers);
    for (const auto& row : chunks)
      for (int r = 0; r < pp; ++r) out[r] += row[r];
    return out;
  }
  if (!stage_layers.empty()) {
    if (static_cast<int>(stage_layers.size()) != pp)
      throw InputError("stage layers", "gives " + num(stage_layers.size()) + " stages but pp is " + num(pp));
    int sum = 0;
    for (int v : stage_layers) {
      if (v < 0) throw InputError("stage layers", "a stage cannot hold a negative number of layers");
      sum += v;
    }
    if (sum != num_layers)
      throw InputError("stage layers", "place " + num(sum) + " layers but the model has " + num(num_layers));
    out = stage_layers;
  } else if (first_stage_layers >= 0 || last_stage_layers >= 0) {
    bool has_first = first_stage_layers >= 0, has_last = last_stage_layers >= 0;
    int fixed = (has_first ? first_stage_layers : 0) + (has_last ? last_stage_layers : 0);
    int middle_stages = pp - (has_first ? 1 : 0) - (has_last ? 1 : 0);
    if (pp == 1 && has_first && has_last)
      throw InputError("--decoder-first-pipeline-num-layers",
                       "first and last stage are the same stage when pp is 1");
    int rest = num_layers - fixed;
    if (middle_stages < 0 || rest < 0)
      throw InputError(
          "--decoder-first-pipeline-num-layers",
          "first/last stage layers (" + num(fixed) + ") exceed the " + num(num_layers) + " layers");
    if (middle_stages == 0 && rest != 0)
      throw InputError("--decoder-first-pipeline-num-layers",
                       num(rest) + " layers are left over with no middle stage to hold them");
    if (middle_stages > 0 && rest % middle_stages != 0)
      throw InputError("--decoder-first-pipeline-num-layers", "the remaining " + num(rest) +
                                                                  " layers do not divide evenly over " +
                                                                  num(middle_stages) + " middle stages");
    int per = middle_stages > 0 ? rest / middle_stages : 0;
    for (int s = 0; s < pp; ++s) out[s] = per;
    if (has_first) out[0] = first_stage_layers;
    if (has_last) out[pp - 1] = last_stage_layers;
  } else {
    int extra =
        (account_for_embedding_in_pipeline_split ? 1 : 0) + (account_for_loss_in_pipeline_split ? 1 : 0);
    int total = num_layers + extra;
    if (total % pp != 0) {
      std::string what = "the " + num(num_layers) + " layers" +
                         (extra ? " (+" + num(extra) + " for embedding/loss)" : "") +
                         " do not divide by the pipeline-parallel size " + num(pp) + ". " +
                         uneven_split_advice(total, pp, num_layers);
      throw InputError("--num-layers", what);
    }
    int per = total / pp;
    for (int s = 0; s < pp; ++s) out[s] = per;
    if (account_for_embedding_in_pipeline_split) out[0] -= 1;
    if (account_for_loss_in_pipeline_split) out[pp - 1] -= 1;
    for (int s = 0; s < pp; ++s)
      if (out[s] < 0) throw InputError("--num-layers", "too few layers for " + num(pp) + " pipeline stages");
  }
  const int extra = (account_for_embedding_in_pipeline_split ? 1 : 0) + (account_for_loss_in_pipeline_split ? 1 : 0);
  const bool accounted = extra > 0 && stage_layers.empty() && first_stage_layers < 0 && last_stage_layers < 0;
  if (vpp > 1 && accounted) {
    // Megatron (transformer_block.py get_num_layers_to_build): the embedding / loss count as a layer of the
    // first chunk of the first stage / the last chunk of the last stage; every chunk holds
    // (layers + extra) / (pp · vpp) slots.
    const int per_stage = (num_layers + extra) / pp;
    if (per_stage % vpp != 0)
      throw InputError("--num-layers-per-virtual-pipeline-stage",
                       num(per_stage) + " layer slots per stage (the embedding / loss counted) do not divide into " +
                           num(vpp) + " virtual chunks");
  } else if (vpp > 1) {
    for (int s = 0; s < pp; ++s)
      if (out[s] % vpp != 0)
        throw InputError("--num-layers-per-virtual-pipeline-stage",
                         "stage " + num(s) + " holds " + num(out[s]) + " layers, which do not divide into " +
                             num(vpp) + " virtual chunks");
  }
  return out;
}

int megatron_interleaved_warmup(int pp, int vpp, int rank, int group, int extra, int total) {
  return std::min((pp - rank - 1) * 2 + (std::max(1, vpp) - 1) * group + extra, total);
}

int Strategy::interleaved_warmup(int rank, int total) const {
  const int group = microbatch_group();
  const int extra = overlap_moe_expert_parallel_comm && !simumax_compat ? 1 : 0;
  return megatron_interleaved_warmup(pp, vpp, rank, group, extra, total);
}

void Strategy::validate(const ModelSpec& model) const {
  auto positive = [](std::int64_t v, const char* flag) {
    if (v <= 0) throw InputError(flag, "must be a positive number, got " + std::to_string(v));
  };
  positive(world_size, "world size (--nproc_per_node × --nnodes)");
  positive(gpus_per_node, "--nproc_per_node");
  positive(tp, "--tensor-model-parallel-size");
  positive(pp, "--pipeline-model-parallel-size");
  positive(cp, "--context-parallel-size");
  positive(ep, "--expert-model-parallel-size");
  if (etp < 0) throw InputError("--expert-tensor-parallel-size", "must not be negative");
  positive(vpp, "virtual pipeline size");
  positive(seq_split, "parallel_config.seq_split_num");
  check_packed_seq_mean_length(*this);
  if (seq_split > 1) {
    if (cp > 1 || vpp > 1)
      throw InputError(
          "parallel_config.seq_split_num",
          "the sequence pipeline is modelled with context_parallel 1 and without interleaving only");
    if (model.mla.enabled)
      throw InputError("parallel_config.seq_split_num",
                       "the sequence pipeline is not modelled with multi-latent attention");
    if (seq_length % seq_split != 0)
      throw InputError(
          "parallel_config.seq_split_num",
          "seq_length " + num(seq_length) + " is not divisible by seq_split_num " + num(seq_split));
  }
  positive(seq_length, "--seq-length");
  positive(micro_batch_size, "--micro-batch-size");
  if (global_batch_size < 0) throw InputError("--global-batch-size", "must not be negative");
  if (model.hybrid() && (model.hybrid_pattern + model.mtp_hybrid_pattern).find('M') != std::string::npos) {
    // MambaMixer's asserts: heads and groups split over tp.
    const std::int64_t heads = model.mamba.heads(model.hidden_size);
    if (heads % tp != 0)
      throw InputError("--tensor-model-parallel-size",
                       "tp " + num(tp) + " does not divide the " + num(heads) + " Mamba heads");
    if (model.mamba.num_groups % tp != 0)
      throw InputError("--tensor-model-parallel-size", "tp " + num(tp) + " does not divide the " +
                                                           num(model.mamba.num_groups) + " Mamba groups");
    // MambaContextParallel's asserts: every cp rank gets whole heads, and whole groups or one group's
    // heads (the group state then repeated over cp / groups ranks).
    if (cp > 1) {
      const std::int64_t heads_l = heads / tp, groups_l = model.mamba.num_groups / tp;
      if (heads_l % cp != 0)
        throw InputError("--context-parallel-size", "cp " + num(cp) + " does not divide the " + num(heads_l) +
                                                        " Mamba heads of a tp rank (Megatron asserts it)");
      if (groups_l < cp ? cp % groups_l != 0 : groups_l % cp != 0)
        throw InputError("--context-parallel-size",
                         "cp " + num(cp) + " and the " + num(groups_l) +
                             " Mamba groups of a tp rank do not divide one another (Megatron asserts it)");
    }
  }
  if (model.has_gdn()) {
    // GatedDeltaNet asserts its in_proj's output is a multiple of 16 under fp8 (get_fp8_align_size).
    if (fp8 != Fp8Format::None && model.gdn.in_proj_out() % 16 != 0)
      throw InputError("--linear-num-value-heads",
                       "the gated delta net's in_proj output (" + num(model.gdn.in_proj_out()) +
                           " = 2 · q/k + 2 · v + 2 · value heads) is not a multiple of 16, which fp8 needs "
                           "(Megatron asserts it)");
    // TransformerConfig's asserts: key and value heads split over tp · cp (context parallelism shards heads).
    const std::int64_t tp_cp = static_cast<std::int64_t>(tp) * cp;
    if (model.gdn.num_key_heads % tp_cp != 0 || model.gdn.num_value_heads % tp_cp != 0)
      throw InputError("--tensor-model-parallel-size",
                       "tp " + num(tp) + " × cp " + num(cp) + " does not divide the gated delta net's " +
                           num(model.gdn.num_key_heads) + " key and " + num(model.gdn.num_value_heads) +
                           " value heads (Megatron asserts it)");
  }

  auto at_most = [](std::int64_t v, std::int64_t limit, const char* flag) {
    if (v > limit)
      throw InputError(flag, std::to_string(v) + " is beyond what preflight models (at most " +
                                 std::to_string(limit) + ")");
  };
  at_most(world_size, 1 << 24, "world size");
  at_most(seq_length, 1 << 24, "--seq-length");
  at_most(micro_batch_size, 1 << 20, "--micro-batch-size");
  // Keep every per-rank tensor (the largest: math-attention scores b·heads·s², logits b·s·vocab) far below
  // 2^63 bytes so the int64 arithmetic of the layer graph cannot overflow.
  double tokens = static_cast<double>(micro_batch_size) * static_cast<double>(seq_length);
  double widest = std::max(
      {static_cast<double>(model.hidden_size), 2.0 * static_cast<double>(model.ffn_hidden_size),
       static_cast<double>(model.vocab_size), 2.0 * model.moe.ffn_hidden_size * model.moe.router_topk});
  if (attention_backend == AttentionBackend::Math)
    widest =
        std::max(widest, static_cast<double>(model.num_attention_heads) * static_cast<double>(seq_length));
  if (tokens * widest * 8 > 1e18)
    throw InputError("--seq-length",
                     "micro batch × sequence × width gives tensors beyond 10^18 bytes per rank; "
                     "these sizes cannot describe a real run");

  std::int64_t mp = static_cast<std::int64_t>(tp) * pp * cp;
  if (world_size % mp != 0) {
    std::int64_t below = world_size / mp * mp, above = below + mp;
    std::string sizes = below > 0 ? num(below) + " (dp " + num(below / mp) + ") or " + num(above) + " (dp " +
                                        num(above / mp) + ")"
                                  : num(above) + " (dp 1)";
    throw InputError("world size", "world size " + num(world_size) + " is not divisible by tp·pp·cp = " +
                                       num(tp) + "·" + num(pp) + "·" + num(cp) + " = " + num(mp) +
                                       ": a multiple of " + num(mp) + " runs this layout, e.g. " + sizes);
  }
  if (model.moe.enabled()) {
    std::int64_t emp = static_cast<std::int64_t>(expert_tp()) * ep * pp;
    if (world_size % emp != 0)
      throw InputError("--expert-model-parallel-size",
                       "world size " + num(world_size) + " is not divisible by etp·ep·pp = " +
                           num(expert_tp()) + "·" + num(ep) + "·" + num(pp) + " = " + num(emp));
    if (model.moe.num_experts % ep != 0)
      throw InputError("--expert-model-parallel-size",
                       "the " + num(model.moe.num_experts) + " experts do not divide over ep = " + num(ep));
  } else if (ep != 1) {
    throw InputError("--expert-model-parallel-size", "expert parallelism needs --num-experts");
  }
  if (model.num_attention_heads % tp != 0)
    throw InputError(
        "--tensor-model-parallel-size",
        "the " + num(model.num_attention_heads) + " attention heads are not divisible by tp = " + num(tp));
  // Megatron-LM since 2025-12-06 (f7dfb99795, "Support TP greater than num_kv_heads"): tp a multiple of the
  // kv heads too — each rank all-gathers the QKV projection and keeps its group's one kv head.
  if (!model.mla.enabled && model.num_query_groups % tp != 0 &&
      !allows_tp_beyond(model.num_query_groups, tp)) {
    const bool multiple = tp % model.num_query_groups == 0;
    throw InputError("--tensor-model-parallel-size",
                     "the " + num(model.num_query_groups) +
                         " query groups (kv heads) are not divisible by tp = " + num(tp) +
                         (!multiple ? std::string(" nor a divisor of it")
                          : !tp_beyond_kv_heads
                              ? std::string(" (MindFormers' attention needs them divisible)")
                              : std::string(" (Megatron-LM accepts tp a multiple of them since 2025-12-06; "
                                            "--megatron-version says this checkout is older)")));
  }
  // megatron/training/arguments.py: "--fp8-param-gather only supported with distributed optimizer, torch
  // fsdp2, megatron fsdp, or inference mode".
  // (--fp4-param-gather has no such assert: without the distributed optimizer nothing is gathered.)
  if (fp8_param_gather && !fp4() && !distributed_optimizer && !fsdp)
    throw InputError("--fp8-param-gather",
                     "needs --use-distributed-optimizer or FSDP (Megatron asserts): the fp8 weights are "
                     "gathered by the distributed optimizer");
  // megatron/training/arguments.py: "Tensor parallel communication/GEMM overlap can happen only when
  // sequence parallelism is enabled".
  if (tp_comm_overlap && !sequence_parallel)
    throw InputError(
        "--tp-comm-overlap",
        tp == 1 ? "needs tensor parallelism: with tp = 1 Megatron turns sequence parallelism off and "
                  "then refuses TP communication overlap"
                : "needs --sequence-parallel (Megatron refuses it too)");
  if (sequence_parallel && tp > 1 && seq_length % tp != 0)
    throw InputError("--seq-length", "sequence parallelism needs the sequence length " + num(seq_length) +
                                         " divisible by tp = " + num(tp));
  if (cp > 1 && seq_length % (2 * cp) != 0)
    throw InputError("--seq-length", "context parallelism splits the sequence into 2·cp chunks; " +
                                         num(seq_length) + " is not divisible by " + num(2 * cp));
  if (model.position_embedding == PositionEmbedding::LearnedAbsolute &&
      seq_length > model.max_position_embeddings)
    throw InputError("--seq-length", "sequence length " + num(seq_length) +
                                         " exceeds --max-position-embeddings " +
                                         num(model.max_position_embeddings));
  if (vpp > 1 && pp == 1)
    throw InputError("--num-layers-per-virtual-pipeline-stage", "an interleaved schedule needs pp > 1");
  std::int64_t per_step = static_cast<std::int64_t>(micro_batch_size) * dp();
  if (global_batch() % per_step != 0)
    throw InputError("--global-batch-size",
                     "global batch " + num(global_batch()) + " is not divisible by micro batch × dp = " +
                         num(micro_batch_size) + " × " + num(dp()) + " = " + num(per_step));
  // The block method recomputes the first N layers of each chunk, and N = 0 (none) is a valid Megatron run;
  // the uniform method checkpoints groups of N layers and needs N > 0.
  if (recompute_granularity == RecomputeGranularity::Full && recompute_method == RecomputeMethod::Block &&
      recompute_num_layers < 0)
    throw InputError("--recompute-num-layers", "must not be negative with --recompute-method block, got " +
                                                   num(recompute_num_layers));
  if (recompute_granularity == RecomputeGranularity::Full && recompute_method != RecomputeMethod::Block)
    positive(recompute_num_layers, "--recompute-num-layers");
  if (recompute_granularity == RecomputeGranularity::Selective) {
    for (const auto& m : recompute_modules)
      if (m != "core_attn" && m != "mlp" && m != "moe" && m != "moe_act" && m != "layernorm" &&
          m != "shared_experts" && m != "mla_up_proj" && m != "gdn_norm_out")
        throw InputError("--recompute-modules", "unknown module '" + m +
                                                    "' (known: core_attn, mlp, moe, moe_act, layernorm, "
                                                    "shared_experts, mla_up_proj, gdn_norm_out)");
    if (std::find(recompute_modules.begin(), recompute_modules.end(), "gdn_norm_out") !=
            recompute_modules.end() &&
        !model.has_gdn())
      throw InputError("--recompute-modules",
                       "gdn_norm_out is only supported with --experimental-attention-variant gdn (Megatron "
                       "refuses it otherwise)");
  }
  if (!per_layer_recompute.empty()) {
    if (static_cast<int>(per_layer_recompute.size()) != model.num_layers)
      throw InputError("per-layer recompute", "gives " + num(per_layer_recompute.size()) +
                                                  " layers but the model has " + num(model.num_layers));
    for (const auto& choice : per_layer_recompute)
      for (const auto& m : choice.modules)
        if (m != "core_attn" && m != "mlp" && m != "moe" && m != "moe_act" && m != "layernorm" &&
            m != "shared_experts" && m != "mla_up_proj" && m != "mlp_act")
          throw InputError("per-layer recompute", "unknown module '" + m + "'");
  }
  if (dist_opt_instances > 1) {
    // megatron/core/parallel_state.py: the partial distributed optimizer divides the dp·cp group (and the
    // expert dp group) into instances.
    if (!distributed_optimizer)
      throw InputError("--num-distributed-optimizer-instances", "needs --use-distributed-optimizer");
    if ((dp() * cp) % dist_opt_instances != 0 || expert_dp() % dist_opt_instances != 0)
      throw InputError("--num-distributed-optimizer-instances",
                       num(dist_opt_instances) + " instances do not divide dp·cp = " + num(dp() * cp) +
                           (model.moe.enabled() ? " and the expert dp " + num(expert_dp()) : std::string()));
  }
  if (order != "tp-cp-ep-dp-pp" && order != "tp-cp-ep-pp-dp" && order != "tp-pp-dp")
    throw InputError("rank order",
                     "unknown order '" + order + "' (known: tp-cp-ep-dp-pp, tp-cp-ep-pp-dp, tp-pp-dp)");
  if (order == "tp-pp-dp" && (cp != 1 || ep != 1))
    throw InputError("rank order", "the tp-pp-dp order (Megatron before 'tp-cp-ep-pp-dp') needs cp = ep = 1");
  if (transformer_impl == TransformerImpl::TorchCpu) validate_torch_cpu(*this, model);
  layers_per_stage(model.num_layers);  // throws when the split is impossible
}

bool version_at_least(const std::string& version, const std::string& min) {
  auto tuple = [](const std::string& v) {
    std::array<int, 3> out{0, 0, 0};
    int idx = 0;
    for (std::size_t i = 0; i < v.size() && idx < 3;) {
      if (std::isdigit(static_cast<unsigned char>(v[i]))) {
        int n = 0;
        while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) n = n * 10 + (v[i++] - '0');
        out[static_cast<std::size_t>(idx++)] = n;
      } else {
        ++i;
      }
    }
    return out;
  };
  auto digit = [](const std::string& v) {
    return std::any_of(v.begin(), v.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); });
  };
  if (!digit(version) || !digit(min)) return false;
  return tuple(version) >= tuple(min);
}

std::string Strategy::context_parallel_problem(int cp_size) const {
  if (cp_size <= 1) return "";
  if (legacy_model)
    return cp_comm_type == CpCommType::AllToAll
               ? ""
               : "the legacy model (megatron/model) has no context parallelism; Megatron-core's does "
                 "(--use-mcore-models, with Transformer Engine's attention)";
  if (attention_backend == AttentionBackend::Math)
    return "context parallelism needs a flash / fused attention kernel (Transformer Engine's attention; "
           "Megatron's unfused attention asserts context_parallel_size == 1)";
  return "";
}

LayerRecompute Strategy::effective_layer_recompute(const ModelSpec& model) const {
  if (layer_recompute) return *layer_recompute;
  LayerRecompute r;
  if (!per_layer_recompute.empty()) {
    // Per-layer choices: the cost model takes, per chunk, the most full-recompute layers of any chunk (as
    // the first layers of every chunk), else the selective modules it knows of the most common choice.
    const auto chunks = layers_per_chunk(model.num_layers);
    int first = 0, most_full = 0;
    std::map<std::vector<std::string>, int> modules_seen;
    for (const auto& row : chunks)
      for (int n : row) {
        int full = 0;
        for (int i = first; i < first + n && i < static_cast<int>(per_layer_recompute.size()); ++i) {
          const auto& choice = per_layer_recompute[static_cast<std::size_t>(i)];
          if (choice.full) {
            ++full;
          } else if (!choice.modules.empty()) {
            std::vector<std::string> known;
            for (const auto& m : choice.modules)
              if (m != "core_attn" && m != "mlp_act" && m != "shared_experts") known.push_back(m);
            if (!known.empty()) ++modules_seen[known];
          }
        }
        most_full = std::max(most_full, full);
        first += n;
      }
    if (most_full > 0) {
      r.scope = RecomputeScope::FullBlock;
      r.layers = most_full;
      return r;
    }
    if (modules_seen.empty()) return r;
    auto best = std::max_element(modules_seen.begin(), modules_seen.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    int most = 0;
    for (const auto& row : chunks)
      for (int n : row) most = std::max(most, n);
    r.scope = RecomputeScope::Selective;
    r.layers = most;
    r.megatron_modules = best->first;
    return r;
  }
  if (recompute_granularity == RecomputeGranularity::None) return r;
  int most = 0;
  for (const auto& row : layers_per_chunk(model.num_layers))
    for (int n : row) most = std::max(most, n);
  if (recompute_granularity == RecomputeGranularity::Full) {
    r.scope = RecomputeScope::FullBlock;
    if (recompute_method == RecomputeMethod::Block) {
      r.layers = std::min(recompute_num_layers, most);
    } else {
      r.layers = most;
      r.layers_per_checkpoint = std::max(1, recompute_num_layers);
    }
    return r;
  }
  r.layers = most;
  bool core_attn = false;
  for (const auto& m : recompute_modules) {
    if (m == "core_attn")
      core_attn = true;
    else if (m != "shared_experts")  // the cost model recomputes shared experts with "moe"
      r.megatron_modules.push_back(m);
  }
  if (core_attn && r.megatron_modules.empty()) {
    r.scope = RecomputeScope::SdpOnly;
  } else if (core_attn && simumax_compat) {
    throw InputError(
        "--recompute-modules",
        "SimuMax cannot combine core_attn with other recompute modules (--simumax-compat); choose core_attn "
        "alone or the other modules, or drop --simumax-compat");
  } else if (core_attn) {
    r.megatron_modules.push_back("core_attn");  // its own checkpoint next to the others
    r.scope = RecomputeScope::Selective;
  } else if (r.megatron_modules.empty()) {
    r.scope = RecomputeScope::None;
    r.layers = 0;
  } else {
    r.scope = RecomputeScope::Selective;
  }
  return r;
}

const char* to_string(MoeDispatcher d) {
  switch (d) {
    case MoeDispatcher::AllGather:
      return "allgather";
    case MoeDispatcher::AllToAll:
      return "alltoall";
    case MoeDispatcher::Flex:
      return "flex";
  }
  return "?";
}

const char* to_string(Fp8Format f) {
  switch (f) {
    case Fp8Format::None:
      return "none";
    case Fp8Format::E4M3:
      return "e4m3";
    case Fp8Format::Hybrid:
      return "hybrid";
    case Fp8Format::E2M1:
      return "e2m1";
  }
  return "?";
}

const char* to_string(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::Delayed:
      return "delayed";
    case Fp8Recipe::Tensorwise:
      return "tensorwise";
    case Fp8Recipe::Mxfp8:
      return "mxfp8";
    case Fp8Recipe::Blockwise:
      return "blockwise";
    case Fp8Recipe::Custom:
      return "custom";
    case Fp8Recipe::Nvfp4:
      return "nvfp4";
  }
  return "?";
}

const char* to_string(CpCommType c) {
  switch (c) {
    case CpCommType::P2P:
      return "p2p";
    case CpCommType::AllToAll:
      return "a2a";
    case CpCommType::AllGather:
      return "all_gather";
  }
  return "?";
}
const char* to_string(RecomputeScope s) {
  switch (s) {
    case RecomputeScope::None:
      return "none";
    case RecomputeScope::FullBlock:
      return "full_block";
    case RecomputeScope::AttnOnly:
      return "attn_only";
    case RecomputeScope::MlpOnly:
      return "mlp_only";
    case RecomputeScope::SdpOnly:
      return "sdp_only";
    case RecomputeScope::Selective:
      return "selective_recompute";
  }
  return "?";
}

const char* to_string(Precision p) {
  switch (p) {
    case Precision::FP32:
      return "fp32";
    case Precision::FP16:
      return "fp16";
    case Precision::BF16:
      return "bf16";
  }
  return "?";
}
const char* to_string(RecomputeGranularity g) {
  switch (g) {
    case RecomputeGranularity::None:
      return "none";
    case RecomputeGranularity::Full:
      return "full";
    case RecomputeGranularity::Selective:
      return "selective";
  }
  return "?";
}
const char* to_string(RecomputeMethod m) {
  return m == RecomputeMethod::Block ? "block" : "uniform";
}
const char* to_string(AttentionBackend b) {
  return b == AttentionBackend::Math ? "math" : "flash";
}
const char* to_string(TransformerImpl i) {
  return i == TransformerImpl::TorchCpu ? "torch_cpu" : "megatron_core";
}

const PrecisionOverride* Strategy::precision_override_for(const std::string& module_path) const {
  for (const auto& o : precision_overrides)
    if (::fnmatch(o.pattern.c_str(), module_path.c_str(), 0) == 0) return &o;
  return nullptr;
}

void check_packed_seq_mean_length(const Strategy& st) {
  const double packed = st.packed_seq_mean_length;
  if (packed == 0) return;
  if (!(packed >= 1.0) || !std::isfinite(packed))
    throw InputError(
        "--packed-seq-mean-length",
        "must be a number of tokens ≥ 1 (the mean length of the samples packed into each sequence), "
        "got " +
            std::to_string(packed));
  if (packed > static_cast<double>(st.seq_length))
    throw InputError("--packed-seq-mean-length", "the samples' mean length exceeds the sequence length " +
                                                     std::to_string(st.seq_length) +
                                                     " (the length of the packed rows)");
  if (st.attention_backend != AttentionBackend::Flash)
    throw InputError(
        "--packed-seq-mean-length",
        "packed sequences (Megatron's THD format) run on the flash / TransformerEngine attention "
        "kernels, not unfused attention");
}

std::vector<std::string> check_moe_load_imbalance(const ModelSpec& model, const Strategy& st,
                                                  const std::string& flag) {
  const double imb = st.moe_load_imbalance;
  std::vector<std::string> warnings;
  if (!(imb >= 1.0) || !std::isfinite(imb))
    throw InputError(flag,
                     "must be a number ≥ 1 (the busiest expert-parallel rank's routed tokens ÷ the mean), "
                     "got " +
                         std::to_string(imb));
  if (!model.moe.enabled()) throw InputError(flag, "is given for a model without experts");
  if (st.ep > 1 && imb > st.ep)
    throw InputError(flag, "cannot exceed the expert-parallel size (" + std::to_string(st.ep) +
                               "): at most every token is routed to one rank's experts");
  if (imb == 1.0) return warnings;
  if (st.ep <= 1) {
    warnings.push_back(
        flag +
        ": at ep 1 one rank holds every expert and its routed tokens do not change; the factor "
        "has no effect");
  } else if (model.moe.pad_expert_input_to_capacity) {
    warnings.push_back(flag +
                       ": the experts' inputs are padded to capacity: every rank holds the capacity and the "
                       "factor has no effect");
  } else if (model.moe.capacity_drop && imb > model.moe.capacity_factor) {
    std::ostringstream cap;
    cap << model.moe.capacity_factor;
    warnings.push_back(flag + ": capped at the capacity factor " + cap.str() +
                       " (a capacity factor without padding drops the tokens beyond it)");
  }
  return warnings;
}

std::string format_pipeline_layout(const std::vector<std::vector<int>>& chunk_layers, int mtp_num_layers) {
  std::vector<std::string> segs;
  const std::size_t V = chunk_layers.size();
  for (std::size_t v = 0; v < V; ++v) {
    const std::size_t S = chunk_layers[v].size();
    for (std::size_t s = 0; s < S; ++s) {
      const int n = chunk_layers[v][s];
      std::string seg = v == 0 && s == 0 ? "E" : "";
      if (n == 1) seg += "t";
      if (n > 1) seg += "t*" + std::to_string(n);
      if (v + 1 == V && s + 1 == S) seg += std::string(static_cast<std::size_t>(mtp_num_layers), 'm') + "L";
      segs.push_back(seg);
    }
  }
  std::string out;
  if (segs.empty()) return out;
  const std::size_t last = segs.size() - 1;
  for (std::size_t i = 0; i < last;) {
    std::size_t j = i;
    while (j + 1 < last && segs[j + 1] == segs[i]) ++j;
    const std::size_t k = j - i + 1;
    out += k > 1 ? "(" + segs[i] + "|)*" + std::to_string(k) + "," : segs[i] + "|";
    i = j + 1;
  }
  return out + segs[last];
}

std::vector<std::vector<int>> balanced_pipeline_layout(int num_layers, int pp, int vpp, int mtp_num_layers) {
  const int chunks = pp * vpp;
  if (pp <= 0 || vpp <= 0 || num_layers < chunks)
    throw InputError("--pipeline-model-parallel-layout",
                     "cannot place " + num(num_layers) + " layers over " + num(chunks) + " pipeline chunks");
  // Fixed weight of each chunk in Megatron's segment order: the loss (1) and the MTP depths (2 each) on the
  // last; the embedding weighs nothing.
  std::vector<double> fixed(static_cast<std::size_t>(chunks), 0.0);
  fixed.back() = 1.0 + 2.0 * mtp_num_layers;
  double total = num_layers;
  for (double f : fixed) total += f;
  const double target = total / chunks;
  std::vector<int> t(static_cast<std::size_t>(chunks));
  int placed = 0;
  for (int k = 0; k < chunks; ++k) {
    t[k] = std::max(0, static_cast<int>(std::lround(target - fixed[k])));
    placed += t[k];
  }
  auto weight = [&](int k) { return t[k] + fixed[k]; };
  // Visiting order for ties: the first chunk, the last, then the middle ones in order.
  std::vector<int> order = {0};
  if (chunks > 1) order.push_back(chunks - 1);
  for (int k = 1; k + 1 < chunks; ++k) order.push_back(k);
  while (placed > num_layers) {  // take one from the heaviest chunk that has a layer
    int pick = -1;
    for (int k : order)
      if (t[k] > 0 && (pick < 0 || weight(k) > weight(pick))) pick = k;
    --t[pick];
    --placed;
  }
  std::vector<int> fill_order;  // add to the lightest: the middle chunks first, then the last, the first
  for (int k = 1; k + 1 < chunks; ++k) fill_order.push_back(k);
  if (chunks > 1) fill_order.push_back(chunks - 1);
  fill_order.push_back(0);
  while (placed < num_layers) {
    int pick = fill_order.front();
    for (int k : fill_order)
      if (weight(k) < weight(pick)) pick = k;
    ++t[pick];
    ++placed;
  }
  std::vector<std::vector<int>> out(static_cast<std::size_t>(vpp),
                                    std::vector<int>(static_cast<std::size_t>(pp)));
  for (int k = 0; k < chunks; ++k)
    out[static_cast<std::size_t>(k / pp)][static_cast<std::size_t>(k % pp)] = t[k];
  return out;
}

std::string uneven_split_advice(int slots, int pp, int num_layers) {
  std::vector<int> divisors;
  for (int d = 1; d <= slots; ++d)
    if (slots % d == 0) divisors.push_back(d);
  std::string sizes;
  for (std::size_t i = 0; i < divisors.size(); ++i)
    sizes += (i == 0 ? "" : i + 1 == divisors.size() ? " or " : ", ") + std::to_string(divisors[i]);
  std::string out = "Any of these would: --pipeline-model-parallel-size " + sizes + " (sizes that divide " +
                    std::to_string(slots) + ")";
  // First and last stage counts that leave the middle stages an even share, as close to L / pp as possible.
  if (pp > 2) {
    int best_first = -1, best_last = -1, best_gap = 0;
    for (int first = 0; first <= slots; ++first)
      for (int last = 0; first + last <= slots; ++last) {
        int rest = slots - first - last;
        if (rest % (pp - 2) != 0 || rest == 0) continue;
        int middle = rest / (pp - 2);
        // The fewest layers on the busiest stage, then the most even.
        int gap = std::max({first, last, middle}) * (slots + 1) +
                  std::max(std::abs(first - middle), std::abs(last - middle));
        if (best_first < 0 || gap < best_gap) best_first = first, best_last = last, best_gap = gap;
      }
    if (best_first >= 0)
      out += "; --decoder-first-pipeline-num-layers " + std::to_string(best_first) +
             " --decoder-last-pipeline-num-layers " + std::to_string(best_last) + " (" +
             std::to_string((slots - best_first - best_last) / (pp - 2)) + " on each of the " +
             std::to_string(pp - 2) + " middle stages)";
  }
  if (num_layers >= pp)  // the layout places the embedding and the loss itself
    out += "; --pipeline-model-parallel-layout \"" +
           format_pipeline_layout(balanced_pipeline_layout(num_layers, pp, 1, 0)) +
           "\" (Megatron-core 0.13 or later)";
  return out;
}

int Strategy::min_world_size(const ModelSpec& model) const {
  const std::int64_t mp = static_cast<std::int64_t>(tp) * pp * cp;
  const std::int64_t emp = model.moe.enabled() ? static_cast<std::int64_t>(expert_tp()) * ep * pp : 1;
  for (std::int64_t dp = 1; dp <= emp; ++dp)
    if ((mp * dp) % emp == 0) return static_cast<int>(mp * dp);
  return static_cast<int>(mp * emp);
}

}  // namespace preflight::analyzer
