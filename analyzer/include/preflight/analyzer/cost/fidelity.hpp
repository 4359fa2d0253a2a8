#pragma once
// How far the time model was off on published runs of the same kind: the errors of `preflight estimate` on
// the published measured iteration times of tests/data/time_corpus, per system preset and run class, embedded
// from analyzer/data/fidelity/time_errors.json (written by scripts/gen_time_fidelity.py, checked in sync by
// tests/cost/test_time_fit.cpp).  An estimate carries its class's range so that a user sees how much its
// iteration time can be trusted on that system, or that nothing published checks it.
#include <optional>
#include <string>
#include <vector>

#include "preflight/analyzer/model/model_spec.hpp"
#include "preflight/analyzer/model/strategy.hpp"

namespace preflight::analyzer::cost {

/// A run's class for the published check: "<dense|moe> <precision>", precision one of bf16, fp16, fp32,
/// fp8 (per-tensor scaling: delayed or current), mxfp8, nvfp4 — e.g. "moe mxfp8"; a hybrid (Mamba) model's
/// class is prefixed "hybrid " ("hybrid moe mxfp8"), one with gated delta net layers "gdn " ("gdn moe bf16";
/// "hybrid gdn …" for a hybrid pattern's G layers), a LoRA fine-tuning "lora " ("lora dense fp8").
std::string time_run_class(const ModelSpec& model, const Strategy& strategy);

/// The published runs of one class on one preset, priced as given (before any fit).
struct PublishedRuns {
  std::string run_class;
  int runs = 0;
  double min_error = 0;  ///< signed relative error (predicted − measured) / measured, e.g. −0.074
  double max_error = 0;
  double median_error = 0;  ///< the median signed error: where most runs of the class sit, not its outliers
  int within_5pct = -1;     ///< runs with |error| ≤ 5 % (-1: not in the table)
  std::vector<std::string> corpora;  ///< tests/data/time_corpus file stems holding them
};

/// What the corpus says about an estimate on `preset` of class `run_class`.
struct PublishedCheck {
  std::string preset;  ///< "" when the system is a file, not an embedded preset
  std::string run_class;
  std::optional<PublishedRuns> same;  ///< the runs of this class on this preset, if any
  std::vector<PublishedRuns> others;  ///< the preset's runs of other classes
};

/// Looks `preset` / `run_class` up in the embedded table.
/// @throws InputError when the embedded table is malformed (a build defect, not user input).
PublishedCheck published_check(const std::string& preset, const std::string& run_class);

/// One line for the human summary: "published runs: 10 moe mxfp8 runs on b300 priced -5.8 … +20.3 % (median
/// -1.9 %, 8 within 5 %) against … (…)",
/// or that none of the class (or none at all, or a system file) checks it.
std::string published_check_text(const PublishedCheck& check);

}  // namespace preflight::analyzer::cost
