#pragma once
/// @file search.hpp
/// Parallel-strategy search on the cost model with SimuMax v1.2's semantics
/// (`PerfLLM.search_best_parallel_strategy`, notes/simumax.md §7): candidates tp × ep × pp, the last
/// stage taking the remainder of ceil(L/pp) layers per stage; per candidate the recompute types
/// `none` (one evaluation), `full_block` (binary search of the recomputed layers per stage in
/// [0, ceil(L/pp)]) and `selective` (three fixed switch sets on every layer); feasible when the
/// highest stage peak (with the reserved ratio, by default) is at most device memory − margin; best =
/// highest MFU (first found on ties, except full_block which keeps the later of equal MFUs, as SimuMax).
///
/// Beyond SimuMax: context-parallel sizes and interleaved (virtual) pipeline stages per rank can be searched
/// too (SearchSpace::cp, ::vpp; by default only the base strategy's, as SimuMax); candidates are evaluated on
/// several threads (results are reduced in SimuMax's order, so the best and the feasible list do not depend
/// on the thread count), a progress callback, and every evaluation is returned (infeasible ones too) for a
/// top-K table or a CSV.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "preflight/analyzer/cost/estimate.hpp"

namespace preflight::analyzer::cost {

/// Recompute variants the search tries for each layout.  Launch is the base strategy's own recompute (a
/// launch's `--recompute-granularity / --recompute-method / --recompute-num-layers / --recompute-modules` as
/// given, which `preflight estimate` prices for the launch), one evaluation per layout; the others replace
/// it.
enum class RecomputeSearch { None, FullBlock, Selective, Launch };

/// The space and the rules of a search.
struct SearchSpace {
  int world_size = 8;
  int global_batch_size = 0;  ///< samples per iteration; micro batches = gbs / (dp · mbs)
  int micro_batch_size = 1;
  /// Micro batch sizes to search (empty: micro_batch_size alone; SimuMax searches none): each divides the
  /// global batch with dp into whole micro batches.
  std::vector<int> micro_batch_sizes;
  /// empty: {1,2,4,8} for dense models, {1} for MoE (SimuMax's defaults); sizes given are searched for MoE
  /// models too, except under simumax_compat (SimuMax searches MoE at tp 1 only).
  std::vector<int> tp;
  std::vector<int> pp;   ///< empty: 1 … num_layers
  std::vector<int> ep;   ///< empty: {1,2,4,8} for MoE models, {1} for dense
  /// Context-parallel sizes (empty: the base strategy's; SimuMax searches none).  cp divides the world with
  /// tp and pp (dp = world / (tp·cp·pp)) and the sequence; the heads split over it unless cp_comm_type is
  /// all-gather.
  std::vector<int> cp;
  /// Virtual pipeline stages per rank (Megatron's interleaved 1F1B; empty: the base strategy's, 1 for
  /// SimuMax).  vpp > 1 needs pp > 1, the layers split evenly over pp·vpp chunks, and the micro batches a
  /// multiple of pp (Megatron's default group of pp micro batches per virtual stage).
  std::vector<int> vpp;
  /// Expert tensor-parallel sizes searched; 0 stands for each layout's tp (Megatron's default without
  /// --expert-tensor-parallel-size).  Empty: {1}, SimuMax's (its `use_etp` is {0}).  A choice that comes to
  /// the same size as another at some tp (1 and 0 at tp 1) is searched once.  ep·etp·pp divides the world.
  std::vector<int> etp;
  /// Layouts with tp > 1 run sequence parallelism even when the base does not: a launch at tp 1 has no
  /// --sequence-parallel to carry (Megatron ignores it there), and Megatron's and NeMo's recipes run tensor
  /// parallelism with it.  A base at tp > 1 without it keeps its choice (false here).
  bool sequence_parallel_with_tp = false;
  std::vector<RecomputeSearch> recompute = {RecomputeSearch::None, RecomputeSearch::FullBlock,
                                            RecomputeSearch::Selective};
  double mem_margin_gib = 10;       ///< SimuMax `gmi_error`: device memory kept free for what is not modelled
  bool use_reserved_memory = true;  ///< compare peak / allocated_to_reserved_ratio (else the allocated peak)
  int threads = 0;                  ///< 0 = hardware concurrency
  /// Ops of the layer graph the cost model does not price are an InputError ("--strict") instead of
  /// SearchResult::warnings (see EstimateOptions::strict).
  bool strict = false;
};

/// One evaluation of the search.
struct SearchEvaluation {
  int tp = 1, pp = 1, ep = 1, etp = 1, dp = 1, micro_batches = 0;
  int cp = 1, vpp = 1;  ///< context-parallel size, virtual pipeline stages per rank
  int micro_batch_size = 1;  ///< samples per micro batch
  /// The embedding / the loss counted as a layer slot in the pipeline split (Megatron's
  /// --account-for-embedding/loss-in-pipeline-split): an interleaved layout whose layers alone do not split
  /// evenly over pp·vpp chunks (Llama-3.1-405B's 126 over 8 · 8 + the two).
  bool embedding_in_split = false, loss_in_split = false;
  /// Megatron's `--pipeline-model-parallel-layout` of an interleaved layout whose layers do not split evenly
  /// even with those slots (model/strategy.hpp balanced_pipeline_layout; DeepSeek-V3's 61 layers and MTP
  /// depth over pp · vpp = 16 chunks: "Et*4|(t*4|)*14,tmL"); for a hybrid model, whose interleaved or
  /// uneven splits Megatron takes from the pattern only, its `--hybrid-layer-pattern` with the chunks
  /// between '|'; "" otherwise.
  std::string pipeline_layout;
  std::string pipeline_layout_flag;  ///< the flag `pipeline_layout` is the value of; "" with it
  /// Layers of the last pipeline stage when the layers do not split evenly over pp (SimuMax's uneven split:
  /// the other stages ⌈layers / pp⌉ each; Megatron's --decoder-last-pipeline-num-layers); -1 when even.
  int last_stage_layers = -1;
  RecomputeSearch kind = RecomputeSearch::None;
  LayerRecompute recompute;      ///< what was evaluated (for Launch: the launch's flags at this layout)
  std::string parallelism;       ///< SimuMax's parallelism string
  std::string recompute_status;  ///< SimuMax's recompute_status string
  bool feasible = false;
  double peak_gib = 0;  ///< highest stage peak compared with the limit (GiB)
  /// Highest stage allocated peak (GiB), without the reserve: the peak `preflight estimate`'s verdict reads
  /// (equal to peak_gib when SearchSpace::use_reserved_memory is false).
  double allocated_peak_gib = 0;
  std::vector<std::pair<std::string, double>> stage_peaks_gib;  ///< (stage, peak GiB compared)
  std::string memory_model;  ///< Estimate::memory_model of this evaluation ("megatron" or "simumax")
  double mfu = 0, tflops_per_gpu = 0, tokens_per_second_per_gpu = 0, iteration_ms = 0, straggler_ratio = 1;
  std::string error;  ///< the layout could not be evaluated (InputError text); not feasible
};

struct SearchResult {
  std::vector<SearchEvaluation> evaluations;  ///< in SimuMax's order
  std::vector<std::string> skipped;           ///< layouts refused before evaluation, with the reason
  std::optional<std::size_t> best;            ///< index into evaluations
  double memory_limit_gib = 0;
  /// Layouts (tp, pp, ep, cp, vpp) of which no evaluation fits with the reserve but one fits by its allocated
  /// peak: what `preflight estimate` calls "tight" (PyTorch's caching allocator frees cached blocks and
  /// retries before it fails).  0 when the search compares the allocated peak.
  int allocated_only_layouts = 0;
  double seconds = 0;                 ///< wall time of the search
  std::vector<std::string> warnings;  ///< "not priced: <op path> (<role>): <why>" (unpriced_ops())
  /// Feasible evaluations sorted by MFU, highest first (stable: SimuMax order among equals).
  std::vector<std::size_t> ranking() const;
};

/// Runs the search.  `base` provides everything the search does not vary (sequence length, dtype,
/// kernels, CP, …); its tp/pp/ep/etp/world size, micro batch, global batch and recompute are replaced.
/// @param progress  called after each layout with (layouts done, layouts total); may be empty
/// @throws InputError for an empty space or a model/system the cost model refuses outright.
SearchResult search(const ModelSpec& model, const Strategy& base, const SystemSpec& system,
                    const SearchSpace& space, const std::function<void(int, int)>& progress = {});

const char* to_string(RecomputeSearch r);

}  // namespace preflight::analyzer::cost
