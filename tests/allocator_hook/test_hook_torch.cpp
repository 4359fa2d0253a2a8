// The Python glue on Debian's CPU PyTorch: module markers, phases and iterations, checked against tensor
// sizes computed here from the model's shapes (scripts/torch_layer.py).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "hook_test_support.hpp"
#include "preflight/log_parse/trace_export.hpp"

namespace preflight::test {
namespace {

constexpr const char* kPython = "/usr/bin/python3";

bool have_torch() {
  static const int ok = run_shell(std::string(kPython) + " -c 'import torch'").exit_code == 0 ? 1 : 0;
  return ok == 1;
}

std::string python_env(const TempDir& dir, const std::string& extra = "") {
  return hook_env(dir, "PYTHONPATH=" + shell_quote(PREFLIGHT_HOOK_PYTHONPATH) + " " + extra);
}

struct Shapes {
  std::uint64_t s = 128, b = 2, h = 256, n = 8, ffn = 1024, layers = 2;
  std::string args() const {
    std::ostringstream o;
    o << " --seq " << s << " --batch " << b << " --hidden " << h << " --heads " << n << " --ffn " << ffn
      << " --layers " << layers;
    return o.str();
  }
};

// Bytes each module allocates in its forward and that are still live when the forward pass ends (fp32):
// what autograd saved for backward, attributed to the module whose forward allocated it (the innermost).
std::map<std::string, std::uint64_t> expected_retained(const Shapes& x, int layer) {
  const std::uint64_t f = 4, sbh = x.s * x.b * x.h * f;
  const std::string p = "decoder.layers." + std::to_string(layer);
  return {
      // LayerNorm output (saved by the next linear) and its mean and rstd ([s, b, 1] each)
      {p + ".input_layernorm", sbh + 2 * x.s * x.b * f},
      // the [s, b, 3h] projection: q, k, v are views of it saved by the two batched matmuls
      {p + ".self_attention.linear_qkv", 3 * sbh},
      // softmax output [b, n, s, s] (saved by softmax and the second bmm) and the [s, b, h] context copy
      // saved by linear_proj; the scores and the baddbmm buffer are temporaries
      {p + ".self_attention.core_attention", x.b * x.n * x.s * x.s * f + sbh},
      // its output only feeds the residual add, which saves nothing
      {p + ".self_attention.linear_proj", 0},
      {p + ".self_attention", 0},
      {p + ".pre_mlp_layernorm", sbh + 2 * x.s * x.b * f},
      // fc1 output saved by gelu, gelu output (allocated in mlp's own forward) saved by fc2
      {p + ".mlp.linear_fc1", x.s * x.b * x.ffn * f},
      {p + ".mlp", x.s * x.b * x.ffn * f},
      {p + ".mlp.linear_fc2", 0},
      // the two residual sums: the first is saved by pre_mlp_layernorm, the second is the layer output
      // (saved by the next layer's input_layernorm, or the model output the script holds)
      {p, 2 * sbh},
  };
}

std::uint64_t parameter_count(const Shapes& x) {
  const std::uint64_t per_layer = 2 * x.h + (3 * x.h * x.h + 3 * x.h) + (x.h * x.h + x.h) + 2 * x.h +
                                  (x.ffn * x.h + x.ffn) + (x.h * x.ffn + x.h);
  return per_layer * x.layers;
}

TEST(HookTorch, ForwardActivationsByModuleMatchTheShapes) {
  if (!have_torch()) GTEST_SKIP() << "python3-torch is not installed";
  TempDir dir;
  const Shapes x;
  // Autograd's bookkeeping (graph nodes, tensor headers, hooks: a few hundred bytes each) is left out with a
  // 1 KiB minimum, so what is compared is tensor storage; LayerNorm's mean and rstd are exactly 1 KiB here.
  RunResult r =
      run_shell(python_env(dir, "PREFLIGHT_TRACE_MIN_BYTES=1024") + kPython + " " +
                shell_quote(std::string(HOOK_SCRIPT_DIR) + "/torch_layer.py") + x.args() + " --iterations 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("preflight_hook:"), std::string::npos) << r.err;  // no glue warning
  EXPECT_NE(r.out.find("parameters " + std::to_string(parameter_count(x)) + " tensors 24"), std::string::npos)
      << r.out;
  const auto files = trace_files(dir);
  ASSERT_EQ(files.size(), 1u);
  const log_parse::TraceSummary s = log_parse::summarize_trace(files[0]);
  EXPECT_EQ(s.process.dropped, 0u);
  const log_parse::SpaceSummary& host = s.spaces.at(0);

  // one forward pass per iteration, iterations counted by the optimizer steps
  ASSERT_EQ(host.forward_passes.size(), 3u);
  for (std::uint64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(host.forward_passes[i].iteration, i);
    EXPECT_EQ(host.forward_passes[i].pass, 0u);
  }
  // iterations 1 and 2 (iteration 0 also pays for one-time set-up inside torch)
  for (std::size_t pass = 1; pass < 3; ++pass) {
    const log_parse::ForwardPass& fp = host.forward_passes[pass];
    for (int layer = 0; layer < 2; ++layer) {
      for (const auto& [marker, bytes] : expected_retained(x, layer)) {
        const log_parse::BytesBy* got = find_bytes(fp.retained_by_marker, marker);
        const std::uint64_t actual = got ? got->bytes : 0;
        if (bytes == 0) {
          EXPECT_EQ(actual, 0u) << marker << " pass " << pass;
        } else {
          EXPECT_NEAR(static_cast<double>(actual), static_cast<double>(bytes),
                      0.01 * static_cast<double>(bytes))
              << marker << " pass " << pass;
          if (got) {
            EXPECT_EQ(got->layer, layer) << marker;
          }
        }
      }
    }
  }

  // Adam's state is allocated in the optimizer phase of iteration 0 and is what that phase leaves live:
  // exp_avg and exp_avg_sq per parameter (the 4-byte step tensors are below the minimum; the optimizer's
  // Python state dict is the small rest)
  const log_parse::BytesBy* optimizer = find_bytes(host.at_end.by_phase, "optimizer");
  ASSERT_NE(optimizer, nullptr);
  const double adam = 2.0 * 4.0 * static_cast<double>(parameter_count(x));
  EXPECT_NEAR(static_cast<double>(optimizer->bytes), adam, 0.01 * adam);
  EXPECT_GE(static_cast<double>(optimizer->bytes), adam);

  // backward attribution: each fc1 weight gradient ([ffn, h] fp32) is allocated while its module's
  // backward runs, in every iteration
  std::ostringstream jsonl;
  log_parse::export_trace_jsonl(files[0], jsonl);
  std::set<std::string> found;
  std::istringstream lines(jsonl.str());
  for (std::string line; std::getline(lines, line);) {
    const auto e = nlohmann::json::parse(line);
    if (e["action"] == "alloc" && e["phase"] == "backward" && e["size"] == x.ffn * x.h * 4)
      found.insert(e["marker"].get<std::string>() + "@" + std::to_string(e["iteration"].get<int>()));
  }
  for (int layer = 0; layer < 2; ++layer)
    for (int it = 0; it < 3; ++it)
      EXPECT_TRUE(
          found.count("decoder.layers." + std::to_string(layer) + ".mlp.linear_fc1@" + std::to_string(it)))
          << "layer " << layer << " iteration " << it;
}

// How the glue names modules (scripts/glue_naming.py): wrappers dropped, a second model chunk of the same
// class prefixed, a submodule renamed once its parent runs, explicit markers, no_grad forwards.
TEST(HookTorch, ModuleNamesAndMarkers) {
  if (!have_torch()) GTEST_SKIP() << "python3-torch is not installed";
  TempDir dir;
  RunResult r = run_shell(python_env(dir, "PREFLIGHT_TRACE_MIN_BYTES=1048576") + kPython + " " +
                          shell_quote(std::string(HOOK_SCRIPT_DIR) + "/glue_naming.py"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(r.out, "ok 5\n") << r.err;
  const auto files = trace_files(dir);
  ASSERT_EQ(files.size(), 1u);
  const log_parse::TraceSummary s = log_parse::summarize_trace(files[0]);
  const log_parse::SpaceSummary& host = s.spaces.at(0);
  auto allocs = [&](const std::string& marker) {
    const auto* m = find_marker(host, marker);
    return m ? m->allocs : 0;
  };
  constexpr std::uint64_t MiB = 1 << 20;
  EXPECT_EQ(allocs("block.proj"), 2u);         // chunk 0: with grad, then under no_grad
  EXPECT_EQ(allocs("chunk1.block.proj"), 1u);  // chunk 1
  EXPECT_EQ(allocs("Probe"), 1u);              // the submodule alone, before its parent ran
  EXPECT_EQ(allocs("probe"), 1u);              // the same module inside Outer
  EXPECT_EQ(allocs("data loading"), 2u);
  ASSERT_NE(find_marker(host, "data loading"), nullptr);
  EXPECT_EQ(find_marker(host, "data loading")->bytes_allocated, 2 * MiB);
  // the first forward of chunk 0 opens a forward pass; the no_grad forward does not
  ASSERT_GE(host.forward_passes.size(), 1u);
  const log_parse::BytesBy* kept = find_bytes(host.forward_passes[0].retained_by_marker, "block.proj");
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->bytes, MiB);
  std::uint64_t no_grad_forward = 0;
  for (const auto& fp : host.forward_passes)
    for (const auto& b : fp.retained_by_marker) no_grad_forward += b.key == "block.proj" ? 1 : 0;
  EXPECT_EQ(no_grad_forward, 1u);
}

// The torch >= 2.0 path, which Debian's torch 1.13 cannot exercise: a stand-in torch package with CUDA
// (scripts/fake_torch2) and the stand-in CUDA runtime.  `import torch` installs the pluggable allocator,
// module hooks and optimizer step hooks; device memory is then traced with module, phase and iteration.
TEST(HookTorch, Torch2PluggableAllocatorPath) {
  TempDir dir;
  const std::string scripts = HOOK_SCRIPT_DIR;
  RunResult r = run_shell(
      hook_env(dir,
               "PYTHONPATH=" +
                   shell_quote(std::string(PREFLIGHT_HOOK_PYTHONPATH) + ":" + scripts + "/fake_torch2") +
                   " PREFLIGHT_TRACE_HOST=0 PREFLIGHT_TRACE_CUDART=" + shell_quote(PREFLIGHT_FAKE_CUDART)) +
      kPython + " " + shell_quote(scripts + "/torch2_cuda.py"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const auto kv = parse_key_values(r.out);
  constexpr std::uint64_t MiB = 1 << 20;
  EXPECT_EQ(kv.at("allocator_installed"), 1u);
  EXPECT_EQ(kv.at("allocator_is_hook"), 1u);
  EXPECT_EQ(kv.at("allocated"), 4 * MiB + MiB / 2);
  EXPECT_EQ(kv.at("peak"), 4 * MiB + MiB / 2);
  EXPECT_EQ(kv.at("peak_after_reset"), 3 * MiB);
  EXPECT_EQ(kv.at("stats_current"), 3 * MiB);

  const auto files = trace_files(dir);
  ASSERT_EQ(files.size(), 1u);
  const log_parse::TraceSummary s = log_parse::summarize_trace(files[0]);
  ASSERT_EQ(s.spaces.size(), 1u);
  const log_parse::SpaceSummary& d = s.spaces[0];
  EXPECT_EQ(d.space, "cuda:0");
  EXPECT_EQ(d.allocs, 4u);
  EXPECT_EQ(d.at_peak.live_bytes, 4 * MiB + MiB / 2);
  EXPECT_EQ(d.peak_iteration, 1u);
  EXPECT_EQ(d.peak_phase, "forward");
  ASSERT_NE(find_marker(d, "layer"), nullptr);
  EXPECT_EQ(find_marker(d, "layer")->allocs, 2u);
  ASSERT_NE(find_marker(d, "Module"), nullptr);  // the top-level module is named by its class
  EXPECT_EQ(find_marker(d, "Module")->bytes_allocated, MiB / 2);
  const log_parse::BytesBy* optimizer = find_bytes(d.at_peak.by_phase, "optimizer");
  ASSERT_NE(optimizer, nullptr);
  EXPECT_EQ(optimizer->bytes, 2 * MiB);
  ASSERT_EQ(d.forward_passes.size(), 2u);
  EXPECT_EQ(d.forward_passes[0].retained_bytes, MiB + MiB / 2);
  EXPECT_EQ(d.forward_passes[1].iteration, 1u);
  std::ostringstream jsonl;
  log_parse::export_trace_jsonl(files[0], jsonl);
  EXPECT_NE(jsonl.str().find("\"stream\":48"), std::string::npos);
}

TEST(HookTorch, PythonWithoutTorchIsLeftAlone) {
  TempDir dir;
  RunResult r =
      run_shell(python_env(dir) + kPython +
                " -c 'import sys; print(\"torch\" in sys.modules, \"preflight_hook\" in sys.modules)'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "False True\n");
  EXPECT_EQ(trace_files(dir).size(), 1u);
}

// Under the pluggable allocator torch.cuda.memory_allocated() and friends cannot work; the glue answers
// them from the library's counters.  Checked with the stand-in runtime and direct calls of the allocator.
TEST(HookTorch, CudaMemoryQueriesAnsweredByTheLibrary) {
  if (!have_torch()) GTEST_SKIP() << "python3-torch is not installed";
  TempDir dir;
  const std::string py = R"(
import ctypes, torch, preflight_hook
preflight_hook._patch_cuda_stats(torch)
lib = ctypes.CDLL(None)
lib.preflight_cuda_malloc.restype = ctypes.c_void_p
lib.preflight_cuda_malloc.argtypes = [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
lib.preflight_cuda_free.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
a = lib.preflight_cuda_malloc(3 << 20, 0, None)
b = lib.preflight_cuda_malloc(1 << 20, 0, None)
lib.preflight_cuda_free(a, 3 << 20, 0, None)
print(torch.cuda.memory_allocated(0), torch.cuda.max_memory_allocated(0), torch.cuda.memory_stats(0)["allocated_bytes.all.peak"])
torch.cuda.reset_peak_memory_stats(0)
print(torch.cuda.max_memory_allocated(0), torch.cuda.memory_reserved(0))
)";
  RunResult r = run_shell(python_env(dir, "PREFLIGHT_TRACE_CUDART=" + shell_quote(PREFLIGHT_FAKE_CUDART)) +
                          kPython + " -c " + shell_quote(py));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1048576 4194304 4194304\n1048576 1048576\n");
}

}  // namespace
}  // namespace preflight::test
