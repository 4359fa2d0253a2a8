#include "preflight/analyzer/balance/seq_pipe.hpp"

#include <cmath>

#include <yaml-cpp/yaml.h>

#include "preflight/common/error.hpp"
#include "yaml_input.hpp"

namespace preflight::analyzer::balance {

TrainingParams read_training_config(const std::filesystem::path& file) {
  const std::string f = file.string();
  YAML::Node root = detail::load_yaml(file, "cannot open the training yaml");
  auto get = [&](std::initializer_list<const char*> path, bool required, long long fallback) -> long long {
    // yaml-cpp: `node = other` assigns into the referenced node; reset() rebinds.
    YAML::Node n;
    n.reset(root);
    std::string name;
    for (const char* k : path) {
      name += (name.empty() ? "" : ".") + std::string(k);
      if (!n.IsMap()) {
        n.reset(YAML::Node());
        break;
      }
      YAML::Node next = n[k];
      n.reset(next);
    }
    if (!n.IsDefined() || n.IsNull()) {
      if (required) throw InputError(f, "missing '" + name + "' (needed for the seqpipe memory model)");
      return fallback;
    }
    try {
      const double v = n.as<double>();
      if (!(v >= 1) || std::floor(v) != v) throw std::invalid_argument(name);
      return static_cast<long long>(v);
    } catch (const std::exception&) {
      throw InputError(n.Mark().line >= 0 ? location(f, n.Mark().line + 1) : f,
                       name + ": expected a positive integer");
    }
  };
  TrainingParams p;
  p.heads = static_cast<int>(get({"model", "model_config", "num_heads"}, true, 0));
  p.hidden = static_cast<int>(get({"model", "model_config", "hidden_size"}, true, 0));
  p.seq_length = get({"model", "model_config", "seq_length"}, true, 0);
  p.vocab = get({"model", "model_config", "vocab_size"}, true, 0);
  p.batch_size = static_cast<int>(get({"runner_config", "batch_size"}, true, 0));
  p.data_parallel = static_cast<int>(get({"parallel_config", "data_parallel"}, false, 1));
  p.model_parallel = static_cast<int>(get({"parallel_config", "model_parallel"}, false, 1));
  p.context_parallel = static_cast<int>(get({"parallel_config", "context_parallel"}, false, 1));
  p.head_dim = p.hidden / p.heads;
  return p;
}

int sapp_seq_split(int requested, const TrainingParams& params, std::string& note) {
  note.clear();
  if (requested <= 1) return 1;
  if (params.seq_length / requested >= 4096) return requested;
  if (requested == 2) {
    note = "sequence chunks would be shorter than 4096 tokens (" + std::to_string(params.seq_length) +
           " / 2): seqpipe turned off, as SAPP does";
    return 1;
  }
  const int k = static_cast<int>(params.seq_length / 4096);
  note = "sequence chunks would be shorter than 4096 tokens: -seq " + std::to_string(requested) +
         " changed to " + std::to_string(k) + ", as SAPP does";
  return std::max(1, k);
}

LayerModel seq_pipe_model(const LayerModel& model, const TrainingParams& t, int k,
                          std::vector<std::string>& notes) {
  if (k <= 1) return model;
  constexpr double kMB = 1024.0 * 1024.0, fp16 = 2, fp32 = 4;
  const double b = t.batch_size, h = t.heads, L = static_cast<double>(t.seq_length), d = t.head_dim,
               mp = t.model_parallel, hid = t.hidden, vocab = static_cast<double>(t.vocab);
  const double kv = fp16 * b * h * L * d / mp / kMB;  // keys (or values) of one layer, MB
  LayerModel m = model;
  for (auto& body : m.bodies) {
    body.param_mb += 4 * kv;
    for (Recompute r : kAllRecompute) {
      auto& a = body.activation_mb[static_cast<int>(r)];
      if (!a) continue;
      if (r == Recompute::Full) {
        if (body.considered(r))
          notes.push_back("seqpipe does not support full recompute: class 'full' dropped");
        a.reset();
        continue;
      }
      *a = (*a - 2 * kv) / k + 2 * kv;
    }
    // Times: a k-th of the work per sequence chunk; backward re-derived from SAPP's coefficients.
    PerRecompute<std::optional<double>> coef{};
    for (Recompute r : kAllRecompute) {
      const double base = 2 * body.forward_ms;
      coef[static_cast<int>(r)] = base > 0 ? body.backward(r) / base - 1 : default_backward_coef(r);
    }
    body.forward_ms /= k;
    fill_backward_times(body, {}, coef);
  }
  if (mp > 1)
    m.head_mb -= (1 - 1.0 / k) * (2 * (fp16 * b * L * hid / mp) + fp16 * b * L * hid) / kMB;
  else
    m.head_mb -= (1 - 1.0 / k) * (fp16 * b * L * hid / mp + fp16 * b * L * 11008 / mp) / kMB;
  const double M = fp32 * b * L * vocab / mp / kMB;
  m.tail_mb = m.tail_mb - (3 - 3.0 / k) * M + (k - 1) * M / k;
  m.head_forward_ms /= k;
  m.tail_forward_ms /= k;
  return m;
}

}  // namespace preflight::analyzer::balance
