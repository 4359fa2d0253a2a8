// AMD Primus experiments (AMD-AGI/Primus): a Primus checkout's layout written for these tests — module
// presets under primus/configs/modules/megatron, model presets under primus/configs/models/megatron, an
// experiment under examples/megatron/configs — in Primus's own format (extends chains, ${VAR:default},
// overrides), read as Megatron's command line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/common/error.hpp"
#include "preflight/wrap/launch.hpp"
#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;
using preflight::InputError;
using preflight::analyzer::MegatronConfig;
using preflight::analyzer::parse_megatron_args;

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

/// A Primus checkout with one experiment; returns the experiment's path.
fs::path primus_tree(const fs::path& root, const std::string& framework = "megatron",
                     const std::string& model = "tiny_1B.yaml") {
  const fs::path modules = root / "primus/configs/modules", models = root / "primus/configs/models/megatron";
  write(modules / "module_base.yaml", "trainable: false\nstderr_sink_level: INFO\n");
  write(
      modules / "megatron/trainer_base.yaml",
      "extends:\n  - ../module_base.yaml\n  - primus_turbo.yaml\n"
      "micro_batch_size: 2\nglobal_batch_size: 128\nseq_length: 4096\nbf16: true\nfp8: null\n"
      "fp8_recipe: delayed\nfp4_recipe: nvfp4\nuse_distributed_optimizer: false\noverlap_grad_reduce: false\n"
      "gradient_accumulation_fusion: true\nloss_scale_window: 1000\npatch_zero_bubble: false\n"
      "make_vocab_size_divisible_by: 128\nsequence_parallel: true\nvocab_extra_ids: 0\n"
      "tp_comm_overlap_ag: true\nmock_data: false\nsave: null\nload: null\n");
  write(modules / "megatron/primus_turbo.yaml", "enable_primus_turbo: false\nuse_turbo_attention: false\n");
  write(modules / "megatron/pre_trainer.yaml",
        "extends:\n  - trainer_base.yaml\ntrain_iters: 1000\nuse_distributed_optimizer: true\n"
        "seq_length: 1024\n");
  write(models / "language_model.yaml",
        "num_layers: 24\nhidden_size: 1024\nnum_attention_heads: 16\nffn_hidden_size: null\n"
        "add_bias_linear: false\nposition_embedding_type: learned_absolute\nswiglu: true\n"
        "normalization: LayerNorm\ntokenizer_type: null\nvocab_size: null\nseq_length: 8192\n"
        "untie_embeddings_and_output_weights: true\nmoe_router_force_load_balancing_type: even\n");
  write(models / "tiny_base.yaml",
        "extends:\n  - language_model.yaml\nnormalization: RMSNorm\nposition_embedding_type: rope\n"
        "add_position_embedding: false\ngroup_query_attention: true\nnum_query_groups: 4\n");
  write(models / "tiny_1B.yaml",
        "extends: tiny_base.yaml\nnum_layers: 16\nhidden_size: 2048\nnum_attention_heads: 16\n"
        "ffn_hidden_size: 8192\ntokenizer_type: HuggingFaceTokenizer\n"
        "tokenizer_model: NousResearch/Meta-Llama-3-8B\n");
  const fs::path exp = root / "examples/megatron/configs/MI300X/tiny_1B-FP8-pretrain.yaml";
  write(exp,
        "work_group: ${PRIMUS_TEAM:amd}\nexp_name: ${PRIMUS_EXP_NAME:tiny_1B}\n"
        "modules:\n  pre_trainer:\n    framework: " +
            framework + "\n    config: pre_trainer.yaml\n    model: " + model +
            "\n    overrides:\n      micro_batch_size: ${PRIMUS_TEST_MBS:4}\n      global_batch_size: 256\n"
            "      tensor_model_parallel_size: 2\n      fp8: hybrid\n      mock_data: true\n"
            "      gradient_accumulation_fusion: false\n      patch_zero_bubble: true\n"
            "      mock_dataset:\n        params:\n          num_samples: 10\n");
  return exp;
}

MegatronConfig parse(const fs::path& exp, std::vector<std::string> extra = {},
                     std::map<std::string, std::string> env = {}) {
  std::vector<std::string> args{"--nproc_per_node", "8",        "primus/cli/main.py", "train",
                                "pretrain",         "--config", exp.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  return parse_megatron_args(args, env);
}

bool said(const MegatronConfig& c, const std::string& text) {
  for (const auto& w : c.warnings)
    if (w.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

// The module preset (pre_trainer over trainer_base), the model preset's keys where the module has none (its
// seq_length 8192 loses to the module's 1024, as Primus's merge_namespace(allow_override=False) has it), the
// experiment's overrides (${PRIMUS_TEST_MBS:4}: 4), then the command line's (--global_batch_size 512): each
// destination back to Megatron's flag (add_bias_linear false → --disable-bias-linear, fp8 hybrid →
// --fp8-format hybrid).  The flags read past that only carry the module preset's defaults are not named;
// Primus's zero-bubble schedule and the nested settings are said.
TEST(PrimusConfig, ExperimentAsMegatronsCommandLine) {
  preflight::test::TempDir dir;
  const fs::path exp = primus_tree(dir.path());
  const MegatronConfig c = parse(exp, {"--global_batch_size", "512", "train_iters=5"});
  EXPECT_EQ(c.model.num_layers, 16);
  EXPECT_EQ(c.model.hidden_size, 2048);
  EXPECT_EQ(c.model.num_query_groups, 4);
  EXPECT_EQ(c.model.ffn_hidden_size, 8192);
  EXPECT_EQ(c.model.vocab_size, 128256);
  EXPECT_EQ(c.strategy.seq_length, 1024);
  EXPECT_EQ(c.strategy.micro_batch_size, 4);
  EXPECT_EQ(c.strategy.global_batch_size, 512);
  EXPECT_EQ(c.strategy.tp, 2);
  EXPECT_EQ(c.strategy.dp(), 4);
  EXPECT_TRUE(c.strategy.distributed_optimizer);
  EXPECT_NE(c.strategy.fp8, preflight::analyzer::Fp8Format::None);
  EXPECT_TRUE(said(c, "Primus zero-bubble pipeline (patch_zero_bubble)"));
  EXPECT_TRUE(said(c, "nested settings not read (mock_dataset)"));
  EXPECT_FALSE(said(c, "--loss-scale-window"));
  for (const auto& w : c.warnings) EXPECT_EQ(w.find("read past"), std::string::npos) << w;
  // Primus sets Megatron's virtual_pipeline_model_parallel_size (the destination Megatron derives from
  // --num-layers-per-virtual-pipeline-stage): the interleaved schedule, not a flag read past
  const MegatronConfig vpp =
      parse(exp, {"--pipeline_model_parallel_size", "2", "--virtual_pipeline_model_parallel_size", "2"});
  EXPECT_EQ(vpp.strategy.pp, 2);
  EXPECT_EQ(vpp.strategy.vpp, 2);
  for (const auto& w : vpp.warnings) EXPECT_EQ(w.find("read past"), std::string::npos) << w;
  // a value Megatron refuses is named as the experiment's key
  try {
    parse(exp, {"--num_layers", "abc"});
    ADD_FAILURE() << "num_layers abc was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("(Primus) num_layers: expected an integer"), std::string::npos)
        << e.what();
  }
  // the environment's value, as Primus substitutes it
  EXPECT_EQ(parse(exp, {}, {{"PRIMUS_TEST_MBS", "2"}}).strategy.micro_batch_size, 2);
}

// Refused naming what: a framework other than Megatron-LM, a model preset that is not there, a required
// environment variable without a default; a launch without the checkout's presets says where it looked.
TEST(PrimusConfig, RefusalsNameTheSetting) {
  {
    preflight::test::TempDir dir;
    try {
      parse(primus_tree(dir.path(), "torchtitan"));
      ADD_FAILURE() << "a torchtitan module was read";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("modules.pre_trainer.framework 'torchtitan'"), std::string::npos)
          << e.what();
    }
  }
  {
    preflight::test::TempDir dir;
    try {
      parse(primus_tree(dir.path(), "megatron", "nowhere_7B.yaml"));
      ADD_FAILURE() << "a missing model preset was read";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("modules.pre_trainer.model 'nowhere_7B.yaml'"), std::string::npos)
          << e.what();
    }
  }
  {
    preflight::test::TempDir dir;
    const fs::path exp = primus_tree(dir.path());
    write(dir.path() / "primus/configs/models/megatron/tiny_1B.yaml",
          "extends: tiny_base.yaml\nnum_layers: ${PRIMUS_TEST_LAYERS}\nhidden_size: 2048\n"
          "num_attention_heads: 16\ntokenizer_type: HuggingFaceTokenizer\n"
          "tokenizer_model: NousResearch/Meta-Llama-3-8B\n");
    try {
      parse(exp);
      ADD_FAILURE() << "an unset ${VAR} was read";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("tiny_1B.yaml:2"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("${PRIMUS_TEST_LAYERS}"), std::string::npos) << e.what();
    }
    EXPECT_EQ(parse(exp, {}, {{"PRIMUS_TEST_LAYERS", "12"}}).model.num_layers, 12);
  }
  {
    preflight::test::TempDir dir;
    const fs::path exp = dir.path() / "alone.yaml";
    write(exp,
          "modules:\n  pre_trainer:\n    framework: megatron\n    config: pre_trainer.yaml\n"
          "    model: tiny_1B.yaml\n");
    try {
      parse(exp);
      ADD_FAILURE() << "an experiment without Primus's presets was read";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("set PRIMUS_PATH"), std::string::npos) << e.what();
    }
    // PRIMUS_PATH names the checkout
    const fs::path checkout = dir.path() / "checkout";
    primus_tree(checkout);
    EXPECT_EQ(parse(exp, {}, {{"PRIMUS_PATH", checkout.string()}}).model.num_layers, 16);
  }
}

// Primus's train CLI is a training entry point for wrap and run (matched by its folders: main.py alone is
// anyone's), and `preflight analyze` takes its --config as the experiment, not as a MindFormers yaml.
TEST(PrimusConfig, TrainCliIsAnEntryPointAndAnalyzeReadsIt) {
  const preflight::wrap::EntryPatterns entries;
  EXPECT_TRUE(entries.matches("primus/cli/main.py"));
  EXPECT_TRUE(entries.matches("/workspace/Primus/primus/cli/main.py"));
  EXPECT_TRUE(entries.matches("primus/train.py"));
  EXPECT_FALSE(entries.matches("main.py"));
  EXPECT_FALSE(entries.matches("myprimus/cli/main.py"));
  preflight::test::TempDir dir;
  const fs::path exp = primus_tree(dir.path());
  const auto r = preflight::test::run_preflight(
      "analyze --nproc_per_node 8 primus/cli/main.py train pretrain --config " +
      preflight::test::shell_quote(exp.string()) + " --micro_batch_size 1");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("megatron-args: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("micro batch 1 × 1024 tokens, global batch 256"), std::string::npos) << r.out;
  // estimate's own --config: the experiment too (it had been read as a MindFormers yaml)
  const auto e =
      preflight::test::run_preflight("estimate --system mi300x --config " +
                                     preflight::test::shell_quote(exp.string()) + " -- --nproc_per_node 8");
  ASSERT_EQ(e.exit_code, 0) << e.err << e.out;
  EXPECT_NE(e.out.find("megatron-args on mi300x: seq1024.mbs4.mbc16.gbs256 tp2.sp2.cp1.ep1.pp1.dp4"),
            std::string::npos)
      << e.out;
  // without --system: the GPU folder the experiment sits in (examples/megatron/configs/MI300X/)
  EXPECT_EQ(preflight::analyzer::primus_experiment_gpu({"--config", exp.string()}), "MI300X");
  EXPECT_EQ(preflight::analyzer::primus_experiment_gpu({"--config", "elsewhere.yaml"}), "");
  const auto d = preflight::test::run_preflight(
      "estimate --config " + preflight::test::shell_quote(exp.string()) + " -- --nproc_per_node 8");
  ASSERT_EQ(d.exit_code, 0) << d.err << d.out;
  EXPECT_NE(d.err.find("Primus experiment of the MI300X folder: priced on mi300x"), std::string::npos)
      << d.err;
  EXPECT_NE(d.out.find("megatron-args on mi300x:"), std::string::npos) << d.out;
}

// Primus's own tokenizer names (DeepSeekV3Tokenizer, MixtralTokenizer, …) are Megatron's HuggingFaceTokenizer
// of tokenizer_model (its tokenizer.py builds them so): the repository's vocabulary, here a preset's.
TEST(PrimusConfig, PrimusTokenizerNamesAreHuggingFaceTokenizers) {
  preflight::test::TempDir dir;
  const fs::path exp = primus_tree(dir.path());
  write(dir.path() / "primus/configs/models/megatron/tiny_1B.yaml",
        "extends: tiny_base.yaml\nnum_layers: 16\nhidden_size: 2048\nnum_attention_heads: 16\n"
        "tokenizer_type: DeepSeekV3Tokenizer\ntokenizer_model: deepseek-ai/DeepSeek-V3\n");
  EXPECT_EQ(parse(exp).model.vocab_size, 129280);
}
