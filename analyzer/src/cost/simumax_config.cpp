// SimuMax v1.2 JSON configs → ModelSpec / Strategy / SystemSpec.  See simumax_config.hpp.
#include "preflight/analyzer/cost/simumax_config.hpp"
#include <cctype>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "preflight/analyzer/frontends/hf_config.hpp"
#include "preflight/analyzer/model/collective.hpp"
#include "preflight/analyzer/frontends/presets.hpp"
#include "preflight/common/error.hpp"
#include "simumax_presets.hpp"

namespace preflight::analyzer::cost {

using nlohmann::json;

namespace {

/// "all_reduce, all_gather, reduce_scatter, all2all, p2p": the op keys of a SimuMax network.
std::string simumax_collective_keys() {
  std::string out;
  for (Collective c : kAllCollectives) out += (out.empty() ? "" : ", ") + std::string(simumax_key(c));
  return out;
}

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

/// Typed access to one JSON object with field-named errors and a check for unknown keys.
class Fields {
 public:
  Fields(const json& j, std::string where, std::string prefix = "")
      : j_(j), where_(std::move(where)), prefix_(std::move(prefix)) {
    if (!j_.is_object())
      throw InputError(where_ + (prefix_.empty() ? "" : ": " + prefix_), "must be a JSON object");
  }
  std::string field(const std::string& key) const { return where_ + ": " + prefix_ + key; }
  bool has(const std::string& key) const {
    auto it = j_.find(key);
    return it != j_.end() && !it->is_null();
  }
  const json& raw(const std::string& key) const { return j_.at(key); }

  std::int64_t integer(const std::string& key, std::int64_t def) {
    seen_.insert(key);
    if (!has(key)) return def;
    const json& v = j_.at(key);
    if (v.is_number_integer() || v.is_number_unsigned()) return v.get<std::int64_t>();
    if (v.is_number_float()) {
      double d = v.get<double>();
      if (d == static_cast<double>(static_cast<std::int64_t>(d))) return static_cast<std::int64_t>(d);
    }
    throw InputError(field(key), "must be an integer, got " + v.dump());
  }
  std::int64_t required_integer(const std::string& key) {
    if (!has(key)) throw InputError(field(key), "is required");
    return integer(key, 0);
  }
  double number(const std::string& key, double def) {
    seen_.insert(key);
    if (!has(key)) return def;
    const json& v = j_.at(key);
    if (!v.is_number()) throw InputError(field(key), "must be a number, got " + v.dump());
    return v.get<double>();
  }
  double required_number(const std::string& key) {
    if (!has(key)) throw InputError(field(key), "is required");
    return number(key, 0);
  }
  bool boolean(const std::string& key, bool def) {
    seen_.insert(key);
    if (!has(key)) return def;
    const json& v = j_.at(key);
    if (!v.is_boolean()) throw InputError(field(key), "must be true or false, got " + v.dump());
    return v.get<bool>();
  }
  std::string string(const std::string& key, const std::string& def) {
    seen_.insert(key);
    if (!has(key)) return def;
    const json& v = j_.at(key);
    if (!v.is_string()) throw InputError(field(key), "must be a string, got " + v.dump());
    return v.get<std::string>();
  }
  const json* object(const std::string& key, bool required) {
    seen_.insert(key);
    if (!has(key)) {
      if (required) throw InputError(field(key), "is required");
      return nullptr;
    }
    const json& v = j_.at(key);
    if (!v.is_object()) throw InputError(field(key), "must be a JSON object");
    return &v;
  }
  /// Marks keys that are accepted and ignored (derived keys of SimuMax dumps).
  void ignore(std::initializer_list<const char*> keys) {
    for (const char* k : keys) seen_.insert(k);
  }
  void ignore(const std::string& key) { seen_.insert(key); }
  /// Throws for the first key not read or ignored.
  void reject_unknown() const {
    for (auto it = j_.begin(); it != j_.end(); ++it) {
      if (!seen_.count(it.key())) {
        std::vector<std::string> known(seen_.begin(), seen_.end());
        throw InputError(field(it.key()), "is not a field SimuMax knows (known: " + join(known) + ")");
      }
    }
  }

 private:
  const json& j_;
  std::string where_;
  std::string prefix_;
  std::set<std::string> seen_;
};

void require_positive(std::int64_t v, const std::string& field) {
  if (v <= 0) throw InputError(field, "must be positive, got " + std::to_string(v));
}

std::map<int, double> read_by_comm_num(const json& v, const std::string& field) {
  std::map<int, double> out;
  if (v.is_null()) return out;
  if (!v.is_object()) throw InputError(field, "must be an object from group size to value");
  for (auto it = v.begin(); it != v.end(); ++it) {
    int n = 0;
    try {
      std::size_t used = 0;
      n = std::stoi(it.key(), &used);
      if (used != it.key().size()) throw std::invalid_argument("x");
    } catch (const std::exception&) {
      throw InputError(field + "." + it.key(), "keys must be group sizes (integers)");
    }
    if (!it.value().is_number()) throw InputError(field + "." + it.key(), "must be a number");
    out[n] = it.value().get<double>();
  }
  return out;
}

Bandwidth read_bandwidth(const json& j, const std::string& where, const std::string& prefix) {
  Fields f(j, where, prefix);
  Bandwidth b;
  b.gbps = f.required_number("gbps");
  b.efficient_factor = f.required_number("efficient_factor");
  b.latency_us = f.required_number("latency_us");
  b.fixed_latency_us = f.number("fixed_latency", 0);
  f.ignore("fixed_latency_us_by_comm_num");
  if (f.has("fixed_latency_us_by_comm_num"))
    b.fixed_latency_us_by_comm_num =
        read_by_comm_num(f.raw("fixed_latency_us_by_comm_num"), f.field("fixed_latency_us_by_comm_num"));
  if (b.gbps <= 0) throw InputError(f.field("gbps"), "must be positive");
  if (b.efficient_factor <= 0) throw InputError(f.field("efficient_factor"), "must be positive");
  f.reject_unknown();
  return b;
}

}  // namespace

json parse_json_text(const std::string& text, const std::string& where) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    std::size_t byte = e.byte == 0 ? 0 : e.byte - 1;
    std::int64_t line = 1 + std::count(text.begin(), text.begin() + std::min(byte, text.size()), '\n');
    std::string what = e.what();
    auto pos = what.find("parse error");
    throw InputError(location(where, line),
                     "malformed JSON: " + (pos == std::string::npos ? what : what.substr(pos)));
  }
}

json read_json_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string(), "cannot be read (missing or not a file)");
  std::ostringstream s;
  s << in.rdbuf();
  return parse_json_text(s.str(), path.string());
}

bool is_simumax_model_json(const json& j) {
  return j.is_object() && j.contains("head_num") && j.contains("hidden_size") &&
         !j.contains("num_attention_heads");
}

ModelSpec read_simumax_model(const json& j, const std::string& where) {
  Fields f(j, where);
  ModelSpec m;
  m.name = f.string("model_name", std::filesystem::path(where).stem().string());
  m.hidden_size = f.required_integer("hidden_size");
  m.num_attention_heads = static_cast<int>(f.required_integer("head_num"));
  std::int64_t kv = f.integer("kv_head_num", m.num_attention_heads);
  std::string attention = f.string("attention_type", "mha");
  if (attention != "mha" && attention != "mla")
    throw InputError(f.field("attention_type"), "must be 'mha' or 'mla', got '" + attention + "'");
  m.kv_channels =
      f.integer("head_size", m.num_attention_heads > 0 ? m.hidden_size / m.num_attention_heads : 0);
  std::int64_t inter = f.integer("intermediate_size", 0);
  m.num_layers = static_cast<int>(f.required_integer("layer_num"));
  std::int64_t vocab = f.required_integer("vocab_size");
  std::int64_t orig = f.integer("orig_vocab_size", 0);
  m.vocab_size = orig > 0 ? orig : vocab;
  if (!f.has("use_swiglu"))
    throw InputError(f.field("use_swiglu"), "is required (true for SwiGLU, false for GeLU)");
  m.activation = f.boolean("use_swiglu", true) ? Activation::SwiGLU : Activation::GeLU;
  std::int64_t experts = f.integer("expert_num", 1);
  std::int64_t topk = f.integer("topk", 0);
  std::int64_t moe_ffn = f.integer("moe_ffn_hidden_size", 0);
  std::int64_t shared = f.integer("moe_shared_expert_intermediate_size", 0);
  std::int64_t dense_layers = f.integer("dense_layers", 0);
  bool pad = f.boolean("moe_pad_expert_input_to_capacity", true);
  std::int64_t capacity = f.integer("capacity", 1);
  std::string mode = f.string("group_linear_mode", "parallel");
  std::string model_type = f.string("model_type", experts > 1 ? "moe" : "dense");
  m.make_vocab_size_divisible_by = static_cast<int>(f.integer("make_vocab_size_divisible_by", 128));
  if (!f.boolean("padded_vocab_size", true)) m.make_vocab_size_divisible_by = 1;
  f.ignore({"activated_param_numel", "attn_proj_elements", "base_proj_elements", "layer_act_elements",
            "layer_elements", "mlp_elements", "norm_elements", "param_numel", "qkv_proj_elements",
            "vocab_elements"});
  // MLA dimensions (read for every model: SimuMax keeps them null for MHA).
  std::int64_t qk = f.integer("qk_head_dim", 0), rope = f.integer("qk_pos_emb_head_dim", 0);
  std::int64_t v = f.integer("v_head_dim", 0), q_lora = f.integer("q_lora_rank", 0),
               kv_lora = f.integer("kv_lora_rank", 0);
  f.reject_unknown();

  require_positive(m.hidden_size, f.field("hidden_size"));
  require_positive(m.num_attention_heads, f.field("head_num"));
  require_positive(m.num_layers, f.field("layer_num"));
  require_positive(m.vocab_size, f.field("vocab_size"));
  if (mode != "parallel")
    throw InputError(
        f.field("group_linear_mode"),
        "'" + mode + "' is not supported (only 'parallel', one grouped GEMM for the local experts)");
  if (model_type != "dense" && model_type != "moe")
    throw InputError(f.field("model_type"), "must be 'dense' or 'moe', got '" + model_type + "'");
  if ((model_type == "moe") != (experts > 1))
    throw InputError(f.field("model_type"),
                     "'" + model_type + "' contradicts expert_num " + std::to_string(experts));
  m.normalization = Normalization::RMSNorm;
  m.add_bias_linear = false;
  m.add_qkv_bias = false;
  m.untie_embeddings_and_output_weights = true;
  m.position_embedding = PositionEmbedding::Rope;
  m.attention_dropout = 0;
  m.hidden_dropout = 0;
  if (attention == "mla") {
    m.mla.enabled = true;
    m.mla.q_lora_rank = q_lora;
    m.mla.kv_lora_rank = kv_lora;
    m.mla.qk_head_dim = qk;
    m.mla.qk_pos_emb_head_dim = rope;
    m.mla.v_head_dim = v;
    if (kv != m.num_attention_heads)
      throw InputError(f.field("kv_head_num"), "must equal head_num (" +
                                                   std::to_string(m.num_attention_heads) + ") for MLA, got " +
                                                   std::to_string(kv));
    for (auto [val, key] : {std::pair{qk, "qk_head_dim"},
                            {rope, "qk_pos_emb_head_dim"},
                            {v, "v_head_dim"},
                            {kv_lora, "kv_lora_rank"}})
      require_positive(val, f.field(key));
  }
  m.num_query_groups = static_cast<int>(kv);
  require_positive(m.num_query_groups, f.field("kv_head_num"));
  if (m.num_attention_heads % m.num_query_groups != 0)
    throw InputError(f.field("kv_head_num"), std::to_string(kv) + " does not divide head_num " +
                                                 std::to_string(m.num_attention_heads));
  require_positive(m.kv_channels, f.field("head_size"));
  if (experts > 1) {
    m.moe.num_experts = static_cast<int>(experts);
    if (topk <= 0) throw InputError(f.field("topk"), "is required for a MoE model (expert_num > 1)");
    if (topk > experts) throw InputError(f.field("topk"), "exceeds expert_num " + std::to_string(experts));
    m.moe.router_topk = static_cast<int>(topk);
    m.moe.ffn_hidden_size = moe_ffn > 0 ? moe_ffn : inter;
    require_positive(m.moe.ffn_hidden_size, f.field("moe_ffn_hidden_size"));
    m.moe.shared_expert_ffn_hidden_size = shared;
    m.moe.pad_expert_input_to_capacity = pad;
    require_positive(capacity, f.field("capacity"));
    m.moe.capacity_factor = static_cast<double>(capacity);
    if (dense_layers < 0 || dense_layers > m.num_layers)
      throw InputError(f.field("dense_layers"), "must be between 0 and layer_num");
    if (dense_layers > 0) {
      m.moe.layer_is_moe.assign(m.num_layers, true);
      for (int i = 0; i < dense_layers; ++i) m.moe.layer_is_moe[i] = false;
    }
  }
  m.ffn_hidden_size = inter > 0 ? inter : m.moe.ffn_hidden_size;
  require_positive(m.ffn_hidden_size, f.field("intermediate_size"));
  m.max_position_embeddings = 0;
  return m;
}

SimuMaxStrategy read_simumax_strategy(const json& j, const std::string& where) {
  Fields f(j, where);
  SimuMaxStrategy out;
  Strategy& st = out.strategy;
  st.seq_length = f.required_integer("seq_len");
  st.micro_batch_size = static_cast<int>(f.required_integer("micro_batch_size"));
  std::int64_t mbc = f.required_integer("micro_batch_num");
  std::string dtype = f.string("dtype", "bf16");
  if (dtype == "bf16")
    st.precision = Precision::BF16;
  else if (dtype == "fp16")
    st.precision = Precision::FP16;
  else if (dtype == "fp32")
    st.precision = Precision::FP32;
  else
    throw InputError(f.field("dtype"), "must be bf16, fp16 or fp32, got '" + dtype + "'");
  st.accumulate_allreduce_grads_in_fp32 = true;  // SimuMax's fp32 main grads unless told otherwise
  st.fp8 = f.boolean("fp8", false) ? Fp8Format::Hybrid : Fp8Format::None;
  st.world_size = static_cast<int>(f.integer("world_size", 8));
  st.tp = static_cast<int>(f.integer("tp_size", 1));
  st.cp = static_cast<int>(f.integer("cp_size", 1));
  st.pp = static_cast<int>(f.integer("pp_size", 1));
  st.ep = static_cast<int>(f.integer("ep_size", 1));
  st.etp = static_cast<int>(f.integer("etp_size", 1));
  std::string cp_type = f.string("cp_comm_type", "a2a");
  if (cp_type == "a2a")
    st.cp_comm_type = CpCommType::AllToAll;
  else if (cp_type == "all_gather")
    st.cp_comm_type = CpCommType::AllGather;
  else
    throw InputError(f.field("cp_comm_type"), "must be 'a2a' or 'all_gather', got '" + cp_type + "'");
  std::string a2a_mode = f.string("cp_a2a_mode", "async_cp");
  if (a2a_mode != "async_cp" && a2a_mode != "sync_cp")
    throw InputError(f.field("cp_a2a_mode"), "must be 'async_cp' or 'sync_cp', got '" + a2a_mode + "'");
  st.cp_a2a_sync = a2a_mode == "sync_cp";
  std::string order = f.string("order_of_paralielism", "tp-cp-ep-dp-pp");
  if (order != "tp-cp-ep-dp-pp")
    throw InputError(f.field("order_of_paralielism"),
                     "only 'tp-cp-ep-dp-pp' is supported, got '" + order + "'");
  st.order = order;
  std::string dispatcher = f.string("moe_dispatcher_policy", "all2all");
  if (dispatcher != "all2all" && dispatcher != "all2all-seq")
    throw InputError(f.field("moe_dispatcher_policy"), "must be 'all2all', got '" + dispatcher + "'");
  st.first_stage_layers = static_cast<int>(f.integer("num_layers_in_first_pipeline_stage", -1));
  st.last_stage_layers = static_cast<int>(f.integer("num_layers_in_last_pipeline_stage", -1));
  st.account_for_embedding_in_pipeline_split = f.boolean("account_for_embedding_in_pipeline_split", false);
  st.account_for_loss_in_pipeline_split = f.boolean("account_for_loss_in_pipeline_split", false);
  st.grad_reduce_in_bf16 = f.boolean("grad_reduce_in_bf16", false);
  st.cache_grouped_gemm_fp8_inputs = f.boolean("cache_groupgemm_col_fp8_inputs", false);
  st.offload_grouped_gemm_inputs = f.boolean("offload_groupgemm_col_inputs", false);
  LayerRecompute rc;
  rc.attn = f.boolean("attn_recompute", false);
  rc.attn_norm = f.boolean("mla_rms_recompute", false);
  rc.mlp = f.boolean("mlp_recompute", false);
  rc.mlp_norm = f.boolean("mlp_rms_recompute", false);
  st.sequence_parallel = f.boolean("enable_sequence_parallel", true);
  st.vpp = static_cast<int>(f.integer("interleaving_size", 1));
  st.microbatch_group_size_per_vp_stage =
      static_cast<int>(f.integer("microbatch_group_size_per_vp_stage", 0));
  st.pp_comm_overlap = f.boolean("pp_comm_async", true);
  st.straggler_model = f.boolean("enable_straggler_model", true);
  st.zero_stage = static_cast<int>(f.integer("zero_state", 1));
  st.distributed_optimizer = st.zero_stage >= 1;
  st.attention_sparse_ratio = f.number("attention_sparse_ratio", 0.0);
  f.boolean("enable_dropout", false);  // SimuMax ignores it too
  st.fp32_grad_accumulation = f.boolean("use_fp32_accum_grad", true);
  st.weight_in_linear_peak = !f.boolean("use_accm_weight", true);
  rc.enabled = f.boolean("enable_recompute", true);
  std::string granularity = f.string("recompute_granularity", "");
  rc.layers = static_cast<int>(f.integer("recompute_layer_num", 0));
  rc.variance = f.boolean("recompute_variance", false);
  bool megatron = f.boolean("megatron_recompute", false);
  if (f.has("megatron_recompute_modules")) {
    const json& mods = f.raw("megatron_recompute_modules");
    if (!mods.is_array())
      throw InputError(f.field("megatron_recompute_modules"), "must be a list of module names");
    for (const auto& m : mods) {
      if (!m.is_string())
        throw InputError(f.field("megatron_recompute_modules"), "must be a list of module names");
      rc.megatron_modules.push_back(m.get<std::string>());
    }
  }
  f.ignore("megatron_recompute_modules");
  bool flash = f.boolean("use_flash_sdp", true);
  f.boolean("use_math_sdp", false);
  st.attention_backend = flash ? AttentionBackend::Flash : AttentionBackend::Math;
  st.fused_norm = f.boolean("use_fused_norm", true);
  st.fused_swiglu = f.boolean("use_fused_swiglu", true);
  st.gradient_accumulation_fusion = f.boolean("use_fused_grad_accumulation", true);
  st.cross_entropy_loss_fusion = f.boolean("cross_entropy_loss_fusion", false);
  st.overlap_grad_reduce = f.boolean("overlap_grad_reduce", true);
  st.te.version = f.string("te_version", "");
  st.te.dummy_wgrad_min = f.string("te_dummy_wgrad_min_version", "2.3.0");
  st.te.cp_a2a_save_pre_posta2a_min = f.string("te_cp_a2a_save_pre_posta2a_min_version", "2.8.0");
  st.te.grouped_linear_dummy_wgrad_min = f.string("te_grouped_linear_dummy_wgrad_min_version", "2.10.0");
  for (const char* net : {"tp_net", "cp_net", "pp_net", "dp_net", "ep_net", "etp_net", "edp_net"}) {
    std::string v = f.string(net, "auto");
    if (v != "auto") out.requested_networks[net] = v;
  }
  st.moe_dispatch_probs = f.boolean("dispatch_probs", false);
  st.allocated_to_reserved_ratio = f.number("mem_factor", 0.94);
  std::int64_t dp_in = f.integer("dp_size", -1), edp_in = f.integer("edp_size", -1),
               gbs_in = f.integer("global_batch_size", -1);
  f.ignore({"is_megatron_selective_recompute", "is_recompute", "megatron_recompute_module_set", "net",
            "parallelism", "recompute_status", "shard_size", "te_cp_a2a_saves_pre_posta2a_output",
            "te_dummy_wgrad_memory_enabled", "te_grouped_linear_dummy_wgrad_memory_enabled",
            "use_variance_tail_model"});
  f.reject_unknown();

  // SimuMax StrategyConfig.sanity_check.
  for (auto [v, key] : {std::pair<std::int64_t, const char*>{st.seq_length, "seq_len"},
                        {st.micro_batch_size, "micro_batch_size"},
                        {mbc, "micro_batch_num"},
                        {st.world_size, "world_size"},
                        {st.tp, "tp_size"},
                        {st.cp, "cp_size"},
                        {st.pp, "pp_size"},
                        {st.ep, "ep_size"},
                        {st.etp, "etp_size"},
                        {st.vpp, "interleaving_size"}})
    require_positive(v, f.field(key));
  std::int64_t shard = static_cast<std::int64_t>(st.tp) * st.cp * st.pp;
  if (st.world_size % shard != 0)
    throw InputError(f.field("world_size"), std::to_string(st.world_size) +
                                                " is not divisible by pp·tp·cp = " + std::to_string(shard));
  std::int64_t eshard = static_cast<std::int64_t>(st.ep) * st.etp * st.pp;
  if (st.world_size % eshard != 0)
    throw InputError(f.field("world_size"), std::to_string(st.world_size) +
                                                " is not divisible by ep·etp·pp = " + std::to_string(eshard));
  if (st.seq_length % st.cp != 0)
    throw InputError(f.field("seq_len"), "must be divisible by cp_size " + std::to_string(st.cp));
  if (st.zero_stage < 0 || st.zero_stage > 3) throw InputError(f.field("zero_state"), "must be 0, 1, 2 or 3");
  if (st.vpp > 1 && st.pp == 1) throw InputError(f.field("interleaving_size"), "> 1 requires pp_size > 1");
  if (st.vpp > 1 && !st.pp_comm_overlap && st.pp <= 2)
    throw InputError(
        f.field("pp_comm_async"),
        "false with an interleaved schedule needs pp_size > 2 (several p2p pairs between the same ranks)");
  if (st.vpp > 1 && st.microbatch_group_size_per_vp_stage > 0 &&
      st.microbatch_group_size_per_vp_stage < st.pp)
    throw InputError(f.field("microbatch_group_size_per_vp_stage"), "must be >= pp_size");
  if (st.cache_grouped_gemm_fp8_inputs && st.fp8 == Fp8Format::None)
    throw InputError(f.field("cache_groupgemm_col_fp8_inputs"), "requires fp8");
  if (st.offload_grouped_gemm_inputs && granularity == "full_block")
    throw InputError(f.field("offload_groupgemm_col_inputs"),
                     "is not allowed with recompute_granularity 'full_block'");
  if (st.attention_sparse_ratio < 0 || st.attention_sparse_ratio >= 1)
    throw InputError(f.field("attention_sparse_ratio"), "must be in [0, 1)");
  if (st.allocated_to_reserved_ratio <= 0 || st.allocated_to_reserved_ratio > 1)
    throw InputError(f.field("mem_factor"), "must be in (0, 1]");
  if (rc.layers < 0) throw InputError(f.field("recompute_layer_num"), "must not be negative");

  if (granularity.empty())
    rc.scope = RecomputeScope::None;
  else if (granularity == "full_block")
    rc.scope = RecomputeScope::FullBlock,
    rc.variance = false;  // Megatron's full recompute has no variance mode
  else if (granularity == "attn_only")
    rc.scope = RecomputeScope::AttnOnly;
  else if (granularity == "mlp_only")
    rc.scope = RecomputeScope::MlpOnly;
  else if (granularity == "sdp_only")
    rc.scope = RecomputeScope::SdpOnly;
  else if (granularity == "selective_recompute")
    rc.scope = RecomputeScope::Selective;
  else
    throw InputError(f.field("recompute_granularity"),
                     "must be full_block, attn_only, mlp_only, sdp_only or selective_recompute, got '" +
                         granularity + "'");
  if (!megatron && !rc.megatron_modules.empty())
    throw InputError(f.field("megatron_recompute_modules"), "requires megatron_recompute: true");
  if (megatron) {
    if (!rc.enabled) throw InputError(f.field("megatron_recompute"), "requires enable_recompute: true");
    if (rc.scope != RecomputeScope::Selective)
      throw InputError(f.field("megatron_recompute"), "requires recompute_granularity 'selective_recompute'");
    if (rc.layers <= 0) throw InputError(f.field("megatron_recompute"), "requires recompute_layer_num > 0");
    if (rc.megatron_modules.empty())
      throw InputError(f.field("megatron_recompute_modules"), "must not be empty with megatron_recompute");
    for (const auto& m : rc.megatron_modules) {
      if (m == "core_attn")
        throw InputError(f.field("megatron_recompute_modules"),
                         "core_attn is not supported (SimuMax refuses it too)");
      if (m != "layernorm" && m != "mla_up_proj" && m != "moe_act" && m != "mlp" && m != "moe")
        throw InputError(f.field("megatron_recompute_modules"),
                         "unknown module '" + m + "' (known: layernorm, mla_up_proj, moe_act, mlp, moe)");
    }
    if (rc.attn || rc.attn_norm || rc.mlp || rc.mlp_norm || rc.variance)
      throw InputError(
          f.field("megatron_recompute"),
          "is mutually exclusive with attn/mla_rms/mlp/mlp_rms_recompute and recompute_variance");
  } else if (rc.scope == RecomputeScope::Selective) {
    if (rc.attn_norm && !rc.attn) throw InputError(f.field("mla_rms_recompute"), "requires attn_recompute");
    if (rc.mlp_norm && !rc.mlp) throw InputError(f.field("mlp_rms_recompute"), "requires mlp_recompute");
  }
  st.layer_recompute = rc;

  std::int64_t dp = st.world_size / shard;
  st.global_batch_size = static_cast<int>(st.micro_batch_size * mbc * dp);
  if (dp_in >= 0 && dp_in != dp)
    throw InputError(f.field("dp_size"),
                     std::to_string(dp_in) + " contradicts world_size/(tp·cp·pp) = " + std::to_string(dp));
  std::int64_t edp = st.world_size / eshard;
  if (edp_in >= 0 && edp_in != edp)
    throw InputError(f.field("edp_size"),
                     std::to_string(edp_in) + " contradicts world_size/(ep·etp·pp) = " + std::to_string(edp));
  if (gbs_in >= 0 && gbs_in != st.global_batch_size)
    throw InputError(f.field("global_batch_size"), std::to_string(gbs_in) +
                                                       " contradicts micro_batch_size·micro_batch_num·dp = " +
                                                       std::to_string(st.global_batch_size));
  st.gpus_per_node = 8;
  return out;
}

SystemSpec read_simumax_system(const json& j, const std::string& where) {
  Fields f(j, where);
  SystemSpec sys;
  sys.source = where;
  sys.name = f.string("sys_name", "");
  if (sys.name.empty()) throw InputError(f.field("sys_name"), "is required");
  sys.num_per_node = static_cast<int>(f.required_integer("num_per_node"));
  require_positive(sys.num_per_node, f.field("num_per_node"));
  sys.fc8 = f.boolean("FC8", false);
  sys.mesh_devices = sys.num_per_node;
  bool top_pcie = f.boolean("intra_with_pcie", false);
  sys.tp_overlap_exposed = f.number("tp_overlap_exposed", 1.0);
  if (!(sys.tp_overlap_exposed >= 0 && sys.tp_overlap_exposed <= 1))
    throw InputError(f.field("tp_overlap_exposed"), "must be in [0, 1]");
  sys.straggler_coefficient = f.number("straggler_coefficient", 0.09);
  if (!(sys.straggler_coefficient >= 0 && sys.straggler_coefficient <= 1))
    throw InputError(f.field("straggler_coefficient"), "must be in [0, 1]");
  const double sms = f.number("sm_count", 0);
  if (!(sms >= 0 && sms <= 100000 && sms == std::floor(sms)))
    throw InputError(f.field("sm_count"), "must be a whole number of streaming multiprocessors (0: unknown)");
  sys.sm_count = static_cast<int>(sms);
  sys.mxfp8_grouped_unaligned_scale = f.number("mxfp8_grouped_unaligned_scale", 1.0);
  if (!(sys.mxfp8_grouped_unaligned_scale >= 1 && sys.mxfp8_grouped_unaligned_scale <= 10))
    throw InputError(f.field("mxfp8_grouped_unaligned_scale"),
                     "must be in [1, 10] (an unaligned MXFP8 grouped GEMM's time over an aligned one's)");
  sys.mxfp8_gemm_scale = f.number("mxfp8_gemm_scale", 1.0);
  if (!(sys.mxfp8_gemm_scale >= 1 && sys.mxfp8_gemm_scale <= 10))
    throw InputError(f.field("mxfp8_gemm_scale"), "must be in [1, 10] (an MXFP8 GEMM's time over FP8's)");
  sys.nvfp4_gemm_scale = f.number("nvfp4_gemm_scale", 0.0);
  if (!(sys.nvfp4_gemm_scale >= 0 && sys.nvfp4_gemm_scale <= 1))
    throw InputError(f.field("nvfp4_gemm_scale"),
                     "must be in (0, 1] (an NVFP4 GEMM's time over FP8's), or 0 for no FP4 tensor cores");
  sys.moe_host_us_per_expert = f.number("moe_host_us_per_expert", 0.0);
  if (!(sys.moe_host_us_per_expert >= 0 && sys.moe_host_us_per_expert <= 100000))
    throw InputError(f.field("moe_host_us_per_expert"),
                     "must be in [0, 100000] (µs of host time per local expert and pass of a MoE layer)");
  f.ignore({"real_comm_bw", "miss_efficiency", "hit_efficiency", "preflight"});  // preflight: a preset's sources
  const json* acc = f.object("accelerator", true);
  const json* nets = f.object("networks", true);
  f.reject_unknown();

  Fields a(*acc, where, "accelerator.");
  sys.backend = a.string("backend", "cuda");
  sys.mem_gib = a.required_number("mem_gbs");
  sys.mode = a.string("mode", "roofline");
  if (sys.mode != "roofline" && sys.mode != "only_compute")
    throw InputError(a.field("mode"), "must be 'roofline' or 'only_compute', got '" + sys.mode + "'");
  const json* bws = a.object("bandwidth", true);
  const json* ops = a.object("op", true);
  a.reject_unknown();
  for (auto it = bws->begin(); it != bws->end(); ++it)
    sys.memory_bw[it.key()] = read_bandwidth(it.value(), where, "accelerator.bandwidth." + it.key() + ".");
  if (!sys.memory_bw.count("default"))
    throw InputError(where + ": accelerator.bandwidth.default",
                     "is required (the memory-bound cost of every op)");
  for (auto it = ops->begin(); it != ops->end(); ++it) {
    Fields o(it.value(), where, "accelerator.op." + it.key() + ".");
    ComputeOp op;
    op.tflops = o.required_number("tflops");
    op.efficient_factor = o.required_number("efficient_factor");
    if (op.tflops <= 0) throw InputError(o.field("tflops"), "must be positive");
    if (op.efficient_factor < 0) throw InputError(o.field("efficient_factor"), "must not be negative");
    o.ignore("accurate_efficient_factor");
    if (o.has("accurate_efficient_factor")) {
      const json& acc_eff = o.raw("accurate_efficient_factor");
      if (!acc_eff.is_object()) throw InputError(o.field("accurate_efficient_factor"), "must be an object");
      for (auto e = acc_eff.begin(); e != acc_eff.end(); ++e) {
        if (!e.value().is_number())
          throw InputError(o.field("accurate_efficient_factor") + "[\"" + e.key() + "\"]",
                           "must be a number");
        op.accurate_efficient_factor[e.key()] = e.value().get<double>();
      }
    }
    op.unmeasured_shape_scale = o.number("unmeasured_shape_scale", 1.0);
    if (!(op.unmeasured_shape_scale > 0 && op.unmeasured_shape_scale <= 10))
      throw InputError(o.field("unmeasured_shape_scale"), "must be in (0, 10]");
    o.reject_unknown();
    sys.op[it.key()] = std::move(op);
  }
  if (!sys.op.count("default"))
    throw InputError(where + ": accelerator.op.default",
                     "is required (peak TFLOPS for MFU and the fallback op)");

  sys.intra_with_pcie = top_pcie;
  for (auto it = nets->begin(); it != nets->end(); ++it) {
    if (it.key() == "intra_with_pcie") {
      if (!it.value().is_boolean())
        throw InputError(where + ": networks.intra_with_pcie", "must be true or false");
      sys.intra_with_pcie = it.value().get<bool>();
      continue;
    }
    std::string prefix = "networks." + it.key() + ".";
    Fields n(it.value(), where, prefix);
    Network net;
    n.number("processor_usage", 0);
    net.bandwidth = read_bandwidth(*n.object("bandwidth", true), where, prefix + "bandwidth.");
    const json* nops = n.object("op", true);
    n.reject_unknown();
    for (auto o = nops->begin(); o != nops->end(); ++o) {
      Fields c(o.value(), where, prefix + "op." + o.key() + ".");
      NetOp op;
      op.scale = c.required_number("scale");
      op.offset = c.required_number("offset");
      if (c.has("efficient_factor")) op.efficient_factor = c.number("efficient_factor", 0);
      if (c.has("latency_us")) op.latency_us = c.number("latency_us", 0);
      if (c.has("fixed_latency_us")) op.fixed_latency_us = c.number("fixed_latency_us", 0);
      c.ignore({"efficient_factor", "latency_us", "fixed_latency_us", "fixed_latency_us_by_comm_num",
                "dp_fixed_bw"});
      if (c.has("fixed_latency_us_by_comm_num"))
        op.fixed_latency_us_by_comm_num =
            read_by_comm_num(c.raw("fixed_latency_us_by_comm_num"), c.field("fixed_latency_us_by_comm_num"));
      if (c.has("dp_fixed_bw"))
        op.dp_fixed_bw = read_by_comm_num(c.raw("dp_fixed_bw"), c.field("dp_fixed_bw"));
      c.reject_unknown();
      if (!collective_from_simumax_key(o.key()))
        throw InputError(
            where + ": " + prefix + "op." + o.key(),
            "is not a collective SimuMax knows (" + simumax_collective_keys() + ")");
      net.op[o.key()] = op;
    }
    sys.networks[it.key()] = std::move(net);
  }
  return sys;
}

std::vector<std::string> strategy_preset_names() {
  std::vector<std::string> out;
  for (const auto& p : presets::strategies()) out.push_back(p.name);
  return out;
}
std::vector<std::string> system_preset_names() {
  std::vector<std::string> out;
  for (const auto& p : presets::systems()) out.push_back(p.name);
  return out;
}
std::string strategy_preset_json(const std::string& name) {
  for (const auto& p : presets::strategies())
    if (name == p.name) return p.json;
  return "";
}
namespace {

/// Lower case, '_' as '-', without vendor and form-factor words: "NVIDIA_H100-SXM5" → "h100".
std::string product_of(const std::string& name) {
  std::string s;
  for (char ch : name) s += ch == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  std::vector<std::string> parts, kept;
  for (std::size_t b = 0; b <= s.size();) {
    std::size_t e = s.find('-', b);
    if (e == std::string::npos) e = s.size();
    if (e > b) parts.push_back(s.substr(b, e - b));
    b = e + 1;
  }
  for (const auto& w : parts)
    if (w != "nvidia" && w != "dgx" && w != "hgx" && w != "sxm" && w != "sxm4" && w != "sxm5" &&
        w != "nvl72" && w != "nvl" && w != "huawei" && w != "amd" && w != "instinct" && w != "gpu")
      kept.push_back(w);
  std::string out;
  for (const auto& w : kept) out += (out.empty() ? "" : "-") + w;
  return out;
}

/// Product names that are no preset's product_of(): the ambiguous A100 (40 or 80 GB), memory-size and vendor
/// spellings.  A preset's own product (h100, b200, a100-40gb, a100-pcie, ascend-910b, …) needs no entry.
const std::map<std::string, std::vector<std::string>>& product_presets() {
  static const std::map<std::string, std::vector<std::string>> m = {
      {"a100", {"a100-sxm-40gb", "a100-sxm-80gb"}},
      {"a800", {"a800-sxm-80gb"}},
      {"h20-96gb", {"h20"}},
      {"mi325", {"mi325x"}},
      {"mi355", {"mi355x"}},
      {"h100-80gb", {"h100-sxm"}},
      {"h200-141gb", {"h200"}},
      {"gh200-96gb", {"gh200"}},
      {"mi300", {"mi300x"}},
      {"910b", {"ascend-910b"}},
      {"ascend910b", {"ascend-910b"}},
  };
  return m;
}

}  // namespace

std::string system_preset_for(const std::string& name) {
  for (const auto& p : presets::systems())
    if (name == p.name) return p.name;
  const std::string product = product_of(name);
  for (const auto& p : presets::systems())
    if (product == product_of(p.name)) return p.name;
  auto it = product_presets().find(product);
  if (it != product_presets().end() && it->second.size() == 1) return it->second.front();
  return "";
}

std::vector<std::string> system_preset_choices(const std::string& name) {
  auto it = product_presets().find(product_of(name));
  if (it != product_presets().end() && it->second.size() > 1) return it->second;
  return {};
}

std::string system_preset_json(const std::string& name) {
  const std::string preset = system_preset_for(name);
  for (const auto& p : presets::systems())
    if (preset == p.name) return p.json;
  return "";
}

std::vector<std::string> simumax_model_preset_names() {
  std::vector<std::string> out;
  for (const auto& p : presets::models()) out.push_back(p.name);
  return out;
}

ModelSpec load_cost_model(const std::string& word, std::vector<std::string>* warnings) {
  if (word.rfind("simumax:", 0) == 0) {
    std::string name = word.substr(8);
    for (const auto& p : presets::models())
      if (name == p.name)
        return read_simumax_model(parse_json_text(p.json, "model preset " + word), "model preset " + word);
    throw InputError("--model", "'" + name + "' is not a bundled SimuMax model (known: simumax:" +
                                    join(simumax_model_preset_names(), ", simumax:") + ")");
  }
  if (std::filesystem::is_regular_file(word)) {
    json j = read_json_file(word);
    if (is_simumax_model_json(j)) return read_simumax_model(j, word);
    ModelSpec m = model_from_hf_config(j, word, warnings);
    if (m.name.empty()) {  // as load_model names a config.json: its folder, or the file's stem
      const std::filesystem::path p(word);
      const std::filesystem::path dir = std::filesystem::absolute(p).parent_path();
      m.name = p.filename() == "config.json" && !dir.filename().empty() ? dir.filename().string()
                                                                        : p.stem().string();
    }
    return m;
  }
  // A checkpoint folder, a URL, a Hub repository id (ORG/REPO) or a preset: the analyzer's front ends.
  if (word.find('/') != std::string::npos || std::filesystem::is_directory(word) || is_preset(word))
    return load_model(word, warnings);
  throw InputError("--model",
                   "'" + word + "' is neither a file nor a known model (presets: " + join(preset_names()) +
                       "; SimuMax models: simumax:" + join(simumax_model_preset_names(), ", simumax:") + ")");
}

SimuMaxStrategy load_simumax_strategy(const std::string& path_or_name) {
  if (std::filesystem::is_regular_file(path_or_name))
    return read_simumax_strategy(read_json_file(path_or_name), path_or_name);
  std::string text = strategy_preset_json(path_or_name);
  if (text.empty())
    throw InputError("--strategy", "'" + path_or_name +
                                       "' is neither a file nor a strategy preset (presets: " +
                                       join(strategy_preset_names()) + ")");
  return read_simumax_strategy(parse_json_text(text, "strategy preset " + path_or_name),
                               "strategy preset " + path_or_name);
}

SystemSpec load_simumax_system(const std::string& path_or_name) {
  if (std::filesystem::is_regular_file(path_or_name))
    return read_simumax_system(read_json_file(path_or_name), path_or_name);
  const std::string preset = system_preset_for(path_or_name);
  if (preset.empty()) {
    const auto choices = system_preset_choices(path_or_name);
    if (!choices.empty())
      throw InputError("--system",
                       "'" + path_or_name + "' fits several presets: " + join(choices) + " (say which)");
    throw InputError("--system", "'" + path_or_name + "' is neither a file nor a system preset (presets: " +
                                     join(system_preset_names()) + ")");
  }
  std::string text = system_preset_json(preset);
  SystemSpec s =
      read_simumax_system(parse_json_text(text, "system preset " + preset), "system preset " + preset);
  s.source = preset;
  s.preset = preset;
  return s;
}

}  // namespace preflight::analyzer::cost
