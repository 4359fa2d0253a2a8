// preflight search: the best parallel layout (tp × pp × ep × recompute) by MFU under the memory limit.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>

#include <unistd.h>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>

#include "commands.hpp"
#include "preflight/analyzer/cost/estimate.hpp"
#include "preflight/analyzer/cost/fidelity.hpp"
#include "preflight/analyzer/cost/report.hpp"
#include "preflight/analyzer/cost/search.hpp"
#include "preflight/analyzer/cost/simumax_config.hpp"
#include "preflight/analyzer/frontends/bridge_config.hpp"
#include "preflight/analyzer/frontends/hf_config.hpp"
#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/analyzer/frontends/mindformers_yaml.hpp"
#include "preflight/analyzer/frontends/nemo_config.hpp"
#include "preflight/common/error.hpp"
#include "preflight/common/table.hpp"
#include "preflight/common/units.hpp"

namespace preflight::cli {

namespace {

struct SearchOptions {
  bool sequence_parallel_with_tp = false;  // a launch at tp 1: its tp > 1 layouts run sequence parallelism
  std::string model, system = "a100_pcie", strategy, csv, config;
  int world = 0, gbs = 0, mbs = 1, seq = 4096, top = 10, threads = 0;
  std::string mbs_text;  // --micro-batch-size as given: one size or a list to search
  std::string tp, pp, ep, cp, vpp, recompute = "none,full_block,selective";
  std::string etp;  // --etp: expert tensor-parallel sizes, `tp` for each layout's tp
  double margin = 10;
  bool use_etp = false, no_reserved = false, json = false, quiet = false, strict = false, simumax_compat = false;
  bool mbs_default = true, seq_default = true, recompute_default = true;  // not given on the command line
  int gpus_per_node = 0;
  double nic_gbps = 0;         // --nic-gbps: each GPU's inter-node GB/s (0: the system's)
  int lora_rank = 0;           // --lora-rank: LoRA on the model's four default targets (0: none)
  double moe_load_imbalance = 1.0;  // --moe-load-imbalance: the busiest ep rank's routed tokens ÷ the mean
  double packed_seq_mean_length = 0;  // --packed-seq-mean-length: packed samples' mean length (0: unpacked)
  double yaml_device_gib = 0;  // --config: context.max_device_memory (0: none)
  std::vector<std::string> megatron;  // a launch's Megatron-LM / torchrun arguments after --
  std::string bridge_config;          // --bridge-config: a Megatron-Bridge run configuration, as a launch
  std::optional<analyzer::BridgeConfigArgs> bridge;  // its conversion (errors said in its terms)
  bool gbs_default = true, world_default = true;
  /// A launch's own sizes (tp, pp, ep, cp, vpp, micro batch, expert tp): among those searched, and ranked on
  /// a line.
  struct LaunchLayout {
    int tp = 1, pp = 1, ep = 1, cp = 1, vpp = 1, mbs = 1;
    int etp = 1;             // the expert tensor-parallel size it runs (Megatron's default: its tp)
    bool recomputes = true;  // false: a Megatron launch without recompute, ranked as the search's "none"
  };
  std::optional<LaunchLayout> launch;
  std::string launch_label = "the launch's own layout";  // how its line names it (a yaml's, a launch's)
};

int run_search(const SearchOptions& o, analyzer::ModelSpec& model, analyzer::Strategy base,
               std::vector<std::string>& warnings);

/// A yaml's or a launch's base without its own pipeline split (its pp, vpp, offsets, layout and per-layer
/// recompute): the sizes are searched, and a split of the base's stages that the model's layers do not make
/// without its layout would throw where the base is read.
void clear_pipeline_split(analyzer::Strategy& base) {
  base.chunk_layout.clear();
  base.stage_layers.clear();
  base.per_layer_recompute.clear();
  base.first_stage_layers = base.last_stage_layers = -1;
  base.account_for_embedding_in_pipeline_split = base.account_for_loss_in_pipeline_split = false;
  base.pp = base.vpp = 1;
}

std::vector<int> int_list(const std::string& text, const char* flag) {
  std::vector<int> out;
  if (text.empty() || text == "all") return out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      std::size_t used = 0;
      int v = std::stoi(item, &used);
      if (used != item.size() || v <= 0) throw std::invalid_argument(item);
      if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);  // a size once
    } catch (const std::exception&) {
      throw InputError(flag, "expects positive integers separated by commas, got '" + text + "'");
    }
  }
  return out;
}

std::vector<analyzer::cost::RecomputeSearch> recompute_list(const std::string& text) {
  using analyzer::cost::RecomputeSearch;
  std::vector<RecomputeSearch> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item == "none" || item == "no_recompute")
      out.push_back(RecomputeSearch::None);
    else if (item == "full_block" || item == "full")
      out.push_back(RecomputeSearch::FullBlock);
    else if (item == "selective" || item == "selective_recompute")
      out.push_back(RecomputeSearch::Selective);
    else if (item == "launch")
      out.push_back(RecomputeSearch::Launch);
    else
      throw InputError("--recompute", "unknown type '" + item + "' (none, full_block, selective, launch)");
  }
  return out;
}

/// --etp: sizes, or `tp` (0: each layout's tensor-parallel size, Megatron's default).
std::vector<int> etp_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    int v = 0;
    if (item != "tp") {
      std::size_t used = 0;
      try {
        v = std::stoi(item, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != item.size() || v <= 0)
        throw InputError("--etp",
                         "expects positive integers or 'tp' separated by commas, got '" + text + "'");
    }
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  if (out.empty()) throw InputError("--etp", "names no expert tensor-parallel size");
  return out;
}

std::string csv_quote(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

void write_csv(const std::string& path, const analyzer::cost::SearchResult& r) {
  std::ofstream f(path);
  if (!f) throw InputError("--csv", "cannot write " + path);
  f << "rank,feasible,tp,pp,ep,etp,dp,cp,vpp,micro_batches,recompute,recompute_layers,mfu,tflops_per_gpu,"
       "tokens_per_second_per_gpu,iteration_s,straggler_ratio,peak_gib,stage_peaks_gib,parallelism,recompute_"
       "status,"
       "error\n";
  std::vector<std::size_t> order = r.ranking();
  std::vector<char> ranked(r.evaluations.size(), 0);
  for (std::size_t i : order) ranked[i] = 1;
  for (std::size_t i = 0; i < r.evaluations.size(); ++i)
    if (!ranked[i]) order.push_back(i);
  int rank = 0;
  for (std::size_t i : order) {
    const auto& e = r.evaluations[i];
    std::string stages;
    for (const auto& [k, v] : e.stage_peaks_gib)
      stages += (stages.empty() ? "" : " ") + k + "=" + fixed(v, 4);
    f << (e.feasible ? std::to_string(++rank) : "") << "," << (e.feasible ? "true" : "false") << "," << e.tp
      << "," << e.pp << "," << e.ep << "," << e.etp << "," << e.dp << "," << e.cp << "," << e.vpp << ","
      << e.micro_batches << "," << to_string(e.kind) << "," << e.recompute.layers << "," << fixed(e.mfu, 6)
      << "," << fixed(e.tflops_per_gpu, 3) << "," << fixed(e.tokens_per_second_per_gpu, 2) << ","
      << fixed(e.iteration_ms / 1000, 4) << "," << fixed(e.straggler_ratio, 4) << "," << fixed(e.peak_gib, 4)
      << "," << csv_quote(stages) << "," << csv_quote(e.parallelism) << "," << csv_quote(e.recompute_status)
      << "," << csv_quote(e.error) << "\n";
  }
}

std::string recompute_cell(const analyzer::cost::SearchEvaluation& e) {
  const auto& rc = e.recompute;
  if (rc.scope == analyzer::RecomputeScope::None || rc.layers == 0) return "none";
  if (rc.scope == analyzer::RecomputeScope::FullBlock) return "full ×" + std::to_string(rc.layers);
  if (!rc.megatron_modules.empty()) {  // Megatron's --recompute-modules (a launch's own)
    std::string s = "sel ";
    for (std::size_t i = 0; i < rc.megatron_modules.size(); ++i) s += (i ? "+" : "") + rc.megatron_modules[i];
    return s;
  }
  std::string s = "sel";
  if (rc.attn) s += rc.attn_norm ? " attn+norm" : " attn";
  if (rc.mlp) s += rc.mlp_norm ? " mlp+norm" : " mlp";
  return s;
}

/// The first `k` distinct rows of the ranking: SimuMax evaluates a layout once per recompute kind, so a
/// layout that needs no recompute comes back identical from each kind; the table shows it once (the CSV
/// keeps every evaluation).
std::vector<std::size_t> top_rows(const analyzer::cost::SearchResult& r,
                                  const std::vector<std::size_t>& ranking, int k) {
  std::vector<std::size_t> out;
  std::set<std::string> seen;
  for (std::size_t i : ranking) {
    if (static_cast<int>(out.size()) >= k) break;
    const auto& e = r.evaluations[i];
    std::string key = std::to_string(e.tp) + "/" + std::to_string(e.pp) + "/" + std::to_string(e.ep) + "/" +
                      std::to_string(e.etp) + "/" + std::to_string(e.dp) + "/" + std::to_string(e.cp) + "/" +
                      std::to_string(e.vpp) + "/" + recompute_cell(e) + "/" + fixed(e.mfu, 9);
    if (seen.insert(key).second) out.push_back(i);
  }
  return out;
}

int run(const SearchOptions& o) {
  using namespace analyzer;
  std::vector<std::string> warnings;
  ModelSpec model;
  Strategy base;
  SearchOptions oo = o;
  // run_mindformer.py's arguments after -- (a launch of it: its --config), as estimate reads them; with
  // --config, the words after -- are run_mindformer.py's.
  MindFormersOptions mf;
  std::string yaml = o.config;
  std::vector<std::string> words = o.megatron;
  restore_bracket_words(words);
  // an AMD Primus experiment or a Megatron-LM test case: Megatron's arguments
  if (!yaml.empty() && (is_primus_experiment(yaml) || is_megatron_test_case(yaml))) {
    words.insert(words.end(), {"--config", yaml});
    yaml.clear();
    oo.megatron = words;  // a launch from here on (its own recompute is a choice of each layout)
    oo.config.clear();
  }
  if (!words.empty()) {
    const std::string inner = read_run_mindformer_args(words, mf);
    if (!inner.empty() && !yaml.empty() && inner != yaml)
      throw InputError("--config", "given twice (" + yaml + ", " + inner + ")");
    if (yaml.empty()) yaml = inner;
    if (yaml.empty()) mf = MindFormersOptions{};  // Megatron words: nothing of run_mindformer.py's
  }
  // Each size not listed: the search's default list with the launch's (or yaml's) own size in it.
  auto with_own_sizes = [](SearchOptions& so, bool moe, const SearchOptions::LaunchLayout& own) {
    auto with_own = [](std::string& list, const std::string& fallback, int own_size) {
      if (!list.empty()) return;
      list = fallback.empty() ? std::to_string(own_size) : fallback + "," + std::to_string(own_size);
    };
    with_own(so.tp, moe ? "1" : "1,2,4,8", own.tp);
    with_own(so.ep, moe ? "1,2,4,8" : "", own.ep);
    with_own(so.vpp, own.vpp > 1 ? "1" : "", own.vpp);
    with_own(so.cp, "", own.cp);
  };
  if (!yaml.empty()) {
    // A MindFormers yaml: its model, numerics, batch and sequence; tp, pp, ep and recompute are searched.
    if (!o.strategy.empty()) throw InputError("--strategy", "cannot be combined with --config");
    ModelSpec given;
    if (!o.model.empty()) {
      given = cost::load_cost_model(o.model, &warnings);
      mf.base = &given;
    }
    MindFormersConfig mc = load_mindformers_yaml(yaml, mf);
    oo.config = yaml;
    oo.megatron.clear();  // run_mindformer.py's words, read above
    for (const auto& w : mc.warnings) warnings.push_back(w);
    model = mc.model;
    base = mc.strategy;
    // The yaml's own sizes are ranked on a line (among the layouts searched, at their fastest recompute).
    oo.launch = SearchOptions::LaunchLayout{
        base.tp, base.pp, base.ep, base.cp, base.vpp, base.micro_batch_size, base.expert_tp()};
    oo.launch_label = "the yaml's own layout";
    with_own_sizes(oo, model.moe.enabled(), *oo.launch);
    clear_pipeline_split(base);
    if (mc.max_device_memory_gib) oo.yaml_device_gib = *mc.max_device_memory_gib;
    if (oo.world <= 0) oo.world = mc.world_size();
    if (oo.gbs <= 0) oo.gbs = mc.strategy.global_batch();
    if (oo.mbs_default) oo.mbs = mc.strategy.micro_batch_size;
    if (oo.seq_default) oo.seq = static_cast<int>(mc.strategy.seq_length);
    base.seq_length = oo.seq;
  } else if (!words.empty()) {  // (an AMD Primus experiment or a Megatron test case given as --config too)
    // A Megatron launch: its model (or --model's, the flags on top), numerics, kernels, dispatcher, batch,
    // sequence and world size; tp, pp, ep, cp, vpp, micro batch and recompute are searched (a size not
    // listed: the defaults with the launch's own added).
    if (!o.strategy.empty())
      throw InputError("--strategy", "cannot be combined with Megatron arguments after --");
    ModelSpec given;
    if (!o.model.empty()) given = cost::load_cost_model(o.model, &warnings);
    const MegatronConfig mc =
        o.bridge ? parse_bridge_args(*o.bridge, process_environment(), o.model.empty() ? nullptr : &given)
                 : parse_megatron_args(words, process_environment(), o.model.empty() ? nullptr : &given);
    for (const auto& w : mc.warnings) warnings.push_back(w);
    model = mc.model;
    base = mc.strategy;
    SearchOptions::LaunchLayout own{
        base.tp,          base.pp,
        base.ep,          base.cp,
        base.vpp,         base.micro_batch_size,
        base.expert_tp(), base.recompute_granularity != RecomputeGranularity::None};
    oo.launch = own;
    // The launch's own recompute flags are one more choice of each layout (the launch's own layout is then
    // ranked as launched, priced as `estimate` prices it).
    if (oo.recompute_default && base.recompute_granularity != RecomputeGranularity::None)
      oo.recompute += ",launch";
    // A launch at tp 1 cannot say whether it would run sequence parallelism with tensor parallelism;
    // Megatron's and NeMo's recipes do (the legacy model of before 2022 had none).
    oo.sequence_parallel_with_tp = base.tp == 1 && !base.sequence_parallel && !base.legacy_model;
    clear_pipeline_split(base);
    // Each size not listed: the search's default list with the launch's own size in it.
    with_own_sizes(oo, model.moe.enabled(), own);
    if (oo.world_default) oo.world = base.world_size;
    if (oo.gbs_default) oo.gbs = base.global_batch();
    if (oo.mbs_default) oo.mbs = base.micro_batch_size;
    if (oo.seq_default) oo.seq = static_cast<int>(base.seq_length);
    base.seq_length = oo.seq;
    if (o.moe_load_imbalance != 1.0) base.moe_load_imbalance = o.moe_load_imbalance;
    if (o.packed_seq_mean_length > 0) base.packed_seq_mean_length = o.packed_seq_mean_length;
    if (o.lora_rank > 0) {
      model.lora = LoraSpec{};
      model.lora.rank = o.lora_rank;
    }
    if (!(o.moe_load_imbalance >= 1.0) || !std::isfinite(o.moe_load_imbalance))
      throw InputError("--moe-load-imbalance",
                       "must be a number ≥ 1 (the busiest expert-parallel rank's routed tokens ÷ the mean)");
    if (base.moe_load_imbalance > 1.0 && !model.moe.enabled())
      throw InputError("--moe-load-imbalance", "is given for a model without experts");
    return run_search(oo, model, base, warnings);
  } else {
    if (o.model.empty())
      throw InputError("--model",
                       "is required (or --config X.yaml, or a launch's Megatron arguments after --)");
    model = cost::load_cost_model(o.model, &warnings);
  }
  if (o.lora_rank < 0) throw InputError("--lora-rank", "must not be negative");
  if (o.lora_rank > 0) {
    model.lora = LoraSpec{};
    model.lora.rank = o.lora_rank;
  }
  if (!(o.moe_load_imbalance >= 1.0) || !std::isfinite(o.moe_load_imbalance))
    throw InputError("--moe-load-imbalance",
                     "must be a number ≥ 1 (the busiest expert-parallel rank's routed "
                     "tokens ÷ the mean)");
  if (o.moe_load_imbalance > 1.0 && !model.moe.enabled())
    throw InputError("--moe-load-imbalance", "is given for a model without experts");
  base.moe_load_imbalance = o.moe_load_imbalance;
  base.packed_seq_mean_length = o.packed_seq_mean_length;
  return run_search(oo, model, base, warnings);
}

int run_search(const SearchOptions& o, analyzer::ModelSpec& model, analyzer::Strategy base,
               std::vector<std::string>& warnings) {
  using namespace analyzer;
  for (const auto& w : cost::unmodelled_features(model, &base)) warnings.push_back("model " + model.name + ": " + w);
  if (std::string note = mtp_left_out_note(model); !note.empty()) warnings.push_back(note);
  SystemSpec system = cost::load_simumax_system(o.system);
  cap_device_memory(system.mem_gib, o.yaml_device_gib, warnings);
  for (const auto& w : warnings) std::cerr << "preflight: warning: " << w << "\n";
  if (o.gpus_per_node > 0) system.set_gpus_per_node(o.gpus_per_node);
  if (o.nic_gbps != 0) system.set_nic_gbps(o.nic_gbps);
  if (!o.config.empty() || !o.megatron.empty()) {
    // base comes from the yaml or the launch
  } else if (!o.strategy.empty()) {
    base = cost::load_simumax_strategy(o.strategy).strategy;
  } else {  // SimuMax's StrategyConfig defaults
    base.precision = Precision::BF16;
    base.sequence_parallel = true;
    base.zero_stage = 1;
    base.distributed_optimizer = true;
    base.etp = 1;
    base.seq_length = o.seq;
  }
  if (o.config.empty() && o.megatron.empty() && (o.seq != 4096 || o.strategy.empty()))
    base.seq_length = o.seq;
  if (o.simumax_compat) base.simumax_compat = true;
  check_packed_seq_mean_length(base);
  cost::SearchSpace space;
  space.world_size = o.world;
  space.global_batch_size = o.gbs;
  space.micro_batch_size = o.mbs;
  if (!o.mbs_default) {
    space.micro_batch_sizes = int_list(o.mbs_text, "--micro-batch-size");
    if (space.micro_batch_sizes.empty())
      throw InputError("--micro-batch-size", "expects positive integers separated by commas");
    space.micro_batch_size = space.micro_batch_sizes.front();
  }
  space.tp = int_list(o.tp, "--tp");
  space.pp = int_list(o.pp, "--pp");
  space.ep = int_list(o.ep, "--ep");
  space.cp = int_list(o.cp, "--cp");
  space.vpp = int_list(o.vpp, "--vpp");
  // Expert tp: as the launch or yaml runs it (a size it names, else each layout's tp as Megatron does), or
  // SimuMax's 1 (--use-etp: tp).
  if (!o.etp.empty() && o.use_etp)
    throw InputError("--use-etp", "cannot be combined with --etp (say --etp tp)");
  if (!o.etp.empty())
    space.etp = etp_list(o.etp);
  else if (o.use_etp)
    space.etp = {0};
  else if (o.launch)
    space.etp = {base.etp};
  else
    space.etp = {1};
  space.sequence_parallel_with_tp = o.sequence_parallel_with_tp;
  space.recompute = recompute_list(o.recompute);
  if (std::count(space.recompute.begin(), space.recompute.end(), cost::RecomputeSearch::Launch) &&
      o.megatron.empty())
    throw InputError("--recompute",
                     "launch: the launch's own recompute needs a launch (Megatron arguments "
                     "after --, or --bridge-config)");
  space.mem_margin_gib = o.margin;
  space.use_reserved_memory = !o.no_reserved;
  space.threads = o.threads;
  space.strict = o.strict;
  if (o.world <= 0) throw InputError("--world-size", "is required and must be positive");
  if (o.gbs <= 0) throw InputError("--global-batch-size", "is required and must be positive");

  bool bar = !o.quiet && !o.json && isatty(STDERR_FILENO);
  auto progress = [&](int done, int total) {
    if (!bar) return;
    int width = 30, fill = total ? done * width / total : width;
    std::fprintf(stderr, "\r[%s%s] %d/%d layouts", std::string(fill, '#').c_str(),
                 std::string(width - fill, '.').c_str(), done, total);
    if (done == total) std::fprintf(stderr, "\n");
  };
  cost::SearchResult r = cost::search(model, base, system, space, progress);
  for (const auto& w : r.warnings) std::cerr << "preflight: warning: " << w << "\n";
  if (!o.csv.empty()) write_csv(o.csv, r);
  std::vector<std::size_t> ranking = r.ranking();
  double rate = r.seconds > 0 ? r.evaluations.size() / r.seconds : 0;
  // The launch's own sizes (a launch as the base): their best evaluation's rank among those that fit — with
  // the launch's own recompute among the choices, that evaluation (the launch as launched).
  struct OwnRank {
    std::optional<std::size_t> rank;  // 1-based, among the distinct layouts that fit
    std::size_t layouts_that_fit = 0;
    const cost::SearchEvaluation* best_of_own = nullptr;  // its fastest evaluation that fits, else any
    const cost::SearchEvaluation* fastest_of_sizes = nullptr;  // its sizes' fastest that fits (any recompute)
  } own_rank;
  // The launch's own evaluation: its recompute flags (`launch`), or for a launch without recompute the
  // search's "none" — the launch as launched either way.
  const bool as_launched =
      std::count(space.recompute.begin(), space.recompute.end(), cost::RecomputeSearch::Launch) > 0 ||
      (o.launch && !o.launch->recomputes &&
       std::count(space.recompute.begin(), space.recompute.end(), cost::RecomputeSearch::None) > 0);
  const cost::RecomputeSearch launch_kind =
      o.launch && !o.launch->recomputes ? cost::RecomputeSearch::None : cost::RecomputeSearch::Launch;
  if (o.launch) {
    const auto& l = *o.launch;
    auto own_sizes = [&](const cost::SearchEvaluation& e) {
      return e.tp == l.tp && e.pp == l.pp && e.ep == l.ep && e.cp == l.cp && e.vpp == l.vpp &&
             e.micro_batch_size == l.mbs && (!model.moe.enabled() || e.etp == l.etp);
    };
    auto own = [&](const cost::SearchEvaluation& e) {
      return own_sizes(e) && (!as_launched || e.kind == launch_kind);
    };
    // Ranked among distinct layouts (the sizes; each at its fastest recompute that fits): the launch's
    // evaluation counts the other layouts ahead of it.
    std::set<std::string> layouts;
    for (std::size_t i : ranking) {
      const auto& e = r.evaluations[i];
      if (own(e) && !own_rank.rank) {
        own_rank.rank = layouts.size() + 1 - (own_rank.fastest_of_sizes ? 1 : 0);
        own_rank.best_of_own = &e;
      }
      if (own_sizes(e) && !own_rank.fastest_of_sizes) own_rank.fastest_of_sizes = &e;
      layouts.insert(std::to_string(e.tp) + "/" + std::to_string(e.pp) + "/" + std::to_string(e.ep) + "/" +
                     std::to_string(e.etp) + "/" + std::to_string(e.cp) + "/" + std::to_string(e.vpp) + "/" +
                     std::to_string(e.micro_batch_size));
    }
    own_rank.layouts_that_fit = layouts.size();
    if (!own_rank.best_of_own)
      for (const auto& e : r.evaluations)
        if (own(e) && (!own_rank.best_of_own || e.peak_gib < own_rank.best_of_own->peak_gib))
          own_rank.best_of_own = &e;
  }
  const auto launch_sizes = [&] {
    const auto& l = *o.launch;
    return "tp " + std::to_string(l.tp) + " pp " + std::to_string(l.pp) + " ep " + std::to_string(l.ep) +
           (model.moe.enabled() ? " etp " + std::to_string(l.etp) : "") + " cp " + std::to_string(l.cp) +
           " vpp " + std::to_string(l.vpp) + ", micro batch " + std::to_string(l.mbs);
  };
  if (o.json) {
    nlohmann::ordered_json top = nlohmann::ordered_json::array();
    for (std::size_t i : top_rows(r, ranking, o.top)) {
      const auto& e = r.evaluations[i];
      top.push_back({{"tp", e.tp},
                     {"pp", e.pp},
                     {"ep", e.ep},
                     {"etp", e.etp},
                     {"dp", e.dp},
                     {"cp", e.cp},
                     {"vpp", e.vpp},
                     {"micro_batch_size", e.micro_batch_size},
                     {"account_for_embedding_in_pipeline_split", e.embedding_in_split},
                     {"account_for_loss_in_pipeline_split", e.loss_in_split},
                     {"pipeline_layout", e.pipeline_layout},
                     {"pipeline_layout_flag", e.pipeline_layout_flag},
                     {"decoder_last_pipeline_num_layers", e.last_stage_layers},
                     {"micro_batches", e.micro_batches},
                     {"recompute", cost::to_string(e.kind)},
                     {"recompute_layers", e.recompute.layers},
                     {"recompute_status", e.recompute_status},
                     {"parallelism", e.parallelism},
                     {"mfu", e.mfu},
                     {"tflops_per_gpu", e.tflops_per_gpu},
                     {"tokens_per_second_per_gpu", e.tokens_per_second_per_gpu},
                     {"iteration_ms", e.iteration_ms},
                     {"peak_gib", e.peak_gib},
                     {"allocated_peak_gib", e.allocated_peak_gib},
                     {"memory_model", e.memory_model}});
    }
    nlohmann::ordered_json j{{"model", model.name},
                             {"system", system.name},
                             {"memory_limit_gib", r.memory_limit_gib},
                             {"evaluations", r.evaluations.size()},
                             {"feasible", ranking.size()},
                             {"allocated_only_layouts", r.allocated_only_layouts},
                             {"seconds", r.seconds},
                             {"evaluations_per_second", rate},
                             {"best", top.empty() ? nlohmann::ordered_json(nullptr) : top[0]},
                             {"top", top}};
    if (o.launch) {
      const auto& l = *o.launch;
      nlohmann::ordered_json own{{"tp", l.tp},
                                 {"pp", l.pp},
                                 {"ep", l.ep},
                                 {"etp", l.etp},
                                 {"cp", l.cp},
                                 {"vpp", l.vpp},
                                 {"micro_batch_size", l.mbs}};
      own["rank"] = own_rank.rank ? nlohmann::ordered_json(*own_rank.rank) : nlohmann::ordered_json(nullptr);
      own["layouts_that_fit"] = own_rank.layouts_that_fit;
      if (own_rank.best_of_own) {
        own["iteration_ms"] = own_rank.best_of_own->iteration_ms;
        own["peak_gib"] = own_rank.best_of_own->peak_gib;
        own["fits"] = own_rank.rank.has_value();
        own["recompute"] = cost::to_string(own_rank.best_of_own->kind);
        own["recompute_status"] = own_rank.best_of_own->recompute_status;
        const auto* fastest = own_rank.fastest_of_sizes;
        if (fastest && fastest != own_rank.best_of_own) {  // its sizes are faster with another recompute
          own["fastest_recompute"] = cost::to_string(fastest->kind);
          own["fastest_recompute_status"] = fastest->recompute_status;
          own["fastest_iteration_ms"] = fastest->iteration_ms;
        }
        // The search's layout of these sizes (the launch's own --pipeline-model-parallel-layout may differ).
        if (!own_rank.best_of_own->pipeline_layout.empty()) {
          own["pipeline_layout"] = own_rank.best_of_own->pipeline_layout;
          own["pipeline_layout_flag"] = own_rank.best_of_own->pipeline_layout_flag;
        }
        if (own_rank.best_of_own->error.size()) own["error"] = own_rank.best_of_own->error;
      }
      j["launch_layout"] = own;
    }
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << model.name << " on " << system.name << ", " << o.world << " GPUs, global batch " << o.gbs
              << ", micro batch " << (o.mbs_default ? std::to_string(o.mbs) : o.mbs_text) << "; limit "
              << fixed(r.memory_limit_gib, 1) << " GiB ("
              << (space.use_reserved_memory ? "peak with reserved" : "allocated peak") << ")\n";
    TextTable t;
    t.column("#", TextTable::Align::Right)
        .column("tp", TextTable::Align::Right)
        .column("pp", TextTable::Align::Right);
    t.column("ep", TextTable::Align::Right);
    // An etp column where a row's expert tp is not its tp (Megatron's default; the others need
    // --expert-tensor-parallel-size).
    const bool show_etp = model.moe.enabled() && std::any_of(r.evaluations.begin(), r.evaluations.end(),
                                                             [](const auto& e) { return e.etp != e.tp; });
    if (show_etp) t.column("etp", TextTable::Align::Right);
    t.column("dp", TextTable::Align::Right);
    // cp / vpp columns when they vary or differ from 1 (SimuMax's table has neither).
    bool show_cp = false, show_vpp = false, show_mbs = false;
    for (const auto& e : r.evaluations) {
      show_cp = show_cp || e.cp != 1;
      show_vpp = show_vpp || e.vpp != 1;
      show_mbs = show_mbs || e.micro_batch_size != r.evaluations.front().micro_batch_size;
    }
    if (show_cp) t.column("cp", TextTable::Align::Right);
    if (show_vpp) t.column("vpp", TextTable::Align::Right);
    if (show_mbs) t.column("mbs", TextTable::Align::Right);
    t.column("mbc", TextTable::Align::Right).column("recompute");
    t.column("MFU", TextTable::Align::Right).column("TFLOP/s", TextTable::Align::Right);
    t.column("tokens/s/GPU", TextTable::Align::Right).column("iter s", TextTable::Align::Right);
    t.column("peak GiB", TextTable::Align::Right);
    std::size_t row = 0;
    bool simumax_rows = false, split_rows = false, layout_rows = false;
    for (std::size_t i : top_rows(r, ranking, o.top)) {
      const auto& e = r.evaluations[i];
      const bool simumax_memory = e.memory_model == "simumax" && !o.simumax_compat;
      simumax_rows = simumax_rows || simumax_memory;
      std::vector<std::string> cells = {std::to_string(++row), std::to_string(e.tp), std::to_string(e.pp),
                                        std::to_string(e.ep)};
      if (show_etp) cells.push_back(std::to_string(e.etp));
      cells.push_back(std::to_string(e.dp));
      if (show_cp) cells.push_back(std::to_string(e.cp));
      if (show_vpp)
        cells.push_back(std::to_string(e.vpp) + (e.embedding_in_split ? "E" : "") +
                        (e.loss_in_split ? "L" : "") + (e.pipeline_layout.empty() ? "" : "P"));
      split_rows = split_rows || e.embedding_in_split || e.loss_in_split;
      layout_rows = layout_rows || !e.pipeline_layout.empty();
      if (show_mbs) cells.push_back(std::to_string(e.micro_batch_size));
      for (std::string c :
           {std::to_string(e.micro_batches), recompute_cell(e), fixed(e.mfu, 4), fixed(e.tflops_per_gpu, 1),
            fixed(e.tokens_per_second_per_gpu, 1), fixed(e.iteration_ms / 1000, 3),
            fixed(e.peak_gib, 2) + (simumax_memory ? "*" : "")})
        cells.push_back(std::move(c));
      t.row(cells);
    }
    std::cout << t.render();
    if (simumax_rows)
      std::cout
          << "* peak from SimuMax's memory model (its selective attn/mlp switches have no Megatron flags); "
             "the other rows walk Megatron's schedule as `preflight estimate` and `analyze` do\n";
    if (split_rows)
      std::cout << "vpp E / L: the embedding / the loss counted as a layer slot in the pipeline split "
                   "(--account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split): the "
                   "layers alone do not split evenly over pp · vpp chunks\n";
    if (layout_rows)
      std::cout << "vpp P: a --pipeline-model-parallel-layout, or for a hybrid model its "
                   "--hybrid-layer-pattern with "
                   "'|' between the chunks (in --json, and for the best below): the layers do not split "
                   "evenly over "
                   "pp · vpp chunks even with the embedding and loss as slots, or a hybrid model's split is "
                   "interleaved or uneven; the chunks as even as possible, the loss and any MTP depths on "
                   "the last\n";
    std::cout << r.evaluations.size() << " evaluations (" << ranking.size() << " fit) of "
              << r.evaluations.size() + 0 << " in " << fixed(r.seconds, 3) << " s, " << fixed(rate, 0)
              << " evaluations/s; " << r.skipped.size() << " layouts skipped as invalid\n";
    if (r.best) {
      const auto& b = r.evaluations[*r.best];
      std::cout << "best: " << b.parallelism
                << (b.vpp > 1 ? ", " + std::to_string(b.vpp) + " virtual stages per rank" : "")
                << (b.embedding_in_split ? ", --account-for-embedding-in-pipeline-split" : "")
                << (b.loss_in_split ? ", --account-for-loss-in-pipeline-split" : "")
                << (b.pipeline_layout.empty()
                        ? ""
                        : ", " + b.pipeline_layout_flag + " \"" + b.pipeline_layout + "\"")
                << (b.last_stage_layers >= 0
                        ? ", --decoder-last-pipeline-num-layers " + std::to_string(b.last_stage_layers)
                        : "")
                << ", " << b.recompute_status << ", MFU " << fixed(b.mfu, 4) << "\n";
    } else {
      std::cout << "no layout fits in " << fixed(r.memory_limit_gib, 1) << " GiB\n";
    }
    if (o.launch) {
      std::cout << o.launch_label << " (" << launch_sizes() << "): ";
      const cost::SearchEvaluation* e = own_rank.best_of_own;
      const auto* fastest = own_rank.fastest_of_sizes;
      const std::string other_recompute =
          fastest && fastest != e && (!e || fastest->iteration_ms < e->iteration_ms)
              ? "; its sizes with " + recompute_cell(*fastest) + ": " +
                    fixed(fastest->iteration_ms / 1000, 3) + " s"
              : "";
      if (own_rank.rank && r.best) {
        const double over = (e->iteration_ms / r.evaluations[*r.best].iteration_ms - 1) * 100;
        std::cout << "ranked " << *own_rank.rank << " of " << own_rank.layouts_that_fit
                  << " layouts that fit, " << fixed(e->iteration_ms / 1000, 3) << " s, "
                  << (as_launched ? "as launched: " : "") << e->recompute_status
                  << (&r.evaluations[*r.best] == e ? " (the best)"
                                                   : " (+" + fixed(over, 1) + " % over the best)")
                  << other_recompute << "\n";
      } else if (e && !e->error.empty()) {
        std::cout << "not priced: " << e->error << "\n";
      } else if (e) {
        std::cout << "does not fit in " << fixed(r.memory_limit_gib, 1) << " GiB (" << fixed(e->peak_gib, 2)
                  << (as_launched ? " GiB as launched" : " GiB at its lowest") << ", "
                  << fixed(e->iteration_ms / 1000, 3) << " s";
        // Over the limit only by the allocator's reserve: `estimate` calls it tight (PyTorch frees its cached
        // blocks and retries before it fails; published runs go on at 0.94 … 0.99 of their device).
        if (space.use_reserved_memory && e->allocated_peak_gib <= r.memory_limit_gib)
          std::cout << "; tight: its allocated peak " << fixed(e->allocated_peak_gib, 2)
                    << " GiB fits, as `preflight estimate` says; --no-reserved ranks it";
        std::cout << ")" << other_recompute << "\n";
      } else {
        std::cout << "not among the layouts searched (refused before pricing: see --csv or a wider list)\n";
      }
    }
    if (r.allocated_only_layouts > 0 && !o.simumax_compat)
      std::cout << r.allocated_only_layouts << " more layout" << (r.allocated_only_layouts == 1 ? "" : "s")
                << " fit" << (r.allocated_only_layouts == 1 ? "s" : "")
                << " by the allocated peak only (`preflight estimate` calls such a run tight: PyTorch's "
                   "allocator frees its cache and retries before it fails); --no-reserved ranks them\n";
    // Every layout of the search has the same model and precision: one published-run check for all.
    if (!o.simumax_compat)
      std::cout << cost::published_check_text(
          cost::published_check(system.preset, cost::time_run_class(model, base)));
    if (!o.csv.empty()) std::cout << "wrote " << o.csv << "\n";
  }
  return r.best ? kExitOk : kExitDoesNotFit;
}

}  // namespace

Command search_command() {
  return {
      "search",
      "parallel-strategy search (tp × pp × ep [× cp × vpp] × recompute), best by MFU under the memory limit",
      [](CLI::App& sub) -> std::function<int()> {
        auto o = std::make_shared<SearchOptions>();
        sub.add_option("--model", o->model, "SimuMax model JSON, simumax:<name>, config.json or preset");
        std::string systems;
        for (const auto& n : analyzer::cost::system_preset_names())
          systems += (systems.empty() ? "" : ", ") + n;
        CLI::Option* system =
            sub.add_option("--system", o->system,
                           "SimuMax system JSON or preset (default for a Megatron-Bridge recipe "
                           "named for a GPU, …_8gpu_gb200_…: that GPU's): " +
                               systems)
                ->capture_default_str();
        sub.add_option("--gpus-per-node", o->gpus_per_node, "devices per node; default: the system's");
        sub.add_option("--nic-gbps", o->nic_gbps,
                       "each GPU's share of the inter-node network, GB/s a direction; default: the system's");
        sub.add_option(
            "--strategy", o->strategy,
            "base strategy (SimuMax JSON or preset) for what is not searched; default SimuMax's defaults");
        sub.add_option("--config", o->config,
                       "MindFormers training yaml: model, numerics, batch, sequence and world size (tp, pp, "
                       "ep and recompute are searched)");
        sub.add_option(
            "--bridge-config", o->bridge_config,
            "Megatron-Bridge run configuration (ConfigContainer YAML, a Bridge log printing one, or a "
            "recipe's name such as llama3_8b_pretrain_config or llama3_8b_pretrain_8gpu_gb200_fp8cs_config), "
            "searched as the launch of its Megatron arguments; the world size, Hydra overrides "
            "(model.x=y) and Megatron flags may follow --");
        sub.add_option(
            "--nemo-config", o->bridge_config,
            "NeMo 1 or NeMo 2 training configuration (megatron_gpt_config.yaml, a launcher's training "
            "yaml; NeMo-Run's YAML of llm.pretrain), searched as the launch it describes (trainer.devices x "
            "num_nodes the world); Hydra "
            "overrides and Megatron flags may follow --");
        sub.add_option("--world-size", o->world, "GPUs");
        sub.add_option("--lora-rank", o->lora_rank,
                       "LoRA fine-tuning of the model: adapters of this rank on linear_qkv, linear_proj, "
                       "linear_fc1 and linear_fc2, the rest frozen (as estimate's --lora-rank)");
        sub.add_option(
            "--moe-load-imbalance", o->moe_load_imbalance,
            "MoE: the busiest expert-parallel rank's routed tokens ÷ the mean (1 = balanced, as "
            "benchmarks force; capped at each candidate's ep), priced on that rank (as estimate's)");
        sub.add_option(
            "--packed-seq-mean-length", o->packed_seq_mean_length,
            "packed samples of this many tokens on average in each sequence: attention priced within "
            "each (as estimate's)");
        sub.add_option("--global-batch-size", o->gbs, "samples per iteration");
        sub.add_option("--micro-batch-size", o->mbs_text,
                       "samples per micro batch, or sizes to search, e.g. 1,2,4 (default 1; with --config or "
                       "a launch: theirs)");
        sub.add_option("--seq-length", o->seq, "tokens per sample")->capture_default_str();
        sub.add_option("--tp", o->tp,
                       "tensor-parallel sizes, e.g. 1,2,4,8 (default: SimuMax's; with a launch after --, its "
                       "own added)");
        sub.add_option("--pp", o->pp, "pipeline sizes, e.g. 1,2,4,8 or all (default: 1..layers)");
        sub.add_option("--cp", o->cp,
                       "context-parallel sizes, e.g. 1,2,4 (default: the base strategy's; a launch's own)");
        sub.add_option("--vpp", o->vpp,
                       "virtual pipeline stages per rank (interleaved 1F1B), e.g. 1,2,4 (default: the base "
                       "strategy's; a launch's 1 and its own; layers must split evenly over pp·vpp, with the "
                       "loss or the embedding "
                       "and loss counted as layer slots if need be)");
        sub.add_option("--ep", o->ep,
                       "expert-parallel sizes (MoE; default: SimuMax's 1,2,4,8, with a launch's own added)");
        sub.add_option("--etp", o->etp,
                       "expert tensor-parallel sizes, e.g. 1,tp (tp: each layout's tp, Megatron's default); "
                       "default: as a launch or yaml runs it (its --expert-tensor-parallel-size, else tp), "
                       "SimuMax's 1 without one");
        sub.add_flag("--use-etp", o->use_etp, "expert tensor parallel = tp (SimuMax's switch; --etp tp)");
        sub.add_option("--recompute", o->recompute,
                       "none,full_block,selective; launch: a launch's own --recompute-* flags (added to the "
                       "default when a launch after -- recomputes)")
            ->capture_default_str();
        sub.add_option("--mem-margin-gib", o->margin, "device memory kept free (SimuMax gmi_error)")
            ->capture_default_str();
        sub.add_flag("--simumax-compat", o->simumax_compat, "price every layout exactly as SimuMax v1.2");
        sub.add_flag("--no-reserved", o->no_reserved,
                     "compare the allocated peak, not peak / reserved ratio");
        sub.add_option("--csv", o->csv, "write every evaluation (ranked) to this CSV");
        sub.add_option("--top", o->top, "rows of the table")->capture_default_str();
        sub.add_option("--threads", o->threads, "worker threads (default: all cores)");
        sub.add_flag("--json", o->json, "print the result as JSON");
        sub.add_flag("--quiet", o->quiet, "no progress bar");
        sub.add_flag("--strict", o->strict,
                     "an op of the model the cost model does not price is an error (exit 2), not a warning");
        sub.add_option("megatron", o->megatron,
                       "a launch's Megatron-LM / torchrun arguments after --: its model, numerics, batch, "
                       "sequence and world size; tp, pp, ep, cp, vpp and recompute are searched");
        sub.footer(
            "Exit status: 0 a layout fits, 1 none fits, 2 bad input.\n"
            "Example: preflight search --system h100-sxm --tp 1,2,4,8 --pp 1,2,4,8 --vpp 1,2,5 -- "
            "$(your torchrun and pretrain_gpt.py arguments)");
        return [o, &sub, system] {
          o->mbs_default = sub.count("--micro-batch-size") == 0;
          if (!o->mbs_default) {  // the first size (the header's and --config's checks); the list in run()
            const auto sizes = int_list(o->mbs_text, "--micro-batch-size");
            if (sizes.empty())
              throw InputError("--micro-batch-size", "expects positive integers separated by commas");
            o->mbs = sizes.front();
          }
          o->seq_default = sub.count("--seq-length") == 0;
          o->gbs_default = sub.count("--global-batch-size") == 0;
          o->world_default = sub.count("--world-size") == 0;
          o->recompute_default = sub.count("--recompute") == 0;
          // A launch of NeMo 1's training script (`preflight run --mode search`): its configuration file.
          if (o->bridge_config.empty())
            if (auto launch = analyzer::nemo1_launch_in(o->megatron)) {
              o->bridge_config = launch->config;
              o->megatron = launch->rest;
            }
          if (!o->bridge_config.empty()) {
            // A Megatron-Bridge run configuration: searched as the launch of its Megatron arguments.
            if (!o->config.empty())
              throw InputError("--bridge-config", "cannot be combined with --config (a MindFormers yaml)");
            std::vector<std::string> extra = o->megatron;
            restore_bracket_words(extra);
            o->bridge = analyzer::bridge_config_to_megatron_args(o->bridge_config, extra);
            for (const auto& w : o->bridge->warnings) std::cerr << "preflight: warning: " << w << "\n";
            o->megatron = o->bridge->args;
            std::vector<std::string> notes;
            if (system->count() == 0 && system_of_recipe(*o->bridge, o->system, notes))
              std::cerr << "preflight: warning: searched on " << o->system
                        << ", the GPU the recipe is named for (--system for another)\n";
          }
          {
            std::vector<std::string> words = o->megatron;
            if (!o->config.empty()) words.insert(words.end(), {"--config", o->config});
            if (const std::string gpu = analyzer::primus_experiment_gpu(words);
                o->bridge_config.empty() && system->count() == 0 && !gpu.empty() &&
                !analyzer::cost::system_preset_for(gpu).empty()) {
              o->system = analyzer::cost::system_preset_for(gpu);
              std::cerr << "preflight: warning: Primus experiment of the " << gpu << " folder: searched on "
                        << o->system << " (--system for another)\n";
            }
          }
          if (o->bridge_config.empty() && o->config.empty() && system->count() == 0 &&
              analyzer::is_mindspeed_launch(o->megatron)) {
            o->system = "ascend-910b";
            std::cerr
                << "preflight: warning: MindSpeed-LLM's flags: an Ascend NPU run, searched on ascend-910b "
                   "(Atlas 800T A2); --system for another (the Atlas A3's 910C has no preset)\n";
          }
          return run(*o);
        };
      }};
}

int run_search_launch(const Words& options, const Words& megatron) {
  CLI::App app{"preflight"};
  CLI::App* sub = app.add_subcommand("search");
  const std::function<int()> run_it = search_command().add(*sub);
  std::vector<std::string> words{"preflight", "search"};
  words.insert(words.end(), options.begin(), options.end());
  words.push_back("--");
  for (const std::string& w : megatron)  // as main() guards the words after -- (kBracketGuard)
    words.push_back(w.size() >= 2 && w.front() == '[' && w.back() == ']' ? kBracketGuard + w : w);
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    throw InputError("--search-arg", std::string("not an option of preflight search: ") + e.what());
  }
  return run_it();
}

}  // namespace preflight::cli
