// Configuration sections and overrides (config_section.hpp).
#include "config_section.hpp"

#include "embedded_data.hpp"

#include <algorithm>
#include <map>
#include <regex>
#include <set>

namespace preflight::analyzer::detail {

std::string enum_member_name(const YAML::Node& e) {
  const std::string value = e["_args_"][0].Scalar();
  const std::string target = e["_target_"] && e["_target_"].IsScalar() ? e["_target_"].Scalar() : "";
  using Names = std::map<std::string, std::string>;
  static const std::map<std::string, Names> enums = {
      {"AttnBackend", {{"1", "flash"}, {"2", "fused"}, {"3", "unfused"}, {"4", "local"}, {"5", "auto"}}},
      {"LayerType", {{"1", "embedding"}, {"2", "loss"}, {"3", "encoder"}, {"4", "decoder"}, {"5", "mtp"}}},
      {"CudaGraphModule",
       {{"1", "attn"},
        {"2", "mlp"},
        {"3", "moe"},
        {"4", "moe_router"},
        {"5", "moe_preprocess"},
        {"6", "mamba"}}},
      {"CudaGraphScope",
       {{"1", "full_iteration"},
        {"2", "attn"},
        {"3", "mlp"},
        {"4", "moe"},
        {"5", "moe_router"},
        {"6", "moe_preprocess"},
        {"7", "mamba"},
        {"8", "full_iteration_inference"}}}};
  const std::string cls = target.substr(target.rfind('.') == std::string::npos ? 0 : target.rfind('.') + 1);
  if (auto names = enums.find(cls); names != enums.end())
    if (auto it = names->second.find(value); it != names->second.end()) return it->second;
  return value;
}

bool is_enum_member(const YAML::Node& e) {
  return e.IsMap() && e["_args_"] && e["_args_"].IsSequence() && e["_args_"].size() == 1 &&
         e["_args_"][0].IsScalar();
}

bool apply_override(YAML::Node& root, const std::string& word, const std::string& source,
                    const std::set<std::string>& sections) {
  static const std::regex form(R"(^\+?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)=(.*)$)");
  std::smatch m;
  if (word.rfind("-", 0) == 0 || !std::regex_match(word, m, form)) return false;
  std::vector<std::string> keys;
  std::string path = m[1];
  for (std::size_t b = 0, e; b <= path.size(); b = e + 1) {
    e = path.find('.', b);
    if (e == std::string::npos) e = path.size();
    keys.push_back(path.substr(b, e - b));
  }
  // Only the container's own keys: other `name=value` words (an environment assignment) are passed on.
  if (!sections.count(keys.front()) && !root[keys.front()].IsDefined()) return false;
  YAML::Node value;
  try {
    value = YAML::Load(m[2].str());
  } catch (const YAML::Exception& e) {
    throw InputError("override " + word, "its value is not YAML: " + e.msg);
  }
  // yaml-cpp nodes are handles: walk by reassigning a handle to each child.
  std::vector<YAML::Node> chain{root};
  for (std::size_t i = 0; i + 1 < keys.size(); ++i) {
    YAML::Node parent = chain.back();
    if (!parent[keys[i]] || parent[keys[i]].IsNull()) parent[keys[i]] = YAML::Node(YAML::NodeType::Map);
    if (!parent[keys[i]].IsMap())
      throw InputError("override " + word,
                       source + ": " + keys[i] + " is not a section of the configuration");
    chain.push_back(parent[keys[i]]);
  }
  chain.back()[keys.back()] = value;
  return true;
}

void int_flag(BridgeConfigArgs& out, const Section& s, const std::string& key, const std::string& flag) {
  if (auto v = s.integer(key)) {
    out.args.push_back(flag);
    out.args.push_back(std::to_string(*v));
    out.field_of_flag[flag] = s.name() + "." + key;
  }
}

void num_flag(BridgeConfigArgs& out, const Section& s, const std::string& key, const std::string& flag) {
  if (s.number(key)) {  // validated, passed on as written
    out.args.push_back(flag);
    out.args.push_back(s.node()[key].Scalar());
    out.field_of_flag[flag] = s.name() + "." + key;
  }
}

// A scalar or list of JSON as YAML (config_section.hpp).
YAML::Node yaml_of(const nlohmann::json& v) {
  YAML::Node n;
  if (v.is_boolean()) {
    n = v.get<bool>() ? "true" : "false";
  } else if (v.is_number_integer()) {
    n = std::to_string(v.get<long long>());
  } else if (v.is_number()) {
    n = v.dump();
  } else if (v.is_string()) {
    n = v.get<std::string>();
  } else if (v.is_array()) {
    n = YAML::Node(YAML::NodeType::Sequence);
    for (const auto& e : v) n.push_back(yaml_of(e));
  }
  return n;
}

// A JSON tree as YAML (config_section.hpp).
YAML::Node yaml_tree(const nlohmann::json& v) {
  if (v.is_object()) {
    YAML::Node n(YAML::NodeType::Map);
    for (const auto& [k, x] : v.items()) n[k] = yaml_tree(x);
    return n;
  }
  if (v.is_array()) {
    YAML::Node n(YAML::NodeType::Sequence);
    for (const auto& x : v) n.push_back(yaml_tree(x));
    return n;
  }
  if (v.is_null()) return YAML::Node(YAML::NodeType::Null);
  return yaml_of(v);
}

std::vector<std::string> lora_words(const Section& peft) {
  std::vector<std::string> out = {"--lora-rank", std::to_string(peft.integer("dim").value_or(32))};
  std::vector<std::string> targets = peft.strings("target_modules");
  if (targets.empty()) targets = {"linear_qkv", "linear_proj", "linear_fc1", "linear_fc2"};
  std::set<std::string> linears;
  for (const std::string& t : targets) {
    const std::string name = t.substr(t.rfind('.') == std::string::npos ? 0 : t.rfind('.') + 1);
    if (name == "linear_qkv" || name == "linear_proj" || name == "linear_fc1" || name == "linear_fc2")
      linears.insert(name);
    else if (name == "linear_q" || name == "linear_k" || name == "linear_v" ||  // CanonicalLoRA's
             name == "linear_q_proj" || name == "linear_q_down_proj" || name == "linear_q_up_proj" ||
             name == "linear_kv_down_proj" || name == "linear_kv_up_proj")  // multi-latent attention's
      linears.insert("linear_qkv");
    else if (name == "linear_fc1_up" || name == "linear_fc1_gate")
      linears.insert("linear_fc1");
    else
      throw InputError(peft.field("target_modules"),
                       "names '" + t +
                           "', not one of the linears LoRA adapts (linear_qkv, linear_proj, linear_fc1, "
                           "linear_fc2)");
  }
  out.push_back("--lora-target-modules");
  for (const char* l : {"linear_qkv", "linear_proj", "linear_fc1", "linear_fc2"})
    if (linears.count(l)) out.push_back(l);
  return out;
}

nlohmann::json embedded_json(const std::string& path) {
  const embedded::File* f = embedded::find(path);
  if (!f) throw std::logic_error("analyzer/data/" + path + " is not embedded");
  return nlohmann::json::parse(f->text);
}

bool world_given(const std::vector<std::string>& words) {
  return std::any_of(words.begin(), words.end(), [](const std::string& w) {
    return w.rfind("--nproc_per_node", 0) == 0 || w.rfind("--nproc-per-node", 0) == 0 ||
           w.rfind("--nnodes", 0) == 0 || w.rfind("--world-size", 0) == 0;
  });
}

}  // namespace preflight::analyzer::detail
