#pragma once
/// @file system_spec.hpp
/// SystemSpec: the accelerator and the networks between accelerators.
///
/// The schema follows SimuMax v1.2 `SystemConfig` (`simumax/core/config.py`; see notes/simumax.md §4.1):
/// per-op peak TFLOPS with default and per-shape efficiencies, memory bandwidths with efficiency and
/// latency, and named networks with per-collective traffic factors.  Units are stated per field:
/// TFLOPS = 10^12 FLOP/s, "gbps" = GiB/s (SimuMax multiplies by 1024^3), latencies in microseconds,
/// device memory in GiB.

#include <map>
#include <optional>
#include <string>

namespace preflight::analyzer {

/// Compute throughput of one op kind (`accelerator.op.<name>`).
struct ComputeOp {
  double tflops = 0;                                        ///< peak, 10^12 FLOP/s
  double efficient_factor = 1.0;                            ///< default efficiency, 0..1
  std::map<std::string, double> accurate_efficient_factor;  ///< shape key → measured efficiency
  /// A grouped GEMM op's factor on the efficiency it takes for widths the file did not measure (the measured
  /// width families' mean at the same rows per expert, compute_time_ms); `unmeasured_shape_scale` in the op's
  /// JSON, preflight's own field (SimuMax's files have none: 1).
  double unmeasured_shape_scale = 1.0;
};

/// A bandwidth model (`accelerator.bandwidth.<name>` or `networks.<net>.bandwidth`).
struct Bandwidth {
  double gbps = 0;                                     ///< GiB/s
  double efficient_factor = 1.0;                       ///< 0..1
  double latency_us = 0;                               ///< per operation, microseconds
  double fixed_latency_us = 0;                         ///< SimuMax `fixed_latency`
  std::map<int, double> fixed_latency_us_by_comm_num;  ///< group size → µs
};

/// Per-collective parameters of a network (`networks.<net>.op.<collective>`).
struct NetOp {
  double scale = 1.0;  ///< traffic = size·scale·(1 + offset/n)
  double offset = 0.0;
  std::optional<double> efficient_factor;
  std::optional<double> latency_us;
  std::optional<double> fixed_latency_us;
  std::map<int, double> fixed_latency_us_by_comm_num;
  std::map<int, double> dp_fixed_bw;  ///< PCIe only: measured DP bus bandwidth by group size, GiB/s
};

/// One network (`networks.<name>`): high_intra_node, low_intra_node, inter_node, intra_node_pcie_{2,4,8}x.
struct Network {
  Bandwidth bandwidth;
  std::map<std::string, NetOp> op;  ///< all_reduce, all_gather, reduce_scatter, all2all, p2p
};

/// The hardware a run is estimated for.
struct SystemSpec {
  std::string name;                     ///< `sys_name`
  std::string source;                   ///< file or preset it was read from (names it in error messages)
  std::string preset;                   ///< the embedded preset's name when read from one ("" for a file)
  int num_per_node = 8;                 ///< accelerators per node
  bool fc8 = false;                     ///< fully-connected 8 intra node (SimuMax `FC8`)
  /// Devices of that full mesh (the file's num_per_node: 8 for SimuMax's FC8, 4 for a GH200 quad); a
  /// collective among k of them drives k − 1 of each device's mesh_devices − 1 links.
  int mesh_devices = 8;
  std::string backend = "cuda";         ///< `accelerator.backend`
  double mem_gib = 80;                  ///< device memory, GiB (`accelerator.mem_gbs`)
  std::string mode = "roofline";        ///< `roofline` or `only_compute`
  std::map<std::string, ComputeOp> op;  ///< default, matmul, fp8_matmul, sdp_fwd, sdp_bwd, group_matmul, ...
  std::map<std::string, Bandwidth> memory_bw;  ///< default, permute_fwd, permute_bwd, ce, ce_fusion
  bool intra_with_pcie = false;
  std::map<std::string, Network> networks;
  /// Fraction of the tensor-parallel communication Megatron overlaps in a column-parallel linear's
  /// backward (the all-gather under dgrad, the reduce-scatter / all-reduce under wgrad) that still costs
  /// time, in [0, 1] (top-level `tp_overlap_exposed`, a preflight extension of SimuMax's format).
  /// 1 = fully exposed, as SimuMax prices it and as both time corpora measured it (docs/time_fidelity.md:
  /// with 1 the fitted network scales are 1.08 on A100 and B200); 0 = hidden whenever the GEMM is longer.
  /// `calibrate --fit-time --fit-overlap` fits it.
  double tp_overlap_exposed = 1.0;
  /// SimuMax's straggler factor on the pipeline time, 1 + l/(l+1)·c·√l with l = log2(min(nodes, dp, edp))
  /// (`perf_llm.py`): c here (top-level `straggler_coefficient`, a preflight extension; SimuMax's 0.09 when
  /// absent, and always under --simumax-compat).  The presets fitted on 2021 Selene runs keep 0.09; those
  /// fitted on 2024–25 H100/B200 runs have 0: with the factor their multi-node runs were 5–17 % slow
  /// (analyzer/data/systems/README.md).
  double straggler_coefficient = 0.09;
  /// Streaming multiprocessors (compute units) per device (top-level `sm_count`, a preflight extension;
  /// the presets give the spec sheet's: A100 108, H100/H800/H200 132, B200/GB200 148, MI300X 304).  0 =
  /// unknown.  Communication kernels overlapped with compute take some of them (estimate.hpp,
  /// `--overlap-moe-expert-parallel-comm`).
  int sm_count = 0;
  /// Time of an MXFP8 GEMM (`--fp8-recipe mxfp8`: a scale per 32 elements) over the same GEMM with FP8
  /// per-tensor scaling, ≥ 1 (top-level `mxfp8_gemm_scale`, a preflight extension; 1 when absent).  The
  /// Blackwell presets carry one fitted on NeMo's published pairs of FP8-CS / MXFP8 rows of one layout
  /// (analyzer/data/systems/README.md).
  double mxfp8_gemm_scale = 1.0;
  /// Time of an MXFP8 grouped (expert) GEMM whose local weight has a dimension that is not a multiple of
  /// 128, over an aligned one's, ≥ 1 (top-level `mxfp8_grouped_unaligned_scale`, a preflight extension; 1
  /// when absent): Transformer Engine's grouped MXFP8 kernels need 128-aligned dimensions and such experts
  /// take its generic per-tensor path.  Fitted on published runs (analyzer/data/systems/README.md).
  double mxfp8_grouped_unaligned_scale = 1.0;
  /// Time of an NVFP4 GEMM (`--fp4-format e2m1`: 4-bit elements, an e4m3 scale per 16) over the same GEMM
  /// with FP8 per-tensor scaling, in (0, 1] (top-level `nvfp4_gemm_scale`, a preflight extension).  0 when
  /// absent: the device has no FP4 tensor cores and `--fp4-format` is refused.  The Blackwell presets carry
  /// the spec sheet's FP8 / FP4 dense peak ratio times a factor fitted on NeMo's published NVFP4 rows
  /// (analyzer/data/systems/README.md).  The quantizers' memory traffic (amax passes, the Hadamard-rotated
  /// copies) is priced apart, by the quantizer leaves; the scale covers the GEMMs and what the fit absorbed.
  double nvfp4_gemm_scale = 0.0;
  /// Host time a MoE layer's routed experts cost per local expert and pass, µs (top-level
  /// `moe_host_us_per_expert`, a preflight extension; 0 when absent).  A dropless MoE layer copies its
  /// tokens-per-expert counts to the host before the experts run (Transformer Engine's GroupedLinear takes
  /// them as a host list), so the GPU waits while the host launches the experts' kernels — one GEMM and its
  /// quantization per local expert (multi-stream cuBLAS): NVIDIA's DeepSeek-V3 on GB200 NVL72 write-up
  /// (Megatron-LM docs/discussions/deepseek-v3-gb200-optimization: "only the routed experts part still has
  /// some CPU overhead", ≥ 10 % left after CUDA graphs of the static parts).  Priced as its own op of every
  /// MoE layer (`mlp.experts_host`), forward and backward, for quantized (FP8 / MXFP8 / NVFP4) grouped GEMMs
  /// and SequentialMLP experts; not for 16-bit grouped GEMMs (TE then loops over the experts' cuBLAS launches
  /// in C++, ahead of the GPU), nor under `--simumax-compat` or a CUDA graph that captures the experts.
  double moe_host_us_per_expert = 0.0;

  /// Device memory in bytes.
  double mem_bytes() const;

  /// `--gpus-per-node n`: the devices one node (NVLink domain) holds.  SimuMax's `inter_node` bandwidth is
  /// the node's aggregate (one NIC per device: 8 × 50 GB/s on DGX H100, 72 × 100 GB/s on GB200 NVL72), so it
  /// is scaled by n / num_per_node — each device keeps its NIC's share; collectives across nodes divide it
  /// back by the devices that share it (primitives.hpp).
  /// @throws InputError("--gpus-per-node", …) when n < 1.
  void set_gpus_per_node(int n);

  /// `--nic-gbps g`: each device's share of the inter-node network, GB/s a direction (DGX H100: 50, one 400
  /// Gb/s NIC a GPU; a node of eight A100s with four 100 Gb/s links: 6.25).  Stored as the node's aggregate,
  /// g × num_per_node, as SimuMax stores it — apply after set_gpus_per_node.
  /// @throws InputError("--nic-gbps", …) when g is not a positive number, or the system has no inter_node
  /// network.
  void set_nic_gbps(double g);
};

}  // namespace preflight::analyzer
