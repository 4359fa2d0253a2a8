// preflight analyze: our own options are taken out of the word list; everything else is the launch
// script's torchrun + Megatron command line.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "preflight/analyzer/calibrate/calibrate.hpp"
#include "preflight/analyzer/compat/compat_get_training_info.hpp"
#include "preflight/analyzer/cost/estimate.hpp"
#include "preflight/analyzer/cost/report.hpp"
#include "preflight/analyzer/cost/simumax_config.hpp"
#include "preflight/analyzer/frontends/bridge_config.hpp"
#include "preflight/analyzer/frontends/hf_config.hpp"
#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/analyzer/frontends/mindformers_yaml.hpp"
#include "preflight/analyzer/frontends/nemo_config.hpp"
#include "preflight/analyzer/frontends/presets.hpp"
#include "preflight/analyzer/model/layer_graph.hpp"
#include "preflight/analyzer/tables/report.hpp"
#include "preflight/common/error.hpp"

namespace preflight::cli {

namespace {

const char* kAnalyzeHelp =
    "usage: preflight analyze [options] [torchrun args] [Megatron-LM args]\n"
    "       preflight analyze [options] --config X.yaml [run_mindformer.py args]\n"
    "       preflight analyze [options] --bridge-config run_config.yaml [torchrun args] [a.b=value ...]\n"
    "\n"
    "Reads exactly what a launch script passes to `torchrun … pretrain_gpt.py`, so\n"
    "`torchrun $DISTRIBUTED_ARGS pretrain_gpt.py` can be swapped for `preflight analyze $DISTRIBUTED_ARGS`.\n"
    "Unknown Megatron flags are accepted and ignored.\n"
    "With a MindFormers training yaml (--config, as run_mindformer.py takes it) the model, layout, batch,\n"
    "offsets and recompute lists come from the yaml; run_mindformer.py's --use_parallel, --batch_size,\n"
    "--gradient_accumulation_steps and --options KEY=VALUE… apply on top.  An AMD Primus experiment given "
    "as\n"
    "--config (its launch: primus/cli/main.py train pretrain --config EXP.yaml) is read as Primus builds "
    "its\n"
    "Megatron module (presets above the experiment or in $PRIMUS_PATH; --key value overrides on top).\n"
    "\n"
    "options (taken out before the Megatron arguments are read):\n"
    "  --model NAME|FILE|URL|ORG/REPO\n"
    "                           start from a preset (llama3-70b, deepseek-v3, …), a Hugging Face\n"
    "                           config.json (file, checkpoint folder or http(s) URL) or a Hub\n"
    "                           repository (HF_TOKEN for gated ones, HF_ENDPOINT for a mirror);\n"
    "                           Megatron architecture flags are then optional and override it\n"
    "                           (with --config: the architecture a new-style yaml leaves to\n"
    "                           pretrained_model_dir; a .yaml here is read as --config)\n"
    "  --config FILE.yaml       MindFormers training yaml\n"
    "  --worker_num N           workers the msrun launch starts (must equal dp·tp·cp·pp)\n"
    "  --bridge-config FILE     Megatron-Bridge run configuration (a ConfigContainer YAML: run_config.yaml\n"
    "                           of a checkpoint, logger.save_config_filepath, or a Bridge log printing\n"
    "                           one), or a recipe's name (llama3_8b_pretrain_config, or a performance\n"
    "                           recipe's: llama3_8b_pretrain_8gpu_gb200_fp8cs_config); Hydra overrides\n"
    "                           (model.tensor_model_parallel_size=2) apply to it,\n"
    "                           torchrun's --nproc_per_node / --nnodes give the world size\n"
    "  --nemo-config FILE       NeMo 1 training configuration (megatron_gpt_config.yaml, a launcher's\n"
    "                           training yaml, hparams.yaml, a .nemo) or NeMo 2 one (NeMo-Run's YAML of\n"
    "                           llm.pretrain / finetune, a checkpoint folder's context/model.yaml);\n"
    "                           trainer.devices × num_nodes is the world, Hydra overrides (model.x=y,\n"
    "                           trainer.num_nodes=N) apply to it; nemo2-perf:SCRIPT reads NeMo 2's\n"
    "                           scripts/performance/llm/SCRIPT.py with its own options (-g h100 -c fp8 …)\n"
    "  --json                   print the report as JSON\n"
    "  --device-memory GIB      device memory; exit 1 when a stage does not fit\n"
    "                           (default with --config: context.max_device_memory)\n"
    "  --calibration FILE       apply coefficients fitted by `preflight calibrate --fit`\n"
    "  --system NAME|FILE       also price the iteration on this system (a preset such as h100-sxm,\n"
    "                           or a system JSON): time, MFU and per-stage peak of `preflight\n"
    "                           estimate` after the tables (under \"estimate\" with --json); a\n"
    "                           Megatron-Bridge recipe named for a GPU (…_8gpu_gb200_…) is priced\n"
    "                           on that GPU's preset without it\n"
    "  --nic-gbps G             with --system: each GPU's share of the inter-node network, GB/s a\n"
    "                           direction (6.25 for four 100 Gb/s links a node of 8)\n"
    "  --compat get_training_info\n"
    "                           print exactly what Megatron-LM PR 482's get_training_info.py prints\n"
    "  -h, --help               this text\n";

struct AnalyzeCli {
  bool json = false;
  std::optional<double> device_memory_gib;
  std::optional<std::string> model;
  std::optional<std::string> compat;
  std::optional<std::string> calibration;
  std::optional<std::string> config;
  std::optional<std::string> bridge_config;
  std::optional<std::string> system;
  std::optional<double> nic_gbps;  ///< --nic-gbps: each GPU's inter-node GB/s for --system
  int worker_num = 0;
  Words rest;
};

AnalyzeCli take_options(const Words& words) {
  AnalyzeCli cli;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    auto value = [&](const char* flag) -> std::string {
      if (auto eq = w.find('='); eq != std::string::npos) return w.substr(eq + 1);
      if (i + 1 >= words.size()) throw InputError(flag, "expects a value");
      return words[++i];
    };
    if (w == "--json") {
      cli.json = true;
    } else if (w == "--model" || w.rfind("--model=", 0) == 0) {
      cli.model = value("--model");
    } else if ((w == "--config" || w.rfind("--config=", 0) == 0) && !cli.config) {
      cli.config = value("--config");
      if (analyzer::is_primus_experiment(*cli.config) ||
          analyzer::is_megatron_test_case(*cli.config)) {  // an AMD Primus experiment: Megatron's arguments
        cli.rest.insert(cli.rest.end(), {"--config", *cli.config});
        cli.config.reset();
      }
    } else if (w == "--device-memory" || w.rfind("--device-memory=", 0) == 0) {
      std::string v = value("--device-memory");
      try {
        cli.device_memory_gib = std::stod(v);
      } catch (const std::exception&) {
        throw InputError("--device-memory", "expected a number of GiB, got '" + v + "'");
      }
    } else if (w == "--worker_num" || w.rfind("--worker_num=", 0) == 0 || w == "--worker-num" ||
               w.rfind("--worker-num=", 0) == 0) {
      std::string v = value("--worker_num");
      try {
        std::size_t pos = 0;
        cli.worker_num = std::stoi(v, &pos);
        if (pos != v.size() || cli.worker_num <= 0) throw std::invalid_argument(v);
      } catch (const std::exception&) {
        throw InputError("--worker_num", "expected a positive number of workers, got '" + v + "'");
      }
    } else if (w == "--bridge-config" || w.rfind("--bridge-config=", 0) == 0) {
      cli.bridge_config = value("--bridge-config");
    } else if (w == "--nemo-config" || w.rfind("--nemo-config=", 0) == 0) {
      cli.bridge_config = value("--nemo-config");  // the same reader: it tells the two formats apart
    } else if (w == "--system" || w.rfind("--system=", 0) == 0) {
      cli.system = value("--system");
    } else if (w == "--nic-gbps" || w.rfind("--nic-gbps=", 0) == 0) {
      const std::string v = value("--nic-gbps");
      try {
        std::size_t pos = 0;
        cli.nic_gbps = std::stod(v, &pos);
        if (pos != v.size()) throw std::invalid_argument(v);
      } catch (const std::exception&) {
        throw InputError("--nic-gbps", "expected GB/s per GPU, got '" + v + "'");
      }
    } else if (w == "--calibration" || w.rfind("--calibration=", 0) == 0) {
      cli.calibration = value("--calibration");
    } else if (w == "--compat" || w.rfind("--compat=", 0) == 0) {
      cli.compat = value("--compat");
      if (*cli.compat != "get_training_info")
        throw InputError("--compat", "unknown tool '" + *cli.compat + "'; known: get_training_info");
    } else {
      cli.rest.push_back(w);
    }
  }
  return cli;
}

}  // namespace

int run_analyze(const Words& words) {
  for (const auto& w : words)
    if (w == "-h" || w == "--help") {
      std::cout << kAnalyzeHelp << "\npresets for --model:";
      for (const auto& name : analyzer::preset_names()) std::cout << " " << name;
      std::cout << "\n";
      return kExitOk;
    }
  // Run by a wrapped script under `preflight run` (an mpirun of a shell whose launch wrap rewrote): the run
  // counts it as an intercepted launch.
  if (const char* dir = std::getenv("PREFLIGHT_SHIM_DIR"); dir && *dir)
    std::ofstream(std::filesystem::path(dir) / "launches.log", std::ios::app)
        << "preflight analyze\t(rewritten by preflight wrap)\tanalyzed\n";
  AnalyzeCli cli = take_options(words);
  if (cli.compat) {
    if (cli.json)
      throw InputError("--json", "--compat get_training_info prints the original tool's text only");
    std::cout << analyzer::render_get_training_info(cli.rest);
    return kExitOk;
  }
  // A MindFormers yaml: --config (ours or run_mindformer.py's among the rest), or a .yaml given to --model.
  analyzer::MindFormersOptions mf;
  std::string yaml = analyzer::read_run_mindformer_args(cli.rest, mf);
  if (cli.model && analyzer::is_yaml_path(*cli.model)) {
    if (!yaml.empty()) throw InputError("--model", "a yaml here and --config " + yaml + ": give one");
    yaml = *cli.model;
    cli.model.reset();
  }
  if (cli.config) yaml = *cli.config;
  std::optional<analyzer::ModelSpec> base;
  std::optional<double> yaml_device_gib;  // --config: context.max_device_memory, for --system too
  std::vector<std::string> model_warnings;
  if (cli.model) base = analyzer::load_model(*cli.model, &model_warnings);
  analyzer::AnalyzeOptions opts;
  opts.warnings = model_warnings;
  analyzer::ModelSpec model;
  analyzer::Strategy strategy;
  if (!yaml.empty()) {
    mf.base = base ? &*base : nullptr;
    mf.world_size = cli.worker_num;
    mf.world_source = "--worker_num";
    analyzer::MindFormersConfig mc = analyzer::load_mindformers_yaml(yaml, mf);
    model = mc.model;
    strategy = mc.strategy;
    opts.warnings.insert(opts.warnings.end(), mc.warnings.begin(), mc.warnings.end());
    if (!cli.device_memory_gib && mc.max_device_memory_gib) cli.device_memory_gib = mc.max_device_memory_gib;
    yaml_device_gib = mc.max_device_memory_gib;
  } else {
    if (cli.worker_num) throw InputError("--worker_num", "is for MindFormers launches (give --config X.yaml)");
    // A launch of NeMo 1's Hydra training script (wrap and run name it with --entry-point): its configuration
    // file, with the launch's overrides.
    if (!cli.bridge_config)
      if (auto launch = analyzer::nemo1_launch_in(cli.rest)) {
        cli.bridge_config = launch->config;
        cli.rest = launch->rest;
        opts.warnings.push_back("NeMo's configuration " + launch->config + " with the launch's overrides");
      }
    std::optional<analyzer::BridgeConfigArgs> bridge;

    if (cli.bridge_config) {
      // A Megatron-Bridge run configuration: its Megatron arguments, then the rest of the command line.
      bridge = analyzer::bridge_config_to_megatron_args(*cli.bridge_config, cli.rest);
      cli.rest = bridge->args;
      opts.warnings.insert(opts.warnings.end(), bridge->warnings.begin(), bridge->warnings.end());
      if (!cli.system && !bridge->gpu.empty()) {
        if (bridge->system.empty()) {
          opts.warnings.push_back(
              "the recipe is named for " + bridge->gpu +
              ", which preflight has no preset for: its iteration time is not priced (give "
              "--system)");
        } else {
          cli.system = bridge->system;
          opts.warnings.push_back("iteration time priced on " + *cli.system +
                                  ", the GPU the recipe is named for (--system for another)");
        }
      }
    }
    const analyzer::MegatronConfig cfg =
        bridge
            ? analyzer::parse_bridge_args(*bridge, analyzer::process_environment(), base ? &*base : nullptr)
            : analyzer::parse_megatron_args(cli.rest, analyzer::process_environment(),
                                            base ? &*base : nullptr);
    model = cfg.model;
    strategy = cfg.strategy;
    opts.warnings.insert(opts.warnings.end(), cfg.warnings.begin(), cfg.warnings.end());
  }
  if (std::string note = analyzer::mtp_left_out_note(model); !note.empty()) opts.warnings.push_back(note);
  analyzer::LayerGraph graph = analyzer::build_layer_graph(model, strategy);
  if (cli.calibration) {
    analyzer::apply_calibration(graph, analyzer::load_calibration_file(*cli.calibration));
    opts.warnings.push_back("calibrated with " + *cli.calibration);
  }
  opts.device_memory_gib = cli.device_memory_gib;
  // --system: the cost model on the same model and layout (loaded first: a bad name fails before printing).
  std::optional<analyzer::cost::Estimate> est;
  std::string system_name;
  if (cli.nic_gbps && !cli.system) throw InputError("--nic-gbps", "prices the network of --system: give one");
  if (cli.system) {
    analyzer::SystemSpec sys = analyzer::cost::load_simumax_system(*cli.system);
    if (cli.nic_gbps) sys.set_nic_gbps(*cli.nic_gbps);
    system_name = sys.source.empty() ? *cli.system : sys.source;  // the preset a product name resolved to
    std::vector<std::string> cap_warnings;
    if (yaml_device_gib) cap_device_memory(sys.mem_gib, *yaml_device_gib, cap_warnings);
    est = analyzer::cost::estimate(model, strategy, sys);
    est->warnings.insert(est->warnings.begin(), cap_warnings.begin(), cap_warnings.end());
  }
  if (cli.json) {
    nlohmann::ordered_json j = analyzer::analysis_json(graph, opts);
    if (est) j["estimate"] = analyzer::cost::summary_json(*est);
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << analyzer::render_analysis_text(graph, opts);
    if (est) {
      std::cout << "\n*** Iteration time on " << system_name << " (preflight estimate) ***\n"
                << analyzer::cost::summary_text(*est);
      for (const auto& w : est->warnings) std::cerr << "preflight: warning: " << w << "\n";
    }
  }
  return analyzer::analysis_fits(graph, opts) ? kExitOk : kExitDoesNotFit;
}

}  // namespace preflight::cli
