// A section of a training configuration YAML read field by field, and Hydra-style overrides of such a file:
// shared by the Megatron-Bridge (bridge_config.cpp) and NeMo 1 (nemo_config.cpp) front ends.  Internal.
#pragma once

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "preflight/analyzer/frontends/bridge_config.hpp"
#include "preflight/common/error.hpp"

namespace preflight::analyzer::detail {

/// An enum member `{_target_: …Enum, _args_: [value]}` by its name where its class is one of Megatron's enums
/// the conversion reads (megatron/core/transformer/enums.py: AttnBackend, LayerType, CudaGraphModule and the
/// CudaGraphScope it replaced); otherwise its value as written.
std::string enum_member_name(const YAML::Node& e);

/// `{_target_: …, _args_: [value]}`: an enum member as Megatron-Bridge serialises it.
bool is_enum_member(const YAML::Node& e);

/// A Hydra-style override `a.b.c=value` (an optional leading `+`) of `root`, whose first key is one of
/// `sections` or a key `root` has; false for anything else (the word is not an override).
/// @throws InputError (where = "override WORD") for a value that is not YAML or a path through a non-section.
bool apply_override(YAML::Node& root, const std::string& word, const std::string& source,
                    const std::set<std::string>& sections);

/// One section of the container (`model`, `train`, …), read field by field; a null or absent field is
/// "not set".
class Section {
 public:
  Section(YAML::Node node, std::string source, std::string name)
      : node_(std::move(node)), source_(std::move(source)), name_(std::move(name)) {}

  bool set(const std::string& key) const {
    if (!node_ || !node_.IsMap()) return false;
    const YAML::Node v = node_[key];
    return v.IsDefined() && !v.IsNull();
  }
  std::string field(const std::string& key) const { return source_ + ": " + name_ + "." + key; }

  std::optional<bool> boolean(const std::string& key) const {
    if (!set(key)) return std::nullopt;
    const YAML::Node v = node_[key];
    if (v.IsScalar()) {
      const std::string s = v.Scalar();
      if (s == "true" || s == "True") return true;
      if (s == "false" || s == "False") return false;
    }
    throw InputError(field(key), "must be true or false, got " + shown(v));
  }
  bool flag(const std::string& key) const { return boolean(key).value_or(false); }

  std::optional<double> number(const std::string& key) const {
    if (!set(key)) return std::nullopt;
    const YAML::Node v = node_[key];
    if (v.IsScalar()) {
      const std::string s = v.Scalar();
      char* end = nullptr;
      const double x = std::strtod(s.c_str(), &end);
      if (end != s.c_str() && *end == '\0' && std::isfinite(x)) return x;
    }
    throw InputError(field(key), "must be a number, got " + shown(v));
  }
  std::optional<long long> integer(const std::string& key) const {
    const auto x = number(key);
    if (!x) return std::nullopt;
    if (std::floor(*x) != *x)
      throw InputError(field(key), "must be a whole number, got " + shown(node_[key]));
    return static_cast<long long>(*x);
  }
  std::optional<std::string> text(const std::string& key) const {
    if (!set(key)) return std::nullopt;
    const YAML::Node v = node_[key];
    if (v.IsScalar()) return v.Scalar();
    throw InputError(field(key), "must be a string, got " + shown(v));
  }
  /// A function or class serialised as `{_target_: module.name, _call_: false}` (or a plain string).
  std::optional<std::string> target(const std::string& key) const {
    if (!set(key)) return std::nullopt;
    const YAML::Node v = node_[key];
    if (v.IsScalar()) return v.Scalar();
    if (v.IsMap() && v["_target_"] && v["_target_"].IsScalar()) return v["_target_"].Scalar();
    throw InputError(field(key), "must be a {_target_: …} mapping, got " + shown(v));
  }
  /// A torch dtype (`{_target_: torch.bfloat16}`, `torch.bfloat16`, `bf16`) as Megatron's flag value.
  std::optional<std::string> dtype(const std::string& key) const {
    const auto t = target(key);
    if (!t) return std::nullopt;
    std::string s = *t;
    if (s.rfind("torch.", 0) == 0) s = s.substr(6);
    if (s == "bfloat16" || s == "bf16") return "bf16";
    if (s == "float16" || s == "half" || s == "fp16") return "fp16";
    if (s == "float32" || s == "float" || s == "fp32") return "fp32";
    if (s.rfind("float8", 0) == 0 || s == "fp8" || s == "uint8") return "fp8";
    throw InputError(field(key), "is not a dtype Megatron takes here: '" + *t + "'");
  }
  /// An enum serialised as `{_target_: …Enum, _args_: [value]}` by its member's name (enum_member_name), or
  /// a scalar as written.
  std::optional<std::string> enum_value(const std::string& key) const {
    if (!set(key)) return std::nullopt;
    const YAML::Node v = node_[key];
    if (v.IsScalar()) return v.Scalar();
    if (is_enum_member(v)) return enum_member_name(v);
    throw InputError(field(key), "must be an enum ({_target_: …, _args_: [value]}), got " + shown(v));
  }
  /// A whole number or a list of them as Megatron's parser takes it (`4`, `[0,1,1]`).
  std::optional<std::string> int_or_list(const std::string& key) const {
    if (!set(key)) return std::nullopt;
    const YAML::Node v = node_[key];
    if (v.IsScalar()) return v.Scalar();
    if (v.IsSequence()) {
      std::string list = "[";
      for (std::size_t i = 0; i < v.size(); ++i) list += (i ? "," : "") + v[i].as<std::string>();
      return list + "]";
    }
    throw InputError(field(key), "must be an integer or a list of integers, got " + shown(v));
  }
  std::vector<std::string> strings(const std::string& key) const {
    std::vector<std::string> out;
    if (!set(key)) return out;
    const YAML::Node v = node_[key];
    if (v.IsScalar()) return {v.Scalar()};
    if (v.IsSequence()) {
      for (const auto& e : v) {
        if (e.IsScalar()) {
          out.push_back(e.Scalar());
        } else if (is_enum_member(e)) {
          out.push_back(enum_member_name(e));
        } else {
          throw InputError(field(key), "must be a list of names, got " + shown(v));
        }
      }
      return out;
    }
    throw InputError(field(key), "must be a name or a list of names, got " + shown(v));
  }
  const YAML::Node& node() const { return node_; }
  const std::string& name() const { return name_; }

 private:
  static std::string shown(const YAML::Node& v) {
    if (v.IsScalar()) return "'" + v.Scalar() + "'";
    if (v.IsSequence()) return "a list";
    if (v.IsMap()) return "a mapping";
    return "nothing";
  }
  YAML::Node node_;
  std::string source_, name_;
};

/// `flag N` appended to `out.args` when `s` sets `key` to a whole number (its field kept for messages).
/// @throws InputError naming the field for a value that is not a whole number.
void int_flag(BridgeConfigArgs& out, const Section& s, const std::string& key, const std::string& flag);

/// `flag X` appended when `s` sets `key` to a number, passed on as written (validated).
/// @throws InputError naming the field for a value that is not a number.
void num_flag(BridgeConfigArgs& out, const Section& s, const std::string& key, const std::string& flag);

/// A JSON scalar or list as the YAML node the conversions read (booleans as true / false, whole numbers
/// without a decimal point); a null or an object gives an undefined-valued node.
YAML::Node yaml_of(const nlohmann::json& v);

/// A JSON tree (the embedded recipe tables) as YAML; nulls kept (a recipe's `fsdp: null` says "off").
YAML::Node yaml_tree(const nlohmann::json& v);

/// preflight's LoRA words (`--lora-rank R --lora-target-modules …`) for a PEFT section of NeMo 2 or
/// Megatron-Bridge (their LoRA / DoRA / CanonicalLoRA dataclasses): `dim` (default 32) on `target_modules`
/// (default linear_qkv, linear_proj, linear_fc1, linear_fc2; wildcard paths by their module; CanonicalLoRA's
/// and multi-latent attention's projections on the linear they are part of).
/// @throws InputError naming peft.target_modules for a module that is none of those.
std::vector<std::string> lora_words(const Section& peft);

/// The embedded data file analyzer/data/`path` parsed as JSON.
/// @throws std::logic_error when it is not embedded (a build error, not the user's).
nlohmann::json embedded_json(const std::string& path);

/// True when `words` give torchrun's sizes (--nproc_per_node / --nproc-per-node / --nnodes) or preflight's
/// --world-size: they replace a configuration's own world.
bool world_given(const std::vector<std::string>& words);

/// The Megatron-Bridge conversion of a ConfigContainer already loaded (and overridden): `root`'s sections as
/// Megatron-LM arguments, then `passed_on` (the caller's words that were not overrides).  Shared with the
/// NeMo 2 front end, which writes its configuration into this form (nemo2_config.cpp).
/// @throws InputError naming `source` and the field, as bridge_config_text_to_megatron_args().
BridgeConfigArgs bridge_root_to_megatron_args(const YAML::Node& root, const std::string& source,
                                              const std::vector<std::string>& passed_on);

}  // namespace preflight::analyzer::detail
