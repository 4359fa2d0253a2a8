// Megatron-LM's functional test cases (tests/functional_tests/test_cases/*/*/model_config.yaml): the
// MODEL_ARGS mapping is the run's command line, as tests/functional_tests/shell_test_utils/_run_training.sh
// builds it.
#include <cctype>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/common/error.hpp"

namespace preflight::analyzer {

namespace fs = std::filesystem;

bool is_megatron_test_case(const std::string& path) {
  std::error_code ec;
  if (!(path.ends_with(".yaml") || path.ends_with(".yml")) || !fs::is_regular_file(path, ec)) return false;
  try {
    const YAML::Node raw = YAML::LoadFile(path);
    return raw.IsMap() && raw["MODEL_ARGS"] && raw["MODEL_ARGS"].IsMap();
  } catch (const std::exception&) {
    return false;  // read again, with its error, by the caller's own front end
  }
}

namespace {

/// envsubst of the variables `env` has (_run_training.sh substitutes those of its environment); the others
/// are left as written.
std::string substitute(const std::string& v, const std::map<std::string, std::string>& env) {
  std::string out;
  for (std::size_t i = 0; i < v.size();) {
    if (v[i] != '$') {
      out += v[i++];
      continue;
    }
    std::size_t b = i + 1, e = b;
    const bool braced = b < v.size() && v[b] == '{';
    if (braced) ++b;
    e = b;
    while (e < v.size() && (std::isalnum(static_cast<unsigned char>(v[e])) || v[e] == '_')) ++e;
    const std::string name = v.substr(b, e - b);
    const bool closed = !braced || (e < v.size() && v[e] == '}');
    if (name.empty() || !closed || !env.count(name)) {
      out += v[i++];
      continue;
    }
    out += env.at(name);
    i = braced ? e + 1 : e;
  }
  return out;
}

}  // namespace

std::vector<std::string> megatron_words_from_test_case(const std::string& path,
                                                       const std::map<std::string, std::string>& env,
                                                       std::vector<std::string>& notes) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw InputError(path, "cannot read the file");
  } catch (const YAML::Exception& e) {
    throw InputError(path + ":" + std::to_string(e.mark.line + 1), "not valid YAML: " + e.msg);
  }
  const YAML::Node args = root["MODEL_ARGS"];
  if (!args || !args.IsMap())
    throw InputError(path, "has no MODEL_ARGS mapping (not a Megatron-LM test case)");
  std::vector<std::string> words, left_out;
  std::set<std::string> unset;  // ${VAR}s the environment lacks, of flags that change the analysis
  auto note_unset = [&](const std::string& key, const std::string& text) {
    // (paths of data, checkpoints and logs change nothing of the analysis)
    for (const char* w : {"data", "save", "load", "ckpt", "log", "tensorboard", "wandb"})
      if (key.find(w) != std::string::npos) return;
    for (std::size_t at = text.find("${"); at != std::string::npos; at = text.find("${", at + 2))
      if (const std::size_t end = text.find('}', at); end != std::string::npos)
        unset.insert(text.substr(at + 2, end - at - 2));
  };
  for (const auto& kv : args) {
    const std::string key = kv.first.as<std::string>();
    const std::string at = path + ":" + std::to_string(kv.first.Mark().line + 1);
    if (key.rfind("--", 0) != 0) throw InputError(at, "MODEL_ARGS key '" + key + "' is not a flag (--name)");
    const YAML::Node& v = kv.second;
    if (v.IsNull()) {
      words.push_back(key);
      continue;
    }
    if (v.IsSequence()) {
      words.push_back(key);
      for (const auto& item : v) words.push_back(substitute(item.as<std::string>(), env));
      continue;
    }
    if (!v.IsScalar()) throw InputError(at, key + ": expected a value, a list or true");
    const std::string text = substitute(v.as<std::string>(), env);
    note_unset(key, text);
    // _run_training.sh: true → the flag alone; "" → left out; [a b] → the words inside; else the value
    if (text == "true" || text == "True") {
      words.push_back(key);
    } else if (text == "false" || text == "False") {
      left_out.push_back(key);  // (the harness would pass "false", which Megatron's switches refuse)
    } else if (text.empty()) {
      continue;
    } else if (text.size() > 2 && text.front() == '[' && text.back() == ']') {
      words.push_back(key);
      std::istringstream inner(text.substr(1, text.size() - 2));
      for (std::string w; inner >> w;) words.push_back(w);
    } else {
      words.insert(words.end(), {key, text});
    }
  }
  if (!left_out.empty()) {
    std::string list;
    for (const auto& k : left_out) list += (list.empty() ? "" : ", ") + k;
    notes.push_back(path + ": MODEL_ARGS set to false, left out: " + list);
  }
  if (!unset.empty()) {
    std::string list;
    for (const auto& n : unset) list += (list.empty() ? "" : ", ") + n;
    notes.push_back(
        path + ": MODEL_ARGS use variables the environment does not set (" + list +
        "): left as written — set them as the CI does, or give the flags they stand for after them");
  }
  if (root["MODEL_ARGS_2"])
    notes.push_back(path + ": the first run's MODEL_ARGS are priced (MODEL_ARGS_2 … are a resumed run's)");
  return words;
}

}  // namespace preflight::analyzer
