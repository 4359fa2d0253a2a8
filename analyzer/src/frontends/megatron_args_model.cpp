// Megatron arguments, model group: architecture, vocabulary, MoE and multi-latent attention.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "megatron_flags.hpp"
#include "preflight/analyzer/frontends/presets.hpp"
#include "preflight/common/error.hpp"

namespace preflight::analyzer::megatron {

namespace {

/// A per-layer pattern flag: an int k or a Python list expression such as "[0]*3+[1]*58" or
/// "([0]+[1]*2)*4".  `--moe-layer-freq` k: layers 0, k, 2k, … are MoE; `--window-attn-skip-freq` k: every
/// k-th layer (1-based numbers k, 2k, …) has full attention, the others the sliding window
/// (megatron/core/transformer/utils.py is_layer_window_attention).
std::vector<bool> parse_layer_pattern(const char* flag, const std::string& v, int num_layers, bool window) {
  std::string s;
  for (char ch : v)
    if (!std::isspace(static_cast<unsigned char>(ch))) s += ch;
  const std::size_t digits_from = !s.empty() && s[0] == '-' ? 1 : 0;
  if (s.size() > digits_from &&
      std::all_of(s.begin() + static_cast<std::ptrdiff_t>(digits_from), s.end(),
                  [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); })) {
    // Megatron tests `i % k == 0` in Python, whose remainder by a negative k is 0 where |k|'s is: -1 marks
    // every layer (MindSpeed-LLM's Qwen3-MoE scripts give --moe-layer-freq -1).
    I64 k = parse_int(flag, s);
    if (k == 0) throw InputError(flag, "must not be 0 (Megatron divides by it)");
    k = k < 0 ? -k : k;
    std::vector<bool> out(num_layers);
    for (int i = 0; i < num_layers; ++i) out[i] = window ? (i + 1) % k != 0 : i % k == 0;
    return out;
  }
  // Tiny recursive-descent evaluator for sums of (list | (expr)) * int.
  std::size_t pos = 0;
  std::function<std::vector<bool>()> expr, term;
  auto fail = [&]() -> std::vector<bool> {
    throw InputError(flag, "cannot read '" + v + "' (expected an int or e.g. [0]*3+[1]*58)");
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
      I64 times = parse_int(flag, s.substr(start, pos - start));
      // A pattern gives one entry per layer: far more than any model has is a typo, not a model (and would
      // not fit in memory).
      if (times < 0 || (times > 0 && static_cast<I64>(base.size()) > 1000000 / times))
        throw InputError(flag, "'" + v + "' gives more than 1,000,000 layers");
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
/// `vocab_size` of a Hugging Face checkpoint's config.json in `dir` (Pai-Megatron-Patch loads the tokenizer
/// from the --load checkpoint and pads the vocabulary to that model's size); 0 when there is none to read.
I64 checkpoint_vocab_size(const std::string& dir) {
  std::error_code ec;
  const std::filesystem::path cfg = std::filesystem::path(dir) / "config.json";
  if (!std::filesystem::is_regular_file(cfg, ec)) return 0;
  std::ifstream in(cfg);
  try {
    nlohmann::json j = nlohmann::json::parse(in);
    if (!j.is_object()) return 0;
    const nlohmann::json* v = j.contains("vocab_size") ? &j["vocab_size"] : nullptr;
    if (!v && j.contains("text_config") && j["text_config"].is_object() &&
        j["text_config"].contains("vocab_size"))
      v = &j["text_config"]["vocab_size"];
    return v && v->is_number_integer() && v->get<I64>() > 0 ? v->get<I64>() : 0;
  } catch (const nlohmann::json::exception&) {
    return 0;  // not a Hugging Face config: the other sources decide
  }
}

/// Megatron's HuggingFaceTokenizer vocab_size, len(AutoTokenizer): the distinct ids of a tokenizer.json's
/// model vocabulary (a token → id map, or a Unigram [piece, score] list) and its added tokens.  0 when `dir`
/// has no tokenizer.json.  @throws InputError naming the file when it is not a tokenizer's JSON.
I64 hf_tokenizer_size(const std::string& dir) {
  std::error_code ec;
  // (a folder holding tokenizer.json, or the file itself: BigCode's --tokenizer-file)
  const std::filesystem::path file = std::filesystem::is_regular_file(dir, ec)
                                         ? std::filesystem::path(dir)
                                         : std::filesystem::path(dir) / "tokenizer.json";
  if (!std::filesystem::is_regular_file(file, ec)) return 0;
  std::ifstream in(file);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(file.string(), std::string("not a readable tokenizer JSON: ") + e.what());
  }
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object() || !j["model"].contains("vocab"))
    throw InputError(file.string(), "has no model.vocab (not a Hugging Face tokenizer.json)");
  std::set<I64> ids;
  const nlohmann::json& vocab = j["model"]["vocab"];
  if (vocab.is_object()) {
    for (const auto& [token, id] : vocab.items())
      if (id.is_number_integer()) ids.insert(id.get<I64>());
  } else if (vocab.is_array()) {
    for (std::size_t i = 0; i < vocab.size(); ++i) ids.insert(static_cast<I64>(i));
  } else {
    throw InputError(file.string(), "model.vocab is neither a map nor a list");
  }
  if (j.contains("added_tokens") && j["added_tokens"].is_array())
    for (const auto& t : j["added_tokens"])
      if (t.is_object() && t.contains("id") && t["id"].is_number_integer()) ids.insert(t["id"].get<I64>());
  return static_cast<I64>(ids.size());
}

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

/// The pieces of a SentencePiece model file (`--tokenizer-model` of Megatron's SentencePieceTokenizer,
/// GPTSentencePieceTokenizer and Llama2Tokenizer: its vocabulary is `get_piece_size()`,
/// megatron/core/tokenizers/ text/libraries/sentencepiece_tokenizer.py): the top-level `pieces` records
/// (field 1, length-delimited) of its ModelProto (sentencepiece_model.proto), read from the protobuf wire
/// format.  0 when the file cannot be opened; InputError naming the file when it is not such a protobuf
/// (truncated, or another kind of file).
I64 sentencepiece_piece_count(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return 0;
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t at = 0;
  auto bad = [&](const std::string& why) {
    return InputError(path, "--tokenizer-model is not a SentencePiece model: " + why + " at byte " +
                                std::to_string(at) + " of " + std::to_string(bytes.size()));
  };
  auto varint = [&]() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at >= bytes.size()) throw bad("truncated");
      const auto b = static_cast<unsigned char>(bytes[at++]);
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    throw bad("a malformed varint");
  };
  auto skip = [&](std::uint64_t n) {
    if (n > bytes.size() - at) throw bad("truncated");
    at += static_cast<std::size_t>(n);
  };
  I64 pieces = 0;
  while (at < bytes.size()) {
    const std::uint64_t tag = varint();
    const std::uint64_t field = tag >> 3, wire = tag & 7;
    if (field == 0) throw bad("field number 0");
    switch (wire) {
      case 0:
        varint();
        break;
      case 1:
        skip(8);
        break;
      case 2: {
        skip(varint());
        if (field == 1) ++pieces;
        break;
      }
      case 5:
        skip(4);
        break;
      default:
        throw bad("wire type " + std::to_string(wire));
    }
  }
  if (pieces == 0) throw bad("no pieces");
  return pieces;
}

/// `--megatron-version`: the date of the Megatron-LM checkout the run uses, YYYY-MM-DD (rules that changed
/// over time follow it).
std::string megatron_checkout_date(const std::string& v) {
  bool ok = v.size() == 10 && v[4] == '-' && v[7] == '-';
  for (std::size_t i = 0; ok && i < v.size(); ++i)
    if (i != 4 && i != 7) ok = std::isdigit(static_cast<unsigned char>(v[i])) != 0;
  if (!ok)
    throw InputError(
        "--megatron-version",
        "expected the date of the Megatron-LM checkout as YYYY-MM-DD (e.g. 2025-11-03), got '" + v + "'");
  return v;
}

}  // namespace

HybridPatternFlag read_hybrid_pattern_flag(const Flags& f) {
  HybridPatternFlag hp;
  if (!f.has("--hybrid-layer-pattern") && !f.has("--hybrid-override-pattern")) return hp;
  hp.flag = f.has("--hybrid-layer-pattern") ? "--hybrid-layer-pattern" : "--hybrid-override-pattern";
  const char* flag = hp.flag;
  auto unquoted = [](std::string v) {
    std::erase_if(v, [](char ch) { return ch == ' ' || ch == '"' || ch == '\''; });
    return v;
  };
  std::string pattern = unquoted(f.get(flag));
  // Multi-token prediction: "main/mtp/mtp…", one identical pattern per depth (Megatron's
  // parse_hybrid_pattern); the legacy --mtp-hybrid-override-pattern gives one depth for --mtp-num-layers.
  if (const auto slash = pattern.find('/'); slash != std::string::npos) {
    const std::string rest = pattern.substr(slash + 1);
    pattern.resize(slash);
    std::vector<std::string> parts;
    for (std::size_t at = 0;;) {
      const auto next = rest.find('/', at);
      parts.push_back(rest.substr(at, next == std::string::npos ? std::string::npos : next - at));
      if (next == std::string::npos) break;
      at = next + 1;
    }
    if (!std::all_of(parts.begin(), parts.end(), [](const std::string& p) { return p.empty(); })) {
      for (const auto& p : parts)
        if (p != parts[0])
          throw InputError(flag, "MTP depth patterns differ ('" + parts[0] + "' and '" + p +
                                     "'): Megatron requires every depth after '/' to be the same");
      hp.mtp = parts[0];
      hp.depths = static_cast<int>(parts.size());
      if (hp.mtp.find('|') != std::string::npos)
        throw InputError(flag, "an MTP depth pattern (after '/') cannot hold pipeline separators '|'");
    }
  } else if (f.has("--mtp-hybrid-override-pattern") && f.has("--mtp-num-layers")) {
    hp.mtp = unquoted(f.get("--mtp-hybrid-override-pattern"));
    hp.depths = static_cast<int>(parse_int("--mtp-num-layers", f.get("--mtp-num-layers")));
  }
  for (char ch : pattern + hp.mtp) {
    if (ch == 'D')
      throw InputError(flag,
                       "layer symbol 'D' (DeepSeek sparse attention) is not modelled: preflight models M "
                       "(Mamba-2), G (gated delta net), * (attention), - (MLP), E (MoE)");
    if (ch == 'G' && hp.mtp.find('G') != std::string::npos)
      throw InputError(flag, "a gated delta net (G) in an MTP depth is not modelled");
    if (ch != 'M' && ch != 'G' && ch != '*' && ch != '-' && ch != 'E' && ch != '|')
      throw InputError(flag, std::string("unknown layer symbol '") + ch +
                                 "' (M, G, *, -, E; | between pipeline segments)");
  }
  if (!hp.mtp.empty() && !ModelSpec::mtp_depth_modelled(hp.mtp))
    throw InputError(flag, "multi-token-prediction depth '" + hp.mtp + "' " + ModelSpec::kMtpDepthNote);
  hp.segments = {0};
  for (char ch : pattern) {
    if (ch == '|')
      hp.segments.push_back(0);
    else
      ++hp.segments.back();
  }
  std::erase(pattern, '|');
  if (pattern.empty()) throw InputError(flag, "is empty");
  hp.layers = pattern;
  return hp;
}

namespace {

/// Megatron's hybrid models (training/arguments.py, core/models/hybrid/hybrid_layer_allocation.py):
/// `--hybrid-layer-pattern` (or the deprecated `--hybrid-override-pattern`) gives one symbol per layer and
/// sets the layer count; the Mamba mixers' sizes come from `--mamba-*`.
/// The layers Megatron's hybrid allocation gives `layers` layers at these attention / MLP ratios
/// (megatron/core/ssm/mamba_hybrid_layer_allocation.py, the automatic allocation): round(layers · attention)
/// attention layers spread evenly between Mamba sections that start and end the stack, then round(layers ·
/// mlp) of the remaining Mamba layers turned to MLPs, spread evenly and right-justified.  Python's round()
/// (half to even) as there.
std::string hybrid_layers_from_ratios(int layers, double attention, double mlp) {
  std::string out(static_cast<std::size_t>(layers), 'M');
  const int n_attention = static_cast<int>(std::nearbyint(layers * attention));
  int n_mamba = layers - n_attention;
  const double section = static_cast<double>(n_mamba) / (n_attention + 1);
  double x = section;
  for (char& c : out) {
    if (x < 0.5) {
      c = '*';
      x += section;
    } else {
      x -= 1;
    }
  }
  const int n_mlp = static_cast<int>(std::nearbyint(layers * mlp));
  if (n_mlp > 0) {
    n_mamba -= n_mlp;
    const double per_mlp = static_cast<double>(n_mamba) / n_mlp;
    x = per_mlp;
    for (char& c : out) {
      if (c != 'M') continue;
      if (x < 0.5) {
        c = '-';
        x += per_mlp;
      } else {
        x -= 1;
      }
    }
  }
  return out;
}

void read_hybrid_pattern(const Flags& f, ModelSpec& m, std::vector<std::string>& warnings) {
  const bool layer = f.has("--hybrid-layer-pattern"), override = f.has("--hybrid-override-pattern");
  if (layer && override)
    throw InputError(
        "--hybrid-override-pattern",
        "and --hybrid-layer-pattern cannot both be given (Megatron asserts it; the first is deprecated)");
  HybridPatternFlag from_ratios;
  if (!layer && !override &&
      (f.has("--is-hybrid-model") || f.has("--hybrid-attention-ratio") || f.has("--hybrid-mlp-ratio"))) {
    // Megatron's hybrid stack allocated from ratios (pretrain_mamba.py's examples/mamba/train.sh).
    const char* ratio_flag = f.has("--hybrid-attention-ratio") ? "--hybrid-attention-ratio"
                             : f.has("--hybrid-mlp-ratio")     ? "--hybrid-mlp-ratio"
                                                               : "--is-hybrid-model";
    if (!f.has("--num-layers"))
      throw InputError("--num-layers",
                       std::string("is required: the hybrid layers are allocated from it and ") + ratio_flag);
    const I64 layers = parse_int("--num-layers", f.get("--num-layers"));
    if (layers <= 0 || layers > 100000) throw InputError("--num-layers", "must be a positive layer count");
    const double attention = f.float_or("--hybrid-attention-ratio", 0.0),
                 mlp = f.float_or("--hybrid-mlp-ratio", 0.0);
    if (!(attention >= 0 && attention <= 1))
      throw InputError("--hybrid-attention-ratio", "must be within 0 … 1 (Megatron asserts it)");
    if (!(mlp >= 0 && mlp <= 1))
      throw InputError("--hybrid-mlp-ratio", "must be within 0 … 1 (Megatron asserts it)");
    if (attention + mlp > 1.0)
      throw InputError("--hybrid-mlp-ratio",
                       "and --hybrid-attention-ratio must sum to at most 1 (Megatron asserts it)");
    from_ratios.flag = ratio_flag;
    from_ratios.layers = hybrid_layers_from_ratios(static_cast<int>(layers), attention, mlp);
    from_ratios.segments = {static_cast<int>(layers)};
    warnings.push_back(
        "hybrid layers allocated as Megatron allocates them from --hybrid-attention-ratio " +
        std::string(f.has("--hybrid-attention-ratio") ? f.get("--hybrid-attention-ratio") : "0") +
        " and --hybrid-mlp-ratio " +
        std::string(f.has("--hybrid-mlp-ratio") ? f.get("--hybrid-mlp-ratio") : "0") + ": " +
        from_ratios.layers);
  }
  if (!layer && !override && !from_ratios.flag) {
    for (const char* flag :
         {"--mamba-state-dim", "--mamba-head-dim", "--mamba-num-groups", "--mamba-num-heads"})
      if (f.has(flag))
        warnings.push_back(std::string(flag) +
                           " has no effect without --hybrid-layer-pattern (no Mamba layers)");
    return;
  }
  const HybridPatternFlag hp = from_ratios.flag ? from_ratios : read_hybrid_pattern_flag(f);
  const char* flag = hp.flag;
  const std::string& pattern = hp.layers;
  const std::string& mtp = hp.mtp;
  const int depths = hp.depths;
  if (f.has("--num-layers") &&
      parse_int("--num-layers", f.get("--num-layers")) != static_cast<I64>(pattern.size()))
    warnings.push_back(std::string(flag) + " has " + std::to_string(pattern.size()) +
                       " layers: --num-layers " + f.get("--num-layers") + " is ignored (as Megatron does)");
  m.hybrid_pattern = pattern;
  m.num_layers = static_cast<int>(pattern.size());
  if (depths > 0) {
    // Megatron infers --mtp-num-layers from the depths (a different value is warned about and replaced).
    if (f.has("--mtp-num-layers") &&
        parse_int("--mtp-num-layers", f.get("--mtp-num-layers")) != static_cast<I64>(depths))
      warnings.push_back(std::string(flag) + " has " + std::to_string(depths) +
                         " MTP depths: --mtp-num-layers " + f.get("--mtp-num-layers") +
                         " is replaced by them (as Megatron does)");
    m.mtp_hybrid_pattern = mtp;
    m.mtp_num_layers = depths;
  } else if (f.has("--mtp-num-layers") && parse_int("--mtp-num-layers", f.get("--mtp-num-layers")) > 0) {
    // Megatron warns and builds no MTP block (HybridModel.mtp_process needs the pattern's depths).
    warnings.push_back("--mtp-num-layers " + f.get("--mtp-num-layers") +
                       ": a hybrid model's MTP layers are given by " + flag +
                       " after '/' (e.g. 'M*M*/*E/*E') or --mtp-hybrid-override-pattern; without them "
                       "Megatron builds none, and none are priced");
  }
  auto dim = [&](const char* name, I64 current) {
    return f.has(name) ? parse_int(name, f.get(name)) : current;
  };
  m.mamba.state_dim = dim("--mamba-state-dim", m.mamba.state_dim);
  m.mamba.head_dim = dim("--mamba-head-dim", m.mamba.head_dim);
  m.mamba.num_groups = dim("--mamba-num-groups", m.mamba.num_groups);
  m.mamba.num_heads = dim("--mamba-num-heads", m.mamba.num_heads);
  if (f.has("--patch-tokenizer-type") && (pattern + mtp).find_first_not_of("M*-") == std::string::npos) {
    // Pai-Megatron-Patch (its --patch-tokenizer-type marks the run) builds its one hybrid model from its own
    // layer spec (megatron_patch/model/qwen3_next/layer_specs.py get_qwen3_next_layer_spec, the stack of
    // examples/qwen3_next): M is a gated delta net (GatedDeltaNetMixer in Megatron's Mamba slot), * gated
    // softmax attention with q / k norms (GatedSoftmaxAttention), - a MoE layer with a gated shared expert;
    // the delta nets' sizes are its Qwen3NextTransformerConfig's, not the --mamba-* flags.  Read as
    // Megatron's G / * / E layers of those sizes: Megatron's own reading (Mamba mixers, dense MLPs) priced
    // Qwen3-Next-80B-A3B as a 3.6 B model.
    if (!f.has("--num-experts"))
      throw InputError("--num-experts",
                       "is required: Pai-Megatron-Patch's hybrid model (examples/qwen3_next) "
                       "makes every '-' layer of " +
                           std::string(flag) + " a MoE layer");
    for (std::string* p : {&m.hybrid_pattern, &m.mtp_hybrid_pattern})
      for (char& c : *p) c = c == 'M' ? 'G' : c == '-' ? 'E' : c;
    m.gdn = GdnSpec{};  // 128-wide key / value heads, 16 / 32 of them, a 4-wide convolution
    m.attention_output_gate = true;
    m.qk_layernorm = true;
    m.moe.shared_expert_gate = true;
    warnings.push_back(std::string(flag) +
                       " with --patch-tokenizer-type: Pai-Megatron-Patch's Qwen3-Next layers "
                       "(M a gated delta net of 16 key / 32 value heads of 128, * gated attention with q / k "
                       "norms, - MoE with a gated shared expert), not Megatron's Mamba / MLP layers; the "
                       "attention gate's elementwise time is not priced");
    return;
  }
  if (f.has("--num-experts") && (pattern + mtp).find('E') == std::string::npos)
    warnings.push_back(
        "--num-experts " + f.get("--num-experts") + ": " + flag +
        " has no MoE layer (E), so Megatron builds no experts: its '-' layers are dense MLPs of "
        "--ffn-hidden-size, priced so (a custom entry point that builds MoE there is not read)");
}

/// LoRA (`--lora-rank R`, `--lora-target-modules` of linear_qkv / linear_proj / linear_fc1 / linear_fc2 — all
/// four by default, as Megatron-Bridge's LoRA; `--lora-alpha` scales the adapter's output and costs nothing;
/// `--lora-dropout` > 0 is said: its mask is not counted).
void read_lora(const Flags& f, ModelSpec& m, std::vector<std::string>& warnings) {
  if (!f.has("--lora-rank")) {
    for (const char* flag : {"--lora-target-modules", "--lora-alpha", "--lora-dropout"})
      if (f.has(flag)) throw InputError(flag, "is given without --lora-rank");
    return;
  }
  const I64 rank = parse_int("--lora-rank", f.get("--lora-rank"));
  if (rank <= 0) throw InputError("--lora-rank", "must be a positive integer, got " + f.get("--lora-rank"));
  if (rank > (1 << 16))
    throw InputError("--lora-rank", "is implausibly large (" + f.get("--lora-rank") + ")");
  m.lora.rank = static_cast<int>(rank);
  if (f.has("--lora-target-modules")) {
    const auto& table = LoraSpec::target_table();
    for (const auto& [name, flag] : table) m.lora.*flag = false;
    for (const auto& t : f.list("--lora-target-modules")) {
      const auto hit = std::find_if(table.begin(), table.end(), [&](const auto& e) { return t == e.first; });
      if (hit == table.end())
        throw InputError(
            "--lora-target-modules",
            "'" + t +
                "' is not a modelled target (linear_qkv, linear_proj, linear_fc1, linear_fc2; with "
                "multi-latent attention linear_q_down_proj, linear_q_up_proj, linear_q_proj, "
                "linear_kv_down_proj, linear_kv_up_proj)");
      m.lora.*(hit->second) = true;
    }
  }
  if (f.has("--lora-dropout") && f.float_or("--lora-dropout", 0.0) > 0)
    warnings.push_back("--lora-dropout: the adapters' dropout mask (1 byte an input element) is not counted");
}

/// Megatron's experimental attention variants (models/gpt/experimental_attention_variant_module_specs.py):
/// `--experimental-attention-variant gdn` (or its deprecated spelling gated_delta_net) puts a gated delta
/// net in the self-attention slot of the layers `--linear-attention-freq` marks (an int k: every layer but
/// the k-th, 2k-th, …; or a 0/1 list expression), sized by `--linear-*` (TransformerConfig's defaults).
/// GDN2, DeepSeek sparse attention and a hybrid pattern's G layers are refused by name.
void read_gated_delta_net(const Flags& f, ModelSpec& m, std::vector<std::string>& warnings) {
  const char* kSizes[] = {"--linear-key-head-dim", "--linear-value-head-dim", "--linear-num-key-heads",
                          "--linear-num-value-heads", "--linear-conv-kernel-dim"};
  // Megatron-LM of late 2025 named the variant `--linear-attention-type gated_delta_net` (its only choice).
  const bool legacy = f.has("--linear-attention-type");
  if (legacy && f.has("--experimental-attention-variant"))
    throw InputError("--linear-attention-type",
                     "and --experimental-attention-variant both name the attention variant; give one");
  const char* variant_flag = legacy ? "--linear-attention-type" : "--experimental-attention-variant";
  auto dim = [&](const char* name, I64 current) {
    return f.has(name) ? parse_int(name, f.get(name)) : current;
  };
  auto read_sizes = [&] {
    m.gdn.key_head_dim = dim(kSizes[0], m.gdn.key_head_dim);
    m.gdn.value_head_dim = dim(kSizes[1], m.gdn.value_head_dim);
    m.gdn.num_key_heads = dim(kSizes[2], m.gdn.num_key_heads);
    m.gdn.num_value_heads = dim(kSizes[3], m.gdn.num_value_heads);
    m.gdn.conv_kernel = dim(kSizes[4], m.gdn.conv_kernel);
  };
  // A hybrid pattern's G layers (hybrid_layer_specs.py gdn_layer: a TransformerLayer whose only block is a
  // GatedDeltaNet), sized by the same --linear-* flags; --linear-attention-freq is unused there.
  if (m.hybrid() && m.hybrid_pattern.find('G') != std::string::npos) {
    if (f.has(variant_flag) && f.get(variant_flag) == "gdn2")
      throw InputError(variant_flag, "gdn2 (GatedDeltaNet2) is not modelled; gdn is");
    read_sizes();
    return;
  }
  if (!f.has(variant_flag)) {
    for (const char* flag :
         {"--linear-attention-freq", "--linear-key-head-dim", "--linear-value-head-dim",
          "--linear-num-key-heads", "--linear-num-value-heads", "--linear-conv-kernel-dim"})
      if (f.has(flag))
        warnings.push_back(std::string(flag) +
                           " has no effect without --experimental-attention-variant gdn (as in Megatron)");
    return;
  }
  const std::string variant = f.get(variant_flag);
  if (legacy && variant != "gated_delta_net")
    throw InputError("--linear-attention-type",
                     "unknown type '" + variant + "' (Megatron's only choice: gated_delta_net)");
  if (variant == "dsa")
    throw InputError(
        "--experimental-attention-variant",
        "DeepSeek sparse attention (an indexer picks the keys each query attends) is not "
        "modelled: preflight prices softmax attention over the causal keys (or a sliding window), "
        "which would misprice these layers' time and memory");
  if (variant == "gdn2")
    throw InputError(
        "--experimental-attention-variant",
        "gdn2 (GatedDeltaNet2: its own projections and gates) is not modelled; gdn (gated_delta_net) is");
  if (variant != "gdn" && variant != "gated_delta_net")
    throw InputError("--experimental-attention-variant",
                     "unknown variant '" + variant + "' (Megatron's are gdn, gated_delta_net, gdn2, dsa)");
  if (!f.has("--linear-attention-freq"))
    throw InputError("--linear-attention-freq",
                     "must be set for linear gdn (Megatron asserts it): which layers are gated delta nets");
  if (m.hybrid())
    throw InputError(
        variant_flag,
        "names the layers of a GPT model (--linear-attention-freq); a hybrid model's gated delta nets "
        "are its pattern's G layers");
  std::vector<bool> layers =
      parse_layer_pattern("--linear-attention-freq", f.get("--linear-attention-freq"), m.num_layers, true);
  if (static_cast<int>(layers.size()) != m.num_layers)
    throw InputError("--linear-attention-freq", "gives " + std::to_string(layers.size()) +
                                                    " layers but the model has " +
                                                    std::to_string(m.num_layers));
  m.gdn_layers = std::move(layers);
  if (f.has("--deterministic-mode"))
    warnings.push_back(
        "--deterministic-mode: Megatron runs its torch reference of the gated delta rule (and F.conv1d) in "
        "place of the FLA kernels; their activations are priced as the kernels keep them, which the "
        "reference's "
        "autograd exceeds (Megatron's CI run: max allocated 2.47 GB where the kernels' account gives 1.80 "
        "GB)");
  read_sizes();
}

}  // namespace

const std::vector<FlagSpec>& model_flags() {
  static const std::vector<FlagSpec> flags = {
      {"--num-layers", Arity::One},
      {"--hidden-size", Arity::One},
      {"--ffn-hidden-size", Arity::One},
      {"--num-attention-heads", Arity::One},
      {"--num-query-groups", Arity::One},
      {"--group-query-attention", Arity::Switch},
      {"--attention-head-type", Arity::One},  // BigCode's fork: multihead | multiquery
      {"--num-key-value-heads", Arity::One},
      {"--kv-channels", Arity::One},
      {"--seq-length", Arity::One},
      {"--encoder-seq-length", Arity::One},
      {"--decoder-seq-length", Arity::One},
      {"--max-position-embeddings", Arity::One},
      {"--window-size", Arity::One},
      {"--window-attn-skip-freq", Arity::One},
      {"--swiglu", Arity::Switch},
      {"--squared-relu", Arity::Switch},
      {"--quick-geglu", Arity::Switch},
      {"--gated-linear-unit", Arity::Switch},
      {"--attention-output-gate", Arity::Switch},
      // LoRA (preflight's own flags: Megatron-LM has none; Megatron-Bridge's LoRA(dim, target_modules, alpha,
      // dropout) under the same names).
      {"--lora-rank", Arity::One},
      {"--lora-target-modules", Arity::Many},
      {"--lora-alpha", Arity::One},
      {"--lora-dropout", Arity::One},
      {"--untie-embeddings-and-output-weights", Arity::Switch},
      {"--disable-bias-linear", Arity::Switch},
      {"--add-qkv-bias", Arity::Switch},
      {"--qk-layernorm", Arity::Switch},
      {"--mtp-num-layers", Arity::One},
      {"--mtp-hybrid-override-pattern", Arity::One},
      {"--mtp-use-repeated-layer", Arity::Switch},
      {"--moe-latent-size", Arity::One},
      {"--mtp-loss-scaling-factor", Arity::One},
      {"--normalization", Arity::One},
      {"--position-embedding-type", Arity::One},
      {"--use-rotary-position-embeddings", Arity::Switch},
      {"--no-position-embedding", Arity::Switch},
      {"--attention-dropout", Arity::One},
      {"--hidden-dropout", Arity::One},
      {"--vocab-size", Arity::One},
      {"--padded-vocab-size", Arity::One},
      {"--patch-tokenizer-type", Arity::One},
      // Vision models (refused when they differ from Megatron's defaults, which every argument dump lists).
      {"--img-h", Arity::One},
      {"--img-w", Arity::One},
      {"--patch-dim", Arity::One},
      {"--vision-model-type", Arity::One},
      // Pai-Megatron-Patch: tokens added to the tokenizer's; the --load checkpoint's config.json vocab_size
      // and a --padded-vocab-size already hold them.
      {"--extra-vocab-size", Arity::One},
      {"--load", Arity::One},
      {"--pretrained-checkpoint", Arity::One},
      {"--vocab-file", Arity::One},
      {"--merge-file", Arity::One},
      {"--tokenizer-type", Arity::One},
      {"--tokenizer-model", Arity::One},
      {"--tokenizer-name-or-path", Arity::One},
      {"--tokenizer-file", Arity::One},  // BigCode's fork: TokenizerFromFile(WithFIM), a tokenizer.json
      {"--pad-vocab-size-to", Arity::One},
      {"--make-vocab-size-divisible-by", Arity::One},
      {"--megatron-version", Arity::One},
      {"--num-experts", Arity::Many},  // Megatron-DeepSpeed: a list, one count per MoE layer
      {"--topk", Arity::One},
      {"--expert-interval", Arity::One},
      {"--mlp-type", Arity::One},
      {"--moe-train-capacity-factor", Arity::One},
      {"--disable-moe-token-dropping", Arity::Switch},
      {"--deepspeed", Arity::Switch},
      {"--moe-router-topk", Arity::One},
      {"--moe-ffn-hidden-size", Arity::One},
      {"--moe-shared-expert-intermediate-size", Arity::One},
      {"--moe-shared-expert-gate", Arity::Switch},
      {"--moe-layer-freq", Arity::One},
      {"--moe-pad-expert-input-to-capacity", Arity::Switch},
      {"--moe-expert-capacity-factor", Arity::One},
      {"--moe-router-num-groups", Arity::One},
      {"--moe-router-group-topk", Arity::One},
      {"--multi-latent-attention", Arity::Switch},
      {"--q-lora-rank", Arity::One},
      {"--kv-lora-rank", Arity::One},
      {"--qk-head-dim", Arity::One},
      {"--qk-pos-emb-head-dim", Arity::One},
      {"--v-head-dim", Arity::One},
      // Hybrid (Mamba) models.
      {"--hybrid-layer-pattern", Arity::One},
      {"--hybrid-override-pattern", Arity::One},
      {"--is-hybrid-model", Arity::Switch},
      {"--hybrid-attention-ratio", Arity::One},
      {"--hybrid-mlp-ratio", Arity::One},
      {"--mamba-state-dim", Arity::One},
      {"--mamba-head-dim", Arity::One},
      {"--mamba-num-groups", Arity::One},
      {"--mamba-num-heads", Arity::One},
      // Gated delta net layers (Qwen3-Next style).
      {"--experimental-attention-variant", Arity::One},
      {"--linear-attention-type", Arity::One},
      {"--linear-attention-freq", Arity::One},
      {"--linear-key-head-dim", Arity::One},
      {"--linear-value-head-dim", Arity::One},
      {"--linear-num-key-heads", Arity::One},
      {"--linear-num-value-heads", Arity::One},
      {"--linear-conv-kernel-dim", Arity::One},
      {"--deterministic-mode", Arity::Switch},
      // Megatron's MoE flags that change neither memory nor time as priced (loss terms, routing numerics,
      // logging, upcycling at load): read, so that the MoE flags left unread are named.
      {"--moe-aux-loss-coeff", Arity::Many},
      {"--moe-z-loss-coeff", Arity::One},
      {"--moe-per-layer-logging", Arity::Switch},
      {"--moe-router-load-balancing-type", Arity::Many},
      {"--moe-router-pre-softmax", Arity::Switch},
      {"--moe-router-topk-scaling-factor", Arity::One},
      {"--moe-router-dtype", Arity::One},
      {"--moe-router-bias-update-rate", Arity::One},
      {"--moe-input-jitter-eps", Arity::One},
      {"--moe-token-drop-policy", Arity::One},
      {"--moe-use-upcycling", Arity::Switch},
      {"--moe-upcycling-granularity", Arity::One},
      {"--moe-router-score-function", Arity::One},
      {"--moe-router-enable-expert-bias", Arity::Switch},
      {"--moe-mlp-glu-interleave-size", Arity::One},
      {"--moe-pad-experts-for-cuda-graph-inference", Arity::Switch},
      // The permutation and the router are priced as their fused kernels (what the published runs use).
      {"--moe-permute-fusion", Arity::Switch},
      {"--moe-router-fusion", Arity::Switch},
      // Megatron-DeepSpeed's: its MoE loss term, optimizer groups and evaluation-time capacity.
      {"--moe-loss-coeff", Arity::One},
      {"--create-moe-param-group", Arity::Switch},
      {"--moe-eval-capacity-factor", Arity::One},
      // MegaBlocks's Megatron fork (databricks/megablocks exp/*: megablocks/layers/arguments.py names them).
      {"--moe-num-experts", Arity::One},
      {"--moe-top-k", Arity::One},
      {"--moe-capacity-factor", Arity::One},
      {"--moe-loss-weight", Arity::One},
      {"--moe-jitter-eps", Arity::One},
      {"--moe-lbl-in-fp32", Arity::Switch},
      {"--moe-normalize-expert-weights", Arity::One},
      {"--mlp-impl", Arity::One},
      {"--memory-optimized-mlp", Arity::Switch},
      {"--moe-weight-parallelism", Arity::Switch},
      {"--moe-expert-model-parallelism", Arity::Switch},
      {"--expert-model-parallelism", Arity::Switch},
      {"--uniform-expert-assignment", Arity::Switch},
      // Pai-Megatron-Patch's (and ROCm/Megatron-LM's DeepSeek scripts') shared expert
      // (translate_pai_shared_expert).
      {"--enable-shared-expert", Arity::Switch},
      {"--num-shared-experts", Arity::One},
      {"--shared-moe-ffn-hidden-size", Arity::One},
  };
  return flags;
}

void translate_pai_shared_expert(std::map<std::string, std::string>& seen,
                                 std::vector<std::string>& warnings) {
  const bool on = seen.count("--enable-shared-expert") > 0;
  const bool n_given = seen.count("--num-shared-experts") > 0;
  if (!on && !n_given && !seen.count("--shared-moe-ffn-hidden-size")) return;
  std::optional<I64> from_count;
  if (n_given) {
    const I64 n = parse_int("--num-shared-experts", seen.at("--num-shared-experts"));
    if (n < 0) throw InputError("--num-shared-experts", "must not be negative");
    if (!seen.count("--moe-ffn-hidden-size"))
      throw InputError("--num-shared-experts",
                       "counts shared experts of --moe-ffn-hidden-size, which is not given");
    from_count = n * parse_int("--moe-ffn-hidden-size", seen.at("--moe-ffn-hidden-size"));
  }
  if (seen.count("--moe-shared-expert-intermediate-size")) {
    // What Pai's and ROCm's scripts pass with the switch: Megatron's own size, taken as is.
    const I64 size =
        parse_int("--moe-shared-expert-intermediate-size", seen.at("--moe-shared-expert-intermediate-size"));
    if (from_count && *from_count != size)
      warnings.push_back("--num-shared-experts " + seen.at("--num-shared-experts") +
                         " × --moe-ffn-hidden-size is " + std::to_string(*from_count) +
                         ", not --moe-shared-expert-intermediate-size " + std::to_string(size) +
                         ": the latter is the shared expert's FFN, as Megatron builds it");
    return;
  }
  if (seen.count("--shared-moe-ffn-hidden-size")) {  // Pai's own spelling of the size
    seen["--moe-shared-expert-intermediate-size"] = seen.at("--shared-moe-ffn-hidden-size");
    return;
  }
  if (from_count) {
    if (*from_count > 0) seen["--moe-shared-expert-intermediate-size"] = std::to_string(*from_count);
    return;
  }
  throw InputError("--enable-shared-expert",
                   "gives no size of the shared expert: pass --moe-shared-expert-intermediate-size (or "
                   "--num-shared-experts with --moe-ffn-hidden-size)");
}

void translate_megablocks_moe(std::map<std::string, std::string>& seen, std::vector<std::string>& warnings) {
  if (!seen.count("--moe-num-experts")) {
    for (const char* only : {"--moe-top-k", "--moe-capacity-factor", "--moe-expert-model-parallelism",
                             "--expert-model-parallelism", "--moe-weight-parallelism"})
      if (seen.count(only))
        throw InputError(only, "is MegaBlocks's flag of its experts: given without --moe-num-experts");
    return;
  }
  if (seen.count("--num-experts"))
    throw InputError("--moe-num-experts",
                     "given with --num-experts: one dialect or the other (MegaBlocks's fork, or Megatron's)");
  for (const char* megatron :
       {"--moe-router-topk", "--moe-expert-capacity-factor", "--expert-model-parallel-size"})
    if (seen.count(megatron))
      throw InputError(megatron,
                       "given with MegaBlocks's --moe-num-experts: use that fork's flags "
                       "(--moe-top-k, --moe-capacity-factor, --moe-expert-model-parallelism)");
  const I64 experts = parse_int("--moe-num-experts", seen.at("--moe-num-experts"));
  if (experts <= 1) return;  // MegaBlocks's default 1: the dense MLP as one expert
  seen["--num-experts"] = std::to_string(experts);
  // MegaBlocks's Arguments: top 1 by default (Megatron's router takes 2).
  seen["--moe-router-topk"] = seen.count("--moe-top-k") ? seen.at("--moe-top-k") : "1";
  std::string how = "dropless (dMoE)";
  if (seen.count("--moe-capacity-factor")) {
    // megablocks.layers.moe.MoE: each expert's tokens padded or cut to its capacity, one batched GEMM.
    seen["--moe-expert-capacity-factor"] = seen.at("--moe-capacity-factor");
    seen["--moe-pad-expert-input-to-capacity"] = "";
    how = "capacity factor " + seen.at("--moe-capacity-factor") + ", padded to capacity (MoE)";
  }
  // One kernel for every local expert (block-sparse or grouped), tokens exchanged by all-to-all.
  seen["--moe-grouped-gemm"] = "";
  if (!seen.count("--moe-token-dispatcher-type")) seen["--moe-token-dispatcher-type"] = "alltoall";
  std::string glu;
  if (seen.count("--mlp-type")) {
    const std::string t = seen.at("--mlp-type");
    if (t == "glu") {
      // megablocks.layers.glu: w1, v1, w2 with the GeLU of Arguments.activation_fn — SwiGLU's shapes.
      if (!seen.count("--swiglu")) seen["--swiglu"] = "";
      glu = "; --mlp-type glu: gated experts (GeLU-gated), priced with SwiGLU's shapes";
    } else if (t != "mlp") {
      throw InputError("--mlp-type", "'" + t + "' is not one of MegaBlocks's expert MLPs (mlp, glu)");
    }
    seen.erase("--mlp-type");
  }
  if (seen.count("--mlp-impl") && seen.at("--mlp-impl") != "sparse" && seen.at("--mlp-impl") != "grouped")
    throw InputError("--mlp-impl",
                     "'" + seen.at("--mlp-impl") + "' is not one of MegaBlocks's (sparse, grouped)");
  warnings.push_back(
      "MegaBlocks's experts (--moe-num-experts " + std::to_string(experts) + ", top " +
      seen.at("--moe-router-topk") + ", " + how +
      "): priced as Megatron's MoE in every layer, the experts as grouped GEMMs of the FFN size "
      "and the tokens exchanged by all-to-all" +
      glu);
  if (seen.count("--moe-weight-parallelism"))
    warnings.push_back(
        "--moe-weight-parallelism: MegaBlocks's sharding of the experts' weights over a weight-parallel "
        "group is not modelled: the experts' memory here is high");
  if (seen.count("--memory-optimized-mlp"))
    warnings.push_back(
        "--memory-optimized-mlp: MegaBlocks recomputes the experts' activation in backward; not modelled: "
        "activation memory here is high");
  for (const char* q :
       {"--quantize-inputs-num-bits", "--quantize-rematerialize-num-bits", "--quantize-scatter-num-bits"})
    if (seen.count(q))
      warnings.push_back(std::string(q) + ": MegaBlocks's quantized saved tensors are not modelled");
}

void megablocks_expert_parallel(const Flags& f, MegatronConfig& cfg) {
  if (!f.has("--moe-num-experts") || !cfg.model.moe.enabled()) return;
  Strategy& st = cfg.strategy;
  if (!f.has("--moe-expert-model-parallelism") && !f.has("--expert-model-parallelism")) {
    cfg.warnings.push_back("MegaBlocks without --moe-expert-model-parallelism: every rank holds all " +
                           std::to_string(cfg.model.moe.num_experts) + " experts");
    return;
  }
  // megablocks' MegatronHelper: expert_parallel_group = the data-parallel group.
  if (st.tp <= 0 || st.pp <= 0 || st.cp <= 0 || st.world_size % (st.tp * st.pp * st.cp) != 0)
    return;  // validate() says what is wrong
  const int dp = st.dp();
  const int experts = cfg.model.moe.num_experts;
  if (experts % dp == 0) {
    st.ep = dp;
  } else if (dp % experts == 0) {
    st.ep = experts;
    cfg.warnings.push_back("MegaBlocks shards each expert's FFN over the " + std::to_string(dp / experts) +
                           " data-parallel ranks beyond the " + std::to_string(experts) +
                           " experts; priced as Megatron's replicas of them (expert parallel " +
                           std::to_string(experts) + "): the experts' memory here is high");
  } else {
    throw InputError("--moe-expert-model-parallelism",
                     "the data-parallel size " + std::to_string(dp) + " and the " + std::to_string(experts) +
                         " experts do not divide one another (MegaBlocks asserts it)");
  }
}

void read_architecture(const Flags& f, const ModelSpec* base, ModelSpec& m, Strategy& st,
                       std::vector<std::string>& warnings) {
  if (f.has("--megatron-version")) st.megatron_version = megatron_checkout_date(f.get("--megatron-version"));
  auto model_int = [&](const char* flag, I64 current) -> I64 {
    if (f.has(flag)) return parse_int(flag, f.get(flag));
    if (base) return current;
    throw InputError(flag, "is required (the analysis cannot guess this size)");
  };
  // Megatron's validate_args: --seq-length, else --encoder-seq-length, is the sequence.  An encoder-decoder
  // launch (T5: an encoder and a decoder sequence; its layer counts are refused in parse_megatron_args) is
  // not modelled.
  if (f.has("--decoder-seq-length") && f.has("--encoder-seq-length"))
    throw InputError(
        "--decoder-seq-length",
        "an encoder-decoder model (an encoder sequence " + f.get("--encoder-seq-length") +
            " and a decoder sequence " + f.get("--decoder-seq-length") +
            ": Megatron's T5, pretrain_t5.py, or a vision-language model's encoder and decoder) is "
            "not modelled: preflight analyses decoder-only (GPT, Llama, MoE, hybrid) and "
            "encoder-only (BERT) launches");
  read_hybrid_pattern(f, m, warnings);
  if (!m.hybrid()) m.num_layers = static_cast<int>(model_int("--num-layers", m.num_layers));
  I64 old_hidden = m.hidden_size;
  int old_heads = m.num_attention_heads;
  m.hidden_size = model_int("--hidden-size", m.hidden_size);
  m.num_attention_heads = static_cast<int>(model_int("--num-attention-heads", m.num_attention_heads));
  if (base && f.has("--num-layers") && !m.moe.layer_is_moe.empty()) {
    // A cut of a preset keeps its leading pattern (e.g. DeepSeek's first dense layers).
    m.moe.layer_is_moe.resize(m.num_layers, true);
  }
  st.seq_length = f.has("--seq-length") || !f.has("--encoder-seq-length")
                      ? f.require_int("--seq-length")
                      : parse_int("--encoder-seq-length", f.get("--encoder-seq-length"));

  // `--quick-geglu` (GPT-OSS): gated like SwiGLU (fc1 of 2·ffn), x·σ(1.702·x) in place of x·σ(x) — the same
  // kernels and bytes, so it is priced as SwiGLU; Megatron keeps the 4·h default ffn for it.
  // `--gated-linear-unit` alone (TransformerConfig.gated_linear_unit with the default GeLU: GeGLU) is gated
  // the same way and priced so; Megatron sizes the default ffn for --swiglu only.
  if (f.has("--swiglu") || f.has("--quick-geglu") || f.has("--gated-linear-unit"))
    m.activation = Activation::SwiGLU;
  else if (f.has("--squared-relu"))
    m.activation = Activation::SquaredReLU;
  bool geometry_changed = !base || old_hidden != m.hidden_size || old_heads != m.num_attention_heads;
  if (f.has("--ffn-hidden-size")) {
    m.ffn_hidden_size = parse_int("--ffn-hidden-size", f.get("--ffn-hidden-size"));
  } else if (!base || old_hidden != m.hidden_size || f.has("--swiglu")) {
    const bool four_h = f.has("--quick-geglu") || (f.has("--gated-linear-unit") && !f.has("--swiglu"));
    m.ffn_hidden_size =
        m.gated() && !four_h ? static_cast<I64>((4.0 * m.hidden_size * 2 / 3) / 64) * 64 : 4 * m.hidden_size;
  }
  if (f.has("--kv-channels"))
    m.kv_channels = parse_int("--kv-channels", f.get("--kv-channels"));
  else if (geometry_changed)
    m.kv_channels = m.num_attention_heads > 0 ? m.hidden_size / m.num_attention_heads : 0;
  if (f.has("--group-query-attention")) {
    m.num_query_groups = static_cast<int>(f.int_or("--num-query-groups", 1));
  } else if (f.has("--num-key-value-heads")) {
    // Megatron-DeepSpeed's GQA flag (megatron/arguments.py: default None → num_attention_heads).
    m.num_query_groups = static_cast<int>(parse_int("--num-key-value-heads", f.get("--num-key-value-heads")));
  } else if (f.has("--attention-head-type")) {
    // BigCode's Megatron-LM fork (SantaCoder, StarCoder): multi-query attention, one key/value head.
    const std::string& t = f.get("--attention-head-type");
    if (t != "multiquery" && t != "multihead")
      throw InputError("--attention-head-type",
                       "expects multihead or multiquery (BigCode's fork), got '" + t + "'");
    m.num_query_groups = t == "multiquery" ? 1 : m.num_attention_heads;
    // With tensor parallelism the fork keeps the one key/value head whole on every tp rank (its
    // projection replicated): per rank that is one key/value head of tp — what is priced.
    const I64 tp = f.int_or("--tensor-model-parallel-size", 1);
    if (t == "multiquery" && tp > 1) {
      m.num_query_groups = static_cast<int>(tp);
      warnings.push_back(
          "--attention-head-type multiquery with tp " + std::to_string(tp) +
          ": BigCode's fork replicates the key/value head on every tp rank; priced per rank as "
          "one key/value head a rank (the model's total parameter count counts it " +
          std::to_string(tp) + " times)");
    }
  } else if (!base || old_heads != m.num_attention_heads) {
    m.num_query_groups = m.num_attention_heads;
    if (f.has("--num-query-groups"))
      warnings.push_back("--num-query-groups " + f.get("--num-query-groups") +
                         " has no effect without --group-query-attention (Megatron ignores it too)");
  }
  if (f.has("--max-position-embeddings"))
    m.max_position_embeddings = parse_int("--max-position-embeddings", f.get("--max-position-embeddings"));
  else if (!base || m.max_position_embeddings <= 0)
    m.max_position_embeddings = st.seq_length;
  if (f.has("--normalization")) {
    const auto& n = f.get("--normalization");
    // Megatron-LM spells RMSNorm/LayerNorm; Megatron-DeepSpeed rmsnorm/layernorm.
    if (n == "RMSNorm" || n == "rmsnorm")
      m.normalization = Normalization::RMSNorm;
    else if (n == "LayerNorm" || n == "layernorm")
      m.normalization = Normalization::LayerNorm;
    else
      throw InputError("--normalization", "unknown normalization '" + n + "' (LayerNorm or RMSNorm)");
  }
  if (f.has("--position-embedding-type")) {
    const auto& p = f.get("--position-embedding-type");
    if (p == "learned_absolute")
      m.position_embedding = PositionEmbedding::LearnedAbsolute;
    else if (p == "rope" || p == "mrope" || p == "yarn" || p == "rotary")  // rotary: epfLLM Megatron-LLM's
      m.position_embedding = PositionEmbedding::Rope;
    else if (p == "none" || p == "relative")
      m.position_embedding = PositionEmbedding::None;
    else if (p == "alibi") {  // Megatron-DeepSpeed (BLOOM): a per-head bias on the scores, no embedding table
      m.position_embedding = PositionEmbedding::None;
      warnings.push_back(
          "--position-embedding-type alibi: no position embedding table; the scores' ALiBi bias "
          "is priced as plain attention (its kernels add it per head)");
    } else
      throw InputError(
          "--position-embedding-type",
          "unknown type '" + p + "' (learned_absolute, rope, mrope, yarn, relative, alibi or none)");
  } else if (f.has("--use-rotary-position-embeddings")) {
    m.position_embedding = PositionEmbedding::Rope;
  }
  if (f.has("--no-position-embedding")) m.position_embedding = PositionEmbedding::None;
  if (f.has("--window-size")) {
    // Megatron-core's (left, right) attention window: "(4096,0)", "4096,0"; left -1 = unlimited.  A
    // causal model attends the query and `left` keys before it.
    std::string w = f.get("--window-size");
    std::erase_if(w, [](char ch) { return ch == '(' || ch == ')' || ch == ' '; });
    std::string left = w.substr(0, w.find(','));
    I64 l = left == "-1" ? 0 : parse_int("--window-size", left);
    if (l < 0)
      throw InputError("--window-size",
                       "expected (left, right) with left ≥ -1, got '" + f.get("--window-size") + "'");
    m.sliding_window = l > 0 ? l + 1 : 0;
  }
  if (f.has("--window-attn-skip-freq") && m.sliding_window > 0)  // its length is checked by ModelSpec::validate
    m.layer_has_window =
        parse_layer_pattern("--window-attn-skip-freq", f.get("--window-attn-skip-freq"), m.num_layers, true);
  read_gated_delta_net(f, m, warnings);
  if (f.has("--untie-embeddings-and-output-weights")) m.untie_embeddings_and_output_weights = true;
  if (f.has("--disable-bias-linear")) m.add_bias_linear = false;
  if (f.has("--add-qkv-bias")) m.add_qkv_bias = true;
  if (f.has("--qk-layernorm")) m.qk_layernorm = true;
  if (f.has("--attention-output-gate")) {
    m.attention_output_gate = true;
    warnings.push_back(
        "--attention-output-gate: the gate's projection (linear_qkv wider by heads × kv_channels) and what "
        "the "
        "gating keeps (the attention output and the gate, 2 × tokens × heads × kv_channels × 2 bytes a layer "
        "and "
        "micro batch) are counted; the elementwise gating's time is not priced");
  }
  read_lora(f, m, warnings);
  if (f.has("--mtp-num-layers") && !m.hybrid())  // a hybrid model's come from its pattern
    m.mtp_num_layers = static_cast<int>(parse_int("--mtp-num-layers", f.get("--mtp-num-layers")));
  if (f.has("--mtp-use-repeated-layer")) m.mtp_repeated_layer = true;
  m.attention_dropout = f.float_or("--attention-dropout", base ? m.attention_dropout : 0.1);
  m.hidden_dropout = f.float_or("--hidden-dropout", base ? m.hidden_dropout : 0.1);
  m.make_vocab_size_divisible_by = static_cast<int>(
      f.int_or("--make-vocab-size-divisible-by", base ? m.make_vocab_size_divisible_by : 128));
}

void read_vocabulary(const Flags& f, const ModelSpec* base, ModelSpec& m,
                     std::vector<std::string>& warnings) {
  // Vocabulary: a readable vocab file wins, then --vocab-size, then the tokenizer's known size.
  // Without --tokenizer-type a --vocab-file means GPT-2's BPE — also when the script left it empty but gave
  // a --merge-file flag too (Megatron-LM's examples/gpt3 script run without its positional arguments).
  auto valueless = [&](const std::string& flag) {
    return std::any_of(warnings.begin(), warnings.end(),
                       [&](const std::string& w) { return w.rfind(flag + " has no value", 0) == 0; });
  };
  std::string tok_type = f.has("--tokenizer-type") ? f.get("--tokenizer-type")
                         : (f.has("--vocab-file") || (valueless("--vocab-file") &&
                                                      (f.has("--merge-file") || valueless("--merge-file"))))
                             ? "GPT2BPETokenizer"
                             : "";
  I64 vocab = 0;
  if (f.has("--vocab-file") && std::filesystem::is_regular_file(f.get("--vocab-file"))) {
    vocab = count_vocab_file(f.get("--vocab-file"));
  }
  // A Hugging Face tokenizer: Megatron's HuggingFaceTokenizer or SFTTokenizer (--tokenizer-model; the latter
  // len() of AutoTokenizer.from_pretrained, core/tokenizers/text/libraries/sft_tokenizer.py, Megatron-LM's
  // ModelOpt training scripts) or Megatron-DeepSpeed's PretrainedFromHF (--tokenizer-name-or-path), a local
  // folder or a Hub name.
  const char* hf_flag = tok_type == "HuggingFaceTokenizer" || tok_type == "SFTTokenizer" ? "--tokenizer-model"
                        : tok_type == "PretrainedFromHF" ? "--tokenizer-name-or-path"
                                                         : nullptr;
  const bool hf = hf_flag && f.has(hf_flag);
  const bool sentencepiece = tok_type == "SentencePieceTokenizer" ||
                             tok_type == "GPTSentencePieceTokenizer" || tok_type == "Llama2Tokenizer";
  if (vocab == 0 && sentencepiece && f.has("--tokenizer-model") &&
      std::filesystem::is_regular_file(f.get("--tokenizer-model"))) {
    vocab = sentencepiece_piece_count(f.get("--tokenizer-model"));
    if (tok_type == "SentencePieceTokenizer")
      warnings.push_back(
          "vocabulary " + std::to_string(vocab) + ": the pieces of --tokenizer-model " +
          f.get("--tokenizer-model") +
          " (Megatron-core's SentencePieceTokenizer; the legacy one added <CLS>, <SEP>, <EOD>, "
          "<MASK> and extra ids the model lacks — pass --vocab-size for that count)");
  }
  if (vocab == 0 && hf) {
    // A local tokenizer folder: Megatron's HuggingFaceTokenizer counts its tokenizer (len(), added tokens
    // included) whatever --vocab-size says, and pads that.
    const std::string& t = f.get(hf_flag);
    if (const I64 n = hf_tokenizer_size(t); n > 0) {
      vocab = n;
      warnings.push_back("vocabulary " + std::to_string(n) + " of " + hf_flag + " " + t +
                         " (its tokenizer.json with the added tokens, as Megatron's HuggingFaceTokenizer "
                         "counts)");
    }
  }
  // BigCode's Megatron-LM fork: TokenizerFromFile / TokenizerFromFileWithFIM read a Hugging Face
  // tokenizer.json
  // (--tokenizer-file): tokenizers' get_vocab_size(), the added tokens included.
  if (vocab == 0 && tok_type.rfind("TokenizerFromFile", 0) == 0 && f.has("--tokenizer-file")) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(f.get("--tokenizer-file"), ec)) {
      vocab = hf_tokenizer_size(f.get("--tokenizer-file"));
      warnings.push_back("vocabulary " + std::to_string(vocab) + " of --tokenizer-file " +
                         f.get("--tokenizer-file") + " (its tokens with the added ones, as " + tok_type +
                         " counts)");
    }
  }
  if (vocab == 0 && f.has("--vocab-size")) {
    vocab = parse_int("--vocab-size", f.get("--vocab-size"));
    bool eod = false;
    if (tok_type == "NullTokenizer") {
      // Megatron-LM's NullTokenizer had vocab_size = --vocab-size + 1 (an appended EOD token) until
      // 2026-04-22; since then it is exactly --vocab-size.
      if (f.has("--megatron-version")) {
        eod = megatron_checkout_date(f.get("--megatron-version")) < "2026-04-22";
      } else {
        warnings.push_back("NullTokenizer: vocabulary = --vocab-size " + f.get("--vocab-size") +
                           ", as Megatron-LM since 2026-04-22 (before: one more, the EOD token); "
                           "--megatron-version YYYY-MM-DD gives the date of an older checkout");
      }
      if (eod) vocab += 1;
    }
    if (f.has("--vocab-file") || f.has("--tokenizer-model"))
      warnings.push_back("tokenizer file not found on this machine; using --vocab-size " +
                         f.get("--vocab-size") + (eod ? " + 1 (NullTokenizer EOD)" : ""));
  }
  if (vocab == 0 && f.has("--padded-vocab-size")) {
    // Pai-Megatron-Patch passes the padded size itself (its Qwen / Llama scripts): taken as is, not padded again.
    vocab = parse_int("--padded-vocab-size", f.get("--padded-vocab-size"));
    m.make_vocab_size_divisible_by = 1;
  }
  if (vocab == 0 && base && m.vocab_size > 0) vocab = m.vocab_size;
  for (const char* flag : {"--load", "--pretrained-checkpoint"}) {
    if (vocab != 0 || !f.has(flag)) continue;
    if (const I64 v = checkpoint_vocab_size(f.get(flag)); v > 0) {
      vocab = v;
      m.make_vocab_size_divisible_by = 1;  // the checkpoint's embedding size, padded already
      warnings.push_back(std::string("vocabulary ") + std::to_string(v) + " from " + flag + " " +
                         f.get(flag) + "/config.json (the checkpoint's embedding size)");
    }
  }
  if (vocab == 0 && hf) {
    // A Hugging Face tokenizer named by a local model folder or a repository id we know: the model's
    // config.json vocab_size (its embedding size, padded already; the tokenizer's own count can be a little
    // smaller, e.g. Qwen3's 151669 of 151936).
    const std::string& t = f.get(hf_flag);
    I64 v = checkpoint_vocab_size(t);
    std::string from = t + "/config.json";
    if (const std::string cached = v == 0 ? hf_cached_snapshot(t) : std::string(); !cached.empty()) {
      v = checkpoint_vocab_size(cached);  // the repository's config.json in the Hugging Face cache
      from = cached + "/config.json (the Hugging Face cache)";
    }
    if (const std::string preset = preset_of_repository(t); v == 0 && !preset.empty()) {
      v = preset_model(preset).vocab_size;
      from = "the " + preset + " preset (" + t + "'s config.json)";
    }
    if (const std::string preset = v == 0 ? preset_of_reupload(t) : std::string(); !preset.empty()) {
      // a mirror of a gated repository (NousResearch/Meta-Llama-3-8B): the original's tokenizer
      v = preset_model(preset).vocab_size;
      from = "the " + preset + " preset (" + t + " taken as a re-upload of its repository, by name)";
    }
    if (const auto known = v == 0 ? tokenizer_vocab_of_repository(t) : std::nullopt; known) {
      // a repository that is no preset but whose embedding size is published (Qwen3-0.6B, Nemotron-H)
      v = known->vocab_size;
      from = known->repo + (known->by_name ? ", of which " + t + " is taken as a re-upload by name" : "") +
             " (" + known->source + ")";
    }
    if (v > 0) {
      vocab = v;
      m.make_vocab_size_divisible_by = 1;
      warnings.push_back("vocabulary " + std::to_string(v) + " of " + hf_flag + " " + t + " from " + from +
                         ": the model's embedding size; pass --vocab-size for the tokenizer's own");
    }
  }
  if (vocab == 0 && tok_type == "TikTokenizer") {
    // Megatron's TikTokenizer is --vocab-size or 2^17 whatever its file holds (the file must reach it):
    // core/tokenizers/text/libraries/tiktoken_tokenizer.py DEFAULT_TIKTOKEN_MAX_VOCAB, and the legacy
    // training/tokenizer/tokenizer.py CustomTikTokenizer's fallback.
    vocab = I64{1} << 17;
  }
  if (vocab == 0 && known_tokenizer_vocab_size(tok_type) > 0) {
    vocab = known_tokenizer_vocab_size(tok_type);
    std::string from = f.has("--vocab-file") ? "vocab file '" + f.get("--vocab-file") + "' not found"
                       : f.has("--tokenizer-model")
                           ? "tokenizer model '" + f.get("--tokenizer-model") + "' not found"
                           : "no vocab file given";
    warnings.push_back(from + "; using the " + tok_type + " vocabulary size " + std::to_string(vocab));
  }
  if (f.has("--pad-vocab-size-to")) {
    // Megatron-DeepSpeed (BigScience's BLOOM scripts): the embedding padded to exactly this size, whatever
    // the tokenizer (which must not exceed it).
    const I64 padded = parse_int("--pad-vocab-size-to", f.get("--pad-vocab-size-to"));
    if (padded <= 0) throw InputError("--pad-vocab-size-to", "must be a positive vocabulary size");
    if (vocab > padded)
      throw InputError("--pad-vocab-size-to", std::to_string(padded) + " is smaller than the tokenizer's " +
                                                  std::to_string(vocab) + " (Megatron-DeepSpeed asserts it)");
    vocab = padded;
    m.make_vocab_size_divisible_by = 1;
  }
  if (vocab == 0 && f.has("--patch-tokenizer-type")) {
    // Pai-Megatron-Patch's Llama and Qwen tokenizers (megatron_patch/tokenizer/__init__.py: _LLama2Tokenizer
    // / _LLama3Tokenizer the tokenizer's vocab_size, _Qwen2Tokenizer / _Qwen2VLTokenizer / _Qwen3Tokenizer
    // len(encoder) — the base vocabulary without the added special tokens — plus --extra-vocab-size) are one
    // family's fixed vocabulary: Llama 2's and Mixtral's 32000, Llama 3's 128000 (its 256 special tokens are
    // the scripts' --extra-vocab-size 256), Qwen's BPE of 151643 (+ 293 = 151936, + 421 = 152064 for the
    // 72B, as its scripts give them).  DeepSeek's differ by version and are read from the checkpoint.
    const std::string& pt = f.get("--patch-tokenizer-type");
    const bool qwen = pt == "Qwen2Tokenizer" || pt == "Qwen2VLTokenizer" || pt == "Qwen3Tokenizer";
    const I64 family = pt == "LLama3Tokenizer"                                 ? 128000
                       : (pt == "LLama2Tokenizer" || pt == "MixtralTokenizer") ? 32000
                       : qwen                                                  ? 151643
                                                                               : 0;
    if (family > 0) {
      const I64 extra = f.int_or("--extra-vocab-size", 0);
      if (extra < 0) throw InputError("--extra-vocab-size", "must not be negative");
      vocab = family + extra;
      m.make_vocab_size_divisible_by = 1;
      warnings.push_back("vocabulary " + std::to_string(vocab) + ": --patch-tokenizer-type " + pt +
                         " is Pai-Megatron-Patch's tokenizer of that family (" + std::to_string(family) +
                         " + --extra-vocab-size " + std::to_string(extra) +
                         "); the --load checkpoint's config.json is not read here");
    }
  }
  if (vocab == 0 && f.has("--patch-tokenizer-type"))
    // Pai-Megatron-Patch (megatron_patch/tokenizer): the Hugging Face tokenizer of the --load checkpoint,
    // plus --extra-vocab-size; the checkpoint's config.json vocab_size is that sum.
    throw InputError(
        "--vocab-size",
        "cannot determine the vocabulary size: --patch-tokenizer-type " + f.get("--patch-tokenizer-type") +
            " (Pai-Megatron-Patch) reads the tokenizer of the --load "
            "checkpoint" +
            (f.has("--load") ? " (" + f.get("--load") + "/config.json " +
                                   (std::filesystem::is_regular_file(std::filesystem::path(f.get("--load")) /
                                                                     "config.json")
                                        ? "has no integer vocab_size)"
                                        : "not found)")
                             : "") +
            "; pass --load with the Hugging Face checkpoint folder or --vocab-size");
  if (vocab == 0 && hf && !std::filesystem::is_directory(f.get(hf_flag)))
    throw InputError("--vocab-size",
                     "cannot determine the vocabulary size of tokenizer " + tok_type + ": " + hf_flag + " " +
                         f.get(hf_flag) +
                         " is not a folder on this machine (a Hugging Face Hub name is not "
                         "downloaded for it); pass --vocab-size N (the tokenizer's len()), " +
                         hf_flag +
                         " with the downloaded folder, or --model ORG/REPO of a model "
                         "with this vocabulary (its config.json gives it; the launch's flags the rest)");
  std::string empty;  // a tokenizer path flag given without a value (read past, with a warning)
  for (const char* flag : {"--tokenizer-model", "--vocab-file"})
    for (const auto& w : warnings)
      if (w.rfind(std::string(flag) + " has no value", 0) == 0) empty = flag;
  if (vocab == 0)
    throw InputError("--vocab-size",
                     "cannot determine the vocabulary size" +
                         std::string(tok_type.empty() ? "" : " of tokenizer " + tok_type) +
                         (empty.empty() ? std::string()
                                        : " (" + empty +
                                              " has no value: an empty variable in the launch "
                                              "script?)") +
                         (empty.empty() && f.has("--tokenizer-model")
                              ? " (--tokenizer-model '" + f.get("--tokenizer-model") + "' not found)"
                          : empty.empty() && f.has("--tokenizer-file")
                              ? " (--tokenizer-file '" + f.get("--tokenizer-file") + "' not found)"
                          : empty.empty() && f.has("--vocab-file")
                              ? " (--vocab-file '" + f.get("--vocab-file") + "' not found)"
                              : std::string()) +
                         "; pass --vocab-size or a readable " +
                         (f.has("--tokenizer-model")  ? "--tokenizer-model"
                          : f.has("--tokenizer-file") ? "--tokenizer-file"
                                                      : "--vocab-file"));
  m.vocab_size = vocab;
}

namespace {
void read_mla(const Flags& f, ModelSpec& m) {
  if (f.has("--multi-latent-attention")) {
    m.mla.enabled = true;
    m.mla.q_lora_rank = f.int_or("--q-lora-rank", 0);
    m.mla.kv_lora_rank = f.int_or("--kv-lora-rank", 32);
    m.mla.qk_head_dim = f.int_or("--qk-head-dim", 128);
    m.mla.qk_pos_emb_head_dim = f.int_or("--qk-pos-emb-head-dim", 64);
    m.mla.v_head_dim = f.int_or("--v-head-dim", 128);
    m.mla.latent_norms = f.has("--qk-layernorm");
  }
}

/// Megatron-DeepSpeed's MoE (megatron/arguments.py, model/transformer.py get_num_experts_per_layer): experts
/// in every --expert-interval-th layer (default 2: layers 2, 4, …), top --topk (default 1), DeepSpeed's gate
/// with capacity --moe-train-capacity-factor (default 1, tokens dropped beyond it unless
/// --disable-moe-token-dropping); `--num-experts` may list one count per MoE layer (PR-MoE).
void read_deepspeed_moe(const Flags& f, ModelSpec& m, const std::vector<I64>& counts) {
  if (f.has("--mlp-type") && f.get("--mlp-type") != "standard")
    throw InputError("--mlp-type",
                     "'" + f.get("--mlp-type") +
                         "' (Megatron-DeepSpeed's residual MoE, a dense MLP beside the experts) is "
                         "not modelled");
  const I64 interval = f.int_or("--expert-interval", 2);
  if (interval <= 0) throw InputError("--expert-interval", "must be positive");
  const I64 moe_layers = m.num_layers / interval;
  if (counts.size() != 1 && static_cast<I64>(counts.size()) != moe_layers)
    throw InputError("--num-experts", "lists " + std::to_string(counts.size()) + " counts for " +
                                          std::to_string(moe_layers) +
                                          " MoE layers (one, or one per MoE layer)");
  for (I64 n : counts)
    if (n != counts.front())
      throw InputError("--num-experts",
                       "different expert counts per layer (Megatron-DeepSpeed's PR-MoE) are not "
                       "modelled: one count for every MoE layer");
  if (counts.front() <= 1) return;  // DeepSpeed's default [1]: a dense model
  m.moe.num_experts = static_cast<int>(counts.front());
  if (m.moe.ffn_hidden_size <= 0) m.moe.ffn_hidden_size = m.ffn_hidden_size;
  m.moe.router_topk = static_cast<int>(f.int_or("--topk", 1));
  m.moe.layer_is_moe.assign(static_cast<std::size_t>(m.num_layers), false);
  for (I64 i = interval - 1; i < m.num_layers; i += interval)
    m.moe.layer_is_moe[static_cast<std::size_t>(i)] = true;
  if (!f.has("--disable-moe-token-dropping")) {
    m.moe.pad_expert_input_to_capacity = true;
    m.moe.capacity_factor = f.float_or("--moe-train-capacity-factor", 1.0);
  }
}
}  // namespace

void read_moe_and_mla(const Flags& f, const ModelSpec* base, ModelSpec& m) {
  if (f.has("--num-experts")) {
    std::vector<I64> counts;
    for (const auto& w : f.list("--num-experts")) counts.push_back(parse_int("--num-experts", w));
    if (counts.empty()) throw InputError("--num-experts", "expects a value");
    const bool deepspeed = f.has("--deepspeed") || f.has("--moe-expert-parallel-size") || counts.size() > 1;
    if (deepspeed) {
      read_deepspeed_moe(f, m, counts);
      return read_mla(f, m);
    }
    m.moe.num_experts = static_cast<int>(counts.front());
    if (m.moe.ffn_hidden_size <= 0) m.moe.ffn_hidden_size = m.ffn_hidden_size;
  }
  if (m.moe.enabled()) {
    m.moe.router_topk = static_cast<int>(f.int_or("--moe-router-topk", base ? m.moe.router_topk : 2));
    m.moe.ffn_hidden_size = f.int_or("--moe-ffn-hidden-size",
                                     m.moe.ffn_hidden_size > 0 ? m.moe.ffn_hidden_size : m.ffn_hidden_size);
    m.moe.shared_expert_ffn_hidden_size =
        f.int_or("--moe-shared-expert-intermediate-size", m.moe.shared_expert_ffn_hidden_size);
    if (f.has("--moe-shared-expert-gate")) m.moe.shared_expert_gate = true;
    m.moe.latent_size = f.int_or("--moe-latent-size", m.moe.latent_size);
    if (f.has("--moe-latent-size") && m.moe.latent_size <= 0)
      throw InputError(
          "--moe-latent-size",
          "must be greater than zero (Megatron asserts it; leave the flag out for no latent projections)");
    if (f.has("--moe-layer-freq"))
      m.moe.layer_is_moe = parse_layer_pattern("--moe-layer-freq", f.get("--moe-layer-freq"), m.num_layers, false);
    if (f.has("--moe-pad-expert-input-to-capacity")) m.moe.pad_expert_input_to_capacity = true;
    m.moe.capacity_factor = f.float_or("--moe-expert-capacity-factor", m.moe.capacity_factor);
    m.moe.capacity_drop = f.has("--moe-expert-capacity-factor") && !m.moe.pad_expert_input_to_capacity;
    m.moe.router_num_groups = static_cast<int>(f.int_or("--moe-router-num-groups", m.moe.router_num_groups));
    m.moe.router_group_topk = static_cast<int>(f.int_or("--moe-router-group-topk", m.moe.router_group_topk));
    if (m.moe.router_group_topk > 0 && m.moe.router_num_groups <= 0)
      throw InputError("--moe-router-group-topk", "needs --moe-router-num-groups (the groups it chooses among)");
    // Megatron limits the routing only when both are set (moe_utils.py topk_routing_with_score_function:
    // `if num_groups and group_topk`); groups alone route over every expert (Kimi-K2's scripts give 1 group).
    if (m.moe.router_num_groups > 0 && m.moe.router_group_topk <= 0) m.moe.router_num_groups = 0;
    if (m.moe.router_num_groups > 0) {
      if (m.moe.num_experts % m.moe.router_num_groups != 0)
        throw InputError("--moe-router-num-groups", std::to_string(m.moe.router_num_groups) +
                                                        " groups do not divide the " +
                                                        std::to_string(m.moe.num_experts) + " experts");
      if (m.moe.router_group_topk <= 0 || m.moe.router_group_topk > m.moe.router_num_groups)
        throw InputError("--moe-router-group-topk", "must be 1 … --moe-router-num-groups (" +
                                                        std::to_string(m.moe.router_num_groups) + ")");
    }
  }
  read_mla(f, m);
}

}  // namespace preflight::analyzer::megatron
