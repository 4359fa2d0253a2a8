// The loop on real runs: examples/torch_cpu_gpt under torchrun (gloo, 1–4 processes), traced with
// libpreflight_hook.so, measured and compared with `preflight analyze --transformer-impl torch_cpu`.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "test_support.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using preflight::test::run_shell;
using preflight::test::shell_quote;

namespace {

fs::path build_dir() {
  return fs::path(PREFLIGHT_BINARY).parent_path().parent_path();
}
fs::path source_dir() {
  return PREFLIGHT_SOURCE_DIR;
}
fs::path scratch() {
  fs::path d = fs::temp_directory_path() / ("preflight_calibrate_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

/// A TCP port nothing listens on right now (the kernel's choice for a bind to port 0): a fixed or
/// pid-derived port can be taken by another torchrun (other tests, other checkouts) or be some
/// connection's ephemeral port, and then torchrun exits 1 before any rank starts.
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error("cannot find a free TCP port");
  ::close(fd);
  return ntohs(a.sin_port);
}

/// torchrun could not bind its master port (errno 98 in its TCPStore error).
bool port_taken(const preflight::test::RunResult& r) {
  return r.exit_code != 0 && (r.out + r.err).find("errno: 98") != std::string::npos;
}

/// Runs `launch(port)` on a free port; again on another one (at most 3 times in all) only when the port was
/// taken between free_port() and torchrun's bind — an external cause, not a failure of the run.
template <class Launch>
preflight::test::RunResult on_free_port(Launch launch) {
  preflight::test::RunResult r;
  for (int attempt = 0; attempt < 3; ++attempt) {
    r = launch(free_port());
    if (!port_taken(r)) break;
  }
  return r;
}

/// torchrun's agent checks on its workers every --monitor_interval seconds (5 by default, so each run would
/// last a multiple of 5 s); PET_MONITOR_INTERVAL is that flag's environment variable, also read by the
/// torchrun inside the launch script.
const char* const kFastAgent = "PET_MONITOR_INTERVAL=0.2";

/// The model of the bundled launch script: 4 layers, h 64, 4 heads, s 64, vocab 511 (+1), global batch 8.
std::string model_args(const std::string& extra) {
  return "--num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 64 --max-position-embeddings "
         "64 "
         "--transformer-impl torch_cpu --micro-batch-size 2 --global-batch-size 8 --tokenizer-type "
         "NullTokenizer "
         "--vocab-size 511 --train-iters 3 --lr 3e-3 --seed 1234 --log-interval 1 " +
         extra;
}

struct Iteration {
  double loss = 0, grad_norm = 0;
};

std::vector<Iteration> iterations_of(const std::string& log) {
  std::vector<Iteration> out;
  std::regex re(R"(iteration +\d+/ +\d+ \|.*lm loss: ([0-9.E+-]+) \|.*grad norm: ([0-9.]+) \|)");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back({std::stod((*it)[1]), std::stod((*it)[2])});
  return out;
}

/// torchrun of the example.
preflight::test::RunResult train(int nproc, const std::string& args) {
  return on_free_port([&](int port) {
    return run_shell(
        std::string(kFastAgent) + " OMP_NUM_THREADS=1 torchrun --redirects 2 --tee 2 --nproc_per_node " +
        std::to_string(nproc) + " --master_addr 127.0.0.1 --master_port " + std::to_string(port) + " " +
        shell_quote((source_dir() / "examples/torch_cpu_gpt/pretrain_gpt_cpu.py").string()) + " " + args);
  });
}

}  // namespace

TEST(RealRun, ParallelLayoutsTrainTheSameModel) {
  // Dropout off: one process, tp 2 × pp 2, and dp 2 must print the same losses and gradient norms.
  std::string args = model_args("--attention-dropout 0 --hidden-dropout 0");
  auto one = train(1, args);
  ASSERT_EQ(one.exit_code, 0) << one.out;
  auto tp_pp = train(4, args + " --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2");
  ASSERT_EQ(tp_pp.exit_code, 0) << tp_pp.out;
  auto dp = train(2, args);
  ASSERT_EQ(dp.exit_code, 0) << dp.out;
  auto a = iterations_of(one.out), b = iterations_of(tp_pp.out), c = iterations_of(dp.out);
  ASSERT_EQ(a.size(), 3u) << one.out;
  ASSERT_EQ(b.size(), 3u) << tp_pp.out;
  ASSERT_EQ(c.size(), 3u) << dp.out;
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(b[i].loss, a[i].loss, 1e-5 * a[i].loss) << "tp 2 × pp 2, iteration " << i + 1;
    EXPECT_NEAR(c[i].loss, a[i].loss, 1e-5 * a[i].loss) << "dp 2, iteration " << i + 1;
    EXPECT_NEAR(b[i].grad_norm, a[i].grad_norm, 2e-3);
    EXPECT_NEAR(c[i].grad_norm, a[i].grad_norm, 2e-3);
  }
  EXPECT_LT(a[2].loss, a[0].loss);
}

TEST(RealRun, TheLoopScriptRunsEndToEnd) {
  // scripts/calibration_loop.sh, as the README runs it, on the bundled configuration (tp 2 × pp 2, dropout
  // on): wrap (analyze) → wrap (trace) + torchrun → trace summarize + logs megatron → calibrate.
  fs::path dir = scratch() / "loop";
  fs::remove_all(dir);
  auto loop = on_free_port([&](int port) {
    return run_shell(std::string(kFastAgent) + " MASTER_PORT=" + std::to_string(port) + " /bin/bash " +
                     shell_quote((source_dir() / "scripts/calibration_loop.sh").string()) +
                     " --json --max-peak-error 5 --build " + shell_quote(build_dir().string()) + " --out " +
                     shell_quote(dir.string()));
  });
  ASSERT_EQ(loop.exit_code, 0) << loop.out << loop.err;

  // The run is real: the Megatron-format log read by `preflight logs megatron`, loss decreasing.
  auto logs =
      preflight::test::run_preflight("logs megatron --json " + shell_quote((dir / "train.log").string()));
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  json lj = json::parse(logs.out);
  const json& its = lj["files"][0]["iterations"];
  ASSERT_EQ(its.size(), 3u) << logs.out;
  EXPECT_LT(its[1]["lm_loss"].get<double>(), its[0]["lm_loss"].get<double>());
  EXPECT_LT(its[2]["lm_loss"].get<double>(), its[1]["lm_loss"].get<double>());
  std::string summary = preflight::test::read_file((dir / "summary.txt").string());
  for (int r = 0; r < 4; ++r)
    EXPECT_NE(summary.find("rank " + std::to_string(r) + " of 4"), std::string::npos) << summary;
  std::string logs_txt = preflight::test::read_file((dir / "logs.txt").string());
  EXPECT_NE(logs_txt.find("3 iteration lines, 8 memory lines"), std::string::npos) << logs_txt;

  // Each rank's trace: 4 micro batches, activations attributed to the modules of its own stage.
  fs::path traces;
  for (const auto& e : fs::directory_iterator(dir / "traces")) traces = e.path();
  auto measured =
      preflight::test::run_preflight("calibrate --measure-only --measured " + shell_quote(traces.string()));
  ASSERT_EQ(measured.exit_code, 0) << measured.err;
  json ms = json::parse(measured.out);
  ASSERT_EQ(ms.size(), 4u);
  for (const auto& m : ms) {
    int rank = m["rank"];
    EXPECT_EQ(m["microbatches"], 4);
    EXPECT_GT(m["activations"]["per_microbatch"].get<double>(), 1e6);
    const json& by = m["activations"]["by_module"];
    bool first = rank < 2;
    for (int layer : first ? std::vector<int>{0, 1} : std::vector<int>{2, 3}) {
      std::string p = "decoder.layers." + std::to_string(layer) + ".";
      EXPECT_GT(by.value(p + "self_attention.core_attention", 0.0), 0) << "rank " << rank;
      EXPECT_GT(by.value(p + "mlp.linear_fc1", 0.0), 0) << "rank " << rank;
    }
    EXPECT_EQ(by.contains("embedding.embedding_dropout"), first) << "rank " << rank;
    EXPECT_EQ(by.contains("loss"), !first) << "rank " << rank;
    EXPECT_FALSE(by.contains(first ? "decoder.layers.2.mlp.linear_fc1" : "decoder.layers.0.mlp.linear_fc1"));
  }

  // The prediction came from the wrapped launch script (4 ranks, tp 2 × pp 2); the targets of issue 8
  // without fitting.
  json pred = json::parse(preflight::test::read_file((dir / "predicted.json").string()));
  EXPECT_EQ(pred["strategy"]["tp"], 2) << pred["strategy"];
  EXPECT_EQ(pred["strategy"]["pp"], 2) << pred["strategy"];
  json cal = json::parse(loop.out);
  ASSERT_EQ(cal["runs"].size(), 1u);
  json s = cal["runs"][0]["summary"];
  EXPECT_LT(s["max_abs_error_weights"].get<double>(), 0.005);
  EXPECT_LT(s["max_abs_error_gradients"].get<double>(), 0.005);
  EXPECT_LT(s["max_abs_error_optimizer"].get<double>(), 0.005);
  EXPECT_LT(s["max_abs_error_per_layer"].get<double>(), 0.02);
  EXPECT_LT(s["max_abs_error_peak"].get<double>(), 0.05);
  fs::remove_all(dir);
}

TEST(RealRun, FitOnFourRunsHoldsOnFourOthers) {
  // bench/calibration_matrix.py --quick: 4 training and 4 held-out runs varying tp, pp, dp, micro batch,
  // sequence length, recompute and precision; exit 0 = every target met (fitted peak within 3 % held out).
  fs::path out = scratch() / "matrix";
  auto r =
      run_shell("/usr/bin/python3 " + shell_quote((source_dir() / "bench/calibration_matrix.py").string()) +
                " --quick --build " + shell_quote(build_dir().string()) + " --out " +
                shell_quote(out.string()) + " --json " + shell_quote((out.string() + ".json")));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  json table = json::parse(preflight::test::read_file(out.string() + ".json"));
  int held_out = 0, training = 0;
  for (const auto& row : table["rows"])
    if (row["role"] == "held-out") {
      ++held_out;
      EXPECT_LT(row["peak_fitted"].get<double>(), 0.03) << row["config"];
    } else {
      ++training;
    }
  EXPECT_EQ(held_out, 4);
  EXPECT_EQ(training, 4);
  fs::remove_all(out);
  fs::remove(out.string() + ".json");
}

TEST(RealRun, OnlyTheLaunchersTraceIsNoRankMeasuredNamingWhatWasSearched) {
  // What a torchrun that stops before starting its workers (its master port taken) leaves: the traced
  // launcher's own trace, without a rank.  calibrate must say so, naming the folder and the file (exit 2).
  fs::path dir = scratch() / "rankless";
  fs::remove_all(dir);
  fs::path hook = build_dir() / "lib" / "libpreflight_hook.so";
  auto t = run_shell("env -u RANK -u RANK_ID PREFLIGHT_TRACE_DIR=" + shell_quote((dir / "traces").string()) +
                     " LD_PRELOAD=" + shell_quote(hook.string()) + " /bin/sh -c 'echo launcher'");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  auto predicted = preflight::test::run_preflight("analyze --json --nproc_per_node 1 " + model_args(""));
  ASSERT_EQ(predicted.exit_code, 0) << predicted.err;
  {
    std::ofstream f(dir / "predicted.json");
    f << predicted.out;
  }
  auto r = preflight::test::run_preflight("calibrate --predicted " +
                                          shell_quote((dir / "predicted.json").string()) + " --measured " +
                                          shell_quote((dir / "traces").string()));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("preflight: error: " + (dir / "traces").string() +
                       ": no rank measured: searched 1 file(s) (pid"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("1 of them trace(s) of processes without a rank"), std::string::npos) << r.err;
  fs::remove_all(dir);
}
