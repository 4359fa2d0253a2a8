// preflight balance: SAPP's pipeline balancer (flags as SAPP's run_pipeline_balance.py, plus ours).
// Wiring only: options → analyzer::balance (init yaml, decomposition, balancer, guide, SVG, report).
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "preflight/analyzer/balance/balancer.hpp"
#include "preflight/analyzer/balance/decompose.hpp"
#include "preflight/analyzer/balance/from_cost_model.hpp"
#include "preflight/analyzer/balance/guide.hpp"
#include "preflight/analyzer/balance/init_config.hpp"
#include "preflight/analyzer/balance/manual_config.hpp"
#include "preflight/analyzer/balance/report.hpp"
#include "preflight/analyzer/balance/seq_pipe.hpp"
#include "preflight/analyzer/balance/svg.hpp"
#include "preflight/analyzer/cost/simumax_config.hpp"
#include "preflight/analyzer/frontends/hf_config.hpp"
#include "preflight/analyzer/frontends/mindformers_yaml.hpp"
#include "preflight/common/error.hpp"
#include "preflight/log_parse/sapp_timeline.hpp"

namespace preflight::cli {

namespace {

namespace fs = std::filesystem;
using namespace preflight::analyzer::balance;

const char* kBalanceHelp =
    "usage: preflight balance [options]\n"
    "\n"
    "Layer offsets and recompute per pipeline stage that minimise the iteration time under a memory\n"
    "limit (MindFormers SAPP pipeline balancer; SAPP's flags are accepted as they are).\n"
    "\n"
    "inputs (one of):\n"
    "  -init, --init FILE            SAPP init yaml: dryrun layout(s) and peak memories, decomposed here\n"
    "  --memory FILE                 a `memory_usage:` block (`preflight logs dryrun DIR --sapp`); give it "
    "once\n"
    "                                per dryrun round, it replaces the init yaml's memory_usage\n"
    "  --layer-json FILE             SAPP layer json (or SAPP's -lf DIR with -m NAME: DIR/NAME.json)\n"
    "  --times H,B,T                 forward ms per micro batch of the head, a body layer and the tail\n"
    "  --timeline PATH               profiler traces (file or folder, repeatable) read as SAPP does\n"
    "                                (`preflight timeline --sapp`); layer names from profiling_config\n"
    "  --time-config FILE            a yaml with time_config (what `preflight timeline --sapp` prints)\n"
    "                                (default: the init yaml's time_config, else its profiling_config)\n"
    "  -m, --model_name NAME         model name (names the layer json and the SVG; default model_name)\n"
    "  --config X.yaml               a MindFormers training yaml: model, layout, micro batches and device\n"
    "                                memory (context.max_device_memory) from the yaml, times and memories\n"
    "                                from the cost model (--system); the yaml's own offset/recompute is\n"
    "                                simulated next to the answer (--model: a new-style yaml's architecture)\n"
    "  --model M --strategy S [--system Y]\n"
    "                                no dryrun: times and memories from the cost model (`preflight "
    "estimate`'s\n"
    "                                model / SimuMax strategy / system, default a100_pcie); -s -i -mb come\n"
    "                                from the strategy, -mem defaults to the device memory x mem_factor\n"
    "pipeline:\n"
    "  -s, --stage N                 pipeline stages (default 4)\n"
    "  -mb, --micro_batch N          micro batches per iteration (default 4; at least the stages)\n"
    "  -i, --interleave_degree N     virtual chunks per stage (default 1)\n"
    "  -lm, --less_memory [BOOL]     less-memory interleaved schedule (MindSpore)\n"
    "  -mem, --max_memory, --mem MB  memory limit per device (default 56000)\n"
    "  -seq, --seq K                 sequence pipelining: K sequence chunks per micro batch (Seq1F1B)\n"
    "  -train, --training_config F   MindFormers training yaml (sizes for the -seq memory model)\n"
    "solver:\n"
    "  -t, --time_limit SEC          wall-clock budget of the whole run (default 90)\n"
    "  --formulation exact|sapp      exact: the simulator as MILP + simulator-driven search (default);\n"
    "                                sapp: SAPP's surrogate MILP through CBC\n"
    "  -O, --optimization_level N    SAPP's -O 0/1/2 (sapp formulation)\n"
    "  --milp-time SEC               CBC time on the formulation (default: automatic)\n"
    "  --seed N                      search seed (default 1)\n"
    "  --restarts N --iterations N   local-search runs (default 6) and annealing moves per run (150000)\n"
    "  --kicks N                     iterated local search: perturb-and-anneal rounds per run (default 0)\n"
    "  --memory-penalty X            annealing may cross the memory limit at X ms per MB (default 0)\n"
    "  --relocate-share X            share of relocate-and-repair moves in the annealing (default 0.2)\n"
    "  --threads N                   threads for the local-search runs (default: all cores)\n"
    "  --dump-lp FILE                write the MILP in LP format\n"
    "  --cbc-log                     CBC's log on stderr\n"
    "  --loose                       SAPP's model as SAPP builds it: no tightening (bounds, symmetry) and\n"
    "                                chunks may mix select-only and comm-only layers (read back as both)\n"
    "SAPP behaviour (fixed by default, reproduced on request):\n"
    "  --sapp-memory                 count the constant memory twice on the first and last stage, as SAPP\n"
    "  --sapp-head-tail-round        a scalar head/tail memory belongs to the last dryrun round (SAPP's "
    "code)\n"
    "  --allow-negative              accept negative fitted memories (SAPP drops those recompute classes)\n"
    "output:\n"
    "  -o, --output_folder DIR       SVG folder (default ./output)\n"
    "  --no-svg                      do not write SVGs\n"
    "  -naive, --simulate_naive [B]  also show the naive strategies (and their SVGs)\n"
    "  -manual, --manual_config FILE simulate the manual strategies in FILE next to the answer\n"
    "  --write-layers FILE           write the layer json (SAPP format)\n"
    "  --write-yaml OUT              with --config: a copy of the yaml with the answer's offset and\n"
    "                                recompute lists (every other byte kept)\n"
    "  -exec, --exec BOOL            false: stop after the decomposition / layer json\n"
    "  --json                        JSON instead of text\n"
    "  -v, --verbose                 list the solver steps\n"
    "dryrun guide:\n"
    "  -guide, --guide               plan the dryrun rounds (interactive without the next two)\n"
    "  --stages N --layers L         pipeline stages and layers of the model\n"
    "  --recompute LIST              classes to consider besides none: full,select,comm,both\n"
    "                                (SAPP's questions: full, select, select+comm together, extra comm)\n"
    "  --seed N                      seed of the random plan\n"
    "\n"
    "exit status: 0 a placement fits, 1 none fits the memory limit, 2 bad input.\n";

struct Options {
  std::optional<fs::path> train, config, write_yaml;
  int seq = 1;
  std::optional<fs::path> init, layers, layer_folder, manual, output = fs::path("output"), write_layers,
                                                              dump_lp;
  std::vector<fs::path> memory;
  std::optional<std::string> times;
  std::vector<fs::path> timeline;
  std::optional<fs::path> time_config;
  std::string model_name = "model_name";
  bool model_name_given = false;
  int stages = 4, micro_batches = 4, chunks = 1;
  bool less_memory = false;
  double memory_mb = 56000;
  double time_limit = 90;
  int level = 1;
  std::string formulation = "exact";
  double milp_time = -1;
  int restarts = 6, kicks = 0;
  long iterations = 150000;
  double memory_penalty = 0, relocate_share = 0.2;
  int threads = 0;
  std::uint64_t seed = 1;
  bool cbc_log = false, loose = false, sapp_memory = false, sapp_head_tail = false, allow_negative = false;
  bool no_svg = false, naive = false, json = false, verbose = false, exec = true;
  bool guide = false;
  std::optional<int> guide_stages, guide_layers;
  // Cost model (no dryrun): --model, --strategy, --system.
  std::optional<std::string> cost_model, cost_strategy, cost_system;
  bool stages_given = false, micro_batches_given = false, chunks_given = false, memory_given = false;
  std::optional<std::string> guide_recompute;
};

bool is_bool_word(const std::string& w) {
  static const char* words[] = {"1", "0", "true", "false", "True", "False", "yes", "no", "TRUE", "FALSE"};
  for (const char* b : words)
    if (w == b) return true;
  return false;
}
bool bool_value(const std::string& w) {
  std::string l;
  for (char c : w) l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return l == "1" || l == "true" || l == "yes";
}

Options parse(const Words& words) {
  Options o;
  for (std::size_t i = 0; i < words.size(); ++i) {
    std::string w = words[i];
    std::optional<std::string> inline_value;
    if (w.rfind("--", 0) == 0)
      if (auto eq = w.find('='); eq != std::string::npos) {
        inline_value = w.substr(eq + 1);
        w = w.substr(0, eq);
      }
    auto value = [&]() -> std::string {
      if (inline_value) return *inline_value;
      if (i + 1 >= words.size()) throw InputError(w, "expects a value");
      return words[++i];
    };
    auto boolean = [&]() -> bool {  // SAPP's "-lm 1" style, or a bare switch
      if (inline_value) return bool_value(*inline_value);
      if (i + 1 < words.size() && is_bool_word(words[i + 1])) return bool_value(words[++i]);
      return true;
    };
    auto integer = [&]() -> long long {
      const std::string v = value();
      try {
        std::size_t pos = 0;
        long long x = std::stoll(v, &pos);
        if (pos != v.size()) throw std::invalid_argument(v);
        return x;
      } catch (const std::exception&) {
        throw InputError(w, "expected an integer, got '" + v + "'");
      }
    };
    auto number = [&]() -> double {
      const std::string v = value();
      try {
        std::size_t pos = 0;
        double x = std::stod(v, &pos);
        if (pos != v.size()) throw std::invalid_argument(v);
        return x;
      } catch (const std::exception&) {
        throw InputError(w, "expected a number, got '" + v + "'");
      }
    };
    auto is = [&](std::initializer_list<const char*> names) {
      for (const char* n : names)
        if (w == n) return true;
      return false;
    };
    if (is({"-init", "--init"}))
      o.init = value();
    else if (is({"--config"}))
      o.config = value();
    else if (is({"--write-yaml"}))
      o.write_yaml = value();
    else if (is({"--memory"}))
      o.memory.emplace_back(value());
    else if (is({"--layer-json"}))
      o.layers = value();
    else if (is({"--layers"}))
      o.guide_layers = static_cast<int>(integer());
    else if (is({"-lf", "--layer_folder"}))
      o.layer_folder = value();
    else if (is({"--times"}))
      o.times = value();
    else if (is({"--timeline"}))
      o.timeline.emplace_back(value());
    else if (is({"--time-config"}))
      o.time_config = value();
    else if (is({"-m", "--model_name"})) {
      o.model_name = value();
      o.model_name_given = true;
    } else if (is({"-s", "--stage"})) {
      o.stages = static_cast<int>(integer());
      o.stages_given = true;
    } else if (is({"-mb", "--micro_batch"})) {
      o.micro_batches = static_cast<int>(integer());
      o.micro_batches_given = true;
    } else if (is({"-i", "--interleave_degree"})) {
      o.chunks = static_cast<int>(integer());
      o.chunks_given = true;
    } else if (is({"--model"}))
      o.cost_model = value();
    else if (is({"--strategy"}))
      o.cost_strategy = value();
    else if (is({"--system"}))
      o.cost_system = value();
    else if (is({"-lm", "--less_memory"}))
      o.less_memory = boolean();
    else if (is({"-mem", "--max_memory", "--mem"})) {
      o.memory_mb = number();
      o.memory_given = true;
    } else if (is({"-t", "--time_limit"}))
      o.time_limit = number();
    else if (is({"-O", "--optimization_level"}))
      o.level = static_cast<int>(integer());
    else if (is({"--formulation"}))
      o.formulation = value();
    else if (is({"--milp-time"}))
      o.milp_time = number();
    else if (is({"--restarts"}))
      o.restarts = static_cast<int>(integer());
    else if (is({"--iterations"}))
      o.iterations = static_cast<long>(integer());
    else if (is({"--kicks"}))
      o.kicks = static_cast<int>(integer());
    else if (is({"--memory-penalty"}))
      o.memory_penalty = number();
    else if (is({"--relocate-share"}))
      o.relocate_share = number();
    else if (is({"--threads"}))
      o.threads = static_cast<int>(integer());
    else if (is({"--seed"}))
      o.seed = static_cast<std::uint64_t>(integer());
    else if (is({"--dump-lp"}))
      o.dump_lp = value();
    else if (is({"--cbc-log"}))
      o.cbc_log = true;
    else if (is({"--loose"}))
      o.loose = true;
    else if (is({"--sapp-memory"}))
      o.sapp_memory = true;
    else if (is({"--sapp-head-tail-round"}))
      o.sapp_head_tail = true;
    else if (is({"--allow-negative"}))
      o.allow_negative = true;
    else if (is({"-o", "--output_folder"}))
      o.output = value();
    else if (is({"--no-svg"}))
      o.no_svg = true;
    else if (is({"-naive", "--simulate_naive"}))
      o.naive = boolean();
    else if (is({"-manual", "--manual_config"}))
      o.manual = value();
    else if (is({"--write-layers"}))
      o.write_layers = value();
    else if (is({"-exec", "--exec"}))
      o.exec = boolean();
    else if (is({"--json"}))
      o.json = true;
    else if (is({"-v", "--verbose"}))
      o.verbose = true;
    else if (is({"-guide", "--guide"}))
      o.guide = true;
    else if (is({"--stages"}))
      o.guide_stages = static_cast<int>(integer());
    else if (is({"--recompute"}))
      o.guide_recompute = value();
    else if (is({"-seq", "--seq"}))
      o.seq = static_cast<int>(integer());
    else if (is({"-train", "--training_config"}))
      o.train = value();
    else if (is({"-dump", "--dump_layer", "-cm", "--compute_memory", "-mf", "--memory_folder"}))
      throw InputError(w, "is not supported by preflight balance (see --help)");
    else
      throw InputError(w, "unknown option (see preflight balance --help)");
  }
  return o;
}

// --guide: interactive (SAPP's questions on stdin) unless --stages and --layers are given.
int run_guide(Options& o) {
  std::vector<Recompute> classes;
  int stages = 0, layers = 0;
  if (o.guide_stages && o.guide_layers) {
    stages = *o.guide_stages;
    layers = *o.guide_layers;
    if (o.guide_recompute) classes = parse_recompute_list(*o.guide_recompute, "--recompute");
  } else {
    auto ask = [](const std::string& q) {
      std::cerr << q;
      std::string line;
      if (!std::getline(std::cin, line)) line.clear();
      return line;
    };
    auto yes = [](const std::string& s) { return !s.empty() && (s[0] == 'y' || s[0] == 'Y' || s == "1"); };
    auto number = [](const std::string& s, const char* what) {
      try {
        std::size_t pos = 0;
        int v = std::stoi(s, &pos);
        if (pos != s.size()) throw std::invalid_argument(s);
        return v;
      } catch (const std::exception&) {
        throw InputError(what, "expected a whole number, got '" + s + "'");
      }
    };
    std::string s = ask("Please enter the pipeline stage number (0 if none): ");
    if (s.empty() || s == "0") return kExitOk;  // SAPP: an empty answer aborts
    stages = number(s, "pipeline stage number");
    s = ask("Please enter the number of layers (0 if none): ");
    if (s.empty() || s == "0") return kExitOk;
    layers = number(s, "number of layers");
    if (yes(ask("Do you consider full recomputation?[y/n]? "))) classes.push_back(Recompute::Full);
    if (yes(ask("Do you consider select recomputation?[y/n]? "))) classes.push_back(Recompute::Select);
    if (yes(ask("Does your communication recomputation co-work with select recomputation?[y/n]? ")))
      classes.push_back(Recompute::Both);
    if (yes(ask("Do you consider extra communication recomputation?[y/n]? ")))
      classes.push_back(Recompute::Comm);
  }
  const DryrunPlan plan = plan_dryrun(stages, layers, classes, o.seed);
  if (o.json)
    std::cout << plan_json(plan).dump(2) << "\n";
  else
    std::cout << render_plan_text(plan);
  return kExitOk;
}

StageTimes parse_times(const std::string& text) {
  StageTimes t;
  double v[3];
  std::stringstream in(text);
  std::string part;
  int n = 0;
  while (std::getline(in, part, ',')) {
    if (n == 3) throw InputError("--times", "expected three values H,B,T");
    try {
      std::size_t pos = 0;
      v[n] = std::stod(part, &pos);
      if (pos != part.size()) throw std::invalid_argument(part);
    } catch (const std::exception&) {
      throw InputError("--times", "expected numbers H,B,T (ms), got '" + text + "'");
    }
    ++n;
  }
  if (n != 3) throw InputError("--times", "expected three values H,B,T (ms), got '" + text + "'");
  if (v[0] < 0 || v[1] <= 0 || v[2] < 0)
    throw InputError("--times", "body must be > 0 and head, tail >= 0 (ms)");
  t.head_ms = v[0];
  t.body_ms = v[1];
  t.tail_ms = v[2];
  return t;
}

// Head/body/tail times: --times, --timeline, --time-config, then the init yaml's time_config, then its
// profiling_config traces (SAPP: time_config wins when complete).
std::optional<std::pair<StageTimes, std::string>> resolve_times(const Options& o, const InitConfig* cfg) {
  if (o.times) return std::make_pair(parse_times(*o.times), std::string("--times"));
  auto from_traces = [&](const std::vector<fs::path>& paths, const std::string& what) {
    log_parse::SappTimelineOptions opt;
    if (cfg && cfg->profiling) {
      opt.names.head = cfg->profiling->head_layers;
      opt.names.body = cfg->profiling->body_layers;
      opt.names.tail = cfg->profiling->tail_layers;
      opt.micro_batches = cfg->profiling->micro_batch_num;
    }
    const log_parse::SappTimes t = log_parse::sapp_timeline_times(paths, opt);
    StageTimes st{t.head_ms, t.body_ms, t.tail_ms};
    if (!(st.body_ms > 0)) throw InputError(what, "the traces give no body layer time");
    return std::make_pair(st, what);
  };
  if (!o.timeline.empty()) return from_traces(o.timeline, "traces (--timeline)");
  if (o.time_config)
    return std::make_pair(read_time_config(*o.time_config), "time_config of " + o.time_config->string());
  if (cfg && cfg->time_config) return std::make_pair(*cfg->time_config, std::string("time_config"));
  if (cfg && cfg->profiling && !cfg->profiling->folder.empty())
    return from_traces({cfg->profiling->folder}, "traces in " + cfg->profiling->folder.string());
  return std::nullopt;
}

std::string bool_word(bool b) {
  return b ? "True" : "False";
}

/// The pipeline of the cost model's input (a strategy or a MindFormers yaml) replaces -s / -i / -mb; a flag
/// given with another value is an error ending with `why`.
void adopt_pipeline(Options& o, const PipelineConfig& p, const std::string& why) {
  auto check = [&](bool given, int flag, int own, const char* name) {
    if (given && flag != own) throw InputError(name, "is " + std::to_string(own) + " " + why);
  };
  check(o.stages_given, o.stages, p.stages, "-s");
  check(o.chunks_given, o.chunks, p.chunks, "-i");
  check(o.micro_batches_given, o.micro_batches, p.micro_batches, "-mb");
  o.stages = p.stages;
  o.chunks = p.chunks;
  o.micro_batches = p.micro_batches;
}

void write_file(const fs::path& path, const std::string& content) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  std::ofstream out(path);
  if (!out) throw InputError(path.string(), "cannot write");
  out << content;
}

}  // namespace

int run_balance(const Words& words) {
  for (const auto& w : words)
    if (w == "-h" || w == "--help") {
      std::cout << kBalanceHelp;
      return kExitOk;
    }
  Options o = parse(words);
  if (o.guide) return run_guide(o);
  if (o.formulation != "exact" && o.formulation != "sapp")
    throw InputError("--formulation", "expected exact or sapp, got '" + o.formulation + "'");

  // The layer model.
  BalanceProblem problem;
  std::optional<Decomposition> decomposition;
  std::string model_source, times_source;
  std::vector<std::string> notes;
  std::optional<CostModelBalanceInput> from_cost;
  std::optional<analyzer::MindFormersConfig> yaml;
  if (o.write_yaml && !o.config) throw InputError("--write-yaml", "needs --config (the yaml to copy)");
  if (o.config) {
    if (o.init || o.layers || o.layer_folder || o.cost_strategy)
      throw InputError("--config", "builds the layer model from the yaml and the cost model: drop --init / "
                                   "--layer-json / --strategy");
    std::vector<std::string> warnings;
    analyzer::MindFormersOptions mf;
    analyzer::ModelSpec base;
    if (o.cost_model) {
      base = analyzer::cost::load_cost_model(*o.cost_model, &warnings);
      mf.base = &base;
    }
    yaml = analyzer::load_mindformers_yaml(*o.config, mf);
    for (const auto& w : yaml->warnings) notes.push_back(w);
    if (std::string note = analyzer::mtp_left_out_note(yaml->model); !note.empty()) notes.push_back(note);
    const std::string system_name = o.cost_system.value_or("a100_pcie");
    const analyzer::SystemSpec system = analyzer::cost::load_simumax_system(system_name);
    from_cost = balance_input_from_mindformers(
        yaml->model, yaml->strategy, system,
        o.model_name_given ? o.model_name : fs::path(*o.config).stem().string());
    problem.model = from_cost->model;
    adopt_pipeline(o, from_cost->pipeline, "in --config; change the yaml instead");
    if (!o.memory_given)
      o.memory_mb = yaml->max_device_memory_gib ? std::floor(*yaml->max_device_memory_gib * 1024.0)
                                                : std::floor(from_cost->device_limit_mb);
    for (const auto& w : warnings) notes.push_back(w);
    for (const auto& n : from_cost->notes) notes.push_back(n);
    model_source = "MindFormers yaml " + o.config->string() + ", cost model on system " + system_name;
    times_source = "cost model";
  } else if (o.cost_model) {
    if (o.init || o.layers || o.layer_folder)
      throw InputError("--model", "builds the layer model from the cost model: drop --init / --layer-json");
    if (!o.cost_strategy)
      throw InputError("--strategy", "is required with --model (SimuMax strategy JSON or preset)");
    std::vector<std::string> warnings;
    const analyzer::ModelSpec spec = analyzer::cost::load_cost_model(*o.cost_model, &warnings);
    if (std::string note = analyzer::mtp_left_out_note(spec); !note.empty()) warnings.push_back(note);
    const analyzer::Strategy strategy = analyzer::cost::load_simumax_strategy(*o.cost_strategy).strategy;
    const std::string system_name = o.cost_system.value_or("a100_pcie");
    const analyzer::SystemSpec system = analyzer::cost::load_simumax_system(system_name);
    from_cost = balance_input_from_cost_model(spec, strategy, system,
                                              o.model_name_given  ? o.model_name
                                              : spec.name.empty() ? "model"
                                                                  : spec.name);
    problem.model = from_cost->model;
    adopt_pipeline(o, from_cost->pipeline, "in --strategy; the cost model prices that layout (change the strategy instead)");
    if (!o.memory_given) o.memory_mb = std::floor(from_cost->device_limit_mb);
    for (const auto& w : warnings) notes.push_back(w);
    for (const auto& n : from_cost->notes) notes.push_back(n);
    {
      std::ostringstream n;
      n.setf(std::ios::fixed);
      n.precision(0);
      n << "the strategy as given, priced by the cost model: iteration " << from_cost->strategy_iteration_ms
        << " ms, peak per stage (MiB)";
      for (double v : from_cost->strategy_peak_mb) n << " " << v;
      notes.push_back(n.str());
    }
    model_source =
        "cost model: " + *o.cost_model + ", strategy " + *o.cost_strategy + ", system " + system_name;
    times_source = "cost model";
  } else if (o.init) {
    InitConfig cfg =
        read_init_config(*o.init, o.sapp_head_tail ? HeadTailRound::Last : HeadTailRound::First, o.memory);
    DecomposeOptions dopt;
    dopt.allow_negative = o.allow_negative;
    decomposition = decompose_memory(cfg.observations, cfg.stages, dopt, o.init->string());
    auto resolved = resolve_times(o, &cfg);
    if (!resolved)
      throw InputError(o.init->string(),
                       "no head/body/tail times: add time_config or profiling_config, or pass --times H,B,T");
    const StageTimes times = resolved->first;
    times_source = resolved->second;
    problem.model = layer_model_from_decomposition(*decomposition, times, cfg.layers, o.model_name);
    model_source = "init yaml " + o.init->string();
  } else if (o.layers || o.layer_folder || o.model_name_given) {
    fs::path file = o.layers
                        ? *o.layers
                        : (o.layer_folder ? *o.layer_folder : fs::path("layers")) / (o.model_name + ".json");
    problem.model = read_layer_json(file);
    if (o.model_name_given) problem.model.name = o.model_name;
    if (auto resolved = resolve_times(o, nullptr)) {
      const StageTimes& t = resolved->first;
      problem.model.head_forward_ms = t.head_ms;
      problem.model.tail_forward_ms = t.tail_ms;
      for (auto& b : problem.model.bodies) {
        b.forward_ms = t.body_ms;
        fill_backward_times(b, {}, {});
      }
      times_source = resolved->second;
    } else {
      times_source = "layer json";
    }
    model_source = "layer json " + file.string();
  } else {
    throw InputError("preflight balance",
                     "give --init (dryrun yaml), --layer-json (layer json) or --model/--strategy (cost "
                     "model); see --help");
  }
  if (o.write_layers) write_file(*o.write_layers, layer_model_json(problem.model).dump(4) + "\n");
  if (!o.exec) {
    if (o.json) {
      nlohmann::json j = {{"model", layer_model_json(problem.model)},
                          {"model_source", model_source},
                          {"times_source", times_source}};
      if (decomposition) j["decomposition"] = decomposition_json(*decomposition);
      std::cout << j.dump(2) << "\n";
    } else {
      if (decomposition) std::cout << render_decomposition_text(*decomposition);
      std::cout << layer_model_json(problem.model).dump(4) << "\n";
    }
    return kExitOk;
  }

  problem.pipeline = {o.stages, o.chunks, o.micro_batches, o.less_memory};
  if (from_cost && from_cost->pipeline.seq_split > 1) {
    // The yaml's sequence pipeline: the cost model priced one unit already (no SAPP conversion).
    if (o.seq > 1)
      throw InputError("-seq", "the yaml's parallel_config.seq_split_num is modelled already; drop -seq");
    problem.pipeline.seq_split = from_cost->pipeline.seq_split;
  } else if (o.seq > 1) {
    if (!o.train)
      throw InputError("-seq", "needs -train (the MindFormers training yaml) for the seqpipe memory model");
    const TrainingParams tp = read_training_config(*o.train);
    std::string note;
    const int k = sapp_seq_split(o.seq, tp, note);
    if (!note.empty()) notes.push_back(note);
    if (k > 1) {
      problem.model = seq_pipe_model(problem.model, tp, k, notes);
      problem.pipeline.seq_split = k;
    }
  } else if (o.seq < 1) {
    throw InputError("-seq", "must be at least 1");
  }
  if (!(o.relocate_share >= 0 && o.relocate_share <= 1))
    throw InputError("--relocate-share", "must be between 0 and 1");
  if (o.threads < 0) throw InputError("--threads", "must be 0 (all cores) or more");
  problem.memory_limit_mb = o.memory_mb;
  problem.constant = o.sapp_memory ? ConstantMemory::SappTwiceAtEnds : ConstantMemory::Once;
  problem.validate();

  // Manual strategies (simulated with their own interleave; also used as starts when it matches).
  std::vector<ManualStrategy> manual;
  if (o.manual) manual = read_manual_strategies(*o.manual, problem);
  if (yaml) {
    // The yaml's own offsets and recompute counts, simulated next to the answer.
    if (problem.model.bodies.size() != 1 || yaml->split_layers != yaml->model.num_layers) {
      notes.push_back("the yaml's own layout is not simulated: " +
                      std::string(problem.model.bodies.size() != 1 ? "two body kinds (dense and MoE layers)"
                                                                   : "MTP layers counted in its split"));
    } else {
      YamlStrategy y{yaml->offset, yaml->recompute.full, yaml->recompute.select, yaml->recompute.comm};
      ManualStrategy m;
      m.name = "yaml " + fs::path(*o.config).filename().string();
      m.chunks = problem.pipeline.chunks;
      m.assignment = yaml_normalized(assignment_from_yaml(problem, y, o.config->string()));
      m.file_name = "yaml.svg";
      const std::string why = check_assignment(problem, m.assignment, false);
      if (why.empty())
        manual.push_back(std::move(m));
      else
        notes.push_back("the yaml's own layout is not simulated: " + why);
    }
  }
  BalanceOptions bo;
  bo.formulation = o.formulation == "sapp" ? Formulation::Sapp : Formulation::Exact;
  bo.optimization_level = o.level;
  bo.time_limit_s = o.time_limit;
  bo.seed = o.seed;
  bo.restarts = o.restarts;
  bo.iterations = o.iterations;
  bo.kicks = o.kicks;
  bo.memory_penalty = o.memory_penalty;
  bo.relocate_share = o.relocate_share;
  bo.threads = o.threads;
  bo.milp_time_s = o.milp_time;
  bo.tighten = !o.loose;
  bo.representable = !o.loose;
  if (o.dump_lp) bo.dump_lp = *o.dump_lp;
  bo.log = o.cbc_log;
  for (const auto& m : manual)
    if (m.chunks == problem.pipeline.chunks) bo.starts.emplace_back("manual " + m.name, m.assignment);
  const BalanceResult result = balance(problem, bo);

  BalanceReport rep;
  rep.problem = &problem;
  rep.result = &result;
  rep.decomposition = decomposition ? &*decomposition : nullptr;
  rep.model_source = model_source;
  rep.times_source = times_source;
  rep.show_naive = o.naive;
  rep.verbose = o.verbose;
  rep.formulation = bo.formulation;
  rep.notes = notes;
  std::vector<std::pair<BalanceProblem, Candidate>> manual_runs;
  for (const auto& m : manual) {
    BalanceProblem mp = problem;
    mp.pipeline.chunks = m.chunks;
    const ScheduleGraph g(mp.pipeline);
    Candidate c = evaluate(mp, g, m.name, m.assignment);
    rep.manual.push_back(c);
    manual_runs.emplace_back(mp, c);
  }

  if (!o.no_svg && o.output) {
    auto draw = [&](const BalanceProblem& p, const Candidate& c, const std::string& file,
                    const std::string& what) {
      const ScheduleGraph g(p.pipeline);
      const ChunkCosts costs = chunk_costs(p, c.assignment);
      const SimulationResult sim = simulate(g, costs, true);
      SvgOptions so;
      so.title = p.model.name + ": " + c.name;
      so.memory_limit_mb = p.memory_limit_mb;
      const fs::path path = *o.output / file;
      write_file(path, render_schedule_svg(g, costs, sim, so));
      rep.svg_files.emplace_back(what, path.string());
    };
    // SAPP's file name: <m>_<mem>_<V>_<S>_<mb>_<O>_<t>_<lm>.svg
    std::ostringstream name;
    name << problem.model.name << "_" << static_cast<long long>(o.memory_mb) << "_" << o.chunks << "_"
         << o.stages << "_" << o.micro_batches << "_" << o.level << "_"
         << static_cast<long long>(o.time_limit) << "_" << bool_word(o.less_memory) << ".svg";
    draw(problem, result.best, name.str(), "answer");
    if (o.naive && !result.naive.empty()) {
      draw(problem, result.naive.front(), "result_naive_all_recomp.svg", result.naive.front().name);
      for (const auto& c : result.naive)
        if (c.name == std::string("naive: all ") + recompute_name(Recompute::None))
          draw(problem, c, "result_naive_no_recomp.svg", c.name);
    }
    for (std::size_t i = 0; i < manual.size(); ++i) {
      const std::string file = manual[i].file_name.empty() ? manual[i].name + ".svg" : manual[i].file_name;
      draw(manual_runs[i].first, manual_runs[i].second, file, manual[i].name);
    }
  }

  if (o.write_yaml && result.found) {
    const YamlStrategy y = yaml_strategy(problem, yaml_normalized(result.best.assignment));
    std::ifstream in(*o.config, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    write_file(*o.write_yaml, analyzer::rewrite_mindformers_yaml(text.str(), o.config->string(), y.offset,
                                                                 y.recompute, y.select_recompute,
                                                                 y.select_comm_recompute));
    rep.notes.push_back("wrote " + o.write_yaml->string() + ": " + o.config->string() +
                        " with the answer's offset and recompute lists");
  }
  if (o.json)
    std::cout << balance_json(rep).dump(2) << "\n";
  else
    std::cout << render_balance_text(rep);
  return result.found ? kExitOk : kExitDoesNotFit;
}

}  // namespace preflight::cli
