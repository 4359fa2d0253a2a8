// NeMo 1 training configuration YAML → Megatron-LM arguments (nemo_config.hpp).
#include "preflight/analyzer/frontends/nemo_config.hpp"

#include "preflight/analyzer/frontends/nemo2_config.hpp"

#include <re2/re2.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "config_section.hpp"
#include "preflight/common/error.hpp"

namespace preflight::analyzer {
namespace {

using detail::apply_override;
using detail::int_flag;
using detail::num_flag;
using detail::Section;

/// The node at `path` (dot-separated keys) under `from`, or an undefined node.
YAML::Node lookup(const YAML::Node& from, const std::string& path) {
  YAML::Node at = YAML::Clone(from);
  for (std::size_t b = 0, e; b <= path.size(); b = e + 1) {
    e = path.find('.', b);
    if (e == std::string::npos) e = path.size();
    const std::string key = path.substr(b, e - b);
    if (!at.IsMap() || !at[key]) return YAML::Node(YAML::NodeType::Undefined);
    at = at[key];
  }
  return at;
}

/// One step of OmegaConf's interpolation on `s`: its innermost `${…}` (no `${` inside) replaced — a field
/// reference by the field's scalar (`${.x}` a sibling in `chain.back()`, `${..x}` the parent's, `${a.b}` from
/// the root, the launcher's `${training.a.b}` from the root when it has no `training`), NeMo's resolvers
/// `${multiply:a, b}`, `${divide_floor:a, b}`, `${divide_ceil:a, b}` of whole numbers computed.  False when
/// nothing could be replaced.
bool interpolate_once(std::string& s, const YAML::Node& root, const std::vector<YAML::Node>& chain) {
  for (std::size_t open = s.find("${"); open != std::string::npos; open = s.find("${", open + 2)) {
    const std::size_t close = s.find('}', open);
    if (close == std::string::npos) return false;
    if (s.find("${", open + 2) < close) continue;  // not innermost
    const std::string inner = s.substr(open + 2, close - open - 2);
    std::optional<std::string> value;
    if (const auto colon = inner.find(':'); colon != std::string::npos) {
      const std::string fn = inner.substr(0, colon);
      std::vector<long long> args;
      bool numbers = true;
      std::stringstream list(inner.substr(colon + 1));
      for (std::string item; std::getline(list, item, ',');) {
        const auto b = item.find_first_not_of(' '), e = item.find_last_not_of(' ');
        item = b == std::string::npos ? "" : item.substr(b, e - b + 1);
        char* end = nullptr;
        const long long v = std::strtoll(item.c_str(), &end, 10);
        numbers = numbers && !item.empty() && *end == '\0';
        args.push_back(v);
      }
      if (numbers && args.size() == 2) {
        if (fn == "multiply") value = std::to_string(args[0] * args[1]);
        if (fn == "divide_floor" && args[1] != 0) value = std::to_string(args[0] / args[1]);
        if (fn == "divide_ceil" && args[1] != 0) value = std::to_string((args[0] + args[1] - 1) / args[1]);
      }
    } else {
      std::size_t dots = 0;
      while (dots < inner.size() && inner[dots] == '.') ++dots;
      std::string path = inner.substr(dots);
      YAML::Node base;
      if (dots == 0) {
        base = root;
        if (path.rfind("training.", 0) == 0 && !root["training"]) path = path.substr(9);
      } else if (dots <= chain.size()) {
        base = chain[chain.size() - dots];
      }
      if (base) {
        const YAML::Node target = lookup(base, path);
        if (target.IsDefined() && target.IsScalar() && target.Scalar().find("${") == std::string::npos)
          value = target.Scalar();
      }
    }
    if (!value) continue;
    s.replace(open, close - open + 1, *value);
    return true;
  }
  return false;
}

/// Resolves the interpolations of every scalar of `root` in place (interpolate_once until nothing changes;
/// a few rounds over the tree so that a field whose reference is itself interpolated is resolved).
void resolve_interpolations(YAML::Node root) {
  for (int round = 0; round < 4; ++round) {
    bool changed = false;
    std::vector<YAML::Node> chain;  // the enclosing mappings, for the relative forms
    std::function<void(YAML::Node)> walk = [&](YAML::Node n) {
      if (n.IsMap()) {
        chain.push_back(n);
        for (auto it = n.begin(); it != n.end(); ++it) {
          YAML::Node v = it->second;
          if (v.IsScalar() && v.Scalar().find("${") != std::string::npos) {
            std::string s = v.Scalar();
            bool any = false;
            for (int step = 0; step < 16 && interpolate_once(s, root, chain); ++step) any = true;
            if (any) {
              n[it->first.Scalar()] = s;
              changed = true;
            }
          } else if (!v.IsScalar()) {
            walk(v);
          }
        }
        chain.pop_back();
      } else if (n.IsSequence()) {
        for (std::size_t i = 0; i < n.size(); ++i) walk(n[i]);
      }
    };
    walk(root);
    if (!changed) return;
  }
}

/// The configuration a NeMo 1 training log prints after `************** Experiment configuration
/// ***********` (megatron_gpt_pretraining.py: OmegaConf.to_yaml(cfg) through NeMo's logger): the YAML lines
/// up to the first line that cannot belong to it (a log prefix `[NeMo …`, Lightning's `GPU available: …`);
/// `first_line` its 1-based line in the log.  nullopt when the text has no such block.
std::optional<std::string> log_block(const std::string& text, int& first_line) {
  static const std::string marker = "************** Experiment configuration ***********";
  const std::size_t at = text.find(marker);
  if (at == std::string::npos) return std::nullopt;
  static const RE2 top_key(R"([A-Za-z_][\w.-]*:( .*)?)");  // a top-level key (FullMatch)
  std::istringstream in(text.substr(at));
  std::string line, block;
  first_line =
      static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n')) + 1;
  std::getline(in, line);  // the marker's own line
  bool started = false;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!started) {
      ++first_line;
      // the logger's prefix line before the dump (`[NeMo I 2024-… megatron_gpt_pretraining:37] `)
      if (line.rfind("[NeMo", 0) == 0 && line.find(']') != std::string::npos &&
          line.find_first_not_of(' ', line.find(']') + 1) == std::string::npos)
        continue;
      if (line.empty()) continue;
      started = true;
    }
    const bool yaml_line =
        line.empty() || line[0] == ' ' || line[0] == '-' || line[0] == '#' || RE2::FullMatch(line, top_key);
    if (!yaml_line || line.rfind("[NeMo", 0) == 0) break;
    block += line + "\n";
  }
  return block;
}

/// The `model_config.yaml` of a .nemo checkpoint: the file of that name in a folder (an unpacked .nemo), or
/// the member of the archive (an uncompressed tar, as NeMo writes it: 512-byte headers, the name at 0, the
/// size in octal at 124).  nullopt when `path` is neither.
/// @throws InputError naming the file for a compressed archive or one without model_config.yaml.
std::optional<std::string> nemo_checkpoint_model_config(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::ifstream f(fs::path(path) / "model_config.yaml", std::ios::binary);
    if (!f) return std::nullopt;
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
  }
  if (!fs::is_regular_file(path, ec)) return std::nullopt;
  std::ifstream f(path, std::ios::binary);
  char header[512];
  if (!f.read(header, 2)) return std::nullopt;
  if (static_cast<unsigned char>(header[0]) == 0x1f && static_cast<unsigned char>(header[1]) == 0x8b)
    throw InputError(path, "a compressed .nemo archive: extract its model_config.yaml (tar -xzf " + path +
                               " ./model_config.yaml) and give that file");
  f.seekg(0);
  while (f.read(header, 512)) {
    if (header[0] == '\0') break;  // the end-of-archive blocks
    const std::string name(header, strnlen(header, 100));
    const std::string size_text(header + 124, strnlen(header + 124, 12));
    char* end = nullptr;
    const unsigned long long size = std::strtoull(size_text.c_str(), &end, 8);
    if (end == size_text.c_str() || size > (1ULL << 40))
      throw InputError(path, "not a tar archive (a .nemo checkpoint is one): a bad member header");
    if (name == "model_config.yaml" || name.ends_with("/model_config.yaml")) {
      std::string body(size, '\0');
      if (!f.read(body.data(), static_cast<std::streamsize>(size)))
        throw InputError(path, "the archive ends inside model_config.yaml: truncated");
      return body;
    }
    f.seekg(static_cast<std::streamoff>((size + 511) / 512 * 512), std::ios::cur);
  }
  throw InputError(path, "has no model_config.yaml: not a .nemo checkpoint");
}

/// `over` laid on `base` as NeMo merges a fine-tuning configuration onto the restored model's: each field of
/// `over` that is set replaces `base`'s, mappings field by field.
YAML::Node merged(const YAML::Node& base, const YAML::Node& over) {
  YAML::Node out = YAML::Clone(base);
  for (auto it = over.begin(); it != over.end(); ++it) {
    const std::string key = it->first.Scalar();
    const YAML::Node v = it->second;
    if (v.IsNull()) continue;
    if (v.IsMap() && out[key] && out[key].IsMap())
      out[key] = merged(out[key], v);
    else
      out[key] = YAML::Clone(v);
  }
  return out;
}

/// Whether a mapping holds NeMo 1's model fields.
bool nemo1_model_fields(const YAML::Node& m) {
  if (!m.IsMap() || m["_target_"]) return false;
  // (NeMo's own names: TransformerConfig's, which a Megatron-Bridge override file also uses, do not count)
  for (const char* key :
       {"encoder_seq_length", "activations_checkpoint_granularity", "megatron_amp_O2", "mcore_gpt"})
    if (m[key]) return true;
  return false;
}

/// The model section where a run saved it alone: `hparams.yaml` (`cfg:` the model's configuration) and a
/// `.nemo` archive's `model_config.yaml` (the model's fields at the top), as `{model: …}`; other documents as
/// they are.
YAML::Node with_model_section(const YAML::Node& root) {
  if (!root.IsMap() || root["model"]) return root;
  YAML::Node wrapped(YAML::NodeType::Map);
  if (root["cfg"] && nemo1_model_fields(root["cfg"])) {
    wrapped["model"] = root["cfg"];
    return wrapped;
  }
  if (nemo1_model_fields(root)) {
    wrapped["model"] = root;
    return wrapped;
  }
  return root;
}

bool nemo1_shape(const YAML::Node& document) {
  if (is_nemo2_config(document)) return false;  // NeMo 2's: classes by _target_
  const YAML::Node root = with_model_section(document);
  if (!root.IsMap() || !root["model"] || !root["model"].IsMap() || root["model"]["_target_"]) return false;
  if (root["trainer"] && root["trainer"].IsMap()) return true;
  return nemo1_model_fields(root["model"]);
}

}  // namespace

bool is_nemo1_config(const std::string& text) {
  try {
    int first_line = 1;
    if (const auto block = log_block(text, first_line)) return nemo1_shape(YAML::Load(*block));
    // (a training log or any text without NeMo's field names is not parsed as YAML at all: it would read as
    // one scalar, slowly for a large log)
    if (text.find("encoder_seq_length") == std::string::npos && text.find("mcore_gpt") == std::string::npos &&
        text.find("activations_checkpoint") == std::string::npos &&
        text.find("megatron_amp_O2") == std::string::npos && text.find("trainer:") == std::string::npos)
      return false;
    return nemo1_shape(YAML::Load(text));
  } catch (const YAML::Exception&) {
    return false;
  }
}

BridgeConfigArgs nemo_config_text_to_megatron_args(const std::string& text, const std::string& source,
                                                   const std::vector<std::string>& extra) {
  // a NeMo 1 training log: the configuration it prints
  int first_line = 1;
  const std::optional<std::string> block = log_block(text, first_line);
  YAML::Node root;
  try {
    root = YAML::Load(block ? *block : text);
  } catch (const YAML::Exception& e) {
    throw InputError(e.mark.line >= 0 ? location(source, first_line + e.mark.line) : source,
                     "malformed yaml: " + e.msg);
  }
  root = with_model_section(root);
  // A fine-tuning configuration that restores its model from a .nemo checkpoint (restore_from_path): the
  // checkpoint's model configuration, with this file's model fields over it, as NeMo restores and merges.
  if (root.IsMap() && root["model"] && root["model"].IsMap() && !root["model"]["num_layers"]) {
    for (const YAML::Node& at : {root["model"]["restore_from_path"], root["restore_from_path"]}) {
      if (!at || !at.IsScalar()) continue;
      const auto restored = nemo_checkpoint_model_config(at.Scalar());
      if (!restored) continue;
      YAML::Node saved;
      try {
        saved = YAML::Load(*restored);
      } catch (const YAML::Exception& e) {
        throw InputError(at.Scalar() + ": model_config.yaml", "malformed yaml: " + e.msg);
      }
      root["model"] = merged(saved, root["model"]);
      break;
    }
  }
  if (!nemo1_shape(root))
    throw InputError(
        source,
        "not a NeMo 1 training configuration: no `model` section with NeMo's fields beside a "
        "`trainer` section (megatron_gpt_config.yaml, a launcher's training config, hparams.yaml)");
  static const std::set<std::string> sections = {"trainer", "model", "exp_manager", "run"};
  std::vector<std::string> passed_on;
  for (const auto& w : extra)
    if (!apply_override(root, w, source, sections)) passed_on.push_back(w);
  resolve_interpolations(root);

  BridgeConfigArgs out;
  out.source = source;
  auto& a = out.args;
  auto put = [&](const std::string& flag) { a.push_back(flag); };
  auto put_value = [&](const std::string& flag, const std::string& v) {
    a.push_back(flag);
    a.push_back(v);
  };
  out.field_of_flag = {{"--num-layers", "model.num_layers"},
                       {"--hidden-size", "model.hidden_size"},
                       {"--num-attention-heads", "model.num_attention_heads"},
                       {"--seq-length", "model.encoder_seq_length"},
                       {"--vocab-size", "model.tokenizer"},
                       {"--micro-batch-size", "model.micro_batch_size"},
                       {"--global-batch-size", "model.global_batch_size"}};
  const Section trainer(root["trainer"], source, "trainer");
  const Section model(root["model"], source, "model");
  const Section optim(root["model"]["optim"], source, "model.optim");
  const Section tok(root["model"]["tokenizer"], source, "model.tokenizer");
  const Section data(root["model"]["data"], source, "model.data");
  const Section peft(root["model"]["peft"], source, "model.peft");

  // --- What the configuration trains
  // --------------------------------------------------------------------------- The family by the run's name
  // (`name: megatron_t5`), and an encoder-decoder by its sections.
  const std::string family = root["name"] && root["name"].IsScalar() ? root["name"].Scalar() : "";
  auto named = [&](const char* part) { return family.find(part) != std::string::npos; };
  if (root["model"]["encoder"].IsMap() || root["model"]["decoder"].IsMap() || named("t5") || named("bart") ||
      named("ul2") || named("_t0"))
    throw InputError(source + ": name",
                     "'" + family +
                         "' is an encoder-decoder model (T5, BART, UL2): not modelled (preflight prices "
                         "decoder-only transformer and hybrid Mamba stacks)");
  if (named("vit") || named("clip") || named("siglip") || named("diffusion") || named("imagen") ||
      named("nerf") || named("dreamfusion") || named("controlnet"))
    throw InputError(source + ": name",
                     "'" + family +
                         "' is a vision or diffusion model: not modelled (preflight prices "
                         "Megatron language models)");
  if (named("neva"))
    out.warnings.push_back(
        source + ": " + family +
        ": only the language model is analysed (NeVA's vision encoder and projector are not "
        "modelled)");
  if (named("griffin"))
    throw InputError(source + ": name",
                     "'" + family + "' (RecurrentGemma's RG-LRU recurrent blocks) is not modelled");
  if (!model.set("num_layers") && (model.set("restore_from_path") || root["restore_from_path"])) {
    const YAML::Node at =
        model.set("restore_from_path") ? root["model"]["restore_from_path"] : root["restore_from_path"];
    throw InputError(
        source + ": model.num_layers",
        "is not in the file: the run takes its architecture from the .nemo checkpoint it restores "
        "(restore_from_path " +
            (at.IsScalar() ? at.Scalar() : std::string("?")) +
            ", not on this machine; its model_config.yaml is read when it is); name the model with "
            "--model (a preset such as llama2-7b, or its Hugging Face config.json) or give "
            "model.num_layers=… and the other sizes as overrides");
  }
  if (!model.set("num_layers") && !model.set("encoder_seq_length") && !model.set("hybrid_override_pattern"))
    throw InputError(
        source + ": model",
        "has no num_layers and no encoder_seq_length: not a language model's training configuration "
        "(a vision, diffusion or speech model?); preflight prices Megatron language models");
  if (named("bert"))
    out.warnings.push_back(source + ": " + family +
                           ": analysed as its transformer stack with the language-model head; BERT's pooler, "
                           "binary head and head transform are left out");
  if (named("retro"))
    out.warnings.push_back(source + ": " + family +
                           ": only the decoder's transformer stack is analysed (retrieval is not modelled)");
  // Mamba (NeMo's MegatronMambaModel: `name: megatron_mamba`, or its fields): the hybrid stack from the
  // pattern, else from the ratios (every layer a Mamba mixer by default).
  if (named("mamba") || model.set("hybrid_override_pattern") || model.set("mamba_ssm_ngroups") ||
      model.set("hybrid_attention_ratio")) {
    if (auto p = model.text("hybrid_override_pattern")) {
      put_value("--hybrid-override-pattern", *p);
      out.field_of_flag["--hybrid-override-pattern"] = "model.hybrid_override_pattern";
    } else {
      put("--is-hybrid-model");
      if (auto r = model.number("hybrid_attention_ratio"))
        put_value("--hybrid-attention-ratio", std::to_string(*r));
      if (auto r = model.number("hybrid_mlp_ratio")) put_value("--hybrid-mlp-ratio", std::to_string(*r));
    }
    int_flag(out, model, "mamba_ssm_ngroups", "--mamba-num-groups");
  }

  // --- World and numerics (the trainer)
  // ----------------------------------------------------------------------
  if (!detail::world_given(passed_on)) {
    const YAML::Node devices = trainer.node()["devices"];
    if (devices && devices.IsScalar() && (devices.Scalar() == "-1" || devices.Scalar() == "auto")) {
      out.warnings.push_back(source + ": trainer.devices is " + devices.Scalar() +
                             " (every GPU of the node): give --nproc_per_node N for the run's");
    } else {
      int_flag(out, trainer, "devices", "--nproc_per_node");
    }
    int_flag(out, trainer, "num_nodes", "--nnodes");
  }
  const Section& numerics =
      trainer.set("precision") ? trainer : model;  // (a saved model keeps it as its own)
  if (auto p = numerics.text("precision")) {
    const std::string v = *p;
    if (v == "bf16" || v == "bf16-mixed" || v == "bf16-true")
      put("--bf16");
    else if (v == "16" || v == "16-mixed" || v == "fp16" || v == "16-true")
      put("--fp16");
    else if (v != "32" && v != "32-true" && v != "fp32")
      throw InputError(numerics.field("precision"),
                       "is not a precision Lightning takes: '" + v + "' (16, bf16, 32, …-mixed)");
  }

  // --- Layout and batch
  // ---------------------------------------------------------------------------------------
  for (const auto& [key, flag] : std::initializer_list<std::pair<const char*, const char*>>{
           {"micro_batch_size", "--micro-batch-size"},
           {"global_batch_size", "--global-batch-size"},
           {"tensor_model_parallel_size", "--tensor-model-parallel-size"},
           {"pipeline_model_parallel_size", "--pipeline-model-parallel-size"},
           {"context_parallel_size", "--context-parallel-size"},
           {"expert_model_parallel_size", "--expert-model-parallel-size"},
           {"expert_tensor_parallel_size", "--expert-tensor-parallel-size"},
           {"virtual_pipeline_model_parallel_size", "--num-virtual-stages-per-pipeline-rank"},
           {"num_layers", "--num-layers"},
           {"hidden_size", "--hidden-size"},
           {"ffn_hidden_size", "--ffn-hidden-size"},
           {"num_attention_heads", "--num-attention-heads"},
           {"kv_channels", "--kv-channels"},
           {"max_position_embeddings", "--max-position-embeddings"},
           {"make_vocab_size_divisible_by", "--make-vocab-size-divisible-by"},
           {"num_moe_experts", "--num-experts"},
           {"moe_router_topk", "--moe-router-topk"},
           {"moe_ffn_hidden_size", "--moe-ffn-hidden-size"},
       })
    int_flag(out, model, key, flag);
  if (model.set("encoder_seq_length"))
    int_flag(out, model, "encoder_seq_length", "--seq-length");
  else if (model.set("seq_length"))
    int_flag(out, model, "seq_length", "--seq-length");
  else
    int_flag(out, data, "seq_length", "--seq-length");
  if (model.flag("sequence_parallel")) put("--sequence-parallel");
  // (NeMo fills Megatron Core's ModelParallelConfig from the model's fields: absent, overlap_p2p_comm is
  // core's default, False — Megatron-LM's command line defaults to True)
  if (model.integer("virtual_pipeline_model_parallel_size").value_or(1) > 1 &&
      !model.flag("overlap_p2p_comm"))
    put("--no-overlap-p2p-communication");
  if (model.flag("ub_tp_comm_overlap")) put("--tp-comm-overlap");

  // --- Architecture
  // -------------------------------------------------------------------------------------------
  if (auto g = model.integer("num_query_groups");
      g && *g != model.integer("num_attention_heads").value_or(0)) {
    put("--group-query-attention");
    put_value("--num-query-groups", std::to_string(*g));
    out.field_of_flag["--num-query-groups"] = "model.num_query_groups";
  }
  num_flag(out, model, "layernorm_epsilon", "--norm-epsilon");
  num_flag(out, model, "hidden_dropout", "--hidden-dropout");
  num_flag(out, model, "attention_dropout", "--attention-dropout");
  if (auto n = model.text("normalization")) {
    if (*n == "rmsnorm" || *n == "RMSNorm") {
      put_value("--normalization", "RMSNorm");
    } else if (*n == "layernorm1p") {
      put("--apply-layernorm-1p");
    } else if (*n != "layernorm" && *n != "LayerNorm") {
      throw InputError(model.field("normalization"), "is not a normalization NeMo takes: '" + *n + "'");
    }
  }
  if ((model.set("bias") && !model.flag("bias")) ||
      (model.set("add_bias_linear") && !model.flag("add_bias_linear")))
    put("--disable-bias-linear");
  if (model.flag("gated_linear_unit") && !model.set("activation")) put("--swiglu");
  int_flag(out, model, "vocab_size", "--vocab-size");
  if (auto act = model.text("activation")) {
    std::string v = *act;
    if (v.rfind("fast-", 0) == 0) v = v.substr(5);
    if (v == "swiglu") {
      put("--swiglu");
    } else if (v == "geglu" || v == "reglu") {
      put("--swiglu");
      out.warnings.push_back(source + ": model.activation " + *act +
                             " is priced as SwiGLU (a gated unit of the same shapes)");
    } else if (v == "squared-relu") {
      put("--squared-relu");
    } else if (v != "gelu") {
      throw InputError(model.field("activation"), "is not an activation NeMo takes: '" + *act + "'");
    }
  }
  if (auto pe = model.text("position_embedding_type")) {
    if (*pe == "rope") {
      put_value("--position-embedding-type", "rope");
    } else if (*pe == "none") {
      put_value("--position-embedding-type", "none");
    } else if (*pe != "learned_absolute") {
      put_value("--position-embedding-type", "none");
      out.warnings.push_back(source + ": model.position_embedding_type " + *pe +
                             " (a bias on the attention scores) is priced as no position embedding");
    }
  }
  num_flag(out, model, "rotary_percentage", "--rotary-percent");
  if (model.set("share_embeddings_and_output_weights") && !model.flag("share_embeddings_and_output_weights"))
    put("--untie-embeddings-and-output-weights");
  if (auto t = model.text("transformer_block_type"); t && *t != "pre_ln")
    out.warnings.push_back(source + ": model.transformer_block_type " + *t +
                           " is priced as pre-LN layers (the same GEMMs; its extra norms are left out)");
  if (model.flag("use_flash_attention")) put("--use-flash-attn");

  // --- Vocabulary
  // ---------------------------------------------------------------------------------------------
  const std::string library = tok.text("library").value_or("");
  const auto tok_type = tok.text("type");
  const auto tok_model = tok.text("model");
  auto given = [](const std::optional<std::string>& v) { return v && *v != "???" && !v->empty(); };
  if (library == "megatron" && given(tok_type)) {
    put_value("--tokenizer-type", *tok_type);
  } else if (library == "sentencepiece" && given(tok_model)) {
    put_value("--tokenizer-type", "SentencePieceTokenizer");
    put_value("--tokenizer-model", *tok_model);
  } else if (library == "huggingface" && (given(tok_type) || given(tok_model))) {
    put_value("--tokenizer-type", "HuggingFaceTokenizer");
    put_value("--tokenizer-model", given(tok_type) ? *tok_type : *tok_model);
  }
  out.field_of_flag["--tokenizer-model"] = "model.tokenizer.model";

  // --- Recompute, precision, optimizer, MoE, PEFT
  // --------------------------------------------------------------
  if (auto g = model.text("activations_checkpoint_granularity")) {
    put_value("--recompute-granularity", *g);
    out.field_of_flag["--recompute-granularity"] = "model.activations_checkpoint_granularity";
    if (auto m = model.text("activations_checkpoint_method")) {
      put_value("--recompute-method", *m);
      out.field_of_flag["--recompute-method"] = "model.activations_checkpoint_method";
    }
    int_flag(out, model, "activations_checkpoint_num_layers", "--recompute-num-layers");
  }
  if (model.flag("fp8")) {
    put_value("--fp8-format", model.flag("fp8_e4m3") && !model.flag("fp8_hybrid") ? "e4m3" : "hybrid");
    int_flag(out, model, "fp8_amax_history_len", "--fp8-amax-history-len");
    if (model.flag("fp8_params")) put("--fp8-param-gather");  // the weights kept in FP8 (and gathered so)
  }
  // (Apex's distributed Adam and Megatron Core's distributed optimizer alike shard the optimizer state)
  if (auto name = optim.text("name");
      name && (*name == "distributed_fused_adam" || *name == "mcore_distributed_optim")) {
    put("--use-distributed-optimizer");
    if (optim.flag("overlap_grad_sync")) put("--overlap-grad-reduce");
    if (optim.flag("overlap_param_sync")) put("--overlap-param-gather");
  }
  if (model.flag("moe_grouped_gemm")) put("--moe-grouped-gemm");
  if (auto d = model.text("moe_token_dispatcher_type")) put_value("--moe-token-dispatcher-type", *d);
  if (model.flag("cpu_offloading"))
    out.warnings.push_back(source + ": model.cpu_offloading (activation offload to the host) is not priced");
  if (auto scheme = peft.text("peft_scheme"); scheme && *scheme != "none") {
    if (*scheme == "lora") {
      const Section lora(root["model"]["peft"]["lora_tuning"], source, "model.peft.lora_tuning");
      int_flag(out, lora, "adapter_dim", "--lora-rank");
      if (!lora.set("adapter_dim")) put_value("--lora-rank", "32");  // NeMo's default adapter_dim
      // NeMo's module names (its LoraPEFTConfig; default: attention_qkv only) as Megatron's linears
      std::vector<std::string> targets = lora.strings("target_modules");
      if (targets.empty()) targets = {"attention_qkv"};
      std::set<std::string> linears;
      for (const std::string& t : targets) {
        if (t == "attention_qkv" || t == "attention" || t == "all") linears.insert("linear_qkv");
        if (t == "attention_dense" || t == "attention" || t == "all") linears.insert("linear_proj");
        if (t == "mlp_fc1" || t == "mlp" || t == "all") linears.insert("linear_fc1");
        if (t == "mlp_fc2" || t == "mlp" || t == "all") linears.insert("linear_fc2");
        if (t != "attention_qkv" && t != "attention_dense" && t != "mlp_fc1" && t != "mlp_fc2" &&
            t != "attention" && t != "mlp" && t != "all")
          throw InputError(lora.field("target_modules"),
                           "names '" + t +
                               "', not a module NeMo's LoRA takes (attention_qkv, attention_dense, "
                               "mlp_fc1, mlp_fc2, attention, mlp, all)");
      }
      a.push_back("--lora-target-modules");
      for (const char* l :
           {"linear_qkv", "linear_proj", "linear_fc1", "linear_fc2"})  // (in the layer's order)
        if (linears.count(l)) a.push_back(l);
    } else {
      out.warnings.push_back(source + ": model.peft.peft_scheme " + *scheme +
                             " is priced as full fine-tuning (an upper bound)");
    }
  }

  a.insert(a.end(), passed_on.begin(), passed_on.end());
  return out;
}

bool is_nemo1_entry(const std::string& entry) {
  const std::string name = std::filesystem::path(entry).filename().string();
  auto ends = [&](const std::string& tail) {
    return name.size() > tail.size() + 9 && name.rfind("megatron_", 0) == 0 && name.ends_with(tail);
  };
  return ends("_pretraining.py") || ends("_finetuning.py");
}

NemoLaunch nemo1_launch(const std::string& entry, const std::vector<std::string>& words) {
  namespace fs = std::filesystem;
  NemoLaunch l;
  std::optional<std::string> path, name;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    auto take = [&](const std::string& longer, const std::string& shorter, std::optional<std::string>& into) {
      if (w.rfind(longer + "=", 0) == 0) {
        into = w.substr(longer.size() + 1);
        return true;
      }
      if ((w == longer || w == shorter) && i + 1 < words.size()) {
        into = words[++i];
        return true;
      }
      return false;
    };
    if (take("--config-path", "-cp", path) || take("--config-name", "-cn", name)) continue;
    l.rest.push_back(w);
  }
  const fs::path script(entry);
  if (!name) {
    const std::string stem = script.stem().string();  // megatron_gpt_pretraining
    const std::string tail = "_pretraining";
    name = stem.ends_with(tail) ? stem.substr(0, stem.size() - tail.size()) + "_config" : stem + "_config";
  }
  std::string file = *name;
  if (!file.ends_with(".yaml") && !file.ends_with(".yml")) file += ".yaml";
  std::vector<fs::path> candidates;
  if (!path) {
    candidates.push_back(script.parent_path() / "conf" / file);
  } else if (fs::path(*path).is_absolute()) {
    candidates.push_back(fs::path(*path) / file);
  } else {
    candidates.push_back(fs::path(*path) / file);
    candidates.push_back(script.parent_path() / *path / file);
  }
  std::string looked;
  for (const fs::path& c : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(c, ec)) {
      l.config = c.string();
      return l;
    }
    looked += (looked.empty() ? "" : ", ") + c.string();
  }
  throw InputError("--config-name", "NeMo's training configuration " + file + " for " +
                                        script.filename().string() + " is not on this machine (looked for " +
                                        looked +
                                        "): give --config-path DIR --config-name NAME, or price the "
                                        "file with --nemo-config FILE");
}

std::optional<NemoLaunch> nemo1_launch_in(const std::vector<std::string>& words) {
  for (std::size_t i = 0; i < words.size(); ++i) {
    std::string entry;
    std::size_t span = 1;
    if (words[i].rfind("--entry-point=", 0) == 0) {
      entry = words[i].substr(14);
    } else if (words[i] == "--entry-point" && i + 1 < words.size()) {
      entry = words[i + 1];
      span = 2;
    }
    if (entry.empty() || !is_nemo1_entry(entry)) continue;
    std::vector<std::string> others(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(i));
    others.insert(others.end(), words.begin() + static_cast<std::ptrdiff_t>(i + span), words.end());
    return nemo1_launch(entry, others);
  }
  return std::nullopt;
}

BridgeConfigArgs nemo_config_to_megatron_args(const std::string& path,
                                              const std::vector<std::string>& extra) {
  // a .nemo checkpoint (or its unpacked folder): its model_config.yaml
  if (path.ends_with(".nemo") || std::filesystem::is_directory(path))
    if (const auto model_config = nemo_checkpoint_model_config(path))
      return nemo_config_text_to_megatron_args(*model_config, path + ": model_config.yaml", extra);
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError(path, "cannot read the NeMo configuration");
  std::ostringstream s;
  s << f.rdbuf();
  return nemo_config_text_to_megatron_args(s.str(), path, extra);
}

}  // namespace preflight::analyzer
