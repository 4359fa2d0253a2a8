// Megatron-LM log lines: every shared sample asserted against numbers read off the files by hand (and medians
// worked out by hand), the 2026 format written from Megatron's f-strings, glued prints and cut lines.
#include <gtest/gtest.h>

#include <algorithm>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "log_fixtures.hpp"
#include "preflight/common/error.hpp"
#include "preflight/log_parse/megatron_log.hpp"
#include "test_support.hpp"

using namespace preflight::log_parse;
using namespace preflight::test;

namespace {

MegatronLog sample(const std::string& name) {
  return read_megatron_log(shared_data_dir() / "samples/megatron_logs" / name);
}

const MegatronMemoryLine* rank_line(const MegatronLog& log, int rank) {
  for (const auto& m : log.memory)
    if (m.rank == rank) return &m;
  return nullptr;
}

}  // namespace

// Written from training.py / report_memory f-strings (current main): "%Y-%m-%d %H:%M:%S.%f" stamps, 2-decimal
// memory values, total device memory used, energy fields, MoE and MTP losses.
TEST(MegatronLog, CurrentFormat) {
  std::string text =
      " [2026-03-01 10:00:00.123456] iteration       10/    1000 | consumed samples:         1280 | elapsed "
      "time per "
      "iteration (ms): 1234.5 | throughput per GPU (TFLOP/s/GPU): 456.7 | energy per GPU (J/iter/GPU): 890.1 "
      "| power "
      "per GPU (W/GPU): 700.0 | learning rate: 1.000000E-04 | global batch size:   128 | lm loss: "
      "2.500000E+00 | "
      "load_balancing_loss: 1.010000E+00 | mtp_1 loss: 2.600000E+00 | loss scale: 1.0 | grad norm: 0.500 | "
      "num "
      "zeros: 3.0 | params norm: 123.456 | number of skipped iterations:   0 | number of nan iterations:   1 "
      "|\n"
      "[Rank 7] (after 10 iterations) memory (MB) | allocated: 1234.56 | max allocated: 2345.67 | reserved: "
      "3000.00 | "
      "max reserved: 3100.00 | total device memory used: 3500.25\n"
      "Theoretical memory footprints: weight and optimizer=1000.50 MB, activation=200.25 MB, total=1200.75 "
      "MB\n";
  MegatronLog log = read_megatron_text(text, "new.log");
  ASSERT_EQ(log.iterations.size(), 1u);
  const MegatronIteration& it = log.iterations[0];
  EXPECT_EQ(it.timestamp, "2026-03-01 10:00:00.123456");
  EXPECT_EQ(it.iteration, 10);
  EXPECT_EQ(it.train_iters, 1000);
  EXPECT_EQ(it.consumed_samples, 1280);
  EXPECT_EQ(it.elapsed_ms, 1234.5);
  EXPECT_EQ(it.tflops_per_gpu, 456.7);
  EXPECT_EQ(it.learning_rate, 1e-4);
  EXPECT_EQ(it.global_batch_size, 128);
  EXPECT_EQ(it.lm_loss, 2.5);
  EXPECT_EQ(it.losses.at("load_balancing_loss"), 1.01);
  EXPECT_EQ(it.losses.at("mtp_1 loss"), 2.6);
  EXPECT_EQ(it.loss_scale, 1.0);
  EXPECT_EQ(it.grad_norm, 0.5);
  EXPECT_EQ(it.num_zeros, 3.0);
  EXPECT_EQ(it.params_norm, 123.456);
  EXPECT_EQ(it.skipped_iterations, 0);
  EXPECT_EQ(it.nan_iterations, 1);
  EXPECT_EQ(it.fields.at("energy per GPU (J/iter/GPU)"), "890.1");
  EXPECT_EQ(it.line, 1);
  ASSERT_EQ(log.memory.size(), 1u);
  EXPECT_EQ(log.memory[0].rank, 7);
  EXPECT_EQ(log.memory[0].after_iterations, 10);
  EXPECT_EQ(log.memory[0].allocated_mib, 1234.56);
  EXPECT_EQ(log.memory[0].max_allocated_mib, 2345.67);
  EXPECT_EQ(log.memory[0].reserved_mib, 3000.0);
  EXPECT_EQ(log.memory[0].max_reserved_mib, 3100.0);
  EXPECT_EQ(log.memory[0].total_device_used_mib, 3500.25);
  EXPECT_EQ(log.memory[0].line, 2);
  ASSERT_TRUE(log.theoretical);
  EXPECT_EQ(log.theoretical->weight_and_optimizer_mib, 1000.5);
  EXPECT_EQ(log.theoretical->activation_mib, 200.25);
  EXPECT_EQ(log.theoretical->total_mib, 1200.75);
  EXPECT_EQ(log.theoretical->line, 3);
}

// NeMo 2 / Megatron-Bridge's Lightning progress lines (written from the format NeMo's docs and recipes'
// READMEs print: "Training epoch E, iteration N/M | lr: … | global_batch_size: … | train_step_timing in s:
// …"), under a launcher's "name/0 [default0]:" prefix: the step time in seconds is the iteration time, with
// the batch, learning rate, samples and tokens per GPU; the steady state skips the first steps as for
// Megatron's lines.
TEST(MegatronLog, NemoLightningProgressLines) {
  std::string text =
      "retraining/0 [default0]:Training epoch 0, iteration 0/99 | lr: 9.804e-08 | global_batch_size: 128 | "
      "global_step: 0 | reduced_train_loss: 14.66 | train_step_timing in s: 25.276\n";
  for (int i = 1; i <= 6; ++i)
    text += "retraining/0 [default0]:Training epoch 0, iteration " + std::to_string(i) +
            "/99 | lr: 1.961e-07 | global_batch_size: 128 | global_step: " + std::to_string(i) +
            " | reduced_train_loss: 11.96 | train_step_timing in s: " + (i % 2 ? "12.39" : "12.41") +
            " | tokens_per_sec_per_gpu: 1.073e+04 | consumed_samples: " + std::to_string(128 * (i + 1)) +
            "\n";
  MegatronLog log = read_megatron_text(text, "nemo.log");
  ASSERT_EQ(log.iterations.size(), 7u);
  const MegatronIteration& it = log.iterations[3];
  EXPECT_EQ(it.iteration, 3);
  EXPECT_EQ(it.train_iters, 99);
  EXPECT_NEAR(*it.elapsed_ms, 12390.0, 1e-9);
  EXPECT_EQ(it.global_batch_size, 128);
  EXPECT_EQ(it.learning_rate, 1.961e-07);
  EXPECT_EQ(it.consumed_samples, 512);
  EXPECT_EQ(it.tokens_per_gpu_per_s, 1.073e4);
  EXPECT_EQ(it.losses.at("reduced_train_loss"), 11.96);
  std::vector<MegatronLog> logs{log};
  MegatronSummary s = summarize_megatron(logs);
  ASSERT_EQ(s.steady.size(), 1u);
  EXPECT_EQ(s.steady[0].warmup_lines, 3);  // the first line and iterations <= 2
  EXPECT_NEAR(*s.steady[0].median_elapsed_ms, (12390.0 + 12410.0) / 2, 1e-9);  // 12.39, 12.41, 12.39, 12.41
}

// ms-swift's records: Megatron-SWIFT's str() of a dict on stdout (after tqdm's bar) and its logging.jsonl
// lines (swift/megatron/callbacks/print.py; the transformers trainer's `global_step/max_steps` alike).
// train_speed(s/it) is the running average since the start: an iteration's time is the interval since the
// previous record — here 0.6 s a step after a 3 s first step (records at steps 1, 5, 10).
TEST(MegatronLog, MsSwiftRecords) {
  const std::string text =
      "Train:   1%|          | 1/100 [00:03<05:00]{'loss': '2.031', 'grad_norm': '1.2', 'lr': '1e-05', "
      "'iteration': '1/100', 'elapsed_time': '3s', 'memory(GiB)': 39.6, 'train_speed(s/it)': 3.0}\n"
      "{'loss': '1.98', 'lr': '1e-05', 'iteration': '5/100', 'memory(GiB)': 39.6, 'train_speed(s/it)': "
      "1.08}\n"
      "{\"loss\": 1.9, \"learning_rate\": 1e-05, \"global_step/max_steps\": \"10/100\", \"memory(GiB)\": "
      "39.7, "
      "\"train_speed(s/it)\": 0.84}\n";
  MegatronLog log = read_megatron_text(text, "swift.log");
  ASSERT_EQ(log.iterations.size(), 3u);
  EXPECT_EQ(log.iterations[0].iteration, 1);
  EXPECT_EQ(log.iterations[0].train_iters, 100);
  EXPECT_NEAR(*log.iterations[0].elapsed_ms, 3000.0, 1e-9);
  EXPECT_NEAR(*log.iterations[1].elapsed_ms, 600.0, 1e-6);  // (1.08 · 5 − 3 · 1) / 4
  EXPECT_NEAR(*log.iterations[2].elapsed_ms, 600.0, 1e-6);  // (0.84 · 10 − 1.08 · 5) / 5
  EXPECT_EQ(log.iterations[2].learning_rate, 1e-05);
  EXPECT_EQ(*log.iterations[1].lm_loss, 1.98);
  EXPECT_EQ(log.iterations[2].fields.at("memory(GiB)"), "39.7");
  // a record without its step is said and left out
  MegatronLog bad = read_megatron_text("{'loss': '2.0', 'train_speed(s/it)': 1.0}\n", "swift.log");
  EXPECT_TRUE(bad.iterations.empty());
  ASSERT_FALSE(bad.notes.empty());
  EXPECT_NE(bad.notes[0].find("ms-swift record without its step"), std::string::npos) << bad.notes[0];
}

// NeMo 1 (PyTorch Lightning) progress bars, refreshed with '\r' in one physical line: each refresh with
// `train_step_timing in s=` is an iteration (global_step + 1), a repeated refresh of a step replaces it, a
// bar without the step time is skipped, and a bar cut before its ']' is marked.
TEST(MegatronLog, NemoOneLightningProgressBars) {
  const std::string text =
      "Epoch 0: :   0%|          | 1/100 [00:30<49:30, reduced_train_loss=11.20, global_step=0.000, "
      "consumed_samples=256.0, train_step_timing in s=29.80]\r"
      "Epoch 0: :   1%|          | 1/100 [00:31<49:31, reduced_train_loss=11.20, global_step=0.000, "
      "consumed_samples=256.0, train_step_timing in s=29.80]\r"
      "Epoch 0: :   2%|▏         | 2/100 [00:36<29:30, reduced_train_loss=11.10, global_step=1.000, "
      "lr=0.0003, "
      "consumed_samples=512.0, train_step_timing in s=6.120]\r"
      "Validation DataLoader 0:  50%|█████     | 1/2 [00:01<00:01]\r"
      "Epoch 0: :   3%|▎         | 3/100 [00:42<22:30, reduced_train_loss=10.90, global_step=2.000, "
      "consumed_samples=768.0, train_step_timing in s=6.100]\n"
      "Epoch 0: :   4%|▍         | 4/100 [00:48<19:30, reduced_train_loss=10.70, global_step=3.000, "
      "consumed_samples=1024.0, train_step_timing in s=6.0";
  MegatronLog log = read_megatron_text(text, "nemo.log");
  ASSERT_EQ(log.iterations.size(), 4u);
  EXPECT_EQ(log.iterations[0].iteration, 1);
  EXPECT_EQ(log.iterations[0].train_iters, 100);
  EXPECT_NEAR(*log.iterations[0].elapsed_ms, 29800.0, 1e-6);
  EXPECT_EQ(log.iterations[1].iteration, 2);
  EXPECT_NEAR(*log.iterations[1].elapsed_ms, 6120.0, 1e-6);
  EXPECT_EQ(*log.iterations[1].learning_rate, 0.0003);
  EXPECT_EQ(*log.iterations[1].consumed_samples, 512);
  EXPECT_EQ(*log.iterations[2].lm_loss, 10.90);
  EXPECT_EQ(log.iterations[2].line, 1);
  EXPECT_EQ(log.iterations[3].line, 2);
  EXPECT_TRUE(log.iterations[3].unterminated);
  EXPECT_FALSE(log.iterations[2].unterminated);
}

// NeMo 2's progress printer (nemo/lightning/pytorch/callbacks/progress_printer.py): one line a step,
// "Training epoch E, iteration I/N | key: value | …" with `train_step_timing in s`; the epoch in front is its
// prefix, not another print glued on.
TEST(MegatronLog, NemoTwoProgressPrinter) {
  const std::string text =
      "Training epoch 0, iteration 0/49 | lr: 1.5e-07 | global_batch_size: 128 | global_step: 0 | "
      "reduced_train_loss: 11.03 | train_step_timing in s: 12.47\n"
      "Training epoch 0, iteration 1/49 | lr: 3e-07 | global_batch_size: 128 | global_step: 1 | "
      "reduced_train_loss: 11.02 | train_step_timing in s: 4.61 | consumed_samples: 256\n";
  MegatronLog log = read_megatron_text(text, "nemo2.log");
  ASSERT_EQ(log.iterations.size(), 2u);
  EXPECT_NEAR(*log.iterations[0].elapsed_ms, 12470.0, 1e-6);
  EXPECT_NEAR(*log.iterations[1].elapsed_ms, 4610.0, 1e-6);
  EXPECT_EQ(log.iterations[1].iteration, 1);
  EXPECT_EQ(log.iterations[1].train_iters, 49);
  EXPECT_TRUE(std::none_of(log.notes.begin(), log.notes.end(),
                           [](const std::string& n) { return n.find("glued") != std::string::npos; }));
}

// Megatron-DeepSpeed's BigScience fork prints the iteration time in seconds (BLOOM-176B's README line of
// iteration 85376, under the launcher's "[default7]:" prefix): read as milliseconds.
// The parallel sizes line as Megatron's format string printed it in two releases that lost a comma: 2024's
// "context-parallel size: 1 tensor-model-parallel size: 4" (NVIDIA/Megatron-LM issue 756's log) and the
// later "hierarchical context-parallel sizes: None" glued to "tensor-model-parallel size".  The first had
// been read as context parallel 4 and no tensor size.
TEST(MegatronLog, ParallelSizesLineWithoutItsCommas) {
  MegatronLog a = read_megatron_text(
      "using world size: 16, data-parallel size: 4, context-parallel size: 1 tensor-model-parallel size: 4, "
      "pipeline-model-parallel size: 1 \n",
      "2024.log");
  EXPECT_EQ(a.sizes.at("world"), 16);
  EXPECT_EQ(a.sizes.at("data"), 4);
  EXPECT_EQ(a.sizes.at("context"), 1);
  EXPECT_EQ(a.sizes.at("tensor"), 4);
  EXPECT_EQ(a.sizes.at("pipeline"), 1);
  MegatronLog b = read_megatron_text(
      "using world size: 8, data-parallel size: 2, context-parallel size: 1, hierarchical context-parallel "
      "sizes: Nonetensor-model-parallel size: 2, encoder-tensor-model-parallel size: 0, "
      "pipeline-model-parallel "
      "size: 2, encoder-pipeline-model-parallel size: 0\n",
      "2025.log");
  EXPECT_EQ(b.sizes.at("tensor"), 2);
  EXPECT_EQ(b.sizes.at("pipeline"), 2);
  EXPECT_EQ(b.sizes.at("encoder-tensor"), 0);
  EXPECT_EQ(b.sizes.at("encoder-pipeline"), 0);
  EXPECT_EQ(b.sizes.size(), 7u);  // world, data, context, tensor, encoder-tensor, pipeline, encoder-pipeline
}

TEST(MegatronLog, IterationTimeInSeconds) {
  std::string text;
  for (int i = 0; i < 4; ++i)
    text +=
        "[default7]: iteration   " + std::to_string(85375 + i) +
        "/ 115311 | consumed samples:   158692272 | consumed tokens: 325001773056 | elapsed time per "
        "iteration "
        "(s): " +
        (i % 2 ? "104.70" : "105.30") +
        " | learning rate: 1.150E-05 | global batch size: 2048 | lm loss: 1.979558E+00 | grad norm: 0.132 | "
        "num zeros: 0.0 | number of skipped iterations:  0 | number of nan iterations:  0 | samples per "
        "second: 19.561 | TFLOPs: 149.77 |\n";
  MegatronLog log = read_megatron_text(text, "bloom.log");
  ASSERT_EQ(log.iterations.size(), 4u);
  EXPECT_NEAR(*log.iterations[1].elapsed_ms, 104700.0, 1e-6);
  EXPECT_EQ(log.iterations[1].tflops_per_gpu, 149.77);
  EXPECT_EQ(log.iterations[1].global_batch_size, 2048);
  std::vector<MegatronLog> logs{log};
  const MegatronSummary s = summarize_megatron(logs);
  ASSERT_EQ(s.steady.size(), 1u);
  EXPECT_NEAR(*s.steady[0].median_elapsed_ms, 104700.0, 1e-6);  // 104.70, 105.30, 104.70 after the first
}

TEST(MegatronLog, OldTheoreticalLineWithoutActivation) {
  MegatronLog log =
      read_megatron_text("Theoretical memory footprints: weight and optimizer=6816.88 MB\n", "x");
  ASSERT_TRUE(log.theoretical);
  EXPECT_EQ(log.theoretical->weight_and_optimizer_mib, 6816.88);
  EXPECT_FALSE(log.theoretical->activation_mib);
}

TEST(MegatronLog, CutLastLinesAreKeptApart) {
  std::string text =
      " iteration       10/    1000 | consumed samples:         1280 | elapsed time per iteration (ms): "
      "100.0 |\n"
      " iteration       20/    1000 | consumed samples:         2560 | elapsed time per iteration (ms): "
      "150.0 |\n"
      "[Rank 0] (after 20 iterations) memory (MB) | allocated: 1.0 | max allocated: 2.0 | reserved: 3.0 | "
      "max res";
  MegatronLog log = read_megatron_text(text, "cut.log");
  EXPECT_TRUE(log.partial_last_line);
  EXPECT_EQ(log.lines, 3);
  EXPECT_TRUE(log.memory.empty());  // the cut memory line is not read as numbers
  ASSERT_EQ(log.iterations.size(), 2u);
  bool noted = false;
  for (const auto& n : log.notes)
    noted |= n.find("memory line of rank 0 cut at the end of the file") != std::string::npos;
  EXPECT_TRUE(noted);
  std::string cut_iteration =
      text.substr(0, text.find("[Rank")) + " iteration       30/    1000 | elapsed time per iter";
  MegatronLog l2 = read_megatron_text(cut_iteration, "cut2.log");
  ASSERT_EQ(l2.iterations.size(), 3u);
  EXPECT_TRUE(l2.iterations[2].unterminated);
  std::vector<MegatronLog> logs{l2};
  MegatronSummary s = summarize_megatron(logs);
  ASSERT_EQ(s.steady.size(), 1u);
  EXPECT_EQ(s.steady[0].iteration_lines, 2);  // the cut line does not count
}

TEST(MegatronLog, BinaryIsAnError) {
  std::string text("iteration\0\0\0", 12);
  try {
    read_megatron_text(text, "bin.log");
    FAIL();
  } catch (const preflight::InputError& e) {
    EXPECT_EQ(std::string(e.what()), "bin.log@9: NUL byte: not a text log");
  }
}

TEST(MegatronLogShared, Gpt2FourWayDataParallel2023) {
  if (!shared_data_available()) GTEST_SKIP() << shared_data_missing();
  MegatronLog log = sample("llm_action_gpt2_345m_4dp_2023.log");
  EXPECT_EQ(log.sizes.at("world"), 4);
  EXPECT_EQ(log.sizes.at("data"), 4);
  EXPECT_EQ(log.sizes.at("tensor"), 1);
  EXPECT_EQ(log.sizes.at("pipeline"), 1);
  EXPECT_EQ(log.micro_batches, 2);
  EXPECT_EQ(log.args.at("seq_length"), "1024");
  ASSERT_EQ(log.iterations.size(), 13u);
  const MegatronIteration& first = log.iterations[0];
  EXPECT_EQ(first.line, 334);
  EXPECT_EQ(first.iteration, 100);
  EXPECT_EQ(first.train_iters, 5000);
  EXPECT_EQ(first.elapsed_ms, 296.8);
  EXPECT_EQ(first.learning_rate, 3.937e-06);  // 3-decimal lr of 2023
  EXPECT_EQ(first.lm_loss, 9.729805);
  EXPECT_EQ(first.timestamp, "");
  ASSERT_EQ(log.memory.size(), 1u);
  EXPECT_EQ(log.memory[0].line, 335);
  EXPECT_EQ(log.memory[0].allocated_mib, 6816.88818359375);
  EXPECT_EQ(log.memory[0].max_allocated_mib, 8696.8515625);
  EXPECT_EQ(log.memory[0].reserved_mib, 8786.0);
  ASSERT_EQ(log.rank_params.size(), 1u);
  EXPECT_EQ(log.rank_params[0].parameters, 354871296);
  std::vector<MegatronLog> logs{log};
  MegatronSummary s = summarize_megatron(logs);
  ASSERT_EQ(s.steady.size(), 1u);
  EXPECT_EQ(s.steady[0].warmup_lines, 1);
  EXPECT_DOUBLE_EQ(*s.steady[0].median_elapsed_ms, 290.9);  // 12 lines after the first: (290.9 + 290.9) / 2
  EXPECT_NEAR(*s.steady[0].tokens_per_s, 8 * 1024 / 0.2909, 1e-6);
}

TEST(MegatronLogShared, Gpt2PipelineAndTensorParallel2023) {
  if (!shared_data_available()) GTEST_SKIP() << shared_data_missing();
  MegatronLog pp4 = sample("llm_action_gpt2_345m_pp4_2023.log");
  EXPECT_EQ(pp4.sizes.at("pipeline"), 4);
  ASSERT_EQ(pp4.memory.size(), 4u);
  EXPECT_EQ(rank_line(pp4, 0)->max_allocated_mib, 7643.34033203125);
  EXPECT_EQ(rank_line(pp4, 1)->max_allocated_mib, 5477.08251953125);
  EXPECT_EQ(rank_line(pp4, 2)->max_allocated_mib, 4104.89501953125);
  EXPECT_EQ(rank_line(pp4, 3)->max_allocated_mib, 4390.34521484375);
  EXPECT_EQ(rank_line(pp4, 3)->reserved_mib, 4522.0);
  EXPECT_EQ(rank_line(pp4, 2)->line, 345);
  ASSERT_EQ(pp4.rank_params.size(), 4u);
  EXPECT_EQ(pp4.rank_params[3].coords, (std::vector<int>{0, 0}));
  EXPECT_EQ(pp4.rank_params[3].parameters, 128137216);
  EXPECT_EQ(pp4.rank_params[2].coords, (std::vector<int>{0, 3}));
  EXPECT_EQ(pp4.rank_params[2].parameters, 127090688);
  EXPECT_EQ(pp4.iterations.size(), 20u);

  MegatronLog tp2pp2 = sample("llm_action_gpt2_345m_tp2pp2_2023.log");
  EXPECT_EQ(tp2pp2.iterations.size(), 5u);
  EXPECT_EQ(tp2pp2.iterations[0].skipped_iterations, 15);
  EXPECT_EQ(tp2pp2.iterations[0].loss_scale, 262144.0);
  EXPECT_EQ(rank_line(tp2pp2, 0)->max_allocated_mib, 7253.22705078125);
  EXPECT_EQ(rank_line(tp2pp2, 3)->max_reserved_mib, 5968.0);
  EXPECT_EQ(rank_line(tp2pp2, 2)->max_reserved_mib, 5718.0);
  EXPECT_EQ(tp2pp2.rank_params.size(), 4u);
  EXPECT_EQ(tp2pp2.rank_params[1].axes, (std::vector<std::string>{"tensor", "pipeline"}));
  EXPECT_EQ(tp2pp2.rank_params[1].parameters, 101437440);

  MegatronLog tp4 = sample("llm_action_gpt2_345m_tp4_2023.log");
  EXPECT_EQ(tp4.sizes.at("tensor"), 4);
  EXPECT_EQ(rank_line(tp4, 3)->allocated_mib, 1795.06005859375);
  EXPECT_EQ(tp4.rank_params[0].parameters, 89714688);

  std::vector<MegatronLog> logs{pp4, tp2pp2, tp4};
  MegatronSummary s = summarize_megatron(logs);
  ASSERT_EQ(s.steady.size(), 3u);
  EXPECT_DOUBLE_EQ(*s.steady[0].median_elapsed_ms, 381.3);                  // 10th of 19
  EXPECT_DOUBLE_EQ(*s.steady[1].median_elapsed_ms, (1031.7 + 1082.6) / 2);  // 4 lines after the first
  EXPECT_DOUBLE_EQ(*s.steady[2].median_elapsed_ms, 2701.1);
  // Ranks merged across the three runs: rank 0's highest max allocated is pp4's (7643 > 7253 > 3059).
  ASSERT_EQ(s.ranks.size(), 4u);
  EXPECT_EQ(s.ranks[0].max_allocated_mib, 7643.34033203125);  // pp4 rank 0 is higher
  EXPECT_EQ(s.ranks[0].line, 346);
  EXPECT_EQ(s.ranks[0].reports, 3);
}

TEST(MegatronLogShared, Gpt2SingleGpuResumedRun) {
  if (!shared_data_available()) GTEST_SKIP() << shared_data_missing();
  MegatronLog log = sample("llm_action_gpt2_345m_1gpu_2023.log");
  EXPECT_TRUE(log.iterations.empty());  // resumed at the last iteration: training ends at once
  EXPECT_TRUE(log.memory.empty());
  EXPECT_EQ(log.sizes.at("world"), 1);
  EXPECT_EQ(log.micro_batches, 2);
  ASSERT_EQ(log.rank_params.size(), 1u);
  EXPECT_EQ(log.rank_params[0].parameters, 354871296);
  EXPECT_EQ(log.rank_params[0].line, 266);
  EXPECT_EQ(log.args.at("global_batch_size"), "2");
}

TEST(MegatronLogShared, LingV2With2025Timestamps) {
  if (!shared_data_available()) GTEST_SKIP() << shared_data_missing();
  MegatronLog log = sample("ling_v2_megatron_pretrain_example_2025.log");
  ASSERT_EQ(log.iterations.size(), 10u);
  EXPECT_EQ(log.iterations[0].timestamp, "2025-09-05 16:08:14");
  EXPECT_EQ(log.iterations[0].elapsed_ms, 79489.9);
  EXPECT_EQ(log.iterations[0].tflops_per_gpu, 18.0);
  EXPECT_EQ(log.iterations[0].learning_rate, 2.999998e-05);
  EXPECT_EQ(log.iterations[0].losses.at("z_loss"), 10.91659);
  EXPECT_EQ(log.iterations[0].losses.at("mtp_1 loss"), 2.828435);
  EXPECT_EQ(log.iterations[9].iteration, 10);
  ASSERT_EQ(log.memory.size(), 1u);
  EXPECT_EQ(log.memory[0].max_allocated_mib, 63359.77001953125);
  EXPECT_EQ(log.memory[0].after_iterations, 1);
  std::vector<MegatronLog> logs{log};
  MegatronSummary s = summarize_megatron(logs);
  EXPECT_EQ(s.steady[0].warmup_lines, 2);  // iterations 1 and 2
  EXPECT_DOUBLE_EQ(*s.steady[0].median_elapsed_ms, (10765.6 + 10767.4) / 2);
  EXPECT_DOUBLE_EQ(*s.steady[0].median_tflops_per_gpu, 133.1);
}

TEST(MegatronLogShared, IssueAndForkExcerpts) {
  if (!shared_data_available()) GTEST_SKIP() << shared_data_missing();
  MegatronLog moe = sample("issue_nvidia_megatron_756_mixtral_h100_excerpt.log");
  ASSERT_EQ(moe.iterations.size(), 2u);
  EXPECT_EQ(moe.iterations[0].timestamp, "2024-04-06 02:55:45");
  EXPECT_EQ(moe.iterations[0].tflops_per_gpu, 231.9);
  EXPECT_EQ(moe.iterations[0].losses.at("load_balancing_loss"), 1.087362);
  EXPECT_EQ(moe.iterations[0].num_zeros, 0.0);
  EXPECT_EQ(moe.iterations[1].grad_norm, 6.603);
  ASSERT_EQ(moe.memory.size(), 1u);
  EXPECT_EQ(moe.memory[0].rank, 1);
  EXPECT_EQ(moe.memory[0].max_allocated_mib, 54250.98583984375);
  EXPECT_EQ(moe.memory[0].max_reserved_mib, 61480.0);

  MegatronLog epfl = sample("issue_epfllm_megatron_llm_11_excerpt.log");
  ASSERT_EQ(epfl.iterations.size(), 4u);
  EXPECT_EQ(epfl.iterations[0].iteration, 122);
  EXPECT_EQ(epfl.iterations[0].train_iters, 250000);
  EXPECT_EQ(epfl.iterations[0].learning_rate, 9.150e-06);
  EXPECT_EQ(epfl.iterations[3].elapsed_ms, 89075.2);
  EXPECT_EQ(epfl.iterations[3].grad_norm, 0.356);

  // A "Number of active parameters…" print glued to the end of an iteration line.
  MegatronLog glued = sample("issue_flagos_megatron_lm_fl_45_interleaved_excerpt.log");
  ASSERT_EQ(glued.iterations.size(), 1u);
  EXPECT_EQ(glued.iterations[0].timestamp, "2026-05-31 12:11:53.218342");
  EXPECT_EQ(glued.iterations[0].tflops_per_gpu, 16.6);
  EXPECT_EQ(glued.iterations[0].nan_iterations, 0);
  EXPECT_EQ(glued.iterations[0].fields.count("Number of active parameters in transformer block in billions"),
            0u);
  EXPECT_EQ(glued.billions("parameters in transformer block"), 1.35);
  EXPECT_EQ(glued.billions("active parameters in transformer block"), 0.44);
  ASSERT_EQ(glued.param_counts.size(), 2u);
  EXPECT_EQ(glued.param_counts[1].line, 3);

  MegatronLog fs = sample("flagscale_pr454_theoretical_memory_excerpt.log");
  ASSERT_TRUE(fs.theoretical);
  EXPECT_EQ(fs.theoretical->weight_and_optimizer_mib, 46983.28);
  EXPECT_EQ(fs.theoretical->activation_mib, 8989.01);
  EXPECT_EQ(fs.theoretical->total_mib, 55972.29);
  EXPECT_EQ(fs.billions("parameters in transformer block"), 14.86);
  EXPECT_EQ(fs.billions("parameters in embedding layers"), 1.56);
  EXPECT_EQ(fs.billions("total parameters"), 16.42);
  EXPECT_EQ(fs.billions("parameters in most loaded shard"), 4.1055);
  EXPECT_EQ(fs.billions("attn parameters in a transformer block"), 0.06);

  MegatronLog ds = sample("megatron_deepspeed_alcf_polaris_2024.log");
  ASSERT_EQ(ds.iterations.size(), 2u);
  EXPECT_EQ(ds.iterations[0].tokens_per_gpu_per_s, 775.25);
  EXPECT_EQ(ds.iterations[1].tflops_per_gpu, 98.29);  // the fork's "TFLOPs" field
  EXPECT_EQ(ds.iterations[0].fields.at("consumed tokens"), "131072");
  EXPECT_EQ(ds.iterations[0].fields.at("actual seqlen"), "4096");
  ASSERT_EQ(ds.memory.size(), 2u);  // DeepSpeed's "[Rank 0] time (ms)" lines are not memory lines
  EXPECT_EQ(rank_line(ds, 1)->max_reserved_mib, 35824.0);
  EXPECT_EQ(rank_line(ds, 0)->max_reserved_mib, 32994.0);
}

TEST(LogsMegatronCli, TablesAndJson) {
  if (!shared_data_available()) GTEST_SKIP() << shared_data_missing();
  std::string dir = (shared_data_dir() / "samples/megatron_logs").string();
  RunResult r =
      run_preflight("logs megatron " + shell_quote(dir + "/llm_action_gpt2_345m_pp4_2023.log") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ranks"].size(), 4u);
  EXPECT_EQ(j["ranks"][3]["max_allocated_mib"], 4390.34521484375);
  EXPECT_EQ(j["ranks"][3]["line"], 349);
  EXPECT_EQ(j["steady_state"][0]["median_elapsed_ms"], 381.3);
  r = run_preflight("logs megatron " + shell_quote(dir + "/llm_action_gpt2_345m_tp2pp2_2023.log"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("7253.23"), std::string::npos) << r.out;
  r = run_preflight("logs megatron /nonexistent/x.log");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("preflight: error: /nonexistent/x.log: cannot open"), std::string::npos) << r.err;
}

// A directory names every log under it (torchrun --log-dir's <run>/attempt_0/<local rank>/stdout.log), read
// as the files one by one; a directory without one is an error naming it.
TEST(LogsMegatronCli, DirectoryOfRankLogs) {
  namespace fs = std::filesystem;
  const fs::path dir = preflight::test::scratch_dir() / "torchrun_logs";
  fs::remove_all(dir);
  for (int r = 0; r < 2; ++r) {
    fs::create_directories(dir / "run" / "attempt_0" / std::to_string(r));
    std::ofstream(dir / "run" / "attempt_0" / std::to_string(r) / "stdout.log")
        << " [2026-11-27 10:00:0" << r << "] iteration        3/     100 | consumed samples:          768 | "
        << "elapsed time per iteration (ms): " << (r == 0 ? "1228.0" : "1240.0")
        << " | learning rate: 1.000000E-05 | global batch size:   256 | lm loss: 1.003800E+01 |\n"
        << "[Rank " << r << "] (after 3 iterations) memory (MB) | allocated: 1000.0 | max allocated: "
        << (r == 0 ? "5000.5" : "6000.5") << " | reserved: 7000.0 | max reserved: 7000.0\n";
  }
  std::ofstream(dir / "run" / "notes.json") << "{}";  // not a log: skipped
  RunResult r = run_preflight("logs megatron " + shell_quote(dir.string()) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["ranks"].size(), 2u);
  EXPECT_EQ(j["ranks"][1]["max_allocated_mib"], 6000.5);
  EXPECT_NE(j["ranks"][1]["file"].get<std::string>().find("attempt_0/1/stdout.log"), std::string::npos);
  fs::create_directories(dir / "empty");
  r = run_preflight("logs megatron " + shell_quote((dir / "empty").string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("empty: no log (*.log, *.txt, *.out, *.err, *.jsonl) under this directory"),
            std::string::npos)
      << r.err;
  // Logs without a single Megatron record (the wrong file, a job that died before training printed
  // anything): an error naming the file, not an empty summary and success.
  std::ofstream(dir / "empty" / "stdout.log") << "Traceback (most recent call last):\n  File \"x.py\"\n";
  r = run_preflight("logs megatron " + shell_quote((dir / "empty" / "stdout.log").string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(
                "stdout.log: no Megatron memory, iteration, parameter-count or argument line in its 2 lines"),
            std::string::npos)
      << r.err;
  std::ofstream(dir / "empty" / "stderr.err") << "";
  r = run_preflight("logs megatron " + shell_quote((dir / "empty").string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("in any of the 2 logs (2 lines)"), std::string::npos) << r.err;
}

// Megatron-DeepSpeed logs (tests/data/megatron_logs, quoted from public issues): torchrun's `--tee` prefix on
// every line, the argument dump behind it, and DeepSpeed's see_memory_usage reports (message, then MA /
// Max_MA / CA / Max_CA in GB); values read off the files by hand.
TEST(MegatronLog, MegatronDeepSpeedTeePrefixAndSeeMemoryUsage) {
  MegatronLog a =
      read_megatron_log(data_dir() / "megatron_logs/bigscience_megatron_deepspeed_issue356_excerpt.log");
  EXPECT_EQ(a.sizes.at("world"), 16);
  EXPECT_EQ(a.sizes.at("data"), 8);
  EXPECT_EQ(a.sizes.at("pipeline"), 2);
  EXPECT_EQ(a.args.at("adam_beta2"), "0.95");
  EXPECT_EQ(a.args.at("attention_dropout"), "0.1");
  EXPECT_EQ(a.args.at("bf16"), "False");
  EXPECT_EQ(a.args.size(), 15u);
  ASSERT_EQ(a.deepspeed_memory.size(), 1u);
  EXPECT_EQ(a.deepspeed_memory[0].label, "Before Building Model");
  EXPECT_EQ(a.deepspeed_memory[0].line, 23);
  EXPECT_EQ(a.deepspeed_memory[0].max_reserved_gib, 0);

  MegatronLog b =
      read_megatron_log(data_dir() / "megatron_logs/deepspeed_pr2620_see_memory_usage_excerpt.log");
  ASSERT_EQ(b.deepspeed_memory.size(), 2u);
  EXPECT_EQ(b.deepspeed_memory[0].label, "DeepSpeed Engine: After args sanity test");
  EXPECT_DOUBLE_EQ(b.deepspeed_memory[0].allocated_gib, 6.63);
  EXPECT_DOUBLE_EQ(b.deepspeed_memory[0].max_allocated_gib, 6.63);
  EXPECT_DOUBLE_EQ(b.deepspeed_memory[0].reserved_gib, 6.63);
  EXPECT_DOUBLE_EQ(b.deepspeed_memory[0].max_reserved_gib, 7);
  EXPECT_EQ(b.deepspeed_memory[1].label, "DeepSpeed Engine: Before configure distributed model");
  EXPECT_EQ(b.deepspeed_memory[1].line, 5);
  EXPECT_TRUE(b.notes.empty());
  std::vector<MegatronLog> logs{b};
  MegatronSummary s = summarize_megatron(logs);
  EXPECT_NE(
      megatron_text(logs, s).find("DeepSpeed see_memory_usage (line 2) DeepSpeed Engine: After args sanity "
                                  "test: allocated 6.63 GiB"),
      std::string::npos);
  EXPECT_EQ(megatron_json(logs, s)["files"][0]["deepspeed_memory"][1]["max_allocated_gib"], 6.63);
}

// Memory printed inside the iteration line, written from the forks' f-strings: ROCm/Megatron-LM's (and AMD
// Primus's) " mem usages: {:.4f} |" — 1 − free / total of the device, cudaMemGetInfo —, and MindSpeed-LLM's
// FSDP2 trainer's " max_memory_allocated(GB): {:.2f} | max_memory_reserved(GB): {:.2f} |" — torch's peaks,
// the largest over the ranks, in GiB — behind its "INFO [stamp] >> " prefix.  The numbers are those of
// published runs (an MI300X Llama-2 7B FP8 step of ROCm/Megatron-LM rocm_dev, MindSpeed-LLM's FSDP2 quick
// start).  The steady state keeps the largest of each over every line, the warm-up included (a peak can come
// early).
TEST(MegatronLog, MemoryInsideTheIterationLine) {
  const std::string rocm =
      " [2025-08-13 03:42:17] iteration       49/      50 | consumed samples:        12544 | elapsed time "
      "per "
      "iteration (ms): 10240.1 | mem usages: 0.7496 | throughput per GPU (TFLOP/s/GPU): 590.0 | learning "
      "rate: "
      "9.999999E-05 | global batch size:   256 | lm loss: 7.301000E+00 | loss scale: 1.0 | grad norm: 1.600 "
      "| "
      "number of skipped iterations:   0 | number of nan iterations:   0 |\n"
      " [2025-08-13 03:42:28] iteration       50/      50 | consumed samples:        12800 | elapsed time "
      "per "
      "iteration (ms): 10235.8 | mem usages: 0.7494 | throughput per GPU (TFLOP/s/GPU): 590.2 | learning "
      "rate: "
      "9.999999E-05 | global batch size:   256 | lm loss: 7.272264E+00 | loss scale: 1.0 | grad norm: 1.571 "
      "| "
      "number of skipped iterations:   0 | number of nan iterations:   0 |\n";
  const std::string fsdp2 =
      "INFO [2026-06-22 19:25:37] >>  iteration        1/    2000 | consumed samples:          8 | consumed "
      "tokens:        564 | elapsed time per iteration (ms): 7827.39 | learning rate: 1.666667E-07 | global "
      "batch size:     8 | lm loss: 3.316887E+00 | grad norm: 70.959 | max_memory_allocated(GB): 19.07 | "
      "max_memory_reserved(GB): 20.90 |\n"
      "INFO [2026-06-22 19:25:38] >>  iteration        2/    2000 | consumed samples:         16 | consumed "
      "tokens:       1357 | elapsed time per iteration (ms): 1331.74 | learning rate: 3.333333E-07 | global "
      "batch size:     8 | lm loss: 2.443476E+00 | grad norm: 41.986 | max_memory_allocated(GB): 19.07 | "
      "max_memory_reserved(GB): 22.43 |\n"
      "INFO [2026-06-22 19:25:38] >>  iteration        3/    2000 | consumed samples:         24 | consumed "
      "tokens:       2113 | elapsed time per iteration (ms): 981.08 | learning rate: 5.000000E-07 | global "
      "batch size:     8 | lm loss: 2.669216E+00 | grad norm: 45.335 | max_memory_allocated(GB): 19.07 | "
      "max_memory_reserved(GB): 22.43 |\n";
  std::vector<MegatronLog> logs{read_megatron_text(rocm, "rocm.log"), read_megatron_text(fsdp2, "fsdp2.log")};
  ASSERT_EQ(logs[0].iterations.size(), 2u);
  EXPECT_DOUBLE_EQ(*logs[0].iterations[1].device_used_fraction, 0.7494);
  EXPECT_FALSE(logs[0].iterations[1].max_allocated_gib);
  ASSERT_EQ(logs[1].iterations.size(), 3u);
  EXPECT_EQ(logs[1].iterations[2].iteration, 3);
  EXPECT_DOUBLE_EQ(*logs[1].iterations[2].elapsed_ms, 981.08);
  EXPECT_DOUBLE_EQ(*logs[1].iterations[0].max_reserved_gib, 20.90);
  EXPECT_TRUE(logs[1].notes.empty());  // the INFO prefix is not a glued record
  MegatronSummary s = summarize_megatron(logs);
  ASSERT_EQ(s.steady.size(), 2u);
  EXPECT_DOUBLE_EQ(*s.steady[0].max_device_used_fraction, 0.7496);  // the warm-up line's, the larger
  EXPECT_DOUBLE_EQ(*s.steady[1].max_allocated_gib, 19.07);
  EXPECT_DOUBLE_EQ(*s.steady[1].max_reserved_gib, 22.43);
  EXPECT_FALSE(s.steady[1].max_device_used_fraction);
  const std::string text = megatron_text(logs, s);
  EXPECT_NE(text.find("rocm.log: device memory in use up to 74.96 %"), std::string::npos) << text;
  EXPECT_NE(
      text.find("fsdp2.log: iteration lines' peak memory (largest over the ranks): max allocated 19.07 GiB, "
                "max reserved 22.43 GiB"),
      std::string::npos)
      << text;
  const auto j = megatron_json(logs, s);
  EXPECT_EQ(j["steady_state"][1]["max_reserved_gib"], 22.43);
  EXPECT_EQ(j["files"][0]["iterations"][0]["device_used_fraction"], 0.7496);
}

// MindSpeed-LLM's FSDP2 trainer with training.log_throughput: " tokens/s: {:.2f} | mfu: {:.2f} |" after the
// elapsed time (train_monitor.py; the numbers made up) — all ranks' tokens a second: the steady state's
// tokens/s when the log has no argument dump to compute it from.
TEST(MegatronLog, MindSpeedFsdp2Throughput) {
  std::string text;
  for (int i = 1; i <= 5; ++i)
    text += "INFO [2026-06-22 19:25:3" + std::to_string(i) + "] >>  iteration        " + std::to_string(i) +
            "/    2000 | consumed samples:         " + std::to_string(16 * i) +
            " | consumed tokens:      " + std::to_string(65536 * i) +
            " | elapsed time per iteration (ms): 5000.00 | tokens/s: " + (i == 5 ? "13200.00" : "13107.20") +
            " | mfu: 41.20 | learning rate: 1.000000E-05 | global batch size:    16 | lm loss: 2.3E+00 | "
            "mtp loss: 0.000000E+00 | max_memory_allocated(GB): 45.67 | max_memory_reserved(GB): 50.12 |\n";
  std::vector<MegatronLog> logs{read_megatron_text(text, "fsdp2.log")};
  ASSERT_EQ(logs[0].iterations.size(), 5u);
  EXPECT_DOUBLE_EQ(*logs[0].iterations[4].tokens_per_s, 13200.0);
  MegatronSummary s = summarize_megatron(logs);
  ASSERT_EQ(s.steady.size(), 1u);
  ASSERT_TRUE(s.steady[0].tokens_per_s);
  EXPECT_DOUBLE_EQ(*s.steady[0].tokens_per_s, 13107.2);  // the median after the warm-up
  EXPECT_NE(s.steady[0].tokens_per_s_from.find("MindSpeed FSDP2"), std::string::npos);
}

// AMD Primus's iteration line (primus/backends/megatron/patches/training_log: its extensions rewrite
// Megatron's segments), written from its f-strings: "elapsed time per iteration (ms): X/AVG", "compute per
// GPU (TFLOP/s/GPU): X (avg AVG)", " | tokens/s/GPU inst/harmonic mean: X/H", "hip mem
// usage/free/total/usage_ratio: U GB/F GB/T GB/R%" and rocm-smi's " | rank-N rocm max mem usage/usage_ratio:
// U GB/R%".  The instantaneous values are the line's (its elapsed time had been lost: "X/AVG" is not a
// number); the device's used share is the printing rank's, and the largest over the ranks when rocm-smi
// reports it.
TEST(MegatronLog, AmdPrimusIterationLine) {
  const std::string text =
      "[20250910 10:00:01][rank-7/8][INFO ] [--------trainer.py:100] :  [2025-09-10 10:00:01] iteration      "
      " "
      "10/      50 | consumed samples:         1280 | elapsed time per iteration (ms): 6510.3/6498.7 | "
      "compute per "
      "GPU (TFLOP/s/GPU): 420.4 (avg 421.1)  | tokens/s/GPU inst/harmonic mean: 5033.2/5042.1 | learning "
      "rate: "
      "1.000000E-05 | global batch size:   128 | lm loss: 6.312000E+00 | loss scale: 1.0 | grad norm: 1.234 "
      "| "
      "number of skipped iterations:   0 | number of nan iterations:   0 | hip mem "
      "usage/free/total/usage_ratio: "
      "150.23GB/41.75GB/191.98GB/78.25% | rocm mem usage/free/total/usage_ratio: "
      "151.00GB/40.98GB/191.98GB/78.65% "
      "| rank-3 rocm max mem usage/usage_ratio: 160.00GB/83.34%\n"
      "[20250910 10:00:08][rank-7/8][INFO ] [--------trainer.py:100] :  [2025-09-10 10:00:08] iteration      "
      " "
      "11/      50 | consumed samples:         1408 | elapsed time per iteration (ms): 6490.0/6497.5 | "
      "compute per "
      "GPU (TFLOP/s/GPU): 421.7 (avg 421.2)  | tokens/s/GPU inst/harmonic mean: 5048.9/5042.8 | learning "
      "rate: "
      "1.000000E-05 | global batch size:   128 | lm loss: 6.301000E+00 | loss scale: 1.0 | grad norm: 1.200 "
      "| "
      "number of skipped iterations:   0 | number of nan iterations:   0 | hip mem "
      "usage/free/total/usage_ratio: "
      "150.23GB/41.75GB/191.98GB/78.25%\n";
  std::vector<MegatronLog> logs{read_megatron_text(text, "primus.log")};
  ASSERT_EQ(logs[0].iterations.size(), 2u);
  const MegatronIteration& it = logs[0].iterations[0];
  EXPECT_EQ(it.iteration, 10);
  EXPECT_EQ(it.timestamp, "2025-09-10 10:00:01");
  EXPECT_DOUBLE_EQ(*it.elapsed_ms, 6510.3);
  EXPECT_DOUBLE_EQ(*it.tflops_per_gpu, 420.4);
  EXPECT_DOUBLE_EQ(*it.tokens_per_gpu_per_s, 5033.2);
  EXPECT_DOUBLE_EQ(*it.device_used_fraction, 0.7825);
  EXPECT_DOUBLE_EQ(*it.ranks_max_device_used_fraction, 0.8334);
  EXPECT_FALSE(logs[0].iterations[1].ranks_max_device_used_fraction);
  MegatronSummary s = summarize_megatron(logs, 0);
  ASSERT_EQ(s.steady.size(), 1u);
  EXPECT_DOUBLE_EQ(*s.steady[0].median_elapsed_ms, (6510.3 + 6490.0) / 2);
  EXPECT_DOUBLE_EQ(*s.steady[0].median_tokens_per_gpu_per_s, (5033.2 + 5048.9) / 2);
  EXPECT_DOUBLE_EQ(*s.steady[0].max_device_used_fraction, 0.8334);
}
