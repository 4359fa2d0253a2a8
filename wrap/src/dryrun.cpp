// MindSpore per-stage dryrun: plan and parallel runner.  See dryrun.hpp.
#include "preflight/wrap/dryrun.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <ostream>
#include <thread>

#include <yaml-cpp/yaml.h>

#include "preflight/common/error.hpp"

namespace preflight::wrap {

namespace fs = std::filesystem;

namespace {

std::string basename_of(const std::string& p) {
  auto s = p.rfind('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

volatile sig_atomic_t g_stop = 0;

extern "C" void on_stop_signal(int) {
  g_stop = 1;
}

}  // namespace

int pipeline_stages_from_yaml(const fs::path& yaml, std::optional<int> rank_size,
                              std::vector<std::string>& notes) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(yaml.string());
  } catch (const YAML::BadFile&) {
    throw InputError(yaml.string(), "cannot read the training YAML (given with --config)");
  } catch (const YAML::Exception& e) {
    throw InputError(location(yaml.string(), e.mark.line + 1), "not valid YAML: " + e.msg);
  }
  YAML::Node pc = root.IsMap() ? root["parallel_config"] : YAML::Node();
  if (!pc || !pc.IsMap()) {
    notes.push_back(yaml.string() + ": no parallel_config: one pipeline stage");
    return 1;
  }
  auto get_int = [&](const char* key, std::optional<int>& out) {
    YAML::Node n = pc[key];
    if (!n || n.IsNull()) return;
    try {
      out = n.as<int>();
    } catch (const YAML::Exception&) {
      throw InputError(yaml.string() + ": parallel_config." + key,
                       "expected a whole number, got '" +
                           (n.IsScalar() ? n.Scalar() : std::string("a list or map")) + "'");
    }
  };
  std::optional<int> pp, dp, mp, cp;
  get_int("pipeline_stage", pp);
  get_int("data_parallel", dp);
  get_int("model_parallel", mp);
  get_int("context_parallel", cp);
  if (!pp) {
    notes.push_back(yaml.string() + ": parallel_config has no pipeline_stage: one pipeline stage");
    pp = 1;
  }
  if (*pp < 1)
    throw InputError(yaml.string() + ": parallel_config.pipeline_stage",
                     "must be at least 1, got " + std::to_string(*pp));
  if (rank_size && dp && mp) {
    long long product = static_cast<long long>(*dp) * *mp * *pp * cp.value_or(1);
    if (product != *rank_size)
      notes.push_back(yaml.string() + ": data_parallel × model_parallel × pipeline_stage" +
                      (cp ? std::string(" × context_parallel") : std::string()) + " = " +
                      std::to_string(product) + ", but the job has " + std::to_string(*rank_size) +
                      " ranks; MindSpore will reject that layout");
  }
  return *pp;
}

DryrunPlan plan_dryrun(const std::vector<std::string>& argv, const DryrunOptions& o, const Environment& env) {
  if (argv.empty()) throw InputError("dryrun", "expects a command after --");
  DryrunPlan plan;
  plan.out = fs::absolute(o.out).lexically_normal();
  plan.env = env;
  plan.overrides = o.env;
  plan.command = argv;

  std::optional<LaunchCommand> launch = parse_launch(argv, o.entries);
  std::optional<int> launcher_ranks;
  std::vector<std::string> entry_args = argv;
  if (launch) {
    entry_args = launch->entry_args;
    if (is_mindspore_launcher(launch->launcher)) {
      std::string python = o.python.value_or("");
      if (python.empty()) {
        if (!launch->python.empty()) {
          python = launch->python[0];
        } else {
          python = find_program("python", env_get(env, "PATH")) ? "python" : "python3";
        }
      }
      plan.command = {python};
      if (launch->python.size() > 1)
        plan.command.insert(plan.command.end(), launch->python.begin() + 1, launch->python.end());
      plan.command.push_back(launch->entry);
      plan.command.insert(plan.command.end(), launch->entry_args.begin(), launch->entry_args.end());
      WorldSize w = *launch_world_size(*launch, {}, env);
      launcher_ranks = w.world();
      plan.rank_size_from = w.source;
      plan.notes.insert(plan.notes.end(), w.notes.begin(), w.notes.end());
      if (launch->launcher == Launcher::MsrunLauncher) {
        // msrun_launcher.sh exports PYTHONPATH=<its folder>/..: so that run_mindformer.py finds mindformers.
        for (const std::string& w2 : launch->prefix) {
          if (basename_of(w2) != "msrun_launcher.sh") continue;
          fs::path root = fs::absolute(w2).lexically_normal().parent_path().parent_path();
          std::string pp = env_get(env, "PYTHONPATH");
          plan.env["PYTHONPATH"] = pp.empty() ? root.string() : root.string() + ":" + pp;
        }
      }
      plan.notes.push_back("the " + launcher_name(launch->launcher) +
                           " launch becomes one process per stage: " + python + " " + launch->entry);
    } else if (!is_mindspore_launcher(launch->launcher) && launch->launcher != Launcher::Python) {
      plan.notes.push_back(launcher_name(launch->launcher) +
                           " is not a MindSpore launcher: it runs as given in every stage");
    }
  }

  if (o.rank_size) {
    plan.rank_size = *o.rank_size;
    plan.rank_size_from = "--rank-size";
  } else if (launcher_ranks) {
    plan.rank_size = *launcher_ranks;
  } else if (std::string rs = env_get(env, "RANK_SIZE"); !rs.empty()) {
    plan.rank_size = parse_count(rs, "RANK_SIZE");
    plan.rank_size_from = "RANK_SIZE";
  } else {
    throw InputError(
        "--rank-size",
        "needed: the command is not an msrun/msrun_launcher.sh launch that gives the worker count, "
        "and RANK_SIZE is not set");
  }
  if (plan.rank_size < 1) throw InputError("--rank-size", "must be at least 1");

  if (o.stages) {
    plan.stages = *o.stages;
    plan.stages_from = "--stages";
  } else if (auto config = flag_value(entry_args, "--config")) {
    plan.stages = pipeline_stages_from_yaml(*config, plan.rank_size, plan.notes);
    plan.stages_from = *config + ": parallel_config.pipeline_stage";
  } else {
    throw InputError("--stages",
                     "needed: the command has no --config YAML to read parallel_config.pipeline_stage from");
  }
  if (plan.stages < 1) throw InputError("--stages", "must be at least 1");
  if (plan.rank_size % plan.stages != 0)
    throw InputError("--rank-size", std::to_string(plan.rank_size) + " ranks cannot be split into " +
                                        std::to_string(plan.stages) + " pipeline stages");
  return plan;
}

int stage_rank(const DryrunPlan& plan, int stage) {
  return static_cast<int>(static_cast<long long>(stage) * plan.rank_size / plan.stages);
}

fs::path stage_dir(const DryrunPlan& plan, int stage) {
  return plan.out / ("stage_" + std::to_string(stage) + "_rank_" + std::to_string(stage_rank(plan, stage)));
}

Environment stage_environment(const DryrunPlan& plan, int stage) {
  Environment env = plan.env;
  env["MS_SIMULATION_LEVEL"] = "1";
  env["MS_KERNEL_LAUNCH_SKIP"] = "all";
  env["MS_MEMORY_STATISTIC"] = "1";
  env.emplace("GLOG_v", "2");
  env.emplace("MS_DEV_SIDE_EFFECT_LOAD_ELIM", "3");
  env["RANK_SIZE"] = std::to_string(plan.rank_size);
  env["RANK_ID"] = std::to_string(stage_rank(plan, stage));
  env["STAGE_ID"] = std::to_string(stage);
  env["LOG_MF_PATH"] = (stage_dir(plan, stage) / "mindformers_log").string();
  env.erase("RANK_TABLE_FILE");
  for (const auto& [k, v] : plan.overrides) env[k] = v;
  return env;
}

std::vector<StageResult> run_dryrun(const DryrunPlan& plan, int jobs, std::optional<double> timeout_seconds,
                                    std::ostream* progress) {
  using Clock = std::chrono::steady_clock;
  jobs = std::max(1, jobs);
  std::vector<StageResult> results(static_cast<std::size_t>(plan.stages));
  for (int s = 0; s < plan.stages; ++s) {
    auto& r = results[static_cast<std::size_t>(s)];
    r.stage = s;
    r.rank = stage_rank(plan, s);
    std::error_code ec;
    fs::create_directories(stage_dir(plan, s), ec);
    if (ec) throw InputError(stage_dir(plan, s).string(), "cannot create the stage folder: " + ec.message());
    r.log = stage_dir(plan, s) / "mindformer.log";
  }
  struct Running {
    pid_t pid;
    int stage;
    Clock::time_point start;
    std::optional<Clock::time_point> term_sent;
  };
  std::vector<Running> running;
  struct sigaction stop {
  }, old_int{}, old_term{};
  stop.sa_handler = on_stop_signal;
  sigemptyset(&stop.sa_mask);
  g_stop = 0;
  ::sigaction(SIGINT, &stop, &old_int);
  ::sigaction(SIGTERM, &stop, &old_term);
  const auto grace = std::chrono::seconds(5);
  int next = 0;
  bool stop_reported = false;
  while (true) {
    while (!g_stop && next < plan.stages && static_cast<int>(running.size()) < jobs) {
      int s = next++;
      auto& r = results[static_cast<std::size_t>(s)];
      try {
        pid_t pid = spawn_program(plan.command, stage_environment(plan, s), r.log);
        running.push_back({pid, s, Clock::now(), std::nullopt});
        if (progress)
          *progress << "dryrun: stage " << s << " (rank " << r.rank << ") started, log " << r.log.string()
                    << "\n";
      } catch (const InputError& e) {
        r.start_error = e.what();
        std::ofstream(r.log) << "preflight dryrun: cannot start: " << e.what() << "\n";
        if (progress) *progress << "dryrun: stage " << s << ": cannot start: " << e.what() << "\n";
      }
    }
    if (running.empty() && (next >= plan.stages || g_stop)) break;
    bool reaped = false;
    for (std::size_t i = 0; i < running.size(); ++i) {
      int status = 0;
      pid_t got = ::waitpid(running[i].pid, &status, WNOHANG);
      if (got != running[i].pid) continue;
      auto& r = results[static_cast<std::size_t>(running[i].stage)];
      r.exit_code = exit_code_of(status);
      r.seconds = std::chrono::duration<double>(Clock::now() - running[i].start).count();
      if (progress)
        *progress << "dryrun: stage " << r.stage << " (rank " << r.rank << ") "
                  << (r.timed_out ? "stopped after the timeout" : "exited " + std::to_string(r.exit_code))
                  << " after " << static_cast<long long>(r.seconds * 10) / 10.0 << " s\n";
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      reaped = true;
      break;
    }
    if (reaped) continue;
    auto now = Clock::now();
    if (g_stop && !stop_reported && progress) {
      *progress << "dryrun: interrupted, stopping " << running.size() << " stage(s)\n";
      stop_reported = true;
    }
    for (Running& run : running) {
      bool expired =
          timeout_seconds && std::chrono::duration<double>(now - run.start).count() > *timeout_seconds;
      if ((expired || g_stop) && !run.term_sent) {
        if (expired) results[static_cast<std::size_t>(run.stage)].timed_out = true;
        ::kill(-run.pid, SIGTERM);
        run.term_sent = now;
      } else if (run.term_sent && now - *run.term_sent > grace) {
        ::kill(-run.pid, SIGKILL);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  return results;
}

}  // namespace preflight::wrap
