// The published-run check of an estimate: analyzer/data/fidelity/time_errors.json (fidelity.hpp).
#include "preflight/analyzer/cost/fidelity.hpp"

#include <nlohmann/json.hpp>

#include "embedded_data.hpp"
#include "preflight/analyzer/cost/simumax_config.hpp"
#include "preflight/common/error.hpp"
#include "preflight/common/units.hpp"

namespace preflight::analyzer::cost {

namespace {

constexpr const char* kTable = "fidelity/time_errors.json";

const nlohmann::json& table() {
  static const nlohmann::json t = [] {
    const embedded::File* f = embedded::find(kTable);
    if (!f) throw InputError(std::string("analyzer/data/") + kTable, "is not embedded in this build");
    nlohmann::json j = parse_json_text(f->text, std::string("analyzer/data/") + kTable);
    if (!j.is_object() || j.value("format", "") != "preflight-time-fidelity" || !j.contains("systems") ||
        !j["systems"].is_object())
      throw InputError(std::string("analyzer/data/") + kTable,
                       "expected {\"format\": \"preflight-time-fidelity\", \"systems\": {...}}");
    return j;
  }();
  return t;
}

PublishedRuns runs_of(const std::string& run_class, const nlohmann::json& j) {
  const std::string where = std::string("analyzer/data/") + kTable + ": " + run_class;
  if (!j.is_object() || !j.contains("runs") || !j["runs"].is_number_integer() || !j.contains("min_error") ||
      !j["min_error"].is_number() || !j.contains("max_error") || !j["max_error"].is_number())
    throw InputError(where, "needs \"runs\", \"min_error\" and \"max_error\"");
  PublishedRuns r;
  r.run_class = run_class;
  r.runs = j["runs"].get<int>();
  r.min_error = j["min_error"].get<double>();
  r.max_error = j["max_error"].get<double>();
  if (j.contains("median_error") && j["median_error"].is_number())
    r.median_error = j["median_error"].get<double>();
  if (j.contains("within_5pct") && j["within_5pct"].is_number_integer())
    r.within_5pct = j["within_5pct"].get<int>();
  if (j.contains("corpora") && j["corpora"].is_array())
    for (const auto& c : j["corpora"])
      if (c.is_string()) r.corpora.push_back(c.get<std::string>());
  return r;
}

std::string range_text(const PublishedRuns& r) {
  return r.runs == 1 ? signed_fixed(100 * r.min_error, 1) + " %"
                     : signed_fixed(100 * r.min_error, 1) + " … " + signed_fixed(100 * r.max_error, 1) + " %";
}

}  // namespace

std::string time_run_class(const ModelSpec& model, const Strategy& strategy) {
  const std::string precision = strategy.fp4()                            ? "nvfp4"
                                : strategy.fp8 == Fp8Format::None         ? to_string(strategy.precision)
                                : strategy.fp8_recipe == Fp8Recipe::Mxfp8 ? "mxfp8"
                                                                          : "fp8";
  // Gated delta net layers make a class of their own (no published run has them: an estimate of one says it
  // is unchecked rather than borrowing the softmax-attention runs' errors).
  // LoRA too: its step has no weight-gradient GEMMs, so its errors are not the pre-training runs'.
  return std::string(model.lora.enabled() ? "lora " : "") + (model.hybrid() ? "hybrid " : "") +
         (model.has_gdn() ? "gdn " : "") + (model.moe.enabled() ? "moe " : "dense ") + precision;
}

PublishedCheck published_check(const std::string& preset, const std::string& run_class) {
  PublishedCheck c;
  c.preset = preset;
  c.run_class = run_class;
  if (preset.empty()) return c;
  const auto& systems = table()["systems"];
  auto it = systems.find(preset);
  if (it == systems.end()) return c;
  if (!it->is_object())
    throw InputError(std::string("analyzer/data/") + kTable + ": " + preset,
                     "expected an object of run classes");
  for (const auto& [cls, j] : it->items()) {
    PublishedRuns r = runs_of(cls, j);
    if (cls == run_class)
      c.same = std::move(r);
    else
      c.others.push_back(std::move(r));
  }
  return c;
}

std::string published_check_text(const PublishedCheck& c) {
  if (c.preset.empty())
    return "published runs: the system is a file, not a preset — no published run checks it (`preflight "
           "calibrate --fit-time` reports its error on your own runs)\n";
  if (c.same) {
    const PublishedRuns& r = *c.same;
    std::string corpora;
    for (const auto& k : r.corpora) corpora += (corpora.empty() ? "" : ", ") + k;
    // The median and the count within 5 % say where most runs sit when one outlier widens the range.
    const std::string spread = r.runs >= 3 && r.within_5pct >= 0
                                   ? " (median " + signed_fixed(100 * r.median_error, 1) + " %, " +
                                         std::to_string(r.within_5pct) + " within 5 %)"
                                   : "";
    return "published runs: " + std::to_string(r.runs) + " " + r.run_class + " run" +
           (r.runs == 1 ? "" : "s") + " on " + c.preset + " priced " + range_text(r) + spread +
           " against their measured iteration times (" + corpora + ")\n";
  }
  if (c.others.empty()) return "published runs: none on " + c.preset + " — this estimate is unchecked\n";
  std::string others;
  for (const auto& r : c.others)
    others += (others.empty() ? "" : ", ") + r.run_class + " " + range_text(r) + " (" +
              std::to_string(r.runs) + ")";
  return "published runs: none of this class (" + c.run_class + ") on " + c.preset +
         " — unchecked; its other classes were priced " + others + "\n";
}

}  // namespace preflight::analyzer::cost
