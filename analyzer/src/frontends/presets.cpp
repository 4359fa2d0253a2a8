#include "preflight/analyzer/frontends/presets.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string_view>

#include <nlohmann/json.hpp>

#include "embedded_data.hpp"

#include "preflight/analyzer/frontends/hf_config.hpp"
#include "preflight/common/error.hpp"
#include "preflight/common/http.hpp"

namespace preflight::analyzer {

namespace {

/// One entry of analyzer/data/models/presets.json: the model's config.json (a file next to it) and where
/// its numbers come from.
struct Preset {
  std::string name;
  std::vector<std::string> aliases;
  std::string hf_repo;  ///< Hugging Face repository id ("" when the model has none)
  std::string source;   ///< where the numbers come from
  std::string config;   ///< the architecture fields of its config.json (the file's text)
};

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = [] {
    const char* index_path = "models/presets.json";
    const embedded::File* index = embedded::find(index_path);
    if (!index) throw std::logic_error(std::string("analyzer/data/") + index_path + " is not embedded");
    std::vector<Preset> out;
    for (const auto& e : nlohmann::json::parse(index->text)) {
      Preset p;
      p.name = e.at("name").get<std::string>();
      p.aliases = e.at("aliases").get<std::vector<std::string>>();
      p.hf_repo = e.at("hf_repo").get<std::string>();
      p.source = e.at("source").get<std::string>();
      std::string file = "models/" + e.at("config").get<std::string>();
      const embedded::File* config = embedded::find(file);
      if (!config)
        throw std::logic_error("analyzer/data/" + file + " (named in presets.json) is not embedded");
      p.config = config->text;
      out.push_back(std::move(p));
    }
    return out;
  }();
  return all;
}

std::string normalize(const std::string& s) {
  std::string n;
  for (unsigned char c : s) n += c == '_' ? '-' : static_cast<char>(std::tolower(c));
  return n;
}

const Preset* find_preset(const std::string& name) {
  std::string key = normalize(name);
  for (const auto& p : presets()) {
    if (key == p.name || (!p.hf_repo.empty() && key == normalize(p.hf_repo))) return &p;
    for (const auto& a : p.aliases)
      if (key == a) return &p;
  }
  return nullptr;
}

std::string known_list() {
  std::string s;
  for (const auto& p : presets()) s += (s.empty() ? "" : ", ") + p.name;
  return s;
}

const Preset& require_preset(const std::string& name) {
  const Preset* p = find_preset(name);
  if (!p)
    throw InputError("--model", "unknown model '" + name + "': not a preset (known: " + known_list() +
                                    "), a config.json file, a checkpoint folder or an http(s) URL");
  return *p;
}

ModelSpec build_preset(const Preset& p, std::vector<std::string>* warnings) {
  ModelSpec m = parse_hf_config(p.config, "preset " + p.name, warnings);
  m.name = p.name;
  return m;
}

}  // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& p : presets()) names.push_back(p.name);
  return names;
}

bool is_preset(const std::string& name) {
  return find_preset(name) != nullptr;
}

ModelSpec preset_model(const std::string& name) {
  return build_preset(require_preset(name), nullptr);
}

std::string preset_source(const std::string& name) {
  return require_preset(name).source;
}

namespace {

/// "ORG/REPO" as the Hub names repositories: two non-empty names of [A-Za-z0-9._-], not starting with '.'
/// or '-' (so "./x", "../x" and "/abs" stay paths).
bool is_hf_repo_id(const std::string& s) {
  auto slash = s.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == s.size() ||
      s.find('/', slash + 1) != std::string::npos)
    return false;
  auto ok_part = [](std::string_view part) {
    if (part.front() == '.' || part.front() == '-' || part.ends_with(".json")) return false;
    return std::all_of(part.begin(), part.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    });
  };
  std::string_view v = s;
  return ok_part(v.substr(0, slash)) && ok_part(v.substr(slash + 1));
}

/// A repository name without its chat / instruct / base / thinking / FP8 / dated variant suffixes
/// (normalized: lower case, `_` as `-`).
std::string strip_variant(std::string n) {
  for (bool stripped = true; stripped;) {
    stripped = false;
    for (const char* suffix : {"-instruct", "-chat", "-base", "-hf", "-thinking", "-fp8"})
      if (n.size() > std::strlen(suffix) && n.ends_with(suffix)) {
        n.resize(n.size() - std::strlen(suffix));
        stripped = true;
      }
    // a release date (Qwen3-235B-A22B-Instruct-2507)
    if (n.size() > 5 && n[n.size() - 5] == '-' &&
        std::all_of(n.end() - 4, n.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      n.resize(n.size() - 5);
      stripped = true;
    }
  }
  return n;
}

/// The preset whose repository `repo` (ORG/REPO) is, or is a chat / instruct / base / thinking / FP8 / dated
/// variant of; nullptr when none is.
const Preset* family_preset(const std::string& repo) {
  if (const Preset* p = find_preset(repo)) return p;
  if (!is_hf_repo_id(repo)) return nullptr;
  const std::string family = strip_variant(normalize(repo));
  for (const Preset& preset : presets()) {
    if (!preset.hf_repo.empty() && strip_variant(normalize(preset.hf_repo)) == family) return &preset;
    for (const std::string& a : preset.aliases)
      if (a.find('/') != std::string::npos && strip_variant(a) == family)
        return &preset;  // a repository alias
  }
  return nullptr;
}

}  // namespace

std::string preset_of_repository(const std::string& repo) {
  const Preset* p = family_preset(repo);
  return p ? p->name : "";
}

std::string preset_of_reupload(const std::string& repo) {
  if (!is_hf_repo_id(repo) || family_preset(repo)) return "";
  auto name_of = [](const std::string& r) { return strip_variant(normalize(r.substr(r.find('/') + 1))); };
  const std::string name = name_of(repo);
  for (const Preset& preset : presets()) {
    if (!preset.hf_repo.empty() && name_of(preset.hf_repo) == name) return preset.name;
    for (const std::string& a : preset.aliases)
      if (a.find('/') != std::string::npos && name_of(a) == name) return preset.name;
  }
  return "";
}

std::optional<RepositoryVocab> tokenizer_vocab_of_repository(const std::string& repo) {
  struct Entry {
    std::vector<std::string> repos;
    long long vocab_size;
    std::string source;
  };
  static const std::vector<Entry> table = [] {
    const char* path = "models/tokenizers.json";
    const embedded::File* file = embedded::find(path);
    if (!file) throw std::logic_error(std::string("analyzer/data/") + path + " is not embedded");
    std::vector<Entry> out;
    for (const auto& e : nlohmann::json::parse(file->text))
      out.push_back({e.at("repos").get<std::vector<std::string>>(), e.at("vocab_size").get<long long>(),
                     e.at("source").get<std::string>()});
    return out;
  }();
  if (!is_hf_repo_id(repo)) return std::nullopt;
  const std::string family = strip_variant(normalize(repo));
  auto name_of = [](const std::string& r) { return strip_variant(normalize(r.substr(r.find('/') + 1))); };
  for (const bool by_name : {false, true})
    for (const Entry& e : table)
      for (const std::string& r : e.repos)
        if (by_name ? name_of(r) == name_of(repo) : strip_variant(normalize(r)) == family)
          return RepositoryVocab{e.vocab_size, r, e.source, by_name};
  return std::nullopt;
}

std::string hf_cached_snapshot(const std::string& repo) {
  namespace fs = std::filesystem;
  if (!is_hf_repo_id(repo)) return "";
  auto env = [](const char* k) -> std::string {
    const char* v = std::getenv(k);
    return v ? v : "";
  };
  fs::path cache;
  if (!env("HF_HUB_CACHE").empty()) {
    cache = env("HF_HUB_CACHE");
  } else if (!env("HF_HOME").empty()) {
    cache = fs::path(env("HF_HOME")) / "hub";
  } else if (!env("XDG_CACHE_HOME").empty()) {
    cache = fs::path(env("XDG_CACHE_HOME")) / "huggingface" / "hub";
  } else if (!env("HOME").empty()) {
    cache = fs::path(env("HOME")) / ".cache" / "huggingface" / "hub";
  } else {
    return "";
  }
  std::string folder = "models--" + repo;
  folder.replace(folder.find('/'), 1, "--");
  const fs::path root = cache / folder;
  std::error_code ec;
  if (std::ifstream ref(root / "refs" / "main"); ref) {
    std::string revision;
    std::getline(ref, revision);
    const fs::path snap = root / "snapshots" / revision;
    if (!revision.empty() && fs::is_regular_file(snap / "config.json", ec)) return snap.string();
  }
  fs::path newest;
  fs::file_time_type when{};
  for (auto it = fs::directory_iterator(root / "snapshots", ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const fs::path cfg = it->path() / "config.json";
    if (!fs::is_regular_file(cfg, ec)) continue;
    const auto t = fs::last_write_time(cfg, ec);
    if (newest.empty() || t > when) {
      newest = it->path();
      when = t;
    }
  }
  return newest.string();
}

ModelSpec load_model(const std::string& spec, std::vector<std::string>* warnings) {
  namespace fs = std::filesystem;
  if (spec.empty())
    throw InputError("--model", "expects a preset name, a config.json path or an http(s) URL");
  if (is_http_url(spec)) return load_hf_config(spec, warnings);
  std::error_code ec;
  fs::path p = spec;
  bool usable_path = fs::is_regular_file(p, ec) || fs::is_regular_file(p / "config.json", ec);
  if (usable_path) return load_hf_config(spec, warnings);
  if (const Preset* preset = find_preset(spec)) return build_preset(*preset, warnings);
  if (const std::string cached = hf_cached_snapshot(spec); !cached.empty()) {
    if (warnings)
      warnings->push_back("--model " + spec + ": its config.json from the Hugging Face cache, " + cached);
    return load_hf_config(cached, warnings);
  }
  if (is_hf_repo_id(spec)) {
    // A chat / instruct / base / thinking / FP8 / dated variant of a preset's repository
    // (Qwen/Qwen2.5-7B-Instruct, meta-llama/Llama-2-7b-chat-hf, Qwen/Qwen3-235B-A22B-Instruct-2507): the same
    // architecture; the preset, said.
    if (const Preset* preset = family_preset(spec)) {
      if (warnings)
        warnings->push_back("--model " + spec + ": the " + preset->name + " preset (" + preset->hf_repo +
                            "'s architecture, which this variant shares; a local folder with its config.json "
                            "is read instead when given)");
      return build_preset(*preset, warnings);
    }
    // Not a file or folder here and not a preset: a repository on the Hub, as `from_pretrained` reads it.
    if (const char* offline = std::getenv("HF_HUB_OFFLINE");
        offline && std::string(offline) != "0" && std::string(offline) != "")
      throw InputError("--model " + spec,
                       "HF_HUB_OFFLINE is set and the repository is not in the Hugging Face cache "
                       "($HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub): give a folder with its "
                       "config.json");
    std::string url = hf_endpoint() + "/" + spec + "/resolve/main/config.json";
    try {
      return load_hf_config(url, warnings);
    } catch (const InputError& e) {
      throw InputError(e.where(),
                       e.detail() + " (--model " + spec +
                           " is not a file or folder here, so it was read as a Hugging Face repository)");
    }
  }
  bool looks_like_path = spec.find('/') != std::string::npos || (spec.size() > 5 && spec.ends_with(".json"));
  if (looks_like_path && !fs::exists(p, ec)) {
    // A checkpoint folder of the training cluster, absent here (`--model.model_name_or_path
    // /home/data/Qwen3-8B/` of a launch script analysed elsewhere): a folder named as a preset's repository
    // (or a variant of it) is that preset, said; any other name is refused below.
    std::string folder = spec;
    while (!folder.empty() && folder.back() == '/') folder.pop_back();
    folder = folder.substr(folder.rfind('/') == std::string::npos ? 0 : folder.rfind('/') + 1);
    std::string preset = folder.empty() ? std::string() : preset_of_reupload("folder/" + folder);
    if (preset.empty() && !folder.empty()) {
      // a preset's name, or the one preset whose name or repository name it begins at a '-'
      // (./model_weights/qwen3-235b/ → qwen3-235b-a22b; ./qwen3-next/ → qwen3-next-80b-a3b)
      const std::string key = strip_variant(normalize(folder));
      std::vector<std::string> matches;
      for (const Preset& candidate : presets()) {
        const std::string repo_name =
            candidate.hf_repo.empty()
                ? std::string()
                : strip_variant(normalize(candidate.hf_repo.substr(candidate.hf_repo.find('/') + 1)));
        if (key == candidate.name || candidate.name.rfind(key + "-", 0) == 0 ||
            (!repo_name.empty() && repo_name.rfind(key + "-", 0) == 0))
          matches.push_back(candidate.name);
      }
      if (std::find(matches.begin(), matches.end(), key) != matches.end())
        preset = key;  // the preset's own name (deepseek-v2, not deepseek-v2-lite)
      else if (matches.size() == 1)
        preset = matches.front();
    }
    if (!preset.empty()) {
      if (warnings)
        warnings->push_back("--model " + spec + " is not on this machine: the " + preset +
                            " preset, by the folder's name (give the folder, or a copy of its config.json, "
                            "for the model itself)");
      return build_preset(require_preset(preset), warnings);
    }
  }
  if (looks_like_path && !fs::exists(p, ec))
    throw InputError(spec, "no such file or folder on this machine, and its name is no preset's (" +
                               known_list() +
                               "): give the model's config.json (a copy of the folder's) or a preset's name");
  if (looks_like_path) return load_hf_config(spec, warnings);  // reports an unreadable file or folder
  return build_preset(require_preset(spec), warnings);         // reports the unknown name
}

}  // namespace preflight::analyzer
