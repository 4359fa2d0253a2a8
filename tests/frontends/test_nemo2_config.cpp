// NeMo 2 configurations (NeMo-Run's task YAML, a checkpoint's context/model.yaml) read as Megatron arguments
// (nemo2_config.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "preflight/analyzer/cost/estimate.hpp"
#include "preflight/analyzer/cost/simumax_config.hpp"
#include "preflight/analyzer/frontends/bridge_config.hpp"
#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/analyzer/frontends/nemo2_config.hpp"
#include "preflight/analyzer/frontends/presets.hpp"
#include "preflight/common/error.hpp"
#include "test_support.hpp"

namespace preflight::analyzer {
namespace {

using preflight::test::data_dir;
using preflight::test::read_file;

std::string nemo2(const std::string& name) {
  return (data_dir() / "frontends" / "nemo2" / name).string();
}

/// The Megatron arguments of a run of the time corpus file `corpus`, by a substring of its name.
std::vector<std::string> corpus_args(const std::string& corpus, const std::string& name) {
  const auto j = nlohmann::json::parse(read_file(data_dir() / "time_corpus" / corpus));
  for (const auto& r : j["runs"])
    if (r["name"].get<std::string>().find(name) != std::string::npos)
      return r["args"].get<std::vector<std::string>>();
  ADD_FAILURE() << "no run named " << name;
  return {};
}

double iteration_ms(const MegatronConfig& c, const std::string& system) {
  return cost::estimate(c.model, c.strategy, cost::load_simumax_system(system)).iteration_ms;
}

bool has(const std::vector<std::string>& args, const std::string& flag, const std::string& value = "") {
  for (std::size_t i = 0; i < args.size(); ++i)
    if (args[i] == flag && (value.empty() || (i + 1 < args.size() && args[i + 1] == value))) return true;
  return false;
}

BridgeConfigArgs from_text(const std::string& yaml, const std::vector<std::string>& extra = {}) {
  return bridge_config_text_to_megatron_args(yaml, "task.yaml", extra);
}

std::string error_of(const std::string& yaml, const std::vector<std::string>& extra = {}) {
  try {
    parse_bridge_args(from_text(yaml, extra));
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

/// A small NeMo-Run pretrain task: a Llama 3 8B on 8 GPUs; `strategy` and `more` are spliced in.
std::string task(const std::string& strategy = "", const std::string& more = "",
                 const std::string& config = "") {
  return "_partial_: true\n_target_: nemo.collections.llm.api.pretrain\n"
         "data:\n  _target_: nemo.collections.llm.gpt.data.mock.MockDataModule\n  global_batch_size: 64\n"
         "  micro_batch_size: 1\n  seq_length: 4096\n"
         "model:\n  _target_: nemo.collections.llm.gpt.model.llama.LlamaModel\n  config:\n"
         "    _target_: nemo.collections.llm.gpt.model.llama.Llama3Config8B\n" +
         config +
         "optim:\n  _target_: nemo.lightning.pytorch.optim.megatron.MegatronOptimizerModule\n  config:\n"
         "    _target_: megatron.core.optimizer.optimizer_config.OptimizerConfig\n    optimizer: adam\n"
         "    use_distributed_optimizer: true\n"
         "trainer:\n  _target_: nemo.lightning.pytorch.trainer.Trainer\n  devices: 8\n  num_nodes: 1\n"
         "  strategy:\n    _target_: nemo.lightning.pytorch.strategies.megatron_strategy.MegatronStrategy\n" +
         strategy + more;
}

// Two NeMo 2 performance runs written as NeMo-Run task YAML price exactly as the same runs' Megatron command
// lines in the time corpus: the model configuration class's defaults (Llama3Config8B, DeepSeekV3Config: MLA,
// 256 experts, the first three layers dense) laid under the file's fields, the strategy's layout, the
// trainer's world, MegatronMixedPrecision's FP8, the DDP config and the callback's overlaps, the tokenizer's
// vocabulary.
TEST(NemoTwoConfig, PretrainTasksPriceAsTheSameRunsMegatronArguments) {
  const BridgeConfigArgs l = bridge_config_to_megatron_args(nemo2("llama3_8b_pretrain_fp8.yaml"), {});
  EXPECT_TRUE(has(l.args, "--fp8-format", "hybrid"));
  EXPECT_TRUE(has(l.args, "--fp8-recipe", "delayed"));
  EXPECT_TRUE(has(l.args, "--overlap-grad-reduce"));
  EXPECT_TRUE(has(l.args, "--grad-reduce-in-bf16"));
  EXPECT_TRUE(has(l.args, "--nproc_per_node", "8"));
  EXPECT_TRUE(has(l.args, "--tokenizer-model", "meta-llama/Meta-Llama-3-8B"));
  const MegatronConfig lc = parse_bridge_args(l);
  EXPECT_EQ(lc.model.num_layers, 32);
  EXPECT_EQ(lc.model.ffn_hidden_size, 14336);
  EXPECT_NEAR(iteration_ms(lc, "b200") /
                  iteration_ms(parse_megatron_args(corpus_args("b200_nemo2_2502.json", "llama3-8b")), "b200"),
              1.0, 1e-9);

  const BridgeConfigArgs d = bridge_config_to_megatron_args(nemo2("deepseek_v3_pretrain_bf16.yaml"), {});
  const MegatronConfig dc = parse_bridge_args(d);
  EXPECT_EQ(dc.strategy.world_size, 512);
  EXPECT_EQ(dc.strategy.ep, 64);
  EXPECT_EQ(dc.model.vocab_size, 129280);  // deepseek-ai/DeepSeek-V3-Base: the deepseek-v3 preset's
  EXPECT_TRUE(has(d.args, "--multi-latent-attention"));
  EXPECT_TRUE(std::any_of(d.args.begin(), d.args.end(),
                          [](const std::string& a) { return a.rfind("[0,0,0,1,", 0) == 0; }));
  // the class's MoE settings the corpus row leaves out (DeepSeekConfig: shared expert overlap, sigmoid
  // routing with expert bias) are the only difference
  std::vector<std::string> row = corpus_args("h100_dgxc_nemo2504.json", "deepseek-v3 bf16 tp2 pp8");
  for (const char* w : {"--moe-shared-expert-overlap", "--moe-router-score-function", "sigmoid",
                        "--moe-router-enable-expert-bias"})
    row.push_back(w);
  EXPECT_NEAR(iteration_ms(dc, "h100-sxm") / iteration_ms(parse_megatron_args(row), "h100-sxm"), 1.0, 1e-9);
}

// NeMo-Run's CLI overrides change the YAML first; torchrun's sizes replace the trainer's world; other words
// are passed on.
TEST(NemoTwoConfig, OverridesAndTheWorld) {
  const MegatronConfig c = parse_bridge_args(
      from_text(task("    tensor_model_parallel_size: 1\n"),
                {"trainer.strategy.tensor_model_parallel_size=2", "trainer.strategy.sequence_parallel=true",
                 "model.config.num_layers=16", "data.global_batch_size=256", "trainer.num_nodes=2",
                 "--vocab-size", "128256"}));
  EXPECT_EQ(c.strategy.tp, 2);
  EXPECT_TRUE(c.strategy.sequence_parallel);
  EXPECT_EQ(c.model.num_layers, 16);
  EXPECT_EQ(c.strategy.global_batch_size, 256);
  EXPECT_EQ(c.strategy.world_size, 16);
  const BridgeConfigArgs t =
      from_text(task(), {"--nproc_per_node", "4", "--nnodes", "2", "--vocab-size", "1000"});
  EXPECT_FALSE(has(t.args, "--nproc_per_node", "8"));
  EXPECT_EQ(parse_bridge_args(t).strategy.world_size, 8);
}

// NeMo's own behaviour where the file is silent: the DDP config's gradient reduction follows
// MegatronMixedPrecision (FP32 by default, `ddp: megatron` alone reduces in BF16); interleaved pipelines
// overlap their p2p only with MegatronCommOverlapCallback, which also keeps TP overlap off without sequence
// parallelism; the distributed optimizer's overlaps come from the callback.
TEST(NemoTwoConfig, WhatNemoDoesWhereTheFileIsSilent) {
  const std::string vocab = "--vocab-size";
  const std::string plugin =
      "  plugins:\n    _target_: nemo.lightning.pytorch.plugins.mixed_precision.MegatronMixedPrecision\n"
      "    precision: bf16-mixed\n";
  EXPECT_FALSE(has(from_text(task("", plugin), {vocab, "1000"}).args, "--grad-reduce-in-bf16"));
  EXPECT_TRUE(has(from_text(task("    ddp: megatron\n"), {vocab, "1000"}).args, "--grad-reduce-in-bf16"));

  const std::string interleaved =
      "    tensor_model_parallel_size: 2\n    pipeline_model_parallel_size: 2\n"
      "    virtual_pipeline_model_parallel_size: 2\n";
  const std::string callback =
      "  callbacks:\n  - _target_: nemo.lightning.pytorch.callbacks.megatron_comm_overlap."
      "MegatronCommOverlapCallback\n    tp_comm_overlap: true\n";
  const BridgeConfigArgs plain = from_text(task(interleaved), {vocab, "1000"});
  EXPECT_TRUE(has(plain.args, "--no-overlap-p2p-communication"));
  EXPECT_FALSE(has(plain.args, "--overlap-grad-reduce"));
  const BridgeConfigArgs with = from_text(task(interleaved, callback), {vocab, "1000"});
  EXPECT_FALSE(has(with.args, "--no-overlap-p2p-communication"));
  EXPECT_TRUE(has(with.args, "--overlap-grad-reduce"));
  EXPECT_TRUE(has(with.args, "--overlap-param-gather"));
  EXPECT_FALSE(has(with.args, "--tp-comm-overlap"));  // no sequence parallelism: NeMo turns it off
  EXPECT_NE(with.warnings.front().find("tp_comm_overlap is off"), std::string::npos);
  EXPECT_TRUE(
      has(from_text(task(interleaved + "    sequence_parallel: true\n", callback), {vocab, "1000"}).args,
          "--tp-comm-overlap"));
  // a configuration's own vocab_size is used as it stands (NeMo pads only the tokenizer's)
  const MegatronConfig q = parse_bridge_args(
      from_text("_target_: nemo.collections.llm.api.pretrain\nmodel:\n  _target_: "
                "nemo.collections.llm.gpt.model.qwen3.Qwen3Model\n  config:\n    _target_: "
                "nemo.collections.llm.gpt.model.qwen3.Qwen3Config8B\n"
                "trainer:\n  devices: 8\n  strategy:\n    tensor_model_parallel_size: 2\n"
                "data:\n  global_batch_size: 32\n  micro_batch_size: 1\n  seq_length: 4096\n"));
  EXPECT_EQ(q.model.vocab_size, 151936);
  EXPECT_EQ(q.model.num_layers, 36);
  EXPECT_TRUE(q.model.qk_layernorm);
}

// PEFT LoRA: its dim and target modules; NeMo's default targets are the four linears.
TEST(NemoTwoConfig, LoraFineTuning) {
  const std::string lora = "peft:\n  _target_: nemo.collections.llm.peft.lora.LoRA\n";
  const BridgeConfigArgs d = from_text(task("", "", "") + lora, {"--vocab-size", "1000"});
  EXPECT_TRUE(has(d.args, "--lora-rank", "32"));
  EXPECT_TRUE(has(d.args, "--lora-target-modules", "linear_qkv"));
  EXPECT_TRUE(has(d.args, "linear_fc2"));
  const BridgeConfigArgs t =
      from_text(task() + lora + "  dim: 16\n  target_modules:\n  - '*.linear_qkv'\n  - linear_proj\n",
                {"--vocab-size", "1000"});
  EXPECT_TRUE(has(t.args, "--lora-rank", "16"));
  EXPECT_FALSE(has(t.args, "linear_fc1"));
  EXPECT_NE(error_of(task() + lora + "  target_modules: [embedding]\n", {"--vocab-size", "1000"})
                .find("task.yaml: peft.target_modules"),
            std::string::npos);
}

// A checkpoint's context/model.yaml (the model itself: config and tokenizer), as a folder or the file; the
// world comes from the caller.
TEST(NemoTwoConfig, CheckpointContext) {
  const auto dir = std::filesystem::temp_directory_path() / "preflight_nemo2_ckpt";
  std::filesystem::create_directories(dir / "context");
  std::filesystem::create_directories(dir / "weights");
  std::ofstream(dir / "context" / "model.yaml")
      << "_target_: nemo.collections.llm.gpt.model.llama.LlamaModel\nconfig:\n"
         "  _target_: nemo.collections.llm.gpt.model.llama.Llama31Config8B\n  seq_length: 8192\n"
         "tokenizer:\n  _target_: "
         "nemo.collections.common.tokenizers.huggingface.auto_tokenizer.AutoTokenizer\n"
         "  pretrained_model_name: meta-llama/Llama-3.1-8B\n";
  EXPECT_EQ(nemo2_checkpoint_model_yaml(dir.string()), (dir / "context" / "model.yaml").string());
  EXPECT_EQ(nemo2_checkpoint_model_yaml(dir / "weights"), "");
  const MegatronConfig c = parse_bridge_args(bridge_config_to_megatron_args(
      dir.string(), {"--nproc_per_node", "8", "--micro-batch-size", "1", "--global-batch-size", "8"}));
  const ModelSpec preset = preset_model("llama3-8b");
  EXPECT_EQ(c.model.vocab_size, preset.vocab_size);
  EXPECT_EQ(c.model.hidden_size, preset.hidden_size);
  EXPECT_EQ(c.model.num_query_groups, 8);
  EXPECT_EQ(c.strategy.seq_length, 8192);
  std::filesystem::remove_all(dir);
}

// What is refused or said: Hyena (Evo 2); a class preflight has no defaults for (only the file's fields);
// messages name NeMo 2's fields (the strategy's, the data module's, the tokenizer), not Megatron's flags.
TEST(NemoTwoConfig, WhatIsRefusedAndHowErrorsAreNamed) {
  EXPECT_NE(error_of("_target_: nemo.collections.llm.api.pretrain\nmodel:\n  _target_: "
                     "nemo.collections.llm.gpt.model.hyena.HyenaModel\n  config:\n    _target_: "
                     "nemo.collections.llm.gpt.model.hyena.Hyena7bConfig\n")
                .find("Hyena"),
            std::string::npos);
  EXPECT_NE(error_of("_target_: nemo.collections.llm.api.pretrain\nmodel:\n  config:\n    _target_: "
                     "nemo.collections.llm.gpt.model.llama_nemotron.Llama33NemotronSuper49BConfig\n")
                .find("heterogeneous"),
            std::string::npos);
  const BridgeConfigArgs u = from_text(
      "_target_: nemo.collections.llm.api.pretrain\nmodel:\n  _target_: my.pkg.Model\n  config:\n"
      "    _target_: nemo.collections.llm.gpt.model.base.MyConfig\n    num_layers: 4\n    hidden_size: 256\n"
      "    num_attention_heads: 4\n    vocab_size: 1000\n    seq_length: 128\n"
      "data:\n  global_batch_size: 8\n  micro_batch_size: 1\ntrainer:\n  devices: 8\n");
  EXPECT_NE(u.warnings.front().find("MyConfig is not a NeMo model configuration class"), std::string::npos);
  EXPECT_EQ(parse_bridge_args(u).model.num_layers, 4);
  EXPECT_NE(error_of(task("    tensor_model_parallel_size: two\n"), {"--vocab-size", "1000"})
                .find("task.yaml: trainer.strategy.tensor_model_parallel_size"),
            std::string::npos);
  EXPECT_NE(error_of(task(), {"data.micro_batch_size=two", "--vocab-size", "1000"})
                .find("task.yaml: data.micro_batch_size"),
            std::string::npos);
  // MockDataModule without a tokenizer takes GPT-2's (NeMo's default); a tokenizer that cannot be read here
  // is named
  EXPECT_EQ(parse_bridge_args(from_text(task())).model.vocab_size, 50257);
  std::string unknown = task();
  const std::string after = "  seq_length: 4096\n";
  unknown.insert(
      unknown.find(after) + after.size(),
      "  tokenizer:\n    _target_: x.AutoTokenizer\n    pretrained_model_name: org/unknown-model\n");
  EXPECT_NE(error_of(unknown).find("task.yaml: data.tokenizer"), std::string::npos) << error_of(unknown);
  EXPECT_TRUE(is_nemo2_config(YAML::Load(task())));
  // a task whose model names no class of its own is still NeMo 2's (its config's class), not NeMo 1's
  std::string bare = task();
  const std::string model_class = "  _target_: nemo.collections.llm.gpt.model.llama.LlamaModel\n";
  bare.erase(bare.find(model_class), model_class.size());
  EXPECT_EQ(parse_bridge_args(from_text(bare, {"--vocab-size", "1000"})).model.num_layers, 32);
  EXPECT_FALSE(is_nemo2_config(
      YAML::Load(read_file(data_dir() / "frontends" / "bridge" / "qwen3_8b_run_config.yaml"))));
}

// `nemo llm pretrain --factory NAME`: the task NeMo's recipe builds (its pretrain_recipe() with the default
// arguments, from analyzer/data/nemo2/recipes.json), the factory's arguments and NeMo-Run's overrides over
// it.
TEST(NemoTwoConfig, RecipesAsTheFactoryBuildsThem) {
  const MegatronConfig p = parse_bridge_args(nemo2_recipe_to_megatron_args("llama3_8b", {}));
  EXPECT_EQ(p.model.num_layers, 32);
  EXPECT_EQ(p.strategy.world_size, 8);
  EXPECT_EQ(p.strategy.cp, 2);  // the recipe's trainer(): context_parallelism 2
  EXPECT_EQ(p.strategy.seq_length, 8192);
  EXPECT_EQ(p.strategy.global_batch_size, 512);
  EXPECT_EQ(p.model.vocab_size, 50257);  // MockDataModule without a tokenizer: GPT-2's, as in NeMo
  EXPECT_TRUE(p.strategy.distributed_optimizer);
  const MegatronConfig d = parse_bridge_args(nemo2_recipe_to_megatron_args("pretrain:deepseek_v3", {}));
  EXPECT_EQ(d.strategy.tp, 2);
  EXPECT_EQ(d.strategy.pp, 16);
  EXPECT_EQ(d.strategy.ep, 64);
  // the factory's arguments and the CLI's overrides
  const MegatronConfig n = parse_bridge_args(nemo2_recipe_to_megatron_args(
      "llama3_8b(num_nodes=2, name='x')", {"trainer.strategy.tensor_model_parallel_size=2"}));
  EXPECT_EQ(n.strategy.world_size, 16);
  EXPECT_EQ(n.strategy.tp, 2);
  // performance_mode=True, as NeMo's performance scripts build the recipe: its MegatronCommOverlapCallback
  // (TP overlap, the output layer's deferred weight gradients, interleaved p2p overlap)
  const BridgeConfigArgs plain = nemo2_recipe_to_megatron_args("llama3_70b", {});
  const BridgeConfigArgs fast = nemo2_recipe_to_megatron_args("llama3_70b(performance_mode=True)", {});
  EXPECT_FALSE(has(plain.args, "--tp-comm-overlap"));
  EXPECT_TRUE(has(plain.args, "--no-overlap-p2p-communication"));
  EXPECT_TRUE(has(fast.args, "--tp-comm-overlap"));
  EXPECT_TRUE(has(fast.args, "--defer-embedding-wgrad-compute"));
  EXPECT_FALSE(has(fast.args, "--no-overlap-p2p-communication"));
  // fine-tuning: LoRA as the recipe sets it, the tokenizer of the model it imports (nemo://ORG/REPO)
  const BridgeConfigArgs f = nemo2_recipe_to_megatron_args("finetune:llama3_8b", {});
  EXPECT_TRUE(has(f.args, "--lora-rank", "8"));
  const MegatronConfig fc = parse_bridge_args(f);
  EXPECT_EQ(fc.model.vocab_size, 128256);
  EXPECT_EQ(fc.strategy.seq_length, 2048);
  EXPECT_FALSE(
      has(nemo2_recipe_to_megatron_args("finetune:llama3_8b(peft_scheme='none')", {}).args, "--lora-rank"));
  // peft_scheme chooses a branch of the recipe that also sets the layout: Llama 3.1 405B's full fine-tuning
  // is tp 8 × pp 14 in NeMo's recipe (its LoRA branch tp 4 × pp 6 × vp 7)
  const BridgeConfigArgs full = nemo2_recipe_to_megatron_args("finetune:llama31_405b(peft_scheme=None)", {});
  EXPECT_TRUE(has(full.args, "--tensor-model-parallel-size", "8"));
  EXPECT_TRUE(has(full.args, "--pipeline-model-parallel-size", "14"));
  EXPECT_FALSE(has(full.args, "--lora-rank"));
  for (const auto& [spec, said] : std::vector<std::pair<std::string, std::string>>{
           {"llama3_8b(performance_mode=maybe)", "performance_mode is not read"},
           {"llama9_8b", "not one of NeMo's recipes"},
           {"pretrain:gpt_oss_20b", "no pretrain_recipe"},
           {"t5_220m", "T5Model"}}) {
    try {
      parse_bridge_args(nemo2_recipe_to_megatron_args(spec, {}));
      ADD_FAILURE() << spec;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(said), std::string::npos) << e.what();
    }
  }
  // every recipe is analysed, or refused with a message naming what (never another failure)
  int analysed = 0, recipes = 0;
  for (const std::string& name : nemo2_recipe_names())
    for (const char* task : {"pretrain:", "finetune:"}) {
      ++recipes;
      try {
        parse_bridge_args(nemo2_recipe_to_megatron_args(task + name, {}));
        ++analysed;
      } catch (const InputError& e) {
        EXPECT_FALSE(e.where().empty()) << name << ": " << e.what();
      }
    }
  EXPECT_GT(analysed, 100) << "of " << recipes;
  // --nemo-config takes a recipe name where no such file is
  EXPECT_TRUE(is_nemo2_recipe("finetune:qwen3_8b(num_nodes=1)"));
  EXPECT_FALSE(is_nemo2_recipe("qwen3_8b.yaml"));
  EXPECT_EQ(bridge_config_to_megatron_args("qwen3_8b", {}).args,
            nemo2_recipe_to_megatron_args("qwen3_8b", {}).args);
}

// estimate, analyze and search take it (--nemo-config).
TEST(NemoTwoConfig, EstimateAnalyzeAndSearchTakeIt) {
  using preflight::test::run_preflight;
  using preflight::test::shell_quote;
  const std::string file = shell_quote(nemo2("llama3_8b_pretrain_fp8.yaml"));
  auto r = run_preflight("estimate --system b200 --nemo-config " + file);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("seq8192.mbs2.mbc8.gbs128 tp1.cp1.ep1.pp1.dp8"), std::string::npos) << r.out;
  r = run_preflight("analyze --nemo-config " + file + " model.config.num_layers=16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("16 layers"), std::string::npos) << r.out;
  r = run_preflight("search --system b200 --quiet --top 3 --nemo-config " + file);
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace preflight::analyzer

namespace preflight::analyzer {
namespace {

std::string perf_error(const std::string& script, const std::vector<std::string>& cli) {
  try {
    parse_bridge_args(nemo2_perf_script_to_megatron_args(std::string(kNemo2PerfPrefix) + script, cli));
  } catch (const InputError& e) {
    return std::string(e.where()) + ": " + e.what();
  }
  return "(no error)";
}

}  // namespace

// NeMo 2's performance scripts (scripts/performance/llm, the launchers of NeMo 2.0's published tables) read
// as the run they submit: the script's override_recipe_configs() evaluated for the GPU, precision and GPU
// count of its recommended configuration (analyzer/data/nemo2/perf_scripts.json), the command line's sizes on
// top.
TEST(NemoTwoConfig, PerformanceScriptsAsTheySubmitTheirRuns) {
  auto perf = [](const std::string& script, const std::vector<std::string>& cli) {
    return nemo2_perf_script_to_megatron_args(std::string(kNemo2PerfPrefix) + script, cli);
  };
  // Llama 3 70B on H100 in FP8: the CSV's 64-GPU row (tp 4 pp 8 vp 5, micro batch 1, global 128), the
  // recipe's performance callback, FP8 with delayed scaling (-fr's default ds), the GPU's preset
  const BridgeConfigArgs h =
      perf("pretrain_llama3_70b", {"-a", "acct", "-p", "batch", "-g", "h100", "-c", "fp8"});
  EXPECT_EQ(h.system, "h100-sxm");
  EXPECT_TRUE(has(h.args, "--tp-comm-overlap"));
  // gradients reduced in bf16: the script sets the precision plugin's grad_reduce_in_fp32 = False, which
  // NeMo's strategy writes over the recipe's DDP config (update_config_with_dtype_overrides); read from the
  // DDP config, the reduce had been priced in fp32 (B200 405B +5 %)
  EXPECT_TRUE(has(h.args, "--grad-reduce-in-bf16"));
  const MegatronConfig hc = parse_bridge_args(h);
  EXPECT_EQ(hc.strategy.world_size, 64);
  EXPECT_EQ(hc.strategy.tp, 4);
  EXPECT_EQ(hc.strategy.pp, 8);
  EXPECT_EQ(hc.strategy.vpp, 5);
  EXPECT_EQ(hc.strategy.global_batch_size, 128);
  EXPECT_EQ(hc.strategy.fp8_recipe, Fp8Recipe::Delayed);
  EXPECT_NE(std::find_if(h.warnings.begin(), h.warnings.end(),
                         [](const std::string& w) {
                           return w.find("left out") != std::string::npos &&
                                  w.find("-a -p") != std::string::npos;
                         }),
            h.warnings.end());
  // its current-scaling run is the published NeMo 25.09 H100 row
  // (tests/data/time_corpus/h100_nemo_llama3.json, 10,119.8 ms measured): priced within 5 %
  const MegatronConfig cs =
      parse_bridge_args(perf("pretrain_llama3_70b", {"-g", "h100", "-c", "fp8", "-fr", "cs"}));
  EXPECT_EQ(cs.strategy.fp8_recipe, Fp8Recipe::Tensorwise);
  EXPECT_NEAR(iteration_ms(cs, "h100-sxm") / 10119.8, 1.0, 0.05);
  // the command line's sizes over the row's (helpers.py set_primary_perf_configs: sequence parallel with tp)
  const MegatronConfig o = parse_bridge_args(
      perf("pretrain_llama3_70b", {"-g", "h100", "-c", "bf16", "-tp", "8", "-pp", "4", "-vp", "1", "-ng",
                                   "128", "-gb", "256", "-mb", "1", "--recompute_layers=2"}));
  EXPECT_EQ(o.strategy.world_size, 128);
  // argparse's `-ng=128` spelling (an option's value after '=', one dash or two)
  EXPECT_EQ(parse_bridge_args(perf("pretrain_llama3_70b",
                                   {"-g=h100", "-ng=128", "-tp=8", "-pp=4", "-vp=1", "-mb=1", "-gb=256"}))
                .strategy.world_size,
            128);
  EXPECT_EQ(o.strategy.tp, 8);
  EXPECT_TRUE(o.strategy.sequence_parallel);
  EXPECT_EQ(o.strategy.pp, 4);
  EXPECT_EQ(o.strategy.vpp, 1);
  EXPECT_EQ(o.strategy.global_batch_size, 256);
  EXPECT_EQ(o.strategy.fp8, Fp8Format::None);
  // -rl over the row's full recompute (B200 Llama 3 70B FP8: 10 layers), and -rl 0 back to the recipe's none
  auto rc = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> cli = {"-g", "b200", "-c", "fp8", "-ng", "64"};
    cli.insert(cli.end(), extra.begin(), extra.end());
    return parse_bridge_args(perf("pretrain_llama3_70b", cli)).strategy;
  };
  EXPECT_EQ(rc({}).recompute_num_layers, 10);
  EXPECT_EQ(rc({"-rl", "4"}).recompute_num_layers, 4);
  EXPECT_EQ(rc({"-rl", "0"}).recompute_granularity, RecomputeGranularity::None);
  // a fine-tuning script: -f chooses the CSV's task and the recipe's peft_scheme; the script's own branch for
  // Blackwell (finetune_recipe(seq_length=16384) on b200 / gb200) is evaluated
  const BridgeConfigArgs sft = perf("finetune_llama3_8b", {"-g", "b200", "-c", "fp8", "-f", "sft"});
  EXPECT_FALSE(has(sft.args, "--lora-rank"));
  EXPECT_EQ(parse_bridge_args(sft).strategy.seq_length, 16384);
  EXPECT_TRUE(has(perf("finetune_llama3_8b", {"-g", "h100", "-c", "bf16"}).args, "--lora-rank"));
  // GB200 runs 4 GPUs a node whatever -gn says; NemotronH keeps its first and last layers in bf16 only where
  // the precision plugin says so (NeMo's DtypeConfig overwrites the model's fields: delayed scaling has them
  // off)
  const MegatronConfig nh =
      parse_bridge_args(perf("pretrain_nemotronh_56b", {"-g", "gb200", "-c", "fp8", "-gn", "8"}));
  EXPECT_EQ(nh.strategy.gpus_per_node, 4);
  // the CSV's first GB200 FP8 row of NemotronH 56B (model_configs_gb200.csv): 64 GPUs, tp 2, global batch 192
  EXPECT_EQ(nh.strategy.world_size, 64);
  EXPECT_EQ(nh.strategy.tp, 2);
  EXPECT_EQ(nh.strategy.global_batch_size, 192);
  // DeepSeek-V3's layouts name no MTP layer: current Megatron asserts it; a checkout of before 2025-08-26 put
  // the MTP on the last stage unnamed — given after a second `--` as a Megatron flag
  EXPECT_NE(perf_error("pretrain_deepseek_v3", {"-g", "h100", "-c", "fp8"}).find("places 0 MTP layers"),
            std::string::npos);
  EXPECT_EQ(perf_error("pretrain_deepseek_v3",
                       {"-g", "h100", "-c", "fp8", "--", "--megatron-version", "2025-07-01"}),
            "(no error)");
  // refused, naming why
  EXPECT_NE(perf_error("pretrain_llama3_70b", {"-c", "fp8"}).find("needs -g/--gpu"), std::string::npos);
  EXPECT_NE(perf_error("pretrain_llama3_70b", {"-g", "h100", "--bogus"}).find("not an option of NeMo's"),
            std::string::npos);
  EXPECT_NE(perf_error("pretrain_llama3_70b", {"-g", "h100", "-ng", "48"}).find("the CSV has 64 GPUs"),
            std::string::npos)
      << perf_error("pretrain_llama3_70b", {"-g", "h100", "-ng", "48"});
  EXPECT_EQ(perf_error("pretrain_llama3_70b", {"-g", "h100", "-ng", "48", "-tp", "4", "-pp", "4", "-mb", "1",
                                               "-gb", "96", "-vp", "5"}),
            "(no error)");
  EXPECT_NE(perf_error("pretrain_llama9_70b", {"-g", "h100"}).find("not one of NeMo 2's performance scripts"),
            std::string::npos);
  EXPECT_NE(perf_error("pretrain_automodel_llama3_8b", {"-g", "h100"}).find("not priced"), std::string::npos);
  EXPECT_NE(perf_error("pretrain_llama3_70b", {"-g", "a100"}).find("not one of the script's GPUs"),
            std::string::npos);
  // every script's every recommended configuration is read, or refused naming what (never another failure)
  int read = 0, configs = 0;
  const auto table = nlohmann::json::parse(read_file(std::filesystem::path(PREFLIGHT_SOURCE_DIR) /
                                                     "analyzer" / "data" / "nemo2" / "perf_scripts.json"));
  for (const auto& [script, entry] : table["scripts"].items()) {
    if (entry.contains("unsupported")) continue;
    for (const auto& c : entry["configs"]) {
      ++configs;
      std::vector<std::string> cli = {"-g",       c["gpu"], "-c",
                                      c["dtype"], "-ng",    std::to_string(c["num_gpus"].get<int>())};
      if (c["fp8_recipe"].is_string()) cli.insert(cli.end(), {"-fr", c["fp8_recipe"]});
      if (entry["csv_task"].is_null()) cli.insert(cli.end(), {"-f", c["csv_task"]});
      try {
        parse_bridge_args(perf(script, cli));
        ++read;
      } catch (const InputError& e) {
        EXPECT_FALSE(e.where().empty()) << script << ": " << e.what();
      }
    }
  }
  EXPECT_GT(read, configs / 2) << "of " << configs;
}

}  // namespace preflight::analyzer
