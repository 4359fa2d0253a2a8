// NeMo 1 training configurations (Hydra / OmegaConf YAML) read as Megatron arguments (nemo_config.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "preflight/analyzer/cost/estimate.hpp"
#include "preflight/analyzer/cost/simumax_config.hpp"
#include "preflight/analyzer/frontends/bridge_config.hpp"
#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/analyzer/frontends/nemo_config.hpp"
#include "preflight/common/error.hpp"
#include "test_support.hpp"

namespace preflight::analyzer {
namespace {

using preflight::test::data_dir;
using preflight::test::read_file;

std::string nemo(const std::string& name) {
  return (data_dir() / "frontends" / "nemo" / name).string();
}

/// The Megatron arguments of a run of the time corpus, by a substring of its name.
std::vector<std::string> corpus_args(const std::string& name) {
  const auto j = nlohmann::json::parse(read_file(data_dir() / "time_corpus" / "h100_nemo_2407.json"));
  for (const auto& r : j["runs"])
    if (r["name"].get<std::string>().find(name) != std::string::npos)
      return r["args"].get<std::vector<std::string>>();
  ADD_FAILURE() << "no run named " << name;
  return {};
}

double iteration_ms(const MegatronConfig& c) {
  return cost::estimate(c.model, c.strategy, cost::load_simumax_system("h100-sxm")).iteration_ms;
}

/// The model section of a NeMo configuration `yaml`: its lines as they are (indented by two), and dedented to
/// the top (as a .nemo's model_config.yaml holds them).
std::pair<std::string, std::string> model_section(const std::string& yaml) {
  const std::string model = yaml.substr(yaml.find("\nmodel:\n") + 8);
  std::string top;
  std::istringstream in(model);
  for (std::string line; std::getline(in, line);)
    top += (line.rfind("  ", 0) == 0 ? line.substr(2) : line) + "\n";
  return {model, top};
}

bool has(const std::vector<std::string>& args, const std::string& flag, const std::string& value = "") {
  for (std::size_t i = 0; i < args.size(); ++i)
    if (args[i] == flag && (value.empty() || (i + 1 < args.size() && args[i + 1] == value))) return true;
  return false;
}

// The configuration of a NeMo 24.07 performance run prices as that run's Megatron command line in the time
// corpus: the launcher's `${training.model.…}`, relative `${.x}` and `${multiply:4, ${.hidden_size}}`
// resolved, the trainer's world and precision, vpp, SP, TP overlap, FP8 hybrid, the distributed optimizer's
// overlaps.
TEST(NemoConfig, ConfigurationPricesAsTheSameRunsMegatronArguments) {
  const BridgeConfigArgs g = nemo_config_to_megatron_args(nemo("gpt3_175b_h100_fp8.yaml"), {});
  EXPECT_TRUE(has(g.args, "--ffn-hidden-size", "49152"));  // ${multiply:4, ${.hidden_size}}
  EXPECT_TRUE(has(g.args, "--max-position-embeddings", "2048"));
  EXPECT_TRUE(has(g.args, "--nproc_per_node", "8"));
  EXPECT_TRUE(has(g.args, "--nnodes", "16"));
  EXPECT_TRUE(has(g.args, "--num-virtual-stages-per-pipeline-rank", "6"));
  EXPECT_TRUE(has(g.args, "--fp8-format", "hybrid"));
  EXPECT_TRUE(has(g.args, "--tp-comm-overlap"));
  EXPECT_TRUE(has(g.args, "--overlap-param-gather"));
  const MegatronConfig gc = parse_bridge_args(g);
  EXPECT_EQ(gc.strategy.world_size, 128);
  EXPECT_EQ(gc.model.vocab_size, 50257);  // GPT2BPETokenizer
  EXPECT_NEAR(
      iteration_ms(gc) / iteration_ms(parse_megatron_args(corpus_args("gpt3-175b fp8 tp4 pp8 vp6 gbs256"))),
      1.0, 1e-9);

  // rmsnorm, fast-swiglu, no bias, rope, untied, dropouts 0; the SentencePiece model is not on this machine:
  // the vocabulary comes after --
  const BridgeConfigArgs l =
      nemo_config_to_megatron_args(nemo("llama2_7b_h100_fp8.yaml"), {"--vocab-size", "32000"});
  EXPECT_TRUE(has(l.args, "--swiglu"));
  EXPECT_TRUE(has(l.args, "--normalization", "RMSNorm"));
  EXPECT_TRUE(has(l.args, "--untie-embeddings-and-output-weights"));
  EXPECT_TRUE(has(l.args, "--tokenizer-model", "/data/llama/tokenizer.model"));
  EXPECT_TRUE(has(l.args, "--bf16"));  // trainer.precision bf16-mixed
  const MegatronConfig lc = parse_bridge_args(l);
  EXPECT_NEAR(iteration_ms(lc) / iteration_ms(parse_megatron_args(corpus_args("llama2-7b fp8 tp1"))), 1.0,
              1e-9);
  // without it the error names the file's field
  try {
    parse_bridge_args(nemo_config_to_megatron_args(nemo("llama2_7b_h100_fp8.yaml"), {}));
    ADD_FAILURE() << "a vocabulary was guessed";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("llama2_7b_h100_fp8.yaml: model.tokenizer"), std::string::npos)
        << e.what();
  }
}

// Hydra overrides change the YAML before it is read (as the training script applies them), the rest of the
// extra words follow the converted ones; torchrun's sizes replace the trainer's world.
TEST(NemoConfig, OverridesAndTheWorld) {
  const BridgeConfigArgs o = nemo_config_to_megatron_args(
      nemo("llama2_7b_h100_fp8.yaml"),
      {"trainer.num_nodes=4", "model.tensor_model_parallel_size=2", "+model.context_parallel_size=2",
       "model.activations_checkpoint_granularity=full", "model.activations_checkpoint_method=uniform",
       "model.activations_checkpoint_num_layers=1", "--vocab-size", "32000"});
  const MegatronConfig c = parse_bridge_args(o);
  EXPECT_EQ(c.strategy.world_size, 32);
  EXPECT_EQ(c.strategy.tp, 2);
  EXPECT_EQ(c.strategy.cp, 2);
  EXPECT_EQ(c.strategy.recompute_granularity, RecomputeGranularity::Full);
  const BridgeConfigArgs t = nemo_config_to_megatron_args(nemo("gpt3_175b_h100_fp8.yaml"),
                                                          {"--nproc_per_node", "8", "--nnodes", "32"});
  EXPECT_FALSE(has(t.args, "--nnodes", "16"));
  EXPECT_EQ(parse_bridge_args(t).strategy.world_size, 256);
  // the Bridge reader tells the two formats apart
  EXPECT_EQ(bridge_config_to_megatron_args(nemo("gpt3_175b_h100_fp8.yaml"), {}).args,
            nemo_config_to_megatron_args(nemo("gpt3_175b_h100_fp8.yaml"), {}).args);
  EXPECT_TRUE(is_nemo1_config(read_file(nemo("gpt3_175b_h100_fp8.yaml"))));
  EXPECT_FALSE(is_nemo1_config(read_file(data_dir() / "frontends" / "bridge" / "qwen3_8b_run_config.yaml")));
}

// NeMo's Mamba configuration (`name: megatron_mamba`) is the hybrid stack; encoder-decoders, Griffin and a
// configuration that restores its architecture from a .nemo are refused with why; a field holding a value of
// the wrong kind, or an interpolation that cannot be resolved, is named.
TEST(NemoConfig, WhatIsReadAndWhatIsRefused) {
  auto parse = [](const std::string& yaml) {
    return parse_bridge_args(nemo_config_text_to_megatron_args(yaml, "t.yaml", {}));
  };
  const std::string base =
      "trainer:\n  devices: 8\n  num_nodes: 1\n  precision: bf16\nmodel:\n  micro_batch_size: 1\n"
      "  global_batch_size: 8\n  encoder_seq_length: 1024\n  max_position_embeddings: "
      "${.encoder_seq_length}\n"
      "  num_layers: 4\n  hidden_size: 512\n  num_attention_heads: 8\n  vocab_size: 32000\n";
  EXPECT_TRUE(parse(base).model.hybrid_pattern.empty());
  EXPECT_EQ(parse("name: megatron_mamba\n" + base).model.hybrid_pattern, "MMMM");
  EXPECT_EQ(parse(base + "  hybrid_override_pattern: M*M-\n").model.hybrid_pattern, "M*M-");
  auto refused = [&](const std::string& yaml, const std::string& said) {
    try {
      parse(yaml);
      ADD_FAILURE() << "analysed: " << yaml;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(said), std::string::npos) << e.what();
    }
  };
  refused("name: megatron_t5\n" + base, "t.yaml: name: 'megatron_t5' is an encoder-decoder model");
  refused("name: megatron_griffin\n" + base, "RG-LRU");
  refused("name: nemo_vit_classification\n" + base,
          "'nemo_vit_classification' is a vision or diffusion model");
  refused("trainer:\n  devices: 8\nmodel:\n  micro_batch_size: 1\n  hidden_size: 768\n  mcore_gpt: True\n",
          "t.yaml: model: has no num_layers and no encoder_seq_length: not a language model's");
  // Megatron Core's distributed optimizer (NeMo-Framework-Launcher's `mcore_distributed_optim`) as Apex's
  for (const char* name : {"distributed_fused_adam", "mcore_distributed_optim"})
    EXPECT_TRUE(parse(base + "  optim:\n    name: " + name + "\n    overlap_grad_sync: true\n")
                    .strategy.distributed_optimizer)
        << name;
  EXPECT_FALSE(parse(base + "  optim:\n    name: fused_adam\n").strategy.distributed_optimizer);
  // interleaved 1F1B: NeMo fills core's ModelParallelConfig, whose overlap_p2p_comm is False unless set
  const std::string vpp =
      base + "  pipeline_model_parallel_size: 2\n  virtual_pipeline_model_parallel_size: 2\n";
  EXPECT_FALSE(parse(vpp).strategy.pp_comm_overlap);
  EXPECT_TRUE(parse(vpp + "  overlap_p2p_comm: True\n").strategy.pp_comm_overlap);
  EXPECT_TRUE(
      parse(base + "  fp8: True\n  fp8_hybrid: True\n  fp8_params: True\n").strategy.fp8_param_gather);
  refused(
      "restore_from_path: /ckpt/llama.nemo\ntrainer:\n  devices: 8\nmodel:\n  micro_batch_size: 1\n"
      "  global_batch_size: 8\n  encoder_seq_length: 1024\n",
      "t.yaml: model.num_layers: is not in the file: the run takes its architecture from the .nemo");
  refused(base + "  ffn_hidden_size: ${oc.env:FFN}\n", "t.yaml: model.ffn_hidden_size: must be a number");
  refused(base + "  tensor_model_parallel_size: two\n", "t.yaml: model.tensor_model_parallel_size");
  refused(base + "  activation: relu6\n", "t.yaml: model.activation");
  std::string bad = base;
  bad.replace(bad.find("bf16"), 4, "fp64");
  refused(bad, "t.yaml: trainer.precision");
  try {
    nemo_config_text_to_megatron_args("trainer:\n  devices: [8\n", "t.yaml", {});
    ADD_FAILURE() << "malformed yaml read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("t.yaml"), std::string::npos) << e.what();
  }
}

// A NeMo 1 training log prints its configuration after `************** Experiment configuration ***********`
// (the logger's prefix line before the YAML, Lightning's lines after it): read from there, the same
// arguments; `calibrate --fit-time` prices such logs from it, against the steps' `train_step_timing in s`.
TEST(NemoConfig, ReadsTheConfigurationANemoLogPrints) {
  const std::string yaml = read_file(nemo("gpt3_175b_h100_fp8.yaml"));
  auto log_with = [&](double step_s) {
    std::string log =
        "[NeMo W 2024-07-02 10:00:00 nemo_logging:349] megatron/core/tensor_parallel/layers.py:280: "
        "UserWarning\n"
        "[NeMo I 2024-07-02 10:00:01 megatron_gpt_pretraining:37] \n    \n"
        "    ************** Experiment configuration ***********\n"
        "[NeMo I 2024-07-02 10:00:01 megatron_gpt_pretraining:38] \n" +
        yaml + "GPU available: True (cuda), used: True\nTPU available: False, using: 0 TPU cores\n";
    for (int i = 1; i <= 6; ++i)
      log += "Epoch 0: :   " + std::to_string(i) + "%|          | " + std::to_string(i) +
             "/100 [00:30<49:30, reduced_train_loss=11.2, global_step=" + std::to_string(i - 1) +
             ".000, consumed_samples=" + std::to_string(256 * i) +
             ".0, train_step_timing in s=" + std::to_string(i == 1 ? 30.0 : step_s) + "]\r";
    return log + "\n";
  };
  EXPECT_TRUE(is_nemo1_config(log_with(6.4)));
  EXPECT_EQ(nemo_config_text_to_megatron_args(log_with(6.4), "train.log", {}).args,
            nemo_config_text_to_megatron_args(yaml, "x.yaml", {}).args);
  using preflight::test::run_preflight;
  using preflight::test::shell_quote;
  const auto dir = preflight::test::scratch_dir();
  preflight::test::write_file(dir / "nemo_a.log", log_with(6.4));
  preflight::test::write_file(dir / "nemo_b.log", log_with(7.0));
  const auto r = run_preflight("calibrate --fit-time --json --system h100-sxm --measured " +
                               shell_quote((dir / "nemo_a.log").string()) + " --measured " +
                               shell_quote((dir / "nemo_b.log").string()) + " -o " +
                               shell_quote((dir / "nemo_fit.json").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["runs"].size(), 2u);
  EXPECT_NEAR(j["runs"][0]["measured_ms"].get<double>(), 6400.0, 1e-6);
  EXPECT_NEAR(j["runs"][1]["measured_ms"].get<double>(), 7000.0, 1e-6);
  const double predicted =
      iteration_ms(parse_bridge_args(nemo_config_to_megatron_args(nemo("gpt3_175b_h100_fp8.yaml"), {})));
  EXPECT_NEAR(j["runs"][0]["predicted_ms"].get<double>(), predicted, 1e-6 * predicted);
}

// What a NeMo run saves of its configuration: `hparams.yaml` (the model's under `cfg:`) and a .nemo archive's
// `model_config.yaml` (the model's fields at the top, the trainer's precision among them): the same arguments
// as the training configuration's model section, the world given by the caller.
TEST(NemoConfig, SavedModelConfigurations) {
  const auto [model, top] = model_section(read_file(nemo("llama2_7b_h100_fp8.yaml")));
  const std::vector<std::string> extra = {"--nproc_per_node", "8", "--vocab-size", "32000"};
  const double expected = iteration_ms(parse_bridge_args(
      nemo_config_to_megatron_args(nemo("llama2_7b_h100_fp8.yaml"), {"--vocab-size", "32000"})));
  for (const std::string& saved :
       {"cfg:\n  precision: bf16-mixed\n" + model, "precision: bf16-mixed\n" + top}) {
    ASSERT_TRUE(is_nemo1_config(saved)) << saved.substr(0, 60);
    const BridgeConfigArgs b = nemo_config_text_to_megatron_args(saved, "hparams.yaml", extra);
    EXPECT_TRUE(has(b.args, "--bf16"));
    EXPECT_NEAR(iteration_ms(parse_bridge_args(b)) / expected, 1.0, 1e-9) << saved.substr(0, 60);
  }
}

// A fine-tuning configuration restores its model from a .nemo checkpoint (restore_from_path): the archive's
// model_config.yaml (members before it skipped), with the fine-tuning file's model fields over it, as NeMo
// merges them; the .nemo itself (or its unpacked folder) is read by --nemo-config too; a compressed archive
// is said.
TEST(NemoConfig, FineTuningRestoresTheCheckpointsModel) {
  using preflight::test::run_preflight;
  using preflight::test::run_shell;
  using preflight::test::shell_quote;
  const auto dir = preflight::test::scratch_dir() / "nemo_ckpt";
  std::filesystem::create_directories(dir / "unpacked");
  preflight::test::write_file(
      dir / "unpacked" / "model_config.yaml",
      "precision: bf16-mixed\n" + model_section(read_file(nemo("llama2_7b_h100_fp8.yaml"))).second);
  preflight::test::write_file(dir / "unpacked" / "model_weights.ckpt", std::string(1500, 'w'));
  ASSERT_EQ(run_shell("tar -cf " + shell_quote((dir / "llama.nemo").string()) + " -C " +
                      shell_quote((dir / "unpacked").string()) + " ./model_weights.ckpt ./model_config.yaml")
                .exit_code,
            0);
  const std::string ft =
      "name: megatron_gpt_peft_lora_tuning\ntrainer:\n  devices: 8\n  num_nodes: 1\n"
      "  precision: bf16\nmodel:\n  restore_from_path: " +
      (dir / "llama.nemo").string() +
      "\n  micro_batch_size: 1\n  global_batch_size: 32\n  tensor_model_parallel_size: 2\n"
      "  encoder_seq_length: 2048\n  peft:\n    peft_scheme: lora\n";
  const MegatronConfig c =
      parse_bridge_args(nemo_config_text_to_megatron_args(ft, "ft.yaml", {"--vocab-size", "32000"}));
  EXPECT_EQ(c.model.num_layers, 32);  // the checkpoint's
  EXPECT_EQ(c.model.hidden_size, 4096);
  EXPECT_EQ(c.strategy.tp, 2);  // the fine-tuning file's
  EXPECT_EQ(c.strategy.seq_length, 2048);
  EXPECT_EQ(c.model.lora.rank, 32);  // NeMo's default adapter_dim
  // NeMo's default target_modules: attention_qkv alone
  // (examples/…/tuning/conf/megatron_gpt_finetuning_config.yaml)
  EXPECT_EQ(c.model.lora.targets(), (std::vector<std::string>{"linear_qkv"}));
  const MegatronConfig mlp = parse_bridge_args(nemo_config_text_to_megatron_args(
      ft + "    lora_tuning:\n      adapter_dim: 16\n      target_modules: [attention_dense, mlp]\n",
      "ft.yaml", {"--vocab-size", "32000"}));
  EXPECT_EQ(mlp.model.lora.rank, 16);
  EXPECT_EQ(mlp.model.lora.targets(), (std::vector<std::string>{"linear_proj", "linear_fc1", "linear_fc2"}));
  for (const std::string& ckpt : {(dir / "llama.nemo").string(), (dir / "unpacked").string()}) {
    const auto r = run_preflight("analyze --nemo-config " + shell_quote(ckpt) +
                                 " --nproc_per_node 8 --vocab-size 32000");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("32 layers, hidden 4096"), std::string::npos) << r.out;
  }
  ASSERT_EQ(run_shell("tar -czf " + shell_quote((dir / "zipped.nemo").string()) + " -C " +
                      shell_quote((dir / "unpacked").string()) + " ./model_config.yaml")
                .exit_code,
            0);
  const auto z = run_preflight("analyze --nemo-config " + shell_quote((dir / "zipped.nemo").string()));
  EXPECT_EQ(z.exit_code, 2);
  EXPECT_NE(z.err.find("a compressed .nemo archive: extract its model_config.yaml"), std::string::npos)
      << z.err;
}

// estimate, analyze and search take it (--nemo-config); a missing file is named.
TEST(NemoConfig, EstimateAnalyzeAndSearchTakeIt) {
  using preflight::test::run_preflight;
  using preflight::test::shell_quote;
  const std::string file = shell_quote(nemo("gpt3_175b_h100_fp8.yaml"));
  auto r = run_preflight("estimate --system h100-sxm --nemo-config " + file);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("seq2048.mbs1.mbc64.gbs256 tp4.sp4.cp1.ep1.pp8.dp4"), std::string::npos) << r.out;
  r = run_preflight("analyze --nemo-config " + file + " model.num_layers=48");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("48 layers"), std::string::npos) << r.out;
  r = run_preflight("search --system h100-sxm --quiet --top 3 --tp 4,8 --pp 8 --nemo-config " + file);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("the launch's own layout (tp 4 pp 8"), std::string::npos) << r.out;
  r = run_preflight("estimate --system h100-sxm --nemo-config " + shell_quote(nemo("missing.yaml")));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("missing.yaml"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace preflight::analyzer
