// preflight estimate: the SimuMax-class cost and memory model on a model / strategy / system.
#include <CLI/CLI.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "commands.hpp"
#include "preflight/analyzer/cost/estimate.hpp"
#include "preflight/analyzer/cost/report.hpp"
#include "preflight/analyzer/cost/simumax_config.hpp"
#include "preflight/analyzer/frontends/bridge_config.hpp"
#include "preflight/analyzer/frontends/hf_config.hpp"
#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/analyzer/frontends/mindformers_yaml.hpp"
#include "preflight/common/error.hpp"

namespace preflight::cli {

namespace {

struct EstimateOptions {
  std::string model, strategy, system = "a100_pcie", out, config, trace, bridge_config;
  bool system_given = false;  // --system on the command line (else a recipe's GPU may choose it)
  bool json = false, strict = false, simumax_compat = false, ops = false;
  int gpus_per_node = 0;
  double nic_gbps = 0;  // --nic-gbps: each GPU's inter-node GB/s (0: the system's)
  std::vector<std::string> megatron;
};

void write_file(const std::filesystem::path& p, const std::string& text, const char* flag) {
  std::ofstream f(p, std::ios::binary);
  if (!f) throw InputError(flag, "cannot write " + p.string());
  f << text;
}

int run(EstimateOptions o) {
  using namespace preflight::analyzer;
  restore_bracket_words(o.megatron);
  if (!o.config.empty() &&
      (is_primus_experiment(o.config) ||
       is_megatron_test_case(o.config))) {  // an AMD Primus experiment: Megatron's arguments
    o.megatron.insert(o.megatron.end(), {"--config", o.config});
    o.config.clear();
  }
  std::vector<std::string> warnings;
  std::optional<double> yaml_device_gib;  // --config: context.max_device_memory
  ModelSpec model;
  Strategy strategy;
  if (!o.bridge_config.empty() && !o.config.empty())
    throw InputError("--bridge-config", "cannot be combined with --config (a MindFormers yaml)");
  const bool mindspore = !o.config.empty() || (!o.model.empty() && is_yaml_path(o.model));
  if (mindspore) {
    // A MindFormers training yaml: its model (new style: completed by --model), layout, batch and recompute.
    if (!o.strategy.empty()) throw InputError("--strategy", "cannot be combined with --config (the yaml is the strategy)");
    MindFormersOptions mf;
    const std::string yaml = o.config.empty() ? o.model : o.config;
    if (!o.megatron.empty()) {
      const std::string inner = read_run_mindformer_args(o.megatron, mf);
      if (!inner.empty() && inner != yaml) throw InputError("--config", "given twice (" + yaml + ", " + inner + ")");
    }
    ModelSpec base;
    if (!o.config.empty() && !o.model.empty()) {
      base = cost::load_cost_model(o.model, &warnings);
      mf.base = &base;
    }
    MindFormersConfig mc = load_mindformers_yaml(yaml, mf);
    model = mc.model;
    strategy = mc.strategy;
    yaml_device_gib = mc.max_device_memory_gib;
    for (const auto& w : mc.warnings) warnings.push_back(w);
  } else if (!o.megatron.empty() || !o.bridge_config.empty()) {
    std::optional<BridgeConfigArgs> bridge;
    if (!o.bridge_config.empty()) {
      // A Megatron-Bridge run configuration: its Megatron arguments, then the ones after --.
      bridge = bridge_config_to_megatron_args(o.bridge_config, o.megatron);
      o.megatron = bridge->args;
      for (const auto& w : bridge->warnings) warnings.push_back(w);
      if (!o.system_given) system_of_recipe(*bridge, o.system, warnings);
    }
    if (const std::string gpu = primus_experiment_gpu(o.megatron);
        !o.system_given && !bridge && !gpu.empty() && !cost::system_preset_for(gpu).empty()) {
      // An AMD Primus experiment sits in its GPU's folder (examples/megatron/configs/MI300X/…).
      o.system = cost::system_preset_for(gpu);
      warnings.push_back("Primus experiment of the " + gpu + " folder: priced on " + o.system +
                         " (--system for another)");
    }
    if (!o.system_given && !bridge && is_mindspeed_launch(o.megatron)) {
      // MindSpeed-LLM runs on Ascend NPUs only: its launch is priced on the one Ascend preset, not on
      // SimuMax's A100 default.
      o.system = "ascend-910b";
      warnings.push_back(
          "MindSpeed-LLM's flags: an Ascend NPU run, priced on ascend-910b (Atlas 800T A2); --system for "
          "another (the Atlas A3's 910C has no preset)");
    }
    ModelSpec base;
    if (!o.model.empty()) base = cost::load_cost_model(o.model, &warnings);
    const MegatronConfig mc =
        bridge ? parse_bridge_args(*bridge, process_environment(), o.model.empty() ? nullptr : &base)
               : parse_megatron_args(o.megatron, process_environment(), o.model.empty() ? nullptr : &base);
    model = mc.model;
    strategy = mc.strategy;
    for (const auto& w : mc.warnings) warnings.push_back(w);
    if (!o.strategy.empty())
      throw InputError("--strategy", "cannot be combined with Megatron arguments after --");
  } else {
    if (o.model.empty()) throw InputError("--model", "is required (or give Megatron arguments after --)");
    if (o.strategy.empty())
      throw InputError("--strategy", "is required (a SimuMax strategy JSON or preset name)");
    model = cost::load_cost_model(o.model, &warnings);
    cost::SimuMaxStrategy s = cost::load_simumax_strategy(o.strategy);
    strategy = s.strategy;
    SystemSpec probe = cost::load_simumax_system(o.system);
    cost::NetworkChoice chosen = cost::choose_networks(strategy, probe);
    std::map<std::string, const std::string*> names{
        {"tp_net", &chosen.tp}, {"cp_net", &chosen.cp},   {"pp_net", &chosen.pp},  {"dp_net", &chosen.dp},
        {"ep_net", &chosen.ep}, {"etp_net", &chosen.etp}, {"edp_net", &chosen.edp}};
    for (const auto& [key, value] : s.requested_networks)
      if (*names[key] != value)
        warnings.push_back(o.strategy + ": " + key + " '" + value +
                           "' is ignored; the network is chosen from the "
                           "group span: '" +
                           *names[key] + "' (SimuMax overwrites it silently)");
  }
  if (std::string note = mtp_left_out_note(model); !note.empty()) warnings.push_back(note);
  SystemSpec system = cost::load_simumax_system(o.system);
  if (yaml_device_gib) cap_device_memory(system.mem_gib, *yaml_device_gib, warnings);
  if (o.simumax_compat) strategy.simumax_compat = true;
  if (o.gpus_per_node > 0) {
    system.set_gpus_per_node(o.gpus_per_node);
    strategy.gpus_per_node = o.gpus_per_node;
  }
  if (o.nic_gbps != 0) system.set_nic_gbps(o.nic_gbps);
  cost::EstimateOptions eo;
  eo.strict = o.strict;
  eo.schedule = !o.trace.empty();
  eo.layer_ops = o.ops;
  cost::Estimate est = cost::estimate(model, strategy, system, eo);
  for (const auto& w : est.warnings) warnings.push_back(w);
  est.warnings = warnings;

  auto mem = cost::mem_result_json(est);
  auto compute = cost::compute_result_json(est);
  if (!o.trace.empty()) {
    write_file(o.trace, cost::schedule_trace_json(est).dump(), "--trace");
  }
  if (!o.out.empty()) {
    std::filesystem::create_directories(o.out);
    write_file(std::filesystem::path(o.out) / "mem_result.json", mem.dump(2), "--out");
    write_file(std::filesystem::path(o.out) / "compute_result.json", compute.dump(2), "--out");
  }
  for (const auto& w : warnings) std::cerr << "preflight: warning: " << w << "\n";
  if (o.json) {
    nlohmann::ordered_json all{
        {"summary", cost::summary_json(est)}, {"mem_result", mem}, {"compute_result", compute}};
    if (o.ops) all["layer_ops"] = cost::layer_ops_json(est);
    std::cout << all.dump(2) << "\n";
  } else {
    std::cout << cost::summary_text(est);
    if (o.ops) std::cout << "\n" << cost::layer_ops_text(est);
    if (!o.out.empty()) std::cout << "wrote " << o.out << "/mem_result.json and compute_result.json\n";
  }
  const double device_gib = est.device_memory_gib;
  const auto verdict = est.memory_verdict();
  const double reserved = est.max_peak_bytes(true) / (1024.0 * 1024.0 * 1024.0);
  const double allocated = est.max_peak_bytes(false) / (1024.0 * 1024.0 * 1024.0);
  const std::string peaks = fixed(reserved, 2) + " GiB (" + fixed(allocated, 2) + " GiB allocated / " +
                            fixed(est.strategy.allocated_to_reserved_ratio, 2) + ")";
  if (mindspore && verdict == cost::Estimate::MemoryVerdict::DoesNotFit && !o.json) {
    std::cout << "does not fit: a stage's peak, " << fixed(allocated, 2) << " GiB, is more than the "
              << device_gib << " GiB of MindSpore's memory pool\n";
  } else if (mindspore && verdict == cost::Estimate::MemoryVerdict::Tight && !o.json) {
    // MindSpore has no caching allocator to give back: the margin is SimuMax's ratio, read as room for the
    // pool's fragmentation (a dryrun's "Actual peak" over its "Used peak").
    std::cout << "tight: the peak fits (" << fixed(allocated, 2) << " of " << device_gib << " GiB, "
              << fixed(device_gib - allocated, 2) << " GiB left), not with a "
              << fixed(100 * (1 - est.strategy.allocated_to_reserved_ratio), 0)
              << " % margin for the memory pool's fragmentation (" << peaks
              << "); a dryrun's \"Actual peak\" (`preflight wrap … --mode dryrun`) says whether it holds\n";
  } else if (verdict == cost::Estimate::MemoryVerdict::DoesNotFit && !o.json) {
    std::cout << "does not fit: a stage's allocated peak, " << fixed(allocated, 2)
              << " GiB, is more than the " << device_gib
              << " GiB of device memory (with the caching allocator's reserve: " << peaks << ")\n";
  } else if (verdict == cost::Estimate::MemoryVerdict::Tight && !o.json) {
    std::cout << "tight: the allocated peak fits (" << fixed(allocated, 2) << " of " << device_gib << " GiB, "
              << fixed(device_gib - allocated, 2)
              << " GiB left), the caching allocator's usual reserve does not: " << peaks
              << ".  On a failed cudaMalloc PyTorch frees its unused cached blocks and retries, so such runs "
                 "go on (cudaMalloc retries; a fragmentation OOM is possible): the published runs at 0.94 … "
                 "0.99 of their device ran"
              << (est.strategy.allocated_to_reserved_ratio < 0.99
                      ? "; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (priced at allocated / 0.99) "
                        "keeps the reserve small"
                      : "")
              << "\n";
  }
  const bool fits = verdict != cost::Estimate::MemoryVerdict::DoesNotFit;
  return fits ? kExitOk : kExitDoesNotFit;
}

}  // namespace

bool system_of_recipe(const analyzer::BridgeConfigArgs& recipe, std::string& system,
                      std::vector<std::string>& notes) {
  if (recipe.gpu.empty()) return false;
  if (recipe.system.empty()) {
    std::string presets;
    for (const auto& n : analyzer::cost::system_preset_names()) presets += (presets.empty() ? "" : ", ") + n;
    throw InputError("--system",
                     recipe.source + " is named for " + recipe.gpu +
                         ", which preflight has no preset for: give --system (a system JSON, or one "
                         "of " +
                         presets + ")");
  }
  system = recipe.system;
  notes.push_back("priced on " + system + ", the GPU the recipe is named for (--system for another)");
  return true;
}

void cap_device_memory(double& system_mem_gib, double max_device_memory_gib, std::vector<std::string>& warnings) {
  if (!(max_device_memory_gib > 0) || max_device_memory_gib >= system_mem_gib) return;
  warnings.push_back("device memory: context.max_device_memory " + fixed(max_device_memory_gib, 1) +
                     " GiB (MindSpore's memory pool) instead of the system's " + fixed(system_mem_gib, 1) + " GiB");
  system_mem_gib = max_device_memory_gib;
}

Command estimate_command() {
  return {
      "estimate",
      "SimuMax-class estimate: peak memory per stage, iteration time, MFU (writes SimuMax's JSON)",
      [](CLI::App& sub) -> std::function<int()> {
        auto o = std::make_shared<EstimateOptions>();
        sub.add_option("--model", o->model,
                       "SimuMax model JSON, simumax:<name>, Hugging Face config.json or preset name");
        sub.add_option("--strategy", o->strategy, "SimuMax strategy JSON or preset (e.g. tp1_pp2_dp4_mbs1)");
        sub.add_option("--config", o->config,
                       "MindFormers training yaml: model, layout, batch and recompute (run_mindformer.py "
                       "arguments may follow --)");
        std::string systems;
        for (const auto& n : analyzer::cost::system_preset_names())
          systems += (systems.empty() ? "" : ", ") + n;
        CLI::Option* system =
            sub.add_option(
                   "--system", o->system,
                   "SimuMax system JSON or preset (a100_pcie and b200_bf16_ceperm are SimuMax's "
                   "calibrations; a product name such as H100 or DGX-B200 also selects one; default for "
                   "a Megatron-Bridge recipe named for a GPU, …_8gpu_gb200_…: that GPU's): " +
                       systems)
                ->capture_default_str();
        sub.add_option("--gpus-per-node", o->gpus_per_node,
                       "devices per node (the fast intra-node domain); default: the system's");
        sub.add_option(
            "--nic-gbps", o->nic_gbps,
            "each GPU's share of the inter-node network, GB/s a direction (e.g. 6.25 for four 100 Gb/s "
            "links a node of 8); default: the system's");
        sub.add_option("--out", o->out, "directory for mem_result.json and compute_result.json");
        sub.add_flag("--json", o->json, "print the summary and both results as JSON");
        sub.add_option("--trace", o->trace,
                       "write the simulated schedule as a Chrome/Perfetto trace (one process per pipeline stage, "
                       "compute and communication threads)");
        sub.add_flag("--ops", o->ops,
                     "also print the ops of the embedding, one layer of each kind and the head: forward / "
                     "backward / exposed-collective ms "
                     "per micro batch, achieved TFLOP/s, share of the layer (to hold next to a profile)");
        sub.add_flag("--simumax-compat", o->simumax_compat,
                     "SimuMax v1.2's timing exactly: DP fully exposed, blocking interleaved p2p only, p2p never "
                     "split over tp, fractional expert capacity (default: Megatron's behaviour)");
        sub.add_flag("--strict", o->strict,
                     "an op of the model the cost model does not price is an error (exit 2), not a warning");
        sub.add_option(
            "--bridge-config", o->bridge_config,
            "Megatron-Bridge run configuration: a ConfigContainer YAML (run_config.yaml of a checkpoint, "
            "logger.save_config_filepath), a Bridge log printing one, or a recipe's name "
            "(llama3_8b_pretrain_config, or a performance recipe's: "
            "llama3_8b_pretrain_8gpu_gb200_fp8cs_config, "
            "priced on the GPU it names unless --system is given); the world size (torchrun's "
            "--nproc_per_node / --nnodes), Hydra overrides (model.x=y) and Megatron flags may follow --");
        sub.add_option("--nemo-config", o->bridge_config,
                       "NeMo 1 training configuration (megatron_gpt_config.yaml, a launcher's training yaml, "
                       "hparams.yaml, a .nemo) or NeMo 2 one (NeMo-Run's YAML of llm.pretrain / finetune, a "
                       "checkpoint's context/model.yaml, a recipe's name such as llama3_70b, or "
                       "nemo2-perf:SCRIPT for NeMo 2's scripts/performance/llm/SCRIPT.py with that script's "
                       "options after --: -g h100 -c fp8 …): trainer.devices x num_nodes is the world; Hydra "
                       "overrides (model.x=y) and Megatron flags may follow --");
        sub.add_option("megatron", o->megatron, "Megatron-LM / torchrun arguments after --");
        sub.footer(
            "Exit status: 0 fits (or tight: only the allocated peak fits, said on stdout), 1 a stage's "
            "allocated "
            "peak does not fit in device memory, 2 bad input.\n"
            "Example: preflight estimate --model simumax:llama3-8b --strategy tp1_pp2_dp4_mbs1 --system "
            "a100_pcie");
        return [o, system] {
          o->system_given = system->count() > 0;
          return run(*o);
        };
      }};
}

}  // namespace preflight::cli
