#include "preflight/analyzer/frontends/megatron_args.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "preflight/common/error.hpp"

extern char** environ;

namespace preflight::analyzer {

namespace {

using I64 = std::int64_t;

std::string canonical(std::string name) {
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

I64 parse_int(const std::string& flag, const std::string& v) {
  I64 out = 0;
  const char* b = v.data();
  const char* e = v.data() + v.size();
  auto r = std::from_chars(b, e, out);
  if (r.ec != std::errc() || r.ptr != e) throw InputError(flag, "expected an integer, got '" + v + "'");
  return out;
}

double parse_float(const std::string& flag, const std::string& v) {
  try {
    std::size_t pos = 0;
    double d = std::stod(v, &pos);
    if (pos != v.size()) throw std::invalid_argument(v);
    return d;
  } catch (const std::exception&) {
    throw InputError(flag, "expected a number, got '" + v + "'");
  }
}

bool looks_like_value(const std::string& w) {
  if (w.empty()) return true;
  if (w.rfind("--", 0) == 0) return false;
  if (w[0] == '-' && w.size() > 1 && !(std::isdigit(static_cast<unsigned char>(w[1])) || w[1] == '.'))
    return false;
  return true;
}

/// Splits array items like "--fp8-format hybrid" into separate words.
std::vector<std::string> split_words(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const auto& a : args) {
    if (a.rfind("--", 0) == 0 && a.find_first_of(" \t\n") != std::string::npos) {
      std::istringstream in(a);
      std::string w;
      while (in >> w) out.push_back(w);
    } else {
      out.push_back(a);
    }
  }
  return out;
}

/// Megatron `--moe-layer-freq`: an int k (every k-th layer is MoE) or a Python list expression
/// such as "[0]*3+[1]*58" or "([0]+[1]*2)*4".
std::vector<bool> parse_moe_layer_freq(const std::string& v, int num_layers) {
  std::string s;
  for (char ch : v)
    if (!std::isspace(static_cast<unsigned char>(ch))) s += ch;
  if (!s.empty() && std::all_of(s.begin(), s.end(), [](char ch) { return std::isdigit(ch); })) {
    I64 k = parse_int("--moe-layer-freq", s);
    if (k <= 0) throw InputError("--moe-layer-freq", "must be positive");
    std::vector<bool> out(num_layers);
    for (int i = 0; i < num_layers; ++i) out[i] = i % k == 0;
    return out;
  }
  // Tiny recursive-descent evaluator for sums of (list | (expr)) * int.
  std::size_t pos = 0;
  std::function<std::vector<bool>()> expr, term;
  auto fail = [&]() -> std::vector<bool> {
    throw InputError("--moe-layer-freq", "cannot read '" + v + "' (expected an int or e.g. [0]*3+[1]*58)");
  };
  auto atom = [&]() -> std::vector<bool> {
    std::vector<bool> out;
    if (pos < s.size() && s[pos] == '[') {
      ++pos;
      while (pos < s.size() && s[pos] != ']') {
        if (s[pos] == ',') {
          ++pos;
          continue;
        }
        if (s[pos] != '0' && s[pos] != '1') return fail();
        out.push_back(s[pos] == '1');
        ++pos;
      }
      if (pos >= s.size()) return fail();
      ++pos;
      return out;
    }
    if (pos < s.size() && s[pos] == '(') {
      ++pos;
      out = expr();
      if (pos >= s.size() || s[pos] != ')') return fail();
      ++pos;
      return out;
    }
    return fail();
  };
  term = [&]() -> std::vector<bool> {
    std::vector<bool> base = atom();
    while (pos < s.size() && s[pos] == '*') {
      ++pos;
      std::size_t start = pos;
      while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) ++pos;
      if (start == pos) return fail();
      I64 times = parse_int("--moe-layer-freq", s.substr(start, pos - start));
      std::vector<bool> rep;
      for (I64 i = 0; i < times; ++i) rep.insert(rep.end(), base.begin(), base.end());
      base = rep;
    }
    return base;
  };
  expr = [&]() -> std::vector<bool> {
    std::vector<bool> out = term();
    while (pos < s.size() && s[pos] == '+') {
      ++pos;
      auto more = term();
      out.insert(out.end(), more.begin(), more.end());
    }
    return out;
  };
  std::vector<bool> out = expr();
  if (pos != s.size()) fail();
  return out;
}

/// Number of entries of a vocab file: JSON object (GPT-2 `vocab.json`) or one token per line (BERT).
I64 count_vocab_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return 0;
  in >> std::ws;
  if (in.peek() == '{') {
    try {
      nlohmann::json j = nlohmann::json::parse(in);
      return static_cast<I64>(j.size());
    } catch (const nlohmann::json::exception& e) {
      throw InputError(path, std::string("malformed vocab JSON: ") + e.what());
    }
  }
  I64 n = 0;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) ++n;
  return n;
}

}  // namespace

std::int64_t known_tokenizer_vocab_size(const std::string& t) {
  if (t == "GPT2BPETokenizer") return 50257;
  if (t == "Llama2Tokenizer") return 32000;
  if (t == "Llama3Tokenizer") return 128256;
  if (t == "BertWordPieceLowerCase") return 30522;
  if (t == "BertWordPieceCase") return 28996;
  if (t == "MistralTokenizer") return 32768;
  return 0;
}

std::map<std::string, std::string> process_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

MegatronConfig parse_megatron_args(const std::vector<std::string>& raw_args,
                                   const std::map<std::string, std::string>& env, const ModelSpec* base) {
  enum class Arity { Switch, One, Many };
  // Known flags with their arity.  Values are stored raw in `seen` and interpreted below.
  static const std::map<std::string, Arity> known = {
      // torchrun
      {"--nproc-per-node", Arity::One},
      {"--nnodes", Arity::One},
      {"--node-rank", Arity::One},
      {"--master-addr", Arity::One},
      {"--master-port", Arity::One},
      {"--standalone", Arity::Switch},
      {"--world-size", Arity::One},
      // model
      {"--num-layers", Arity::One},
      {"--hidden-size", Arity::One},
      {"--ffn-hidden-size", Arity::One},
      {"--num-attention-heads", Arity::One},
      {"--num-query-groups", Arity::One},
      {"--group-query-attention", Arity::Switch},
      {"--num-key-value-heads", Arity::One},
      {"--kv-channels", Arity::One},
      {"--seq-length", Arity::One},
      {"--max-position-embeddings", Arity::One},
      {"--swiglu", Arity::Switch},
      {"--squared-relu", Arity::Switch},
      {"--untie-embeddings-and-output-weights", Arity::Switch},
      {"--disable-bias-linear", Arity::Switch},
      {"--add-qkv-bias", Arity::Switch},
      {"--qk-layernorm", Arity::Switch},
      {"--mtp-num-layers", Arity::One},
      {"--mtp-loss-scaling-factor", Arity::One},
      {"--normalization", Arity::One},
      {"--position-embedding-type", Arity::One},
      {"--use-rotary-position-embeddings", Arity::Switch},
      {"--no-position-embedding", Arity::Switch},
      {"--attention-dropout", Arity::One},
      {"--hidden-dropout", Arity::One},
      {"--vocab-size", Arity::One},
      {"--vocab-file", Arity::One},
      {"--tokenizer-type", Arity::One},
      {"--tokenizer-model", Arity::One},
      {"--make-vocab-size-divisible-by", Arity::One},
      {"--num-experts", Arity::One},
      {"--moe-router-topk", Arity::One},
      {"--moe-ffn-hidden-size", Arity::One},
      {"--moe-shared-expert-intermediate-size", Arity::One},
      {"--moe-layer-freq", Arity::One},
      {"--moe-pad-expert-input-to-capacity", Arity::Switch},
      {"--moe-expert-capacity-factor", Arity::One},
      {"--multi-latent-attention", Arity::Switch},
      {"--q-lora-rank", Arity::One},
      {"--kv-lora-rank", Arity::One},
      {"--qk-head-dim", Arity::One},
      {"--qk-pos-emb-head-dim", Arity::One},
      {"--v-head-dim", Arity::One},
      // parallelism and batch
      {"--micro-batch-size", Arity::One},
      {"--global-batch-size", Arity::One},
      {"--tensor-model-parallel-size", Arity::One},
      {"--pipeline-model-parallel-size", Arity::One},
      {"--num-layers-per-virtual-pipeline-stage", Arity::One},
      {"--num-virtual-stages-per-pipeline-rank", Arity::One},
      {"--pipeline-model-parallel-layout", Arity::One},
      {"--decoder-first-pipeline-num-layers", Arity::One},
      {"--decoder-last-pipeline-num-layers", Arity::One},
      {"--account-for-embedding-in-pipeline-split", Arity::Switch},
      {"--account-for-loss-in-pipeline-split", Arity::Switch},
      {"--context-parallel-size", Arity::One},
      {"--expert-model-parallel-size", Arity::One},
      {"--expert-tensor-parallel-size", Arity::One},
      {"--sequence-parallel", Arity::Switch},
      {"--use-tp-pp-dp-mapping", Arity::Switch},
      // numerics, optimizer, recompute, kernels
      {"--fp16", Arity::Switch},
      {"--bf16", Arity::Switch},
      {"--fp8-format", Arity::One},
      {"--use-distributed-optimizer", Arity::Switch},
      {"--optimizer", Arity::One},
      {"--grad-reduce-in-bf16", Arity::Switch},
      {"--accumulate-allreduce-grads-in-fp32", Arity::Switch},
      {"--recompute-granularity", Arity::One},
      {"--recompute-method", Arity::One},
      {"--recompute-num-layers", Arity::One},
      {"--recompute-activations", Arity::Switch},
      {"--recompute-modules", Arity::Many},
      {"--use-flash-attn", Arity::Switch},
      {"--transformer-impl", Arity::One},
      {"--attention-backend", Arity::One},
      {"--cross-entropy-loss-fusion", Arity::Switch},
  };
  // Megatron spellings that differ from our canonical names.
  static const std::map<std::string, std::string> aliases = {
      {"--nproc_per_node", "--nproc-per-node"},
      {"--checkpoint-activations", "--recompute-activations"},
      {"--model-parallel-size", "--tensor-model-parallel-size"},
      {"--num-virtual-stages-per-pipeline-rank", "--num-virtual-stages-per-pipeline-rank"},
  };

  MegatronConfig cfg;
  std::vector<std::string> args = split_words(raw_args);
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& w = args[i];
    if (w.rfind("--", 0) != 0) {
      if (w.size() > 1 && w[0] == '-' && !looks_like_value(w)) cfg.ignored.push_back(w);
      continue;  // positional: the training script (pretrain_gpt.py) or a stray value
    }
    std::string name = w, value;
    bool has_eq = false;
    if (auto eq = w.find('='); eq != std::string::npos) {
      name = w.substr(0, eq);
      value = w.substr(eq + 1);
      has_eq = true;
    }
    name = canonical(name);
    if (auto a = aliases.find(name); a != aliases.end()) name = a->second;
    auto k = known.find(name);
    if (k == known.end()) {
      cfg.ignored.push_back(name);
      if (!has_eq)
        while (i + 1 < args.size() && looks_like_value(args[i + 1])) ++i;
      continue;
    }
    switch (k->second) {
      case Arity::Switch:
        cfg.seen[name] = "";
        break;
      case Arity::One:
        if (!has_eq) {
          if (i + 1 >= args.size() || !looks_like_value(args[i + 1])) {
            // Launch scripts often leave path placeholders empty ($TOKENIZER_MODEL unset); the analysis
            // does not need those paths, so only sizes are required to have values.
            if (name == "--vocab-file" || name == "--tokenizer-model" || name == "--master-addr" ||
                name == "--master-port" || name == "--node-rank") {
              cfg.warnings.push_back(name +
                                     " has no value (an empty variable in the launch script?); ignored");
              break;
            }
            throw InputError(name, "expects a value");
          }
          value = args[++i];
        }
        cfg.seen[name] = value;
        break;
      case Arity::Many: {
        std::string joined = value;
        if (!has_eq)
          while (i + 1 < args.size() && looks_like_value(args[i + 1]))
            joined += (joined.empty() ? "" : " ") + args[++i];
        cfg.seen[name] = joined;
        break;
      }
    }
  }

  const auto& seen = cfg.seen;
  auto has = [&](const char* f) { return seen.count(f) > 0; };
  auto get = [&](const char* f) -> const std::string& { return seen.at(f); };
  auto int_or = [&](const char* f, I64 dflt) { return has(f) ? parse_int(f, get(f)) : dflt; };
  auto float_or = [&](const char* f, double dflt) { return has(f) ? parse_float(f, get(f)) : dflt; };
  auto require_int = [&](const char* f) {
    if (!has(f)) throw InputError(f, "is required (the analysis cannot guess this size)");
    return parse_int(f, get(f));
  };

  ModelSpec& m = cfg.model;
  Strategy& st = cfg.strategy;
  if (base) {
    m = *base;
  } else {
    m.name = "megatron-args";
  }
  auto model_int = [&](const char* f, I64 current) -> I64 {
    if (has(f)) return parse_int(f, get(f));
    if (base) return current;
    throw InputError(f, "is required (the analysis cannot guess this size)");
  };
  m.num_layers = static_cast<int>(model_int("--num-layers", m.num_layers));
  I64 old_hidden = m.hidden_size;
  int old_heads = m.num_attention_heads;
  m.hidden_size = model_int("--hidden-size", m.hidden_size);
  m.num_attention_heads = static_cast<int>(model_int("--num-attention-heads", m.num_attention_heads));
  if (base && has("--num-layers") && !m.moe.layer_is_moe.empty()) {
    // A cut of a preset keeps its leading pattern (e.g. DeepSeek's first dense layers).
    m.moe.layer_is_moe.resize(m.num_layers, true);
  }
  st.seq_length = require_int("--seq-length");

  if (has("--swiglu"))
    m.activation = Activation::SwiGLU;
  else if (has("--squared-relu"))
    m.activation = Activation::SquaredReLU;
  bool geometry_changed = !base || old_hidden != m.hidden_size || old_heads != m.num_attention_heads;
  if (has("--ffn-hidden-size")) {
    m.ffn_hidden_size = parse_int("--ffn-hidden-size", get("--ffn-hidden-size"));
  } else if (!base || old_hidden != m.hidden_size || has("--swiglu")) {
    m.ffn_hidden_size =
        m.gated() ? static_cast<I64>((4.0 * m.hidden_size * 2 / 3) / 64) * 64 : 4 * m.hidden_size;
  }
  if (has("--kv-channels"))
    m.kv_channels = parse_int("--kv-channels", get("--kv-channels"));
  else if (geometry_changed)
    m.kv_channels = m.num_attention_heads > 0 ? m.hidden_size / m.num_attention_heads : 0;
  if (has("--group-query-attention")) {
    m.num_query_groups = static_cast<int>(int_or("--num-query-groups", 1));
  } else if (has("--num-key-value-heads")) {
    // Megatron-DeepSpeed's GQA flag (megatron/arguments.py: default None → num_attention_heads).
    m.num_query_groups = static_cast<int>(parse_int("--num-key-value-heads", get("--num-key-value-heads")));
  } else if (!base || old_heads != m.num_attention_heads) {
    m.num_query_groups = m.num_attention_heads;
    if (has("--num-query-groups"))
      cfg.warnings.push_back("--num-query-groups " + get("--num-query-groups") +
                             " has no effect without --group-query-attention (Megatron ignores it too)");
  }
  if (has("--max-position-embeddings"))
    m.max_position_embeddings = parse_int("--max-position-embeddings", get("--max-position-embeddings"));
  else if (!base || m.max_position_embeddings <= 0)
    m.max_position_embeddings = st.seq_length;
  if (has("--normalization")) {
    const auto& n = get("--normalization");
    // Megatron-LM spells RMSNorm/LayerNorm; Megatron-DeepSpeed rmsnorm/layernorm.
    if (n == "RMSNorm" || n == "rmsnorm")
      m.normalization = Normalization::RMSNorm;
    else if (n == "LayerNorm" || n == "layernorm")
      m.normalization = Normalization::LayerNorm;
    else
      throw InputError("--normalization", "unknown normalization '" + n + "' (LayerNorm or RMSNorm)");
  }
  if (has("--position-embedding-type")) {
    const auto& p = get("--position-embedding-type");
    if (p == "learned_absolute")
      m.position_embedding = PositionEmbedding::LearnedAbsolute;
    else if (p == "rope" || p == "mrope" || p == "yarn")
      m.position_embedding = PositionEmbedding::Rope;
    else if (p == "none" || p == "relative")
      m.position_embedding = PositionEmbedding::None;
    else
      throw InputError("--position-embedding-type", "unknown type '" + p + "'");
  } else if (has("--use-rotary-position-embeddings")) {
    m.position_embedding = PositionEmbedding::Rope;
  }
  if (has("--no-position-embedding")) m.position_embedding = PositionEmbedding::None;
  if (has("--untie-embeddings-and-output-weights")) m.untie_embeddings_and_output_weights = true;
  if (has("--disable-bias-linear")) m.add_bias_linear = false;
  if (has("--add-qkv-bias")) m.add_qkv_bias = true;
  if (has("--qk-layernorm")) m.qk_layernorm = true;
  if (has("--mtp-num-layers"))
    m.mtp_num_layers = static_cast<int>(parse_int("--mtp-num-layers", get("--mtp-num-layers")));
  m.attention_dropout = float_or("--attention-dropout", base ? m.attention_dropout : 0.1);
  m.hidden_dropout = float_or("--hidden-dropout", base ? m.hidden_dropout : 0.1);
  m.make_vocab_size_divisible_by =
      static_cast<int>(int_or("--make-vocab-size-divisible-by", base ? m.make_vocab_size_divisible_by : 128));

  // Vocabulary: a readable vocab file wins, then --vocab-size, then the tokenizer's known size.
  std::string tok_type =
      has("--tokenizer-type") ? get("--tokenizer-type") : (has("--vocab-file") ? "GPT2BPETokenizer" : "");
  I64 vocab = 0;
  if (has("--vocab-file") && std::filesystem::is_regular_file(get("--vocab-file"))) {
    vocab = count_vocab_file(get("--vocab-file"));
  }
  if (vocab == 0 && has("--vocab-size")) {
    vocab = parse_int("--vocab-size", get("--vocab-size"));
    if (tok_type == "NullTokenizer") vocab += 1;  // Megatron's NullTokenizer appends an EOD token
    if (has("--vocab-file") || has("--tokenizer-model"))
      cfg.warnings.push_back("tokenizer file not found on this machine; using --vocab-size " +
                             get("--vocab-size") +
                             (tok_type == "NullTokenizer" ? " + 1 (NullTokenizer EOD)" : ""));
  }
  if (vocab == 0 && base && m.vocab_size > 0) vocab = m.vocab_size;
  if (vocab == 0 && known_tokenizer_vocab_size(tok_type) > 0) {
    vocab = known_tokenizer_vocab_size(tok_type);
    std::string from = has("--vocab-file") ? "vocab file '" + get("--vocab-file") + "' not found"
                       : has("--tokenizer-model")
                           ? "tokenizer model '" + get("--tokenizer-model") + "' not found"
                           : "no vocab file given";
    cfg.warnings.push_back(from + "; using the " + tok_type + " vocabulary size " + std::to_string(vocab));
  }
  if (vocab == 0)
    throw InputError("--vocab-size", "cannot determine the vocabulary size" +
                                         std::string(tok_type.empty() ? "" : " of tokenizer " + tok_type) +
                                         "; pass --vocab-size or a readable --vocab-file");
  m.vocab_size = vocab;

  if (has("--num-experts")) {
    m.moe.num_experts = static_cast<int>(parse_int("--num-experts", get("--num-experts")));
    if (m.moe.ffn_hidden_size <= 0) m.moe.ffn_hidden_size = m.ffn_hidden_size;
  }
  if (m.moe.enabled()) {
    m.moe.router_topk = static_cast<int>(int_or("--moe-router-topk", base ? m.moe.router_topk : 2));
    m.moe.ffn_hidden_size = int_or("--moe-ffn-hidden-size",
                                   m.moe.ffn_hidden_size > 0 ? m.moe.ffn_hidden_size : m.ffn_hidden_size);
    m.moe.shared_expert_ffn_hidden_size =
        int_or("--moe-shared-expert-intermediate-size", m.moe.shared_expert_ffn_hidden_size);
    if (has("--moe-layer-freq"))
      m.moe.layer_is_moe = parse_moe_layer_freq(get("--moe-layer-freq"), m.num_layers);
    if (has("--moe-pad-expert-input-to-capacity")) m.moe.pad_expert_input_to_capacity = true;
    m.moe.capacity_factor = float_or("--moe-expert-capacity-factor", m.moe.capacity_factor);
  }
  if (has("--multi-latent-attention")) {
    m.mla.enabled = true;
    m.mla.q_lora_rank = int_or("--q-lora-rank", 0);
    m.mla.kv_lora_rank = int_or("--kv-lora-rank", 32);
    m.mla.qk_head_dim = int_or("--qk-head-dim", 128);
    m.mla.qk_pos_emb_head_dim = int_or("--qk-pos-emb-head-dim", 64);
    m.mla.v_head_dim = int_or("--v-head-dim", 128);
  }

  // Launcher: torchrun flags, then its PET_* environment, then our own --world-size.
  auto env_or = [&](const char* key) -> std::string {
    auto it = env.find(key);
    return it == env.end() ? "" : it->second;
  };
  std::string nproc = has("--nproc-per-node") ? get("--nproc-per-node") : env_or("PET_NPROC_PER_NODE");
  std::string nnodes = has("--nnodes") ? get("--nnodes") : env_or("PET_NNODES");
  if (has("--standalone")) nnodes = nnodes.empty() ? "1" : nnodes;
  if (!nproc.empty()) {
    if (nproc == "gpu" || nproc == "auto" || nproc == "cpu" || nproc == "xpu")
      throw InputError("--nproc_per_node",
                       "'" + nproc +
                           "' depends on the machine that launches the run; give the number of "
                           "processes per node");
    cfg.nproc_per_node = static_cast<int>(parse_int("--nproc_per_node", nproc));
  }
  if (!nnodes.empty()) {
    std::string upper = nnodes;
    if (auto colon = nnodes.find(':'); colon != std::string::npos) {
      upper = nnodes.substr(colon + 1);
      cfg.warnings.push_back("elastic --nnodes " + nnodes + ": analysing the largest size, " + upper +
                             " nodes");
    }
    cfg.nnodes = static_cast<int>(parse_int("--nnodes", upper));
  }
  st.tp = static_cast<int>(int_or("--tensor-model-parallel-size", 1));
  st.pp = static_cast<int>(int_or("--pipeline-model-parallel-size", 1));
  st.cp = static_cast<int>(int_or("--context-parallel-size", 1));
  st.ep = static_cast<int>(int_or("--expert-model-parallel-size", 1));
  st.etp = static_cast<int>(int_or("--expert-tensor-parallel-size", 0));
  if (has("--world-size")) {
    st.world_size = static_cast<int>(parse_int("--world-size", get("--world-size")));
    st.gpus_per_node = !nproc.empty() ? cfg.nproc_per_node : std::min(st.world_size, 8);
  } else if (!nproc.empty() || !nnodes.empty()) {
    st.world_size = cfg.nproc_per_node * cfg.nnodes;
    st.gpus_per_node = cfg.nproc_per_node;
  } else {
    st.world_size = st.tp * st.pp * st.cp;
    st.gpus_per_node = std::min(st.world_size, 8);
    cfg.warnings.push_back("no torchrun --nproc_per_node/--nnodes given: assuming world size = tp·pp·cp = " +
                           std::to_string(st.world_size) + " (dp = 1)");
  }
  cfg.nproc_per_node = st.gpus_per_node;

  st.micro_batch_size = static_cast<int>(int_or("--micro-batch-size", 1));
  st.global_batch_size = static_cast<int>(int_or("--global-batch-size", 0));
  st.sequence_parallel = has("--sequence-parallel");
  if (st.sequence_parallel && st.tp == 1) {
    st.sequence_parallel = false;
    cfg.warnings.push_back("--sequence-parallel has no effect with tp = 1 (Megatron disables it too)");
  }
  if (has("--use-tp-pp-dp-mapping")) st.order = "tp-pp-dp";
  st.first_stage_layers = static_cast<int>(int_or("--decoder-first-pipeline-num-layers", -1));
  st.last_stage_layers = static_cast<int>(int_or("--decoder-last-pipeline-num-layers", -1));
  st.account_for_embedding_in_pipeline_split = has("--account-for-embedding-in-pipeline-split");
  st.account_for_loss_in_pipeline_split = has("--account-for-loss-in-pipeline-split");
  if (has("--num-virtual-stages-per-pipeline-rank")) {
    st.vpp = static_cast<int>(
        parse_int("--num-virtual-stages-per-pipeline-rank", get("--num-virtual-stages-per-pipeline-rank")));
  } else if (has("--num-layers-per-virtual-pipeline-stage")) {
    I64 per =
        parse_int("--num-layers-per-virtual-pipeline-stage", get("--num-layers-per-virtual-pipeline-stage"));
    if (per <= 0) throw InputError("--num-layers-per-virtual-pipeline-stage", "must be positive");
    if (st.pp <= 0) throw InputError("--pipeline-model-parallel-size", "must be positive");
    // Megatron: vpp = (num_layers // pp) // layers_per_virtual_stage (even split).
    I64 per_stage = m.num_layers / st.pp;
    if (per_stage % per != 0)
      throw InputError("--num-layers-per-virtual-pipeline-stage",
                       std::to_string(per_stage) + " layers per stage do not divide into chunks of " +
                           std::to_string(per));
    st.vpp = static_cast<int>(per_stage / per);
  }

  if (has("--pipeline-model-parallel-layout")) {
    for (const char* other :
         {"--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank",
          "--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers",
          "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split"})
      if (has(other))
        throw InputError("--pipeline-model-parallel-layout", std::string("cannot be combined with ") + other +
                                                                 " (the layout says the whole split)");
    st.chunk_layout = parse_pipeline_layout(get("--pipeline-model-parallel-layout"), st.pp,
                                            static_cast<int>(m.num_layers), m.mtp_num_layers);
    st.vpp = static_cast<int>(st.chunk_layout.size());
  }

  if (has("--bf16") && has("--fp16")) throw InputError("--bf16", "cannot be combined with --fp16");
  st.precision = has("--bf16") ? Precision::BF16 : has("--fp16") ? Precision::FP16 : Precision::FP32;
  if (has("--fp8-format")) {
    const auto& f = get("--fp8-format");
    if (f == "e4m3")
      st.fp8 = Fp8Format::E4M3;
    else if (f == "hybrid")
      st.fp8 = Fp8Format::Hybrid;
    else
      throw InputError("--fp8-format", "unknown format '" + f + "' (e4m3 or hybrid)");
  }
  st.distributed_optimizer = has("--use-distributed-optimizer");
  if (has("--optimizer")) {
    const auto& o = get("--optimizer");
    if (o == "adam")
      st.optimizer = Optimizer::Adam;
    else if (o == "sgd")
      st.optimizer = Optimizer::SGD;
    else
      throw InputError("--optimizer", "unknown optimizer '" + o + "' (adam or sgd)");
  }
  st.grad_reduce_in_bf16 = has("--grad-reduce-in-bf16");
  st.accumulate_allreduce_grads_in_fp32 = has("--accumulate-allreduce-grads-in-fp32");

  if (has("--recompute-activations")) st.recompute_granularity = RecomputeGranularity::Selective;
  if (has("--recompute-granularity")) {
    const auto& g = get("--recompute-granularity");
    if (g == "full")
      st.recompute_granularity = RecomputeGranularity::Full;
    else if (g == "selective")
      st.recompute_granularity = RecomputeGranularity::Selective;
    else
      throw InputError("--recompute-granularity", "unknown granularity '" + g + "' (full or selective)");
  }
  if (st.recompute_granularity == RecomputeGranularity::Full) {
    if (!has("--recompute-method"))
      throw InputError("--recompute-method",
                       "full recompute needs --recompute-method uniform or block (Megatron refuses it too)");
    const auto& meth = get("--recompute-method");
    if (meth == "uniform")
      st.recompute_method = RecomputeMethod::Uniform;
    else if (meth == "block")
      st.recompute_method = RecomputeMethod::Block;
    else
      throw InputError("--recompute-method", "unknown method '" + meth + "' (uniform or block)");
    st.recompute_num_layers = static_cast<int>(int_or("--recompute-num-layers", 1));
  }
  if (has("--recompute-modules")) {
    st.recompute_modules.clear();
    std::istringstream in(get("--recompute-modules"));
    std::string mod;
    while (in >> mod) st.recompute_modules.push_back(mod);
  }

  if (has("--transformer-impl")) {
    const auto& impl = get("--transformer-impl");
    if (impl == "torch_cpu")
      st.transformer_impl = TransformerImpl::TorchCpu;
    else if (impl == "transformer_engine" || impl == "local" || impl == "inference_optimized")
      st.transformer_impl = TransformerImpl::MegatronCore;
    else
      throw InputError("--transformer-impl",
                       "unknown implementation '" + impl + "' (transformer_engine, local, torch_cpu)");
  }
  bool torch_cpu = st.transformer_impl == TransformerImpl::TorchCpu;
  if (torch_cpu) {
    // examples/torch_cpu_gpt runs math attention only; --attention-backend unfused/local/auto say so too.
    st.attention_backend = AttentionBackend::Math;
    if (has("--attention-backend")) {
      const auto& b = get("--attention-backend");
      if (b != "unfused" && b != "local" && b != "auto")
        throw InputError("--attention-backend", "--transformer-impl torch_cpu runs math attention; '" + b +
                                                    "' is not available (unfused, local, auto)");
    }
  } else if (has("--attention-backend")) {
    const auto& b = get("--attention-backend");
    if (b == "flash" || b == "fused" || b == "auto")
      st.attention_backend = AttentionBackend::Flash;
    else if (b == "unfused" || b == "local")
      st.attention_backend = AttentionBackend::Math;
    else
      throw InputError("--attention-backend",
                       "unknown backend '" + b + "' (flash, fused, unfused, local, auto)");
  } else if (has("--use-flash-attn")) {
    st.attention_backend = AttentionBackend::Flash;
  } else {
    cfg.warnings.push_back(
        "attention backend not given (--attention-backend / --use-flash-attn): assuming flash "
        "attention, Megatron's default since 2024; pass --attention-backend unfused for math "
        "attention");
  }
  st.cross_entropy_loss_fusion = has("--cross-entropy-loss-fusion");
  return cfg;
}

}  // namespace preflight::analyzer
