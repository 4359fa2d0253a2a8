// Megatron arguments, run group: launcher and parallel sizes, pipeline split, numerics, recompute, kernels.
#include <yaml-cpp/yaml.h>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "megatron_flags.hpp"
#include "preflight/common/error.hpp"

namespace preflight::analyzer::megatron {

const std::vector<FlagSpec>& launcher_flags() {
  static const std::vector<FlagSpec> flags =
      {
          {"--nproc-per-node", Arity::One},
          {"--nnodes", Arity::One},
          {"--node-rank", Arity::One},
          {"--master-addr", Arity::One},
          {"--master-port", Arity::One},
          {"--standalone", Arity::Switch},
          {"--world-size", Arity::One},
          {"--nnodes-variable", Arity::One},  // preflight wrap: the launch script's variable behind --nnodes
          {"--entry-point", Arity::One},      // preflight wrap / run: the training script the launch started
      };
  return flags;
}

const std::vector<FlagSpec>& parallel_flags() {
  static const std::vector<FlagSpec> flags = {
      {"--micro-batch-size", Arity::One},
      {"--global-batch-size", Arity::One},
      {"--tensor-model-parallel-size", Arity::One},
      {"--pipeline-model-parallel-size", Arity::One},
      {"--num-layers-per-virtual-pipeline-stage", Arity::One},
      {"--num-virtual-stages-per-pipeline-rank", Arity::One},
      {"--microbatch-group-size-per-virtual-pipeline-stage", Arity::One},
      {"--pipeline-model-parallel-layout", Arity::One},
      {"--decoder-first-pipeline-num-layers", Arity::One},
      {"--decoder-last-pipeline-num-layers", Arity::One},
      {"--account-for-embedding-in-pipeline-split", Arity::Switch},
      {"--pp-partition-method", Arity::One},
      {"--account-for-loss-in-pipeline-split", Arity::Switch},
      {"--context-parallel-size", Arity::One},
      {"--expert-model-parallel-size", Arity::One},
      {"--moe-expert-parallel-size", Arity::One},
      {"--ds-sequence-parallel-size", Arity::One},
      {"--expert-tensor-parallel-size", Arity::One},
      {"--sequence-parallel", Arity::Switch},
      {"--use-tp-pp-dp-mapping", Arity::Switch},
  };
  return flags;
}

const std::vector<FlagSpec>& training_flags() {
  static const std::vector<FlagSpec> flags = {
      {"--fp16", Arity::Switch},
      {"--bf16", Arity::Switch},
      {"--fp8-format", Arity::One},
      {"--fp8-recipe", Arity::One},
      {"--fp8-output-proj", Arity::Switch},
      {"--first-last-layers-bf16", Arity::Switch},
      {"--fp8-param-gather", Arity::Switch},
      {"--fp4-format", Arity::One},
      {"--fp4-recipe", Arity::One},
      {"--fp4-param-gather", Arity::Switch},
      {"--num-layers-at-start-in-bf16", Arity::One},
      {"--num-layers-at-end-in-bf16", Arity::One},
      {"--use-distributed-optimizer", Arity::Switch},
      {"--offload-optimizer-states", Arity::Switch},
      {"--optimizer-cpu-offload", Arity::Switch},
      {"--optimizer-offload-fraction", Arity::One},
      {"--fine-grained-activation-offloading", Arity::Switch},
      {"--offload-modules", Arity::Many},
      {"--min-offloaded-tensor-size", Arity::One},
      {"--activation-offload-fraction", Arity::One},
      {"--delta-offload-bytes-across-pp-ranks", Arity::One},
      {"--use-megatron-fsdp", Arity::Switch},
      {"--megatron-fsdp-main-grads-dtype", Arity::One},
      {"--megatron-fsdp-main-params-dtype", Arity::One},
      {"--zero-stage", Arity::One},
      {"--num-distributed-optimizer-instances", Arity::One},
      {"--ddp-bucket-size", Arity::One},
      {"--ddp-num-buckets", Arity::One},
      {"--deepspeed-config", Arity::One},
      {"--cpu-offloading", Arity::Switch},
      {"--cpu-offloading-num-layers", Arity::One},
      {"--defer-embedding-wgrad-compute", Arity::Switch},
      {"--wgrad-deferral-limit", Arity::One},
      {"--use-custom-fsdp", Arity::Switch},
      {"--use-torch-fsdp2", Arity::Switch},
      {"--torch-fsdp2-no-reshard-after-forward", Arity::Switch},
      {"--data-parallel-sharding-strategy", Arity::One},
      {"--outer-dp-sharding-strategy", Arity::One},
      {"--optimizer", Arity::One},
      {"--muon-num-ns-steps", Arity::One},
      {"--muon-tp-mode", Arity::One},
      {"--muon-no-split-qkv", Arity::Switch},
      {"--muon-scalar-optimizer", Arity::One},
      {"--no-use-layer-wise-param-layout", Arity::Switch},
      {"--grad-reduce-in-bf16", Arity::Switch},
      {"--use-precision-aware-optimizer", Arity::Switch},
      {"--main-grads-dtype", Arity::One},
      {"--main-params-dtype", Arity::One},
      {"--exp-avg-dtype", Arity::One},
      {"--exp-avg-sq-dtype", Arity::One},
      {"--accumulate-allreduce-grads-in-fp32", Arity::Switch},
      {"--recompute-granularity", Arity::One},
      {"--checkpoint-activations", Arity::Switch},
      {"--checkpoint-num-layers", Arity::One},
      {"--activations-checkpoint-method", Arity::One},
      {"--activations-checkpoint-num-layers", Arity::One},
      {"--recompute-method", Arity::One},
      {"--recompute-num-layers", Arity::One},
      {"--recompute-activations", Arity::Switch},
      {"--moe-layer-recompute", Arity::Switch},
      {"--moe-token-dispatcher-type", Arity::One},
      {"--moe-load-imbalance", Arity::One},
      {"--packed-seq-mean-length", Arity::One},
      {"--te-precision-config-file", Arity::One},
      {"--moe-router-force-load-balancing", Arity::Switch},
      {"--moe-grouped-gemm", Arity::Switch},
      // Pads each local expert's rows to the quantized GEMMs' alignment (16, MXFP8 32; moe_utils.py
      // get_align_size_for_quantization) in the router instead of the experts (skip_routed_expert_padding):
      // the same padding either way, at most alignment − 1 rows an expert; nothing to price.
      {"--moe-router-padding-for-quantization", Arity::Switch},
      {"--moe-router-padding-for-fp8", Arity::Switch},
      {"--moe-use-legacy-grouped-gemm", Arity::Switch},
      {"--moe-flex-dispatcher-backend", Arity::One},
      {"--moe-enable-deepep", Arity::Switch},
      {"--overlap-moe-expert-parallel-comm", Arity::Switch},
      {"--moe-shared-expert-overlap", Arity::Switch},
      {"--delay-wgrad-compute", Arity::Switch},
      {"--moe-flex-dispatcher-num-sms", Arity::One},
      {"--moe-deepep-num-sms", Arity::One},
      {"--moe-hybridep-num-sms", Arity::One},
      {"--cuda-graph-impl", Arity::One},
      {"--cuda-graph-modules", Arity::Many},
      {"--cuda-graph-scope", Arity::Many},
      {"--enable-cuda-graph", Arity::Switch},
      {"--external-cuda-graph", Arity::Switch},
      {"--recompute-modules", Arity::Many},
      {"--use-flash-attn", Arity::Switch},
      {"--use-flash-attn-v1", Arity::Switch},
      {"--use-flash-attn-v2", Arity::Switch},
      {"--use-flash-attn-triton", Arity::Switch},
      {"--use-flash-attn-builder", Arity::Switch},
      {"--transformer-impl", Arity::One},
      {"--no-gradient-accumulation-fusion", Arity::Switch},
      {"--use-legacy-models", Arity::Switch},
      {"--te-version", Arity::One},
      {"--cp-comm-type", Arity::Many},
      {"--hierarchical-context-parallel-sizes", Arity::Many},
      {"--no-overlap-p2p-communication", Arity::Switch},
      {"--overlap-p2p-communication", Arity::Switch},
      {"--use-mcore-models", Arity::Switch},
      {"--overlap-grad-reduce", Arity::Switch},
      {"--DDP-impl", Arity::One},
      {"--tp-comm-overlap", Arity::Switch},
      {"--overlap-param-gather", Arity::Switch},
      {"--simumax-compat", Arity::Switch},
      {"--runtime-overhead-mib", Arity::One},
      {"--fp16-lm-cross-entropy", Arity::Switch},
      {"--attention-backend", Arity::One},
      {"--cross-entropy-loss-fusion", Arity::Switch},
      {"--no-async-tensor-model-parallel-allreduce", Arity::Switch},
  };
  return flags;
}

struct EnvWorld {
  int ranks = 0;
  int per_node = 0;
  std::string source;  ///< the variables they came from
};

/// Ranks of a launch without torchrun, from the environment its launcher set: WORLD_SIZE (with
/// LOCAL_WORLD_SIZE per node), else MPI's OMPI_COMM_WORLD_SIZE / PMI_SIZE (local sizes per node), else
/// Slurm's SLURM_NTASKS or SLURM_NNODES × SLURM_NTASKS_PER_NODE ("8" or "8(x2)").  nullopt when none is set
/// or one is not a positive number.
std::optional<EnvWorld> world_from_environment(const std::map<std::string, std::string>& env) {
  auto number = [&](const char* key) -> int {
    auto it = env.find(key);
    if (it == env.end()) return 0;
    int v = 0;
    std::size_t i = 0;
    const std::string& t = it->second;
    while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i])) && v < (1 << 24))
      v = v * 10 + (t[i++] - '0');
    return i > 0 ? v : 0;
  };
  if (const int w = number("WORLD_SIZE"); w > 0) {
    const int local = number("LOCAL_WORLD_SIZE");
    return EnvWorld{w, local > 0 ? local : std::min(w, 8), "WORLD_SIZE"};
  }
  // An MPI rank (mpirun / mpiexec): Open MPI's, else MPICH's / Intel MPI's sizes.
  if (const int w = number("OMPI_COMM_WORLD_SIZE"); w > 0) {
    const int local = number("OMPI_COMM_WORLD_LOCAL_SIZE");
    return EnvWorld{w, local > 0 ? local : std::min(w, 8), "OMPI_COMM_WORLD_SIZE (mpirun's processes)"};
  }
  if (const int w = number("PMI_SIZE"); w > 0) {
    const int local = number("MPI_LOCALNRANKS");
    return EnvWorld{w, local > 0 ? local : std::min(w, 8), "PMI_SIZE (mpiexec's processes)"};
  }
  const int per_node = number("SLURM_NTASKS_PER_NODE");
  int nodes = number("SLURM_NNODES");
  if (nodes == 0) nodes = number("SLURM_JOB_NUM_NODES");
  if (const int n = number("SLURM_NTASKS"); n > 0)
    return EnvWorld{n, per_node > 0 ? per_node : (nodes > 0 ? std::max(1, n / nodes) : std::min(n, 8)),
                    "SLURM_NTASKS (srun's tasks)"};
  if (per_node > 0 && nodes > 0)
    return EnvWorld{per_node * nodes, per_node, "SLURM_NNODES × SLURM_NTASKS_PER_NODE (srun's tasks)"};
  return std::nullopt;
}

void read_launcher_and_sizes(const Flags& f, const std::map<std::string, std::string>& env,
                             MegatronConfig& cfg) {
  Strategy& st = cfg.strategy;
  // Launcher: torchrun flags, then its PET_* environment, then our own --world-size.
  auto env_or = [&](const char* key) -> std::string {
    auto it = env.find(key);
    return it == env.end() ? "" : it->second;
  };
  std::string nproc = f.has("--nproc-per-node") ? f.get("--nproc-per-node") : env_or("PET_NPROC_PER_NODE");
  std::string nnodes = f.has("--nnodes") ? f.get("--nnodes") : env_or("PET_NNODES");
  if (f.has("--standalone")) nnodes = nnodes.empty() ? "1" : nnodes;
  if (!nproc.empty()) {
    if (nproc == "gpu" || nproc == "auto" || nproc == "xpu") {
      // torchrun's `--nproc_per_node gpu` (auto: GPUs where there are any): one process per accelerator of
      // the node that launches, not this one.  The node size the analysis is run for:
      // $PREFLIGHT_GPUS_PER_NODE (what `preflight wrap`'s nvidia-smi answers for), else 8.
      const std::string given = env_or("PREFLIGHT_GPUS_PER_NODE");
      const bool said =
          !given.empty() && given.size() < 5 &&
          std::all_of(given.begin(), given.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
          std::stoi(given) > 0;
      cfg.warnings.push_back("--nproc_per_node " + nproc + " is one process per GPU of the launching node: " +
                             (said ? given + " (PREFLIGHT_GPUS_PER_NODE)" : std::string("8 assumed")) +
                             "; give --nproc_per_node N (or PREFLIGHT_GPUS_PER_NODE=N) for the run's");
      nproc = said ? given : "8";
    } else if (nproc == "cpu") {
      throw InputError("--nproc_per_node",
                       "'cpu' is one process per CPU core of the launching machine: a CPU run, not a GPU "
                       "training run preflight prices; give the number of processes per node");
    }
    cfg.nproc_per_node = static_cast<int>(parse_int("--nproc_per_node", nproc));
    if (cfg.nproc_per_node == 0) {
      // `--nproc_per_node=$(nvidia-smi -L | wc -l)` evaluated where there is no GPU (a login node)
      cfg.warnings.push_back(
          "--nproc_per_node 0 (GPUs counted on a machine without them, e.g. `nvidia-smi -L | "
          "wc -l` on a login node?): the world is taken from the layout; give --nproc_per_node "
          "(or preflight run --gpus-per-node N) for the run's");
      nproc.clear();
      nnodes.clear();
      cfg.nproc_per_node = 1;
    }
  }
  if (!nnodes.empty()) {
    std::string upper = nnodes;
    if (auto colon = nnodes.find(':'); colon != std::string::npos) {
      upper = nnodes.substr(colon + 1);
      cfg.warnings.push_back("elastic --nnodes " + nnodes + ": analysing the largest size, " + upper +
                             " nodes");
    }
    cfg.nnodes = static_cast<int>(parse_int("--nnodes", upper));
    if (cfg.nnodes == 0) {
      // `--nnodes $(scontrol show hostnames | wc -l)` evaluated outside an allocation
      cfg.warnings.push_back(
          "--nnodes 0 (nodes counted outside the job's allocation?): the world is taken from the layout; "
          "give --nnodes (or preflight run --nnodes N) for the run's");
      nproc.clear();
      nnodes.clear();
      cfg.nnodes = 1;
    }
  }
  st.tp = static_cast<int>(f.int_or("--tensor-model-parallel-size", 1));
  st.pp = static_cast<int>(f.int_or("--pipeline-model-parallel-size", 1));
  st.cp = static_cast<int>(f.int_or("--context-parallel-size", 1));
  st.ep = static_cast<int>(f.int_or("--expert-model-parallel-size", 1));
  // Megatron-DeepSpeed: experts over --moe-expert-parallel-size ranks, and DeepSpeed-Ulysses sequence
  // parallelism (--ds-sequence-parallel-size: the sequence split over ranks, all-to-all around attention) —
  // Megatron's context parallelism with the a2a exchange.
  if (f.has("--moe-expert-parallel-size"))
    st.ep = static_cast<int>(parse_int("--moe-expert-parallel-size", f.get("--moe-expert-parallel-size")));
  if (f.has("--ds-sequence-parallel-size")) {
    if (f.has("--context-parallel-size"))
      throw InputError("--ds-sequence-parallel-size",
                       "given with --context-parallel-size (one or the other)");
    st.cp = static_cast<int>(parse_int("--ds-sequence-parallel-size", f.get("--ds-sequence-parallel-size")));
    st.cp_comm_type = CpCommType::AllToAll;
  }
  st.etp = static_cast<int>(f.int_or("--expert-tensor-parallel-size", 0));
  if (f.has("--world-size")) {
    st.world_size = static_cast<int>(parse_int("--world-size", f.get("--world-size")));
    st.gpus_per_node = !nproc.empty() ? cfg.nproc_per_node : std::min(st.world_size, 8);
  } else if (!nproc.empty() || !nnodes.empty()) {
    st.world_size = cfg.nproc_per_node * cfg.nnodes;
    st.gpus_per_node = cfg.nproc_per_node;
  } else if (auto sized = world_from_environment(env)) {
    // The entry point started without torchrun: one rank per process of the launcher that set the
    // environment (WORLD_SIZE of a launcher script; srun's tasks).
    st.world_size = sized->ranks;
    st.gpus_per_node = sized->per_node;
    cfg.nnodes = std::max(1, st.world_size / std::max(1, st.gpus_per_node));
    cfg.warnings.push_back("no torchrun sizes: " + std::to_string(st.world_size) + " ranks from " +
                           sized->source);
  } else {
    st.world_size = 0;  // fit_world_size(): the fewest ranks the layout needs
  }
  cfg.nproc_per_node = st.gpus_per_node;

  // The caching allocator's reserve beyond the allocated peak: SimuMax's 0.94 (allocated / reserved) fits
  // Megatron's own logs of the memory corpus (13 ranks: 0.90 … 0.996, median 0.95).  With
  // expandable_segments (PYTORCH_CUDA_ALLOC_CONF, NeMo's performance recipes set it) blocks are carved from
  // one growing mapping of 2 MiB pages and freed pages are reused whatever the sizes, so the reserve is the
  // last partial pages: 0.99.
  for (const char* key : {"PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"}) {
    auto it = env.find(key);
    if (it == env.end()) continue;
    std::string conf = it->second;
    conf.erase(std::remove(conf.begin(), conf.end(), ' '), conf.end());
    std::transform(conf.begin(), conf.end(), conf.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (conf.find("expandable_segments:true") != std::string::npos) st.allocated_to_reserved_ratio = 0.99;
  }
}

void fit_world_size(const Flags& f, const std::map<std::string, std::string>& env, MegatronConfig& cfg) {
  Strategy& st = cfg.strategy;
  if (st.tp <= 0 || st.pp <= 0 || st.cp <= 0 || st.ep <= 0 || st.etp < 0) return;  // validate() says which
  const int need = st.min_world_size(cfg.model);
  const std::string layout = "tp·pp·cp = " + std::to_string(st.tp) + "·" + std::to_string(st.pp) + "·" +
                             std::to_string(st.cp) +
                             (need != st.tp * st.pp * st.cp ? " (with the experts' ep)" : "");
  if (st.world_size == 0) {
    st.world_size = need;
    st.gpus_per_node = std::min(need, 8);
    cfg.nproc_per_node = st.gpus_per_node;
    cfg.warnings.push_back(
        "no torchrun --nproc_per_node/--nnodes given: assuming the fewest GPUs the layout "
        "needs, " +
        layout + " = " + std::to_string(need) + " (dp = 1)");
    return;
  }
  if (st.world_size >= need) return;  // a multiple or not: validate() says what is wrong
  // The launch starts fewer processes than the layout needs (a recipe's NUM_NODES=1 with tp8 pp16): analyse
  // the layout on the fewest ranks it runs on, and say what the launch must be given.
  const int given = st.world_size;
  const int per_node = std::max(1, st.gpus_per_node);
  std::string fix;
  if (f.has("--world-size")) {
    fix = "--world-size " + std::to_string(need);
  } else if (need % per_node == 0) {
    std::string nodes = std::to_string(need / per_node);
    bool from_env = !f.has("--nnodes") && env.count("PET_NNODES");
    fix = from_env ? "PET_NNODES=" + nodes : "--nnodes " + nodes;
    fix += " (" + std::to_string(per_node) + " GPUs per node)";
    if (f.has("--nnodes-variable"))
      fix += ": set " + f.get("--nnodes-variable") + "=" + nodes + " in the launch script";
  } else {
    fix = "a world size that is a multiple of " + std::to_string(need) + " (e.g. --nproc_per_node " +
          std::to_string(std::min(need, 8)) + " --nnodes " + std::to_string((need + 7) / 8) + ")";
  }
  st.world_size = need;
  cfg.nnodes = (need + per_node - 1) / per_node;
  if (need < per_node) st.gpus_per_node = cfg.nproc_per_node = need;
  cfg.warnings.push_back("world size " + std::to_string(given) + " is smaller than the layout's " + layout +
                         " = " + std::to_string(need) + ": analysing " + std::to_string(need) +
                         " GPUs (dp = 1); the run needs " + fix);
}

void check_interleaved_groups(const Strategy& st) {
  // Without --global-batch-size (one micro batch per step) the layout is still analysed, as before.
  if (st.vpp <= 1 || st.global_batch_size <= 0) return;
  if (st.tp * st.pp * st.cp <= 0 || st.world_size % (st.tp * st.pp * st.cp) != 0) return;
  const std::int64_t per_step = static_cast<std::int64_t>(st.micro_batch_size) * st.dp();
  if (per_step <= 0 || st.global_batch() % per_step != 0) return;  // validate() names that
  const std::int64_t m = st.global_batch() / per_step, pp = st.pp;
  const std::int64_t g = st.microbatch_group();
  auto num = [](std::int64_t v) { return std::to_string(v); };
  // megatron/core/pipeline_parallel/schedules.py (forward_backward_pipelining_with_interleaving).
  if (st.microbatch_group_size_per_vp_stage <= 0 && m < pp)
    throw InputError("--global-batch-size",
                     "the interleaved schedule needs at least pp = " + num(pp) +
                         " micro batches per iteration, got " + num(m) +
                         " (global batch / (micro batch × dp)); Megatron refuses fewer");
  if (g < pp || g > m)
    throw InputError("--microbatch-group-size-per-virtual-pipeline-stage",
                     num(g) + " is outside [pp, micro batches] = [" + num(pp) + ", " + num(m) +
                         "] (Megatron refuses it too)");
  if (m % g != 0 && m % g < pp)
    throw InputError("--microbatch-group-size-per-virtual-pipeline-stage",
                     "the last group of " + num(m) + " micro batches in groups of " + num(g) + " has " +
                         num(m % g) + " < pp = " + num(pp) +
                         " (Megatron refuses it too: dependency bubbles)");
}

void read_cpu_offloading(const Flags& f, MegatronConfig& cfg) {
  Strategy& st = cfg.strategy;
  const I64 n = f.has("--cpu-offloading-num-layers")
                    ? parse_int("--cpu-offloading-num-layers", f.get("--cpu-offloading-num-layers"))
                    : 0;
  if (!f.has("--cpu-offloading") && n <= 0) return;
  const char* flag =
      f.has("--cpu-offloading-num-layers") ? "--cpu-offloading-num-layers" : "--cpu-offloading";
  if (n < 0 || n >= cfg.model.num_layers)
    throw InputError(flag, "offloads the activations of 0 … " + std::to_string(cfg.model.num_layers - 1) +
                               " layers (Megatron refuses " + std::to_string(n) + ")");
  if (st.pp > 1)
    throw InputError(flag, "Megatron has no CPU offloading with pipeline parallelism (pp = " +
                               std::to_string(st.pp) + ")");
  if (st.recompute_granularity != RecomputeGranularity::None)
    throw InputError(flag, "Megatron's CPU offloading does not work with activation recomputation");
  st.cpu_offload_layers = static_cast<int>(n);
  if (n == 0)
    cfg.warnings.push_back("--cpu-offloading without --cpu-offloading-num-layers offloads nothing");
  else
    cfg.warnings.push_back(
        "--cpu-offloading-num-layers " + std::to_string(n) +
        ": those layers' activations are held on the host; the transfers are taken as hidden "
        "behind compute (not priced)");
}

void read_embedding_wgrad_deferral(const Flags& f, MegatronConfig& cfg) {
  if (!f.has("--defer-embedding-wgrad-compute")) return;
  Strategy& st = cfg.strategy;
  const char* flag = "--defer-embedding-wgrad-compute";
  // megatron/core/model_parallel_config.py __post_init__.
  if (st.pp == 1)
    throw InputError(flag,
                     "needs pipeline parallelism (Megatron: cannot defer embedding wgrad compute when "
                     "pipeline model parallel is not used)");
  if (!st.gradient_accumulation_fusion)
    throw InputError(flag,
                     "needs gradient-accumulation fusion (Megatron refuses it with "
                     "--no-gradient-accumulation-fusion)");
  const I64 limit = f.has("--wgrad-deferral-limit")
                        ? parse_int("--wgrad-deferral-limit", f.get("--wgrad-deferral-limit"))
                        : 0;
  if (limit < 0) throw InputError("--wgrad-deferral-limit", "must be >= 0 (0: every micro batch)");
  st.defer_embedding_wgrad = true;
  st.wgrad_deferral_limit = static_cast<int>(limit);
}

void read_deepspeed(const Flags& f, MegatronConfig& cfg) {
  if (!f.has("--deepspeed")) return;
  Strategy& st = cfg.strategy;
  int zero = static_cast<int>(f.int_or("--zero-stage", 1));
  bool bf16 = f.has("--bf16");
  double sub_group = 1e9;  // deepspeed/runtime/zero/config.py: sub_group_size
  if (f.has("--deepspeed-config")) {
    const std::string path = f.get("--deepspeed-config");
    std::ifstream in(path);
    std::stringstream text;
    if (in) text << in.rdbuf();
    if (text.str().find_first_not_of(" \t\r\n") == std::string::npos) {
      cfg.warnings.push_back("DeepSpeed config '" + path + "' " + (in ? "is empty" : "not found") +
                             ": ZeRO stage " + std::to_string(zero) + " from --zero-stage");
    } else {
      try {
        const auto j = nlohmann::json::parse(text.str());
        if (j.contains("zero_optimization") && j["zero_optimization"].contains("stage"))
          zero = j["zero_optimization"]["stage"].get<int>();
        if (j.contains("zero_optimization") && j["zero_optimization"].contains("sub_group_size"))
          sub_group = j["zero_optimization"]["sub_group_size"].get<double>();
        if (j.contains("bf16") && j["bf16"].is_object() && j["bf16"].contains("enabled"))
          bf16 = j["bf16"]["enabled"].get<bool>();
      } catch (const std::exception& e) {
        throw InputError(path, std::string("DeepSpeed config: ") + e.what());
      }
    }
  }
  if (zero < 0 || zero > 3) throw InputError("--zero-stage", "must be 0 … 3, got " + std::to_string(zero));
  if (!(sub_group >= 0))
    throw InputError(f.get("--deepspeed-config"), "zero_optimization.sub_group_size must be ≥ 0");
  if (zero == 0 && bf16) {
    // DeepSpeed runs bf16 at stage 0 with its BF16_Optimizer (runtime/bf16_optimizer.py), which partitions
    // the fp32 master weights and optimizer states over data parallel as ZeRO-1 does (BigScience's BLOOM
    // scripts: "bf16 must use z0! it implements its own zero stage 1 equivalent").
    zero = 1;
    cfg.warnings.push_back(
        "DeepSpeed bf16 at ZeRO stage 0: its BF16_Optimizer shards the fp32 master weights and "
        "optimizer states over data parallel (ZeRO-1's), priced so");
  }
  st.zero_stage = zero;
  st.distributed_optimizer = zero >= 1;
  st.fsdp = zero >= 2;
  if (zero == 3) st.zero3_sub_group_elements = static_cast<I64>(std::min(sub_group, 1e18));
}

/// A hybrid pattern's pipeline: its `|` segments are the virtual pipeline stages in Megatron's order (segment
/// v · pp + r on pipeline rank r, its v-th chunk; vpp = segments / pp), the other split flags refused as
/// Megatron's argument validation does (training/arguments.py); without pipes the layers split evenly.
void read_hybrid_pipeline(const Flags& f, Strategy& st) {
  // A hybrid model from a config.json (a base model) has no pattern flag, and so no | segments; Megatron's
  // checks still hold (Megatron-Bridge builds it from the same pattern).
  const HybridPatternFlag hp = read_hybrid_pattern_flag(f);
  const char* flag = hp.flag ? hp.flag : "a hybrid model's pattern";
  for (const char* other :
       {"--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank",
        "--pipeline-model-parallel-layout", "--account-for-embedding-in-pipeline-split",
        "--account-for-loss-in-pipeline-split"})
    if (f.has(other))
      throw InputError(other,
                       std::string("should not be used with ") + flag +
                           " (Megatron asserts it: the pattern's | segments give the pipeline layout)");
  const std::vector<int>& segments = hp.segments;
  if (segments.size() <= 1)
    return;  // no pipes (or no pattern flag): Megatron's even split (select_pipeline_segment)
  for (const char* other : {"--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers"})
    if (f.has(other))
      throw InputError(
          other, std::string("should not be used when ") + flag + " has | segments (Megatron asserts it)");
  const int n = static_cast<int>(segments.size());
  if (st.pp == 1)
    throw InputError(flag,
                     "has " + std::to_string(n) +
                         " pipeline segments with --pipeline-model-parallel-size 1 (the segments are the "
                         "stages of an interleaved pipeline, which needs pp > 1)");
  if (n % st.pp != 0)
    throw InputError(flag, "has " + std::to_string(n) + " pipeline segments, not a multiple of the " +
                               std::to_string(st.pp) + " pipeline stages (Megatron asserts it)");
  st.vpp = n / st.pp;
  st.chunk_layout.assign(static_cast<std::size_t>(st.vpp),
                         std::vector<int>(static_cast<std::size_t>(st.pp), 0));
  for (int k = 0; k < n; ++k)
    st.chunk_layout[static_cast<std::size_t>(k / st.pp)][static_cast<std::size_t>(k % st.pp)] =
        segments[static_cast<std::size_t>(k)];
}

void read_pipeline_split(const Flags& f, MegatronConfig& cfg) {
  const ModelSpec& m = cfg.model;
  Strategy& st = cfg.strategy;
  st.micro_batch_size = static_cast<int>(f.int_or("--micro-batch-size", 1));
  st.global_batch_size = static_cast<int>(f.int_or("--global-batch-size", 0));
  st.sequence_parallel = f.has("--sequence-parallel");
  // megatron/core/transformer/moe/moe_layer.py (older releases: training/arguments.py) refuses to train MoE
  // with tensor parallelism but no sequence parallelism.
  if (cfg.model.moe.num_experts > 0 && st.tp > 1 && !st.sequence_parallel)
    throw InputError("--sequence-parallel",
                     "MoE with tp = " + std::to_string(st.tp) +
                         " needs sequence parallelism (Megatron refuses to train without it)");
  if (st.sequence_parallel && st.tp == 1) {
    st.sequence_parallel = false;
    cfg.warnings.push_back("--sequence-parallel has no effect with tp = 1 (Megatron disables it too)");
  }
  // Megatron (training/initialize.py): order 'tp-cp-ep-pp-dp' with the mapping, 'tp-cp-ep-dp-pp' without;
  // older releases used 'tp-pp-dp' and asserted cp = ep = 1, where the two orders give the same groups.
  if (f.has("--use-tp-pp-dp-mapping")) st.order = "tp-cp-ep-pp-dp";
  if (f.has("--microbatch-group-size-per-virtual-pipeline-stage")) {
    st.microbatch_group_size_per_vp_stage =
        static_cast<int>(parse_int("--microbatch-group-size-per-virtual-pipeline-stage",
                                   f.get("--microbatch-group-size-per-virtual-pipeline-stage")));
    if (st.microbatch_group_size_per_vp_stage <= 0)
      throw InputError("--microbatch-group-size-per-virtual-pipeline-stage", "must be positive");
  }
  st.first_stage_layers = static_cast<int>(f.int_or("--decoder-first-pipeline-num-layers", -1));
  st.last_stage_layers = static_cast<int>(f.int_or("--decoder-last-pipeline-num-layers", -1));
  st.account_for_embedding_in_pipeline_split = f.has("--account-for-embedding-in-pipeline-split");
  st.account_for_loss_in_pipeline_split = f.has("--account-for-loss-in-pipeline-split");
  if (f.has("--pp-partition-method")) {
    // Megatron-DeepSpeed's PipelineModule partitioning: 'type:transformer|embedding' balances the layers with
    // the embedding at each end (its tied output layer on the last stage) counted as one (BigScience's BLOOM:
    // 70 layers + 2 over pp 12) — Megatron-core's two pipeline-split slots.  The default ('parameters') and
    // others are not modelled: the layers split as Megatron splits them.
    std::string method = f.get("--pp-partition-method");
    method.erase(std::remove(method.begin(), method.end(), '\''), method.end());
    method.erase(std::remove(method.begin(), method.end(), '"'), method.end());
    if (method.find("embedding") != std::string::npos && method.find("transformer") != std::string::npos) {
      st.account_for_embedding_in_pipeline_split = st.account_for_loss_in_pipeline_split = true;
    } else {
      cfg.warnings.push_back(
          "--pp-partition-method " + method +
          ": Megatron-DeepSpeed's stage balancing is not modelled; the layers split evenly "
          "as Megatron-LM splits them");
    }
  }
  if (f.has("--num-virtual-stages-per-pipeline-rank")) {
    st.vpp = static_cast<int>(
        parse_int("--num-virtual-stages-per-pipeline-rank", f.get("--num-virtual-stages-per-pipeline-rank")));
  } else if (f.has("--num-layers-per-virtual-pipeline-stage")) {
    I64 per = parse_int("--num-layers-per-virtual-pipeline-stage",
                        f.get("--num-layers-per-virtual-pipeline-stage"));
    if (per <= 0) throw InputError("--num-layers-per-virtual-pipeline-stage", "must be positive");
    if (st.pp <= 0) throw InputError("--pipeline-model-parallel-size", "must be positive");
    // Megatron: vpp = (num_layers // pp) // layers_per_virtual_stage (even split), the embedding / loss counted
    // as layers with --account-for-embedding/loss-in-pipeline-split.
    I64 per_stage = (m.num_layers + (st.account_for_embedding_in_pipeline_split ? 1 : 0) +
                     (st.account_for_loss_in_pipeline_split ? 1 : 0)) /
                    st.pp;
    if (per_stage < per)
      throw InputError("--num-layers-per-virtual-pipeline-stage",
                       std::to_string(per) + " layers per virtual stage, but a pipeline stage has only " +
                           std::to_string(per_stage) + " of the " + std::to_string(m.num_layers) + " layers");
    if (per_stage % per != 0)
      throw InputError("--num-layers-per-virtual-pipeline-stage",
                       std::to_string(per_stage) + " layers per stage do not divide into chunks of " +
                           std::to_string(per));
    st.vpp = static_cast<int>(per_stage / per);
  }

  if (f.has("--pipeline-model-parallel-layout")) {
    for (const char* other :
         {"--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank",
          "--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers",
          "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split"})
      if (f.has(other))
        throw InputError("--pipeline-model-parallel-layout", std::string("cannot be combined with ") + other +
                                                                 " (the layout says the whole split)");
    st.chunk_layout =
        parse_pipeline_layout(f.get("--pipeline-model-parallel-layout"), st.pp,
                              static_cast<int>(m.num_layers), m.mtp_num_layers, st.megatron_version);
    st.vpp = static_cast<int>(st.chunk_layout.size());
  }
  if (m.hybrid()) read_hybrid_pipeline(f, st);
}

void read_numerics(const Flags& f, Strategy& st) {
  if (f.has("--bf16") && f.has("--fp16")) throw InputError("--bf16", "cannot be combined with --fp16");
  st.precision = f.has("--bf16") ? Precision::BF16 : f.has("--fp16") ? Precision::FP16 : Precision::FP32;
  if (f.has("--fp8-format")) {
    const auto& format = f.get("--fp8-format");
    if (format == "e4m3")
      st.fp8 = Fp8Format::E4M3;
    else if (format == "hybrid")
      st.fp8 = Fp8Format::Hybrid;
    else
      throw InputError("--fp8-format", "unknown format '" + format + "' (e4m3 or hybrid)");
  }
  if (f.has("--fp8-recipe")) {
    const auto& recipe = f.get("--fp8-recipe");
    static const std::map<std::string, Fp8Recipe> recipes = {{"delayed", Fp8Recipe::Delayed},
                                                             {"tensorwise", Fp8Recipe::Tensorwise},
                                                             {"mxfp8", Fp8Recipe::Mxfp8},
                                                             {"blockwise", Fp8Recipe::Blockwise},
                                                             {"custom", Fp8Recipe::Custom}};
    auto it = recipes.find(recipe);
    if (it == recipes.end())
      throw InputError("--fp8-recipe",
                       "unknown recipe '" + recipe + "' (tensorwise, delayed, mxfp8, blockwise or custom)");
    st.fp8_recipe = it->second;
  }
  if (f.has("--fp8-output-proj")) {
    // transformer_config.py: "fp8_output_proj must be used together with fp8 mode" and "requires
    // fp8_recipe='mxfp8'".
    if (st.fp8 == Fp8Format::None || st.fp8 == Fp8Format::E2M1)
      throw InputError("--fp8-output-proj", "needs --fp8-format (Megatron raises without fp8)");
    if (st.fp8_recipe != Fp8Recipe::Mxfp8)
      throw InputError("--fp8-output-proj",
                       "needs --fp8-recipe mxfp8 (Megatron raises for the other recipes)");
    st.fp8_output_proj = true;
  }
  // FP4 (megatron/core/fp4_utils.py): NVFP4 block scaling through the same Transformer Engine autocast; the
  // first / last layers in bf16 and the parameter gather work as with fp8 (arguments.py refuses the mix).
  if (f.has("--fp4-format")) {
    if (st.fp8 != Fp8Format::None)
      throw InputError("--fp4-format",
                       "cannot be combined with --fp8-format (Megatron refuses it): choose one");
    const auto& format = f.get("--fp4-format");
    if (format != "e2m1") throw InputError("--fp4-format", "unknown format '" + format + "' (e2m1)");
    st.fp8 = Fp8Format::E2M1;
    st.fp8_recipe = Fp8Recipe::Nvfp4;
    if (f.has("--fp4-recipe")) {
      const auto& recipe = f.get("--fp4-recipe");
      if (recipe == "custom")
        st.fp8_recipe = Fp8Recipe::Custom;
      else if (recipe != "nvfp4")
        throw InputError("--fp4-recipe", "unknown recipe '" + recipe + "' (nvfp4 or custom)");
    }
  } else {
    // (--fp4-recipe alone is a no-op: Megatron's default nvfp4 sits in every argument dump and Primus config)
    if (f.has("--fp4-param-gather"))
      throw InputError("--fp4-param-gather", "needs --fp4-format (Megatron refuses it without)");
  }
  if (f.has("--first-last-layers-bf16") && st.fp8 != Fp8Format::None) {
    // megatron/core/fp8_utils.py: entering and leaving fp8 per layer breaks delayed scaling's amax reduction.
    if (st.fp8_recipe == Fp8Recipe::Delayed)
      throw InputError(
          "--first-last-layers-bf16",
          "does not work with delayed scaling (Megatron's default --fp8-recipe; it asserts): use "
          "--fp8-recipe tensorwise, mxfp8 or blockwise");
    auto count = [&](const char* flag) {
      const I64 n = f.has(flag) ? parse_int(flag, f.get(flag)) : 1;
      if (n < 0) throw InputError(flag, "must be >= 0");
      return static_cast<int>(n);
    };
    st.bf16_layers_at_start = count("--num-layers-at-start-in-bf16");
    st.bf16_layers_at_end = count("--num-layers-at-end-in-bf16");
  }
  st.fp8_param_gather = f.has("--fp8-param-gather") || f.has("--fp4-param-gather");
  st.distributed_optimizer = f.has("--use-distributed-optimizer");
  st.offload_optimizer_states = f.has("--offload-optimizer-states");
  if (f.has("--optimizer-cpu-offload")) {
    // Megatron asserts --use-precision-aware-optimizer (the hybrid device optimizer reuses its code path).
    if (!f.has("--use-precision-aware-optimizer"))
      throw InputError(
          "--optimizer-cpu-offload",
          "needs --use-precision-aware-optimizer (Megatron asserts it: the hybrid device optimizer "
          "reuses that code path)");
    st.optimizer_cpu_offload_fraction = f.float_or("--optimizer-offload-fraction", 1.0);
    if (!(st.optimizer_cpu_offload_fraction >= 0 && st.optimizer_cpu_offload_fraction <= 1))
      throw InputError("--optimizer-offload-fraction", "must be between 0 and 1");
  }
  // Fine-grained activation offloading (TransformerConfig.fine_grained_activation_offloading and its checks).
  if (f.has("--fine-grained-activation-offloading")) {
    static const std::set<std::string> known = {"attn_norm", "qkv_linear", "core_attn", "attn_proj",
                                                "mlp_norm",  "expert_fc1", "moe_act",   "fused_group_mlp"};
    for (const auto& m : f.list("--offload-modules")) {
      if (!known.count(m))
        throw InputError("--offload-modules", "unknown module '" + m +
                                                  "' (attn_norm, qkv_linear, core_attn, attn_proj, mlp_norm, "
                                                  "expert_fc1, moe_act, fused_group_mlp)");
      st.offload_modules.push_back(m);
    }
    auto listed = [&](const char* x) {
      return std::find(st.offload_modules.begin(), st.offload_modules.end(), x) != st.offload_modules.end();
    };
    if (listed("attn_proj") && !listed("core_attn"))
      throw InputError("--offload-modules",
                       "attn_proj must be offloaded together with core_attn (Megatron asserts it)");
    if (listed("fused_group_mlp") && (listed("expert_fc1") || listed("moe_act")))
      throw InputError("--offload-modules",
                       "fused_group_mlp offloads the whole grouped MLP: not with expert_fc1 or moe_act");
    if (f.has("--activation-offload-fraction")) {
      st.activation_offload_fraction =
          parse_float("--activation-offload-fraction", f.get("--activation-offload-fraction"));
      if (!(st.activation_offload_fraction >= 0 && st.activation_offload_fraction <= 1))
        throw InputError("--activation-offload-fraction", "must be between 0 and 1");
    }
    if (f.has("--delta-offload-bytes-across-pp-ranks")) {
      st.delta_offload_bytes_across_pp_ranks =
          parse_int("--delta-offload-bytes-across-pp-ranks", f.get("--delta-offload-bytes-across-pp-ranks"));
      if (st.delta_offload_bytes_across_pp_ranks < 0)
        throw InputError("--delta-offload-bytes-across-pp-ranks", "must not be negative");
    }
    if (f.has("--min-offloaded-tensor-size")) {
      st.min_offloaded_tensor_elements =
          parse_int("--min-offloaded-tensor-size", f.get("--min-offloaded-tensor-size"));
      if (st.min_offloaded_tensor_elements < 0)
        throw InputError("--min-offloaded-tensor-size", "must not be negative");
    }
  }
  if (f.has("--num-distributed-optimizer-instances")) {
    st.dist_opt_instances = static_cast<int>(
        parse_int("--num-distributed-optimizer-instances", f.get("--num-distributed-optimizer-instances")));
    if (st.dist_opt_instances < 1)
      throw InputError("--num-distributed-optimizer-instances", "must be positive");
  }
  // Gradient buckets (training/arguments.py; training.py resolve_ddp_bucket_size reads --ddp-num-buckets
  // first).
  if (f.has("--ddp-bucket-size")) {
    st.ddp_bucket_elements = parse_int("--ddp-bucket-size", f.get("--ddp-bucket-size"));
    if (st.ddp_bucket_elements < 1) throw InputError("--ddp-bucket-size", "must be positive (parameters)");
  }
  if (f.has("--ddp-num-buckets")) {
    st.ddp_num_buckets = static_cast<int>(parse_int("--ddp-num-buckets", f.get("--ddp-num-buckets")));
    if (st.ddp_num_buckets < 1) throw InputError("--ddp-num-buckets", "must be positive");
  }
  // Fully sharded data parallel: Megatron-FSDP (`--use-megatron-fsdp`, before it `--use-custom-fsdp`) shards
  // what --data-parallel-sharding-strategy says (training/arguments.py default optim_grads_params); torch's
  // FSDP2 shards parameters, gradients and optimizer states.
  if (f.has("--use-megatron-fsdp") || f.has("--use-custom-fsdp") || f.has("--use-torch-fsdp2")) {
    st.fsdp = true;
    st.zero_stage = 3;
    if (!f.has("--use-torch-fsdp2") && f.has("--data-parallel-sharding-strategy")) {
      static const std::map<std::string, int> levels = {
          {"no_shard", 0}, {"optim", 1}, {"optim_grads", 2}, {"optim_grads_params", 3}};
      const auto& v = f.get("--data-parallel-sharding-strategy");
      const auto it = levels.find(v);
      if (it == levels.end())
        throw InputError("--data-parallel-sharding-strategy",
                         "unknown strategy '" + v + "' (no_shard, optim, optim_grads, optim_grads_params)");
      st.zero_stage = it->second;
    }
    // torch FSDP2 without resharding after the forward pass (training/arguments.py: "Set to enable FSDP
    // ZeRO-2"): each unit's gathered parameters stay until its backward — the whole stage's at the peak.
    if (f.has("--use-torch-fsdp2") && f.has("--torch-fsdp2-no-reshard-after-forward")) st.zero_stage = 2;
    st.distributed_optimizer = st.zero_stage >= 1;
  }
  // Megatron-FSDP's hybrid sharding (training/arguments.py): "optim" shards the optimizer states across the
  // outer data-parallel group (the --num-distributed-optimizer-instances) too; only with optim_grads_params.
  if (f.has("--outer-dp-sharding-strategy")) {
    const std::string& v = f.get("--outer-dp-sharding-strategy");
    if (v != "no_shard" && v != "optim")
      throw InputError("--outer-dp-sharding-strategy", "unknown strategy '" + v + "' (no_shard or optim)");
    if (v == "optim") {
      if (!(f.has("--use-megatron-fsdp") || f.has("--use-custom-fsdp")) || st.zero_stage < 3)
        throw InputError(
            "--outer-dp-sharding-strategy",
            "optim needs Megatron-FSDP with --data-parallel-sharding-strategy optim_grads_params "
            "(Megatron refuses it otherwise)");
      st.outer_dp_optim_shard = true;
    }
  }
  if (f.has("--optimizer")) {
    const auto& o = f.get("--optimizer");
    if (o == "adam")
      st.optimizer = Optimizer::Adam;
    else if (o == "sgd")
      st.optimizer = Optimizer::SGD;
    else if (o == "muon" || o == "dist_muon")
      st.optimizer = Optimizer::Muon;
    else if (o == "adaptive_muon" || o == "lion" || o == "soap")
      // Megatron's other emerging optimizers (core/optimizer/emerging_optimizers.py): other states per
      // parameter (AdaptiveMuon's second moment, SOAP's preconditioners), none modelled.
      throw InputError("--optimizer",
                       "the " + o +
                           " optimizer is not modelled (its states and step differ from Adam's); "
                           "preflight models adam, sgd and muon");
    else
      throw InputError("--optimizer", "unknown optimizer '" + o + "' (adam, sgd or muon)");
    if (st.optimizer == Optimizer::Muon) {
      // Megatron's argument validation (training/arguments.py, "emerging optimizer check"): dist_muon, or
      // muon with --use-distributed-optimizer, runs the layer-wise distributed optimizer; its default
      // parameter layout gives DDP the distributed optimizer's reduce-scatter (models/dist_utils.py).
      if (st.fsdp)
        throw InputError("--optimizer", "Megatron's emerging optimizers (" + o +
                                            ") support neither Megatron-FSDP nor Torch-FSDP2");
      st.muon.layer_wise = o == "dist_muon" || st.distributed_optimizer;
      st.muon.param_layout = !f.has("--no-use-layer-wise-param-layout");
      st.distributed_optimizer = st.muon.layer_wise;
      if (f.has("--muon-num-ns-steps")) {
        st.muon.ns_steps = static_cast<int>(parse_int("--muon-num-ns-steps", f.get("--muon-num-ns-steps")));
        if (st.muon.ns_steps < 1 || st.muon.ns_steps > 100)
          throw InputError("--muon-num-ns-steps", "must be 1 … 100, got " + std::to_string(st.muon.ns_steps));
      }
      if (f.has("--muon-tp-mode")) {
        st.muon.tp_mode = f.get("--muon-tp-mode");
        if (st.muon.tp_mode != "duplicated" && st.muon.tp_mode != "blockwise" &&
            st.muon.tp_mode != "distributed")
          throw InputError("--muon-tp-mode",
                           "unknown mode '" + st.muon.tp_mode + "' (duplicated, blockwise, distributed)");
      }
      st.muon.split_qkv = !f.has("--muon-no-split-qkv");
      if (f.has("--muon-scalar-optimizer")) {
        const auto& so = f.get("--muon-scalar-optimizer");
        if (so == "adam")
          st.muon.scalar_states = 2;
        else if (so == "lion")
          st.muon.scalar_states = 1;
        else
          throw InputError("--muon-scalar-optimizer", "unknown scalar optimizer '" + so + "' (adam, lion)");
      }
    }
  }
  st.grad_reduce_in_bf16 = f.has("--grad-reduce-in-bf16");
  st.tp_async_allreduce = !f.has("--no-async-tensor-model-parallel-allreduce");
  // Megatron-FSDP's buffers: since 2026-07-01 (adfe9e11d9) the main gradients are
  // --megatron-fsdp-main-grads-dtype's (auto: the parameters' dtype) and the main weights
  // --megatron-fsdp-main-params-dtype's (fp32 by default); before, a 16-bit run's gradients were fp32 unless
  // --grad-reduce-in-bf16 (the adapter's grandfathered grad_reduce_in_fp32).
  if (f.has("--use-megatron-fsdp") || f.has("--use-custom-fsdp")) {
    auto dtype = [&](const char* flag, const char* dflt) {
      const std::string v = f.has(flag) ? f.get(flag) : dflt;
      if (v != "fp32" && v != "bf16" && v != "fp16" && v != "auto")
        throw InputError(flag, "unknown dtype '" + v + "' (fp32, bf16, fp16, auto)");
      return v == "fp32" || (v == "auto" && st.precision == Precision::FP32) ? 4 : 2;
    };
    const bool current = st.megatron_version.empty() || st.megatron_version >= "2026-07-01";
    if (current && st.precision != Precision::FP32) {
      st.grad_reduce_in_bf16 = dtype("--megatron-fsdp-main-grads-dtype", "auto") == 2;
      st.master_param_bytes = dtype("--megatron-fsdp-main-params-dtype", "fp32");
    }
  }
  st.accumulate_allreduce_grads_in_fp32 = f.has("--accumulate-allreduce-grads-in-fp32");
  // --use-precision-aware-optimizer (TransformerEngine's FusedAdam keeps the master copy and moments in the
  // dtypes given; bf16 main grads make the grad buffer and its reduce-scatter bf16 too).
  auto dtype_bytes = [&](const char* flag, std::initializer_list<const char*> allowed) {
    const std::string& v = f.get(flag);
    bool ok = false;
    std::string list;
    for (const char* a : allowed) {
      ok = ok || v == a;
      list += (list.empty() ? "" : ", ") + std::string(a);
    }
    if (!ok) throw InputError(flag, "unknown dtype '" + v + "' (" + list + ")");
    return v == "fp32" ? 4 : (v == "fp8" ? 1 : 2);
  };
  const char* dtype_flags[] = {"--main-grads-dtype", "--main-params-dtype", "--exp-avg-dtype", "--exp-avg-sq-dtype"};
  if (!f.has("--use-precision-aware-optimizer")) {
    for (const char* flag : dtype_flags)
      if (f.has(flag) && f.get(flag) != "fp32")
        throw InputError(flag, "takes effect only with --use-precision-aware-optimizer (Megatron refuses it too)");
    return;
  }
  if (f.has("--main-grads-dtype") && dtype_bytes("--main-grads-dtype", {"fp32", "bf16"}) == 2)
    st.grad_reduce_in_bf16 = true;
  if (f.has("--main-params-dtype")) st.master_param_bytes = dtype_bytes("--main-params-dtype", {"fp32", "fp16"});
  if (f.has("--exp-avg-dtype")) st.exp_avg_bytes = dtype_bytes("--exp-avg-dtype", {"fp32", "fp16", "bf16", "fp8"});
  if (f.has("--exp-avg-sq-dtype"))
    st.exp_avg_sq_bytes = dtype_bytes("--exp-avg-sq-dtype", {"fp32", "fp16", "bf16", "fp8"});
}

void read_recompute(const Flags& f, Strategy& st) {
  if (f.has("--recompute-activations")) st.recompute_granularity = RecomputeGranularity::Selective;
  // --checkpoint-activations (Megatron-LM before 2022, Megatron-DeepSpeed's DeepSpeed checkpointing): every
  // layer is a checkpoint, --checkpoint-num-layers of them per call (default 1): full, uniform.
  if (f.has("--checkpoint-activations") && !f.has("--recompute-granularity")) {
    st.recompute_granularity = RecomputeGranularity::Full;
    st.recompute_method = RecomputeMethod::Uniform;
    st.recompute_num_layers = static_cast<int>(
        f.int_or("--activations-checkpoint-num-layers", f.int_or("--checkpoint-num-layers", 1)));
    return read_recompute_modules(f, st);
  }
  // --activations-checkpoint-method uniform|block (Megatron-LM 2021-08 … 2022-04, e.g. its sc21 scripts;
  // later
  // --recompute-granularity full --recompute-method): full recompute by that method,
  // --activations-checkpoint-num-layers per call / per stage (default 1).
  if (f.has("--activations-checkpoint-method") && !f.has("--recompute-granularity")) {
    const auto& m = f.get("--activations-checkpoint-method");
    if (m != "uniform" && m != "block")
      throw InputError("--activations-checkpoint-method", "unknown method '" + m + "' (uniform or block)");
    st.recompute_granularity = RecomputeGranularity::Full;
    st.recompute_method = m == "block" ? RecomputeMethod::Block : RecomputeMethod::Uniform;
    st.recompute_num_layers = static_cast<int>(f.int_or("--activations-checkpoint-num-layers", 1));
    if (st.recompute_num_layers < (m == "block" ? 0 : 1))
      throw InputError("--activations-checkpoint-num-layers", "must be positive");
    return read_recompute_modules(f, st);
  }
  if (f.has("--recompute-granularity")) {
    const auto& g = f.get("--recompute-granularity");
    if (g == "full")
      st.recompute_granularity = RecomputeGranularity::Full;
    else if (g == "selective")
      st.recompute_granularity = RecomputeGranularity::Selective;
    else
      throw InputError("--recompute-granularity", "unknown granularity '" + g + "' (full or selective)");
  }
  if (st.recompute_granularity == RecomputeGranularity::Full) {
    if (!f.has("--recompute-method"))
      throw InputError("--recompute-method",
                       "full recompute needs --recompute-method uniform or block (Megatron refuses it too)");
    const auto& meth = f.get("--recompute-method");
    if (meth == "uniform")
      st.recompute_method = RecomputeMethod::Uniform;
    else if (meth == "block")
      st.recompute_method = RecomputeMethod::Block;
    else
      throw InputError("--recompute-method", "unknown method '" + meth + "' (uniform or block)");
    st.recompute_num_layers = static_cast<int>(f.int_or("--recompute-num-layers", 1));
  }
  read_recompute_modules(f, st);
}

void read_recompute_modules(const Flags& f, Strategy& st) {
  if (f.has("--recompute-modules")) {
    st.recompute_modules = f.list("--recompute-modules");
  }
  // Deprecated --moe-layer-recompute: selective recompute with "moe" added to the modules
  // (TransformerConfig.__post_init__).
  if (f.has("--moe-layer-recompute")) {
    if (st.recompute_granularity == RecomputeGranularity::Full)
      throw InputError("--moe-layer-recompute",
                       "cannot be combined with full recompute granularity (Megatron refuses it too)");
    st.recompute_granularity = RecomputeGranularity::Selective;
    if (std::find(st.recompute_modules.begin(), st.recompute_modules.end(), "moe") ==
        st.recompute_modules.end())
      st.recompute_modules.push_back("moe");
  }
}

void read_cuda_graphs(const Flags& f, Strategy& st) {
  // Megatron-LM megatron/training/arguments.py (the deprecated switches and --cuda-graph-scope migrated) and
  // transformer_config.py (modules "full" or none = the whole layer; "full_iteration" = the full-iteration
  // implementation).
  std::string impl = f.has("--cuda-graph-impl") ? f.get("--cuda-graph-impl") : "none";
  if (impl != "none" && impl != "local" && impl != "transformer_engine" && impl != "full_iteration")
    throw InputError("--cuda-graph-impl", "unknown implementation '" + impl +
                                              "' (none, local, transformer_engine, full_iteration)");
  if (f.has("--enable-cuda-graph") && f.has("--external-cuda-graph"))
    throw InputError("--enable-cuda-graph",
                     "cannot be combined with --external-cuda-graph (Megatron asserts it)");
  for (const char* old : {"--enable-cuda-graph", "--external-cuda-graph"})
    if (f.has(old)) {
      if (f.has("--cuda-graph-impl"))
        throw InputError(old, "cannot be combined with --cuda-graph-impl (Megatron asserts it)");
      impl = std::string(old) == "--enable-cuda-graph" ? "local" : "transformer_engine";
    }
  if (f.has("--cuda-graph-scope") && f.has("--cuda-graph-modules"))
    throw InputError("--cuda-graph-scope",
                     "cannot be combined with --cuda-graph-modules (Megatron asserts it)");
  const char* modules_flag = f.has("--cuda-graph-scope") ? "--cuda-graph-scope" : "--cuda-graph-modules";
  bool whole_layer = true;  // no modules, or "full": the whole layer
  bool moe_module = false;
  if (f.has(modules_flag)) {
    bool listed = false;
    for (const auto& m : f.list(modules_flag)) {
      static const std::set<std::string> known = {"attn",           "mlp",   "moe", "moe_router",
                                                  "moe_preprocess", "mamba", "full"};
      if (m == "full_iteration") {
        impl = "full_iteration";
        continue;
      }
      if (m == "full_iteration_inference") continue;  // inference only
      if (!known.count(m))
        throw InputError(modules_flag, "unknown module '" + m +
                                           "' (attn, mlp, moe, moe_router, moe_preprocess, mamba, full, "
                                           "full_iteration)");
      if (m == "full") continue;
      listed = true;
      moe_module = moe_module || m == "moe";
    }
    whole_layer = !listed;
    // transformer_config.py: "moe cuda graph is only supported with drop-padding MoE".
    if (moe_module && !(f.has("--moe-expert-capacity-factor") && f.has("--moe-pad-expert-input-to-capacity")))
      throw InputError(
          modules_flag,
          "moe: Megatron captures the MoE module only with drop-and-pad MoE "
          "(--moe-expert-capacity-factor with --moe-pad-expert-input-to-capacity); it asserts it");
    if (impl == "full_iteration" && listed)
      throw InputError(modules_flag,
                       "must be empty with --cuda-graph-impl full_iteration (Megatron asserts it)");
  }
  st.cuda_graphs = impl != "none";
  st.moe_experts_cuda_graph =
      impl == "full_iteration" ||
      ((impl == "local" || impl == "transformer_engine") && (whole_layer || moe_module));
}

/// The run used the legacy model code (megatron/model): --use-legacy-models, or a --megatron-version before
/// Megatron-core became the default (2024-05) without --use-mcore-models.
bool legacy_model(const Flags& f, const Strategy& st) {
  if (f.has("--use-legacy-models")) return true;
  if (f.has("--use-mcore-models")) return false;
  // Flags Megatron-LM removed before Megatron-core existed as a model: --DDP-impl (2023-08),
  // --activations-checkpoint-method (2022-04).
  if (st.megatron_version.empty() && (f.has("--DDP-impl") || f.has("--activations-checkpoint-method")))
    return true;
  // Megatron-DeepSpeed (--deepspeed) builds its models from megatron/model.
  if (f.has("--deepspeed")) return true;
  return !st.megatron_version.empty() && st.megatron_version < "2024-05-01";
}

void read_precision_config(const Flags& f, MegatronConfig& cfg) {
  static const char* const kFlag = "--te-precision-config-file";
  if (!f.has(kFlag)) return;
  const std::string flag = kFlag;
  Strategy& st = cfg.strategy;
  const std::string path = f.get(kFlag);
  st.precision_config_file = path;
  if (st.fp8 == Fp8Format::None) {
    cfg.warnings.push_back(flag +
                           ": no effect without --fp8-format / --fp4-format (its overrides apply to "
                           "modules that run quantized)");
    return;
  }
  std::ifstream in(path);
  if (!in) {
    cfg.warnings.push_back(
        flag + " " + path +
        ": not readable here, so its per-module precision overrides are not applied: every "
        "linear is priced at the run's recipe (modules it keeps in 16 bits priced fast and "
        "small)");
    return;
  }
  YAML::Node root;
  try {
    root = YAML::Load(in);
  } catch (const YAML::Exception& e) {
    throw InputError(path + ":" + std::to_string(e.mark.line + 1), "malformed YAML: " + e.msg);
  }
  auto where = [&](const YAML::Node& n, const std::string& key) {
    return path + ":" + std::to_string(n.Mark().line + 1) + ": " + key;
  };
  if (!root.IsMap())
    throw InputError(path, "expected a mapping with configs: and matchers: (Megatron's recipe file)");
  // configs: NAME → its training recipe ("" = 16 bits).
  struct Config {
    std::string recipe;
    bool fp4 = false, supported = true;
  };
  std::map<std::string, Config> configs;
  if (const YAML::Node cs = root["configs"]; cs && cs.IsMap()) {
    for (const auto& kv : cs) {
      const std::string name = kv.first.as<std::string>();
      const YAML::Node c = kv.second;
      Config conf;
      if (!c.IsMap()) throw InputError(where(c, "configs." + name), "expected a mapping");
      const std::string type =
          c["transformer_engine_config_type"] ? c["transformer_engine_config_type"].as<std::string>() : "";
      if (type != "TEQuantizationParams") {
        conf.supported = false;  // a Kitchen recipe or another back end's
      } else if (const YAML::Node t = c["training_recipe"]; t && t.IsMap() && t.size() > 0) {
        if (t["fp4_quantization_recipe"]) {
          conf.recipe = t["fp4_quantization_recipe"].as<std::string>();
          conf.fp4 = true;
        } else if (t["fp8_quantization_recipe"]) {
          conf.recipe = t["fp8_quantization_recipe"].as<std::string>();
        } else {
          conf.supported = false;
        }
      }
      configs[name] = conf;
    }
  }
  std::vector<std::string> sixteen, other, unsupported;
  if (const YAML::Node ms = root["matchers"]; ms && ms.IsMap()) {
    for (const auto& kv : ms) {
      const std::string name = kv.first.as<std::string>();
      const YAML::Node m = kv.second;
      const std::string key = "matchers." + name;
      if (!m.IsMap()) throw InputError(where(m, key), "expected a mapping (config, type, pattern, enabled)");
      bool enabled = false;  // Megatron: matcher.get("enabled", False)
      if (m["enabled"]) {
        try {
          enabled = m["enabled"].as<bool>();
        } catch (const YAML::Exception&) {
          throw InputError(where(m["enabled"], key + ".enabled"), "expected true or false");
        }
      }
      if (!enabled) continue;
      const std::string type = m["type"] ? m["type"].as<std::string>() : "";
      if (type != "glob")
        throw InputError(where(m, key + ".type"),
                         type.empty() ? "is missing (Megatron requires it)"
                                      : "'" + type + "' is not a matcher type Megatron implements (glob)");
      if (!m["pattern"])
        throw InputError(where(m, key + ".pattern"), "is missing (a glob matcher needs one)");
      if (!m["config"]) throw InputError(where(m, key + ".config"), "is missing (a glob matcher needs one)");
      PrecisionOverride o;
      o.matcher = name;
      o.pattern = m["pattern"].as<std::string>();
      o.config = m["config"].as<std::string>();
      auto c = configs.find(o.config);
      if (c == configs.end())
        throw InputError(where(m["config"], key + ".config"),
                         "'" + o.config + "' is not among the file's configs");
      o.recipe = c->second.recipe;
      o.fp4 = c->second.fp4;
      o.sixteen_bit = c->second.supported && o.recipe.empty();
      if (!c->second.supported)
        unsupported.push_back(name);
      else if (o.sixteen_bit)
        sixteen.push_back(o.pattern);
      else if (o.recipe != to_string(st.fp8_recipe) && !(o.fp4 && st.fp4()))
        other.push_back(o.pattern + " → " + o.recipe);
      // An unsupported or other-format config stays at the run's recipe; its matcher still claims the modules
      // (the first match wins), so it stays in the list.
      st.precision_overrides.push_back(std::move(o));
    }
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  std::string note = flag + " " + path + ": " + std::to_string(st.precision_overrides.size()) +
                     (st.precision_overrides.size() == 1 ? " enabled matcher" : " enabled matchers") +
                     "; linears matching " + (sixteen.empty() ? "none" : join(sixteen)) +
                     " run in 16 bits (module paths inside their model chunk, the first match deciding)";
  if (!other.empty())
    note +=
        "; other recipes (" + join(other) + ") are priced at the run's own (one low-precision format a run)";
  if (!unsupported.empty())
    note += "; matchers of configs that are not Transformer Engine training recipes (" + join(unsupported) +
            ") are priced at the run's recipe";
  cfg.warnings.push_back(note);
}

void read_kernels(const Flags& f, MegatronConfig& cfg) {
  Strategy& st = cfg.strategy;
  if (f.has("--transformer-impl")) {
    const auto& impl = f.get("--transformer-impl");
    if (impl == "torch_cpu")
      st.transformer_impl = TransformerImpl::TorchCpu;
    else if (impl == "transformer_engine" || impl == "local" || impl == "inference_optimized")
      st.transformer_impl = TransformerImpl::MegatronCore;
    else
      throw InputError("--transformer-impl",
                       "unknown implementation '" + impl + "' (transformer_engine, local, torch_cpu)");
    st.transformer_engine = impl == "transformer_engine" || impl == "inference_optimized";
  }
  bool torch_cpu = st.transformer_impl == TransformerImpl::TorchCpu;
  if (torch_cpu) {
    // examples/torch_cpu_gpt runs math attention only; --attention-backend unfused/local/auto say so too.
    st.attention_backend = AttentionBackend::Math;
    if (f.has("--attention-backend")) {
      const auto& b = f.get("--attention-backend");
      if (b != "unfused" && b != "local" && b != "auto")
        throw InputError("--attention-backend", "--transformer-impl torch_cpu runs math attention; '" + b +
                                                    "' is not available (unfused, local, auto)");
    }
  } else if (f.has("--attention-backend")) {
    const auto& b = f.get("--attention-backend");
    if (b == "flash" || b == "fused" || b == "auto")
      st.attention_backend = AttentionBackend::Flash;
    else if (b == "unfused" || b == "local")
      st.attention_backend = AttentionBackend::Math;
    else
      throw InputError("--attention-backend",
                       "unknown backend '" + b + "' (flash, fused, unfused, local, auto)");
  } else if (f.has("--use-flash-attn") || f.has("--use-flash-attn-v1") || f.has("--use-flash-attn-v2") ||
             f.has("--use-flash-attn-triton") ||
             f.has("--use-flash-attn-builder")) {  // Megatron-DeepSpeed's too
    st.attention_backend = AttentionBackend::Flash;
  } else if (legacy_model(f, st) || (f.has("--transformer-impl") && f.get("--transformer-impl") == "local")) {
    // The legacy model and the local spec run Megatron's own math attention unless --use-flash-attn
    // (megatron/legacy/model/transformer.py CoreAttention; megatron/core/transformer/dot_product_attention.py).
    st.attention_backend = AttentionBackend::Math;
  } else {
    cfg.warnings.push_back(
        "attention backend not given (--attention-backend / --use-flash-attn): assuming flash "
        "attention, Megatron's default since 2024; pass --attention-backend unfused for math "
        "attention");
  }
  st.cross_entropy_loss_fusion = f.has("--cross-entropy-loss-fusion");
  st.gradient_accumulation_fusion = !f.has("--no-gradient-accumulation-fusion");
  st.fp16_lm_cross_entropy = f.has("--fp16-lm-cross-entropy");
  st.legacy_model = legacy_model(f, st);
  if (st.legacy_model) st.transformer_engine = false;
  if (st.legacy_model && !f.has("--use-legacy-models"))
    cfg.warnings.push_back(
        (f.has("--deepspeed")
             ? std::string("Megatron-DeepSpeed (--deepspeed) builds its models from megatron/model")
         : st.megatron_version.empty()
             ? std::string(f.has("--DDP-impl") ? "--DDP-impl" : "--activations-checkpoint-method") +
                   " is a flag of Megatron-LM before 2023, which had only the legacy model"
             : "--megatron-version " + st.megatron_version +
                   " predates Megatron-core as the default model (2024-05)") +
        ": the legacy model (megatron/model, math attention unless --use-flash-attn) is assumed; pass "
        "--use-mcore-models if the run used megatron.core");
  // Context parallelism only where the model code and attention kernel have it
  // (Strategy::context_parallel_problem).
  if (const std::string cp_problem = st.context_parallel_problem(st.cp); !cp_problem.empty())
    throw InputError("--context-parallel-size", std::to_string(st.cp) + ": " + cp_problem);
  if (f.has("--te-version")) st.te.version = f.get("--te-version");
  // overlap_p2p_comm: opt-in (--overlap-p2p-communication) from 2023, Megatron's default from 2024-06
  // (--no-overlap-p2p-communication); it only acts on the interleaved schedule.
  const bool old_p2p = !st.megatron_version.empty() && st.megatron_version < "2024-06-01";
  st.pp_comm_overlap = old_p2p ? f.has("--overlap-p2p-communication") : !f.has("--no-overlap-p2p-communication");
  if (f.has("--overlap-p2p-communication") && f.has("--no-overlap-p2p-communication"))
    throw InputError("--overlap-p2p-communication", "contradicts --no-overlap-p2p-communication");
  st.overlap_grad_reduce = f.has("--overlap-grad-reduce");
  st.tp_comm_overlap = f.has("--tp-comm-overlap");
  if (f.has("--DDP-impl")) {
    // Megatron before 2023: `torch` wraps the model in PyTorch's DistributedDataParallel, whose bucketed
    // all-reduce runs during the backward pass (as --overlap-grad-reduce later); `local` all-reduces the
    // contiguous gradient buffer after the last backward.
    const auto& impl = f.get("--DDP-impl");
    if (impl == "torch")
      st.overlap_grad_reduce = true;
    else if (impl != "local")
      throw InputError("--DDP-impl", "unknown implementation '" + impl + "' (local or torch)");
  }
  st.overlap_param_gather = f.has("--overlap-param-gather");
  st.simumax_compat = f.has("--simumax-compat");
  // Token dispatcher: Megatron's default is allgather (transformer_config.py); flex = DeepEP / HybridEP
  // (`--moe-enable-deepep` is the older spelling).  SimuMax prices all-to-all only.
  st.moe_dispatcher = MoeDispatcher::AllGather;
  if (f.has("--moe-token-dispatcher-type")) {
    const std::string t = f.get("--moe-token-dispatcher-type");
    if (t == "alltoall" || t == "alltoall_seq")
      st.moe_dispatcher = MoeDispatcher::AllToAll;
    else if (t == "flex")
      st.moe_dispatcher = MoeDispatcher::Flex;
    else if (t != "allgather")
      throw InputError("--moe-token-dispatcher-type", "unknown type '" + t + "' (allgather, alltoall, flex)");
  }
  if (f.has("--moe-enable-deepep")) {
    if (f.has("--moe-token-dispatcher-type") && st.moe_dispatcher != MoeDispatcher::Flex)
      throw InputError("--moe-enable-deepep", "needs --moe-token-dispatcher-type flex (Megatron asserts it)");
    st.moe_dispatcher = MoeDispatcher::Flex;
  }
  if (f.has("--moe-flex-dispatcher-backend")) {
    const std::string b = f.get("--moe-flex-dispatcher-backend");
    if (b != "deepep" && b != "hybridep" && b != "ncclep")
      throw InputError("--moe-flex-dispatcher-backend",
                       "unknown backend '" + b + "' (deepep, hybridep, ncclep)");
    st.moe_flex_backend = b;
  }
  if (st.simumax_compat) st.moe_dispatcher = MoeDispatcher::AllToAll;
  // Experts: Megatron's default is SequentialMLP (a GEMM per local expert); --moe-grouped-gemm selects
  // TEGroupedMLP (--moe-use-legacy-grouped-gemm the older GroupedMLP).  SimuMax prices grouped GEMMs only.
  st.moe_grouped_gemm =
      f.has("--moe-grouped-gemm") || f.has("--moe-use-legacy-grouped-gemm") || st.simumax_compat;
  st.overlap_moe_expert_parallel_comm = f.has("--overlap-moe-expert-parallel-comm");
  // The SMs of the flex dispatcher's library: each flag is read by its own backend only (an all-to-all over
  // NCCL ignores them, as recipes setting HybridEP's count beside alltoall find); the unified flag wins
  // (Megatron routes the older ones to it).
  const std::string flex_backend = st.moe_flex_backend.empty() ? "deepep" : st.moe_flex_backend;
  for (const auto& [flag, backend] :
       {std::pair{"--moe-deepep-num-sms", "deepep"}, std::pair{"--moe-hybridep-num-sms", "hybridep"},
        std::pair{"--moe-flex-dispatcher-num-sms", ""}})
    if (f.has(flag)) {
      const auto sms = parse_int(flag, f.get(flag));
      if (sms <= 0) throw InputError(flag, "must be positive");
      if (st.moe_dispatcher == MoeDispatcher::Flex && (!*backend || flex_backend == backend))
        st.moe_comm_sms = static_cast<int>(sms);
    }
  read_cuda_graphs(f, st);
  st.pytorch_eager = true;  // Megatron-LM (and NeMo / Bridge, read through these flags): eager PyTorch
  if (f.has(
          "--packed-seq-mean-length")) {  // the rest checked with the sequence (check_packed_seq_mean_length)
    st.packed_seq_mean_length = f.float_or("--packed-seq-mean-length", 0.0);
    if (st.packed_seq_mean_length == 0)  // given, 0 is not "unpacked"
      throw InputError("--packed-seq-mean-length", "must be a number of tokens ≥ 1, got 0");
  }
  if (f.has("--moe-load-imbalance")) {
    const double x = f.float_or("--moe-load-imbalance", 1.0);  // range: check_moe_load_imbalance
    if (f.has("--moe-router-force-load-balancing") && x != 1.0)
      throw InputError("--moe-load-imbalance",
                       "contradicts --moe-router-force-load-balancing, which routes every expert the same "
                       "number of tokens");
    st.moe_load_imbalance = x;
  }
  st.moe_shared_expert_overlap = f.has("--moe-shared-expert-overlap");
  if (st.moe_shared_expert_overlap) {
    // transformer_config.py: "moe_shared_expert_overlap only works with alltoall or flex token dispatcher"
    // and "disable moe_shared_expert_overlap when enabling overlap_moe_expert_parallel_comm".
    if (st.moe_dispatcher == MoeDispatcher::AllGather)
      throw InputError("--moe-shared-expert-overlap",
                       "needs --moe-token-dispatcher-type alltoall or flex (Megatron asserts it)");
    if (st.overlap_moe_expert_parallel_comm)
      throw InputError("--moe-shared-expert-overlap",
                       "cannot be combined with --overlap-moe-expert-parallel-comm (Megatron asserts it)");
  }
  if (f.has("--delay-wgrad-compute") && !st.overlap_moe_expert_parallel_comm)
    throw InputError("--delay-wgrad-compute",
                     "needs --overlap-moe-expert-parallel-comm (Megatron asserts it)");
  if (st.overlap_moe_expert_parallel_comm) {
    // Megatron's own checks (transformer_config.py); the sizes are checked once they are known.
    if (st.moe_dispatcher == MoeDispatcher::AllGather)
      throw InputError("--overlap-moe-expert-parallel-comm",
                       "needs --moe-token-dispatcher-type alltoall or flex (Megatron asserts it)");
    if (f.has("--recompute-granularity") && f.get("--recompute-granularity") == "full")
      throw InputError("--overlap-moe-expert-parallel-comm",
                       "cannot run with full recompute (Megatron asserts it)");
  }
  if (f.has("--cp-comm-type")) {
    // One type for every layer, or one per layer (training/arguments.py nargs '+'): a list whose types differ
    // is priced with the first one for every layer, said.
    const std::vector<std::string> types = f.list("--cp-comm-type");
    if (types.empty()) throw InputError("--cp-comm-type", "expects a value");
    const std::string t = types.front();
    if (std::any_of(types.begin(), types.end(), [&](const std::string& x) { return x != t; }))
      cfg.warnings.push_back("--cp-comm-type gives a type per layer (" + f.get("--cp-comm-type") +
                             "): every layer is priced with the first, " + t);
    if (t == "p2p" || t == "a2a+p2p")
      st.cp_comm_type = CpCommType::P2P;
    else if (t == "a2a")
      st.cp_comm_type = CpCommType::AllToAll;
    else if (t == "allgather" || t == "all_gather")
      st.cp_comm_type = CpCommType::AllGather;
    else
      throw InputError("--cp-comm-type", "unknown type '" + t + "' (p2p, a2a, allgather, a2a+p2p)");
  }
  // Hierarchical context parallelism (training/arguments.py: the sizes multiply to cp, and a2a+p2p needs
  // them; TransformerEngine runs the all-to-all over the first level, the ring over the second).
  const std::vector<std::string> cp_types = f.list("--cp-comm-type");
  const bool hierarchical = !cp_types.empty() && cp_types.front() == "a2a+p2p";  // the first layer's type
  if (f.has("--hierarchical-context-parallel-sizes")) {
    const std::vector<std::string> sizes = f.list("--hierarchical-context-parallel-sizes");
    std::int64_t product = 1;
    for (const auto& v : sizes) {
      const std::int64_t n = parse_int("--hierarchical-context-parallel-sizes", v);
      if (n < 1 || n > 1048576)
        throw InputError("--hierarchical-context-parallel-sizes", "sizes must be 1 … 1048576, got " + v);
      product = std::min<std::int64_t>(product * n, std::int64_t{1} << 40);  // no overflow: compared with cp
    }
    if (product != st.cp)
      throw InputError("--hierarchical-context-parallel-sizes",
                       "the sizes multiply to " + std::to_string(product) +
                           " but --context-parallel-size is " + std::to_string(st.cp) +
                           " (Megatron asserts they are equal)");
    if (hierarchical) {
      if (sizes.size() != 2)
        throw InputError("--hierarchical-context-parallel-sizes",
                         "a2a+p2p takes two levels (the all-to-all size, then the ring size), got " +
                             std::to_string(sizes.size()));
      st.cp_a2a_size = static_cast<int>(parse_int("--hierarchical-context-parallel-sizes", sizes.front()));
    }
  } else if (hierarchical && st.cp > 1) {
    throw InputError("--cp-comm-type",
                     "a2a+p2p needs --hierarchical-context-parallel-sizes (Megatron asserts it)");
  }
  if (f.has("--runtime-overhead-mib")) {
    const std::string v = f.get("--runtime-overhead-mib");
    try {
      std::size_t pos = 0;
      st.runtime_overhead_mib = std::stod(v, &pos);
      if (pos != v.size() || st.runtime_overhead_mib < 0) throw std::invalid_argument(v);
    } catch (const std::exception&) {
      throw InputError("--runtime-overhead-mib", "expected a non-negative number of MiB, got '" + v + "'");
    }
  }
}

}  // namespace preflight::analyzer::megatron
