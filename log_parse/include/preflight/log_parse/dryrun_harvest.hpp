#pragma once
/// @file dryrun_harvest.hpp
/// Harvesting the memory blocks of every rank log under a dryrun output directory, mapped to pipeline
/// stages — what `grep -rn 'Used peak' DIR | sort -t_ -k2,2n` is used for today, with the checks it lacks.
///
/// Layouts recognised (any depth under DIR; every regular file named `*.log`, except msrun's
/// `scheduler.log`):
///  - `stage_<s>_rank_<r>/…log` (SAPP readme, `preflight dryrun`), `stage<s>_<r>/…log` (SAPP `dryrun.sh`);
///  - `rank_<r>/…log` (MindFormers `output/log/rank_<r>/info.log`);
///  - `worker_<r>.log` (msrun `--log_dir`); the log's "Global rank id" line wins over the file number;
///  - any other `*.log`: rank from the log's "Global rank id" line, if any.
/// Stage of a log with a rank but no stage: `rank / (world / pp)` (pp outermost, MindSpore and Megatron
/// default order; SAPP's dryrun.sh sets RANK_ID = stage·RANK_SIZE/pp).  pp comes from `--pp`, else from
/// MindFormers' "pipeline_stages = N" line, else from the highest stage in the paths (+1); world from
/// `--world`, else from worker logs 0…N-1 all present.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "preflight/log_parse/dryrun_log.hpp"

namespace preflight::log_parse {

struct HarvestOptions {
  std::optional<int> pp;          ///< pipeline stages (`--pp`)
  std::optional<int> world_size;  ///< ranks in the job (`--world`)
  unsigned jobs = 0;              ///< reader threads; 0 = all hardware threads
};

/// One rank log and where its rank and stage came from.
struct RankLog {
  std::string path;  ///< relative to the harvested directory (or the file as given)
  std::optional<int> rank;
  std::optional<int> stage;
  std::string rank_from;   ///< "path", "log" or "" (unknown)
  std::string stage_from;  ///< "path", "pp/world" or ""
  DryrunLogScan scan;
  bool used = false;  ///< its block is counted in its stage (complete, mapped, not a duplicate)
};

/// One pipeline stage with at least one complete block.  Values are MiB.
struct StageMemory {
  int stage = 0;
  std::vector<std::size_t> logs;  ///< indices into DryrunHarvest::logs counted here, by rank
  std::size_t peak_log = 0;  ///< the log with the highest Actual peak (ties: lowest rank); the row's numbers
  std::int64_t min_actual_peak_mib = 0;  ///< lowest Actual peak among the stage's ranks
  std::int64_t min_used_peak_mib = 0;    ///< lowest Used peak among the stage's ranks
  std::int64_t max_used_peak_mib = 0;    ///< highest Used peak among the stage's ranks
};

/// A reason the harvest is not usable as is.  Each one makes `preflight logs dryrun` exit 1.
struct HarvestProblem {
  enum class Kind {
    MissingStage,          ///< no complete block for a stage in [0, pp)
    NoMemoryBlock,         ///< a rank whose logs have no block at all
    IncompleteBlock,       ///< the last block lacks a value (cut log, value on an unterminated line)
    DisagreeingDuplicate,  ///< two logs claim one rank with different numbers
    Unmapped,              ///< a log with a block whose stage is unknown
    StageMismatch,         ///< path stage differs from rank/(world/pp), or out of range
    BinaryLog,             ///< a `.log` with NUL bytes
    OutOfMemory,           ///< MindSpore ran out of device memory (DryrunOutOfMemory) on a stage
  };
  Kind kind;
  std::string where;  ///< "file:line", "file@offset", "stage N" or "rank N"
  std::string what;   ///< one sentence
};

struct DryrunHarvest {
  std::string root;                 ///< the directory (or file) harvested
  std::optional<int> pp;            ///< pipeline stages used for the checks
  std::string pp_from;              ///< "--pp", "log", "paths"
  std::optional<int> world_size;    ///< ranks in the job, when known
  std::string world_from;           ///< "--world", "worker logs"
  std::vector<RankLog> logs;        ///< every log read, sorted by (stage, rank, path); unmapped last
  std::vector<StageMemory> stages;  ///< stages with a complete block, ascending
  std::vector<int> missing_stages;  ///< stages in [0, pp) without a complete block
  /// Stages (ascending) where a log ends in MindSpore's "Out of Memory!!!": (stage, index into logs).
  std::vector<std::pair<int, std::size_t>> out_of_memory;
  std::vector<HarvestProblem> problems;
  std::vector<std::string> notes;  ///< informational (agreeing duplicates, inferred sizes, partial lines)

  bool ok() const { return problems.empty(); }
  const StageMemory* stage(int s) const;
};

/// Reads every rank log under `root` (a directory, or one log file) in parallel and maps it to its
/// stage.  Throws InputError when `root` does not exist, holds no `*.log`, or the options are
/// inconsistent (pp < 1, world % pp ≠ 0).  Everything about the logs themselves is reported in
/// `problems`/`notes`, never thrown.
DryrunHarvest harvest_dryrun_logs(const std::filesystem::path& root, const HarvestOptions& options = {});

/// Which peak feeds SAPP's memory_usage block.
enum class PeakKind {
  Actual,  ///< "Actual peak memory usage (with fragments)" — what the SAPP readme's example uses
  Used,    ///< "Used peak memory usage (without fragments)"
};

/// SAPP's init-YAML `memory_usage:` block (mindformers toolkit/pipeline_balance readme, sapp.md §3):
/// head_memory = stage 0, tail_memory = stage pp-1, body_memories = the other stages found (stage ids
/// ascending), each the stage's highest peak in MiB.  Comments name the source and any missing stage.
/// Throws InputError("--sapp", …) when pp < 2 or stage 0 or pp-1 has no complete block.
std::string sapp_memory_usage_yaml(const DryrunHarvest& harvest, PeakKind peak = PeakKind::Actual);

/// Machine form: {"root","pp","pp_from","world_size","world_from","stages":[…],"missing_stages":[…],
/// "logs":[…],"problems":[…],"notes":[…],"ok"}; every number carries its "line".
nlohmann::json harvest_json(const DryrunHarvest& harvest);

/// Human table, one row per stage (or per log with `per_log`), then problems and notes.
std::string harvest_text(const DryrunHarvest& harvest, bool per_log = false);

/// CSV, one row per log: stage,rank,file,device_mib,device_line,used_mib,used_line,used_peak_mib,
/// used_peak_line,actual_peak_mib,actual_peak_line,status.
std::string harvest_csv(const DryrunHarvest& harvest);

}  // namespace preflight::log_parse
