#include "preflight/analyzer/balance/layer_model.hpp"

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "preflight/common/error.hpp"

namespace preflight::analyzer::balance {

using nlohmann::json;

int LayerModel::total_body_layers() const {
  int n = 0;
  for (const auto& b : bodies) n += b.count;
  return n;
}

PerRecompute<bool> LayerModel::considered() const {
  PerRecompute<bool> c{};
  for (const auto& b : bodies)
    for (Recompute r : kAllRecompute) c[static_cast<int>(r)] = c[static_cast<int>(r)] || b.considered(r);
  return c;
}

void fill_backward_times(BodyKind& body, const PerRecompute<std::optional<double>>& explicit_ms,
                         const PerRecompute<std::optional<double>>& coef) {
  // SAPP `Layer.compute_internal_time`: the base is 2 · time (time = forward time of the layer).
  const double base = 2.0 * body.forward_ms;
  for (Recompute r : kAllRecompute) {
    const int i = static_cast<int>(r);
    if (explicit_ms[i].has_value() && *explicit_ms[i] != 0.0) {
      body.backward_ms[i] = *explicit_ms[i];
    } else {
      const double c = coef[i].has_value() ? *coef[i] : default_backward_coef(r);
      body.backward_ms[i] = (1.0 + c) * base;
    }
  }
}

namespace {

std::optional<double> number_at(const json& obj, const std::string& key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) throw InputError(where + ": " + key, "expected a number, got " + it->dump());
  return it->get<double>();
}

double required_number(const json& obj, const std::string& key, const std::string& where) {
  auto v = number_at(obj, key, where);
  if (!v) throw InputError(where, "missing key '" + key + "'");
  return *v;
}

}  // namespace

LayerModel layer_model_from_json(const json& doc, const std::string& where) {
  if (!doc.is_object()) throw InputError(where, "expected a JSON object with 'layers_description'");
  auto list = doc.find("layers_description");
  if (list == doc.end() || !list->is_array())
    throw InputError(where, "no 'layers_description' list (SAPP layer json expected)");
  LayerModel m;
  if (auto n = doc.find("name"); n != doc.end() && n->is_string()) m.name = n->get<std::string>();
  m.const_mb = number_at(doc, "stage_const_mem", where).value_or(0.0);
  bool head = false, tail = false;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const json& e = (*list)[i];
    const std::string at = where + ": layers_description[" + std::to_string(i) + "]";
    if (!e.is_object()) throw InputError(at, "expected an object");
    auto type_it = e.find("type");
    if (type_it == e.end() || !type_it->is_string())
      throw InputError(at, "missing 'type' (HEAD, BODY or TAIL)");
    const std::string type = type_it->get<std::string>();
    const double time = required_number(e, "time", at);
    if (time < 0) throw InputError(at + ": time", "must not be negative");
    const double mem = number_at(e, "memory_parameter", at).value_or(0.0);
    if (type == "HEAD") {
      head = true;
      m.head_forward_ms += number_at(e, "forward_time", at).value_or(time);
      m.head_mb += mem;
    } else if (type == "TAIL") {
      tail = true;
      m.tail_forward_ms += number_at(e, "forward_time", at).value_or(time);
      m.tail_mb += mem;
    } else if (type == "BODY") {
      BodyKind b;
      if (auto n = e.find("name"); n != e.end() && n->is_string()) b.name = n->get<std::string>();
      const double count = required_number(e, "nb_layer", at);
      if (count < 1 || std::floor(count) != count)
        throw InputError(at + ": nb_layer", "must be a positive integer");
      b.count = static_cast<int>(count);
      b.forward_ms = number_at(e, "forward_time", at).value_or(time);
      b.param_mb = mem;
      PerRecompute<std::optional<double>> explicit_ms{}, coef{};
      for (Recompute r : kAllRecompute) {
        const int k = static_cast<int>(r);
        b.activation_mb[k] = number_at(e, activation_json_key(r), at);
        explicit_ms[k] = number_at(e, backward_time_json_key(r), at);
        if (r == Recompute::Full && !explicit_ms[k]) explicit_ms[k] = number_at(e, "recompute_time", at);
        coef[k] = number_at(e, backward_coef_json_key(r), at);
      }
      // SAPP's time base for backward is `time`, also when forward_time is given.
      BodyKind tmp = b;
      tmp.forward_ms = time;
      fill_backward_times(tmp, explicit_ms, coef);
      b.backward_ms = tmp.backward_ms;
      bool any = false;
      for (Recompute r : kAllRecompute) any = any || b.considered(r);
      if (!any)
        throw InputError(at,
                         "body layer '" + b.name +
                             "' has no positive activation memory (memory_activation, memory_select_rec, …)");
      m.bodies.push_back(std::move(b));
    } else {
      throw InputError(at + ": type", "unknown layer type '" + type + "' (expected HEAD, BODY or TAIL)");
    }
  }
  if (!head) throw InputError(where, "no HEAD layer in layers_description");
  if (!tail) throw InputError(where, "no TAIL layer in layers_description");
  if (m.bodies.empty()) throw InputError(where, "no BODY layer in layers_description");
  return m;
}

LayerModel read_layer_json(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw InputError(file.string(), "cannot open layer json");
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::parse_error& e) {
    throw InputError(file.string() + "@" + std::to_string(e.byte),
                     std::string("malformed JSON: ") + e.what());
  }
  return layer_model_from_json(doc, file.string());
}

json layer_model_json(const LayerModel& model, bool sapp_integers) {
  auto mem = [&](double v) -> json {
    if (sapp_integers) return static_cast<long long>(v);  // int() truncates toward zero
    return v;
  };
  json layers = json::array();
  layers.push_back({{"name", "HEAD"},
                    {"type", "HEAD"},
                    {"model_name", model.name},
                    {"time", model.head_forward_ms},
                    {"nb_layer", 1},
                    {"memory_parameter", mem(model.head_mb)}});
  for (const auto& b : model.bodies) {
    json e = {{"name", b.name},       {"type", "BODY"},      {"model_name", model.name},
              {"time", b.forward_ms}, {"nb_layer", b.count}, {"memory_parameter", mem(b.param_mb)}};
    for (Recompute r : kAllRecompute)
      if (b.activation_mb[static_cast<int>(r)].has_value())
        e[activation_json_key(r)] = mem(*b.activation_mb[static_cast<int>(r)]);
    // Backward times are only written when they differ from SAPP's default rule.
    for (Recompute r : kAllRecompute) {
      const double def = (1.0 + default_backward_coef(r)) * 2.0 * b.forward_ms;
      if (b.considered(r) && std::abs(b.backward(r) - def) > 1e-9)
        e[backward_time_json_key(r)] = b.backward(r);
    }
    layers.push_back(std::move(e));
  }
  layers.push_back({{"name", "TAIL"},
                    {"type", "TAIL"},
                    {"model_name", model.name},
                    {"time", model.tail_forward_ms},
                    {"nb_layer", 1},
                    {"memory_parameter", mem(model.tail_mb)}});
  return {{"name", model.name}, {"stage_const_mem", mem(model.const_mb)}, {"layers_description", layers}};
}

}  // namespace preflight::analyzer::balance
