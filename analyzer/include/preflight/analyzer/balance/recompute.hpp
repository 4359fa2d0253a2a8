#pragma once
/// @file recompute.hpp
/// Recompute classes of a transformer layer as the SAPP pipeline balancer sees them, and the conversion
/// between MindFormers' per-stage yaml counts and disjoint per-layer classes.
///
/// MindFormers configures recompute per pipeline stage with three overlapping counts:
/// `recompute` (full), `select_recompute` and `select_comm_recompute`.  SAPP (mindformers
/// `toolkit/pipeline_balance/utils/recompute.py`, `internal_from_yaml` / `yaml_from_internal`) turns them
/// into five disjoint classes, which is also the order of its LP variables:
///
///     FULL   = full
///     BOTH   = max(min(select - full, comm - full), 0)     select and comm recompute together
///     SELECT = max(select - full - BOTH, 0)                select only
///     COMM   = max(comm - full - BOTH, 0)                  comm only
///     NONE   = layers - FULL - BOTH - SELECT - COMM
///
/// and back: `select = SELECT + BOTH + FULL`, `comm = COMM + BOTH + FULL`, `full = FULL`.

#include <array>
#include <string>

namespace preflight::analyzer::balance {

/// Disjoint recompute class of one layer (SAPP's `RecomputeType`, same numbering).
enum class Recompute : int { None = 0, Select = 1, Comm = 2, Both = 3, Full = 4 };

inline constexpr int kRecomputeKinds = 5;
inline constexpr std::array<Recompute, kRecomputeKinds> kAllRecompute = {
    Recompute::None, Recompute::Select, Recompute::Comm, Recompute::Both, Recompute::Full};

/// A value per recompute class, indexed by `static_cast<int>(Recompute)`.
template <class T>
using PerRecompute = std::array<T, kRecomputeKinds>;

/// Short name: "none", "select", "comm", "both", "full".
const char* recompute_name(Recompute r);

/// Key of the per-micro-batch activation memory of this class in SAPP's layer json:
/// memory_activation, memory_select_rec, memory_select_comm, memory_both_comm_select, memory_recompute.
const char* activation_json_key(Recompute r);
/// Key of an explicit backward time in SAPP's layer json: backward_time, select_rec_time,
/// select_comm_time, both_comm_select_time, "recompute_time " (sic: SAPP's key has a trailing space;
/// we also accept it without).
const char* backward_time_json_key(Recompute r);
/// Key of a backward-time coefficient in SAPP's layer json: backward_coef, select_rec_coef,
/// select_comm_coef, both_comm_select_coef, recompute_coef.
const char* backward_coef_json_key(Recompute r);

/// SAPP's default backward coefficients (`recompute.py` DEFAULT_COEF): backward time of a layer of
/// class r is (1 + coef_r) · 2 · forward time; none 0, select 0.04, comm 0.125, both 0.165, full 0.5.
double default_backward_coef(Recompute r);

/// Per-stage counts as MindFormers' yaml states them.
struct YamlRecomputeCounts {
  int layers = 0;  ///< layers on the stage (or chunk)
  int full = 0;    ///< `recompute`
  int select = 0;  ///< `select_recompute`
  int comm = 0;    ///< `select_comm_recompute`
};

/// yaml counts → disjoint classes (formula in the file comment).  The NONE count can come out negative
/// when the yaml asks for more recomputed layers than the stage holds; callers validate.
PerRecompute<int> classes_from_yaml(const YamlRecomputeCounts& yaml);

/// Disjoint classes → yaml counts (formula in the file comment).
YamlRecomputeCounts yaml_from_classes(const PerRecompute<int>& classes);

}  // namespace preflight::analyzer::balance
