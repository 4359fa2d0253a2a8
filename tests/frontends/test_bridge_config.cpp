// Megatron-Bridge run configurations (ConfigContainer YAML) read as Megatron arguments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "preflight/analyzer/cost/estimate.hpp"
#include "preflight/analyzer/cost/simumax_config.hpp"
#include "preflight/analyzer/frontends/bridge_config.hpp"
#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/common/error.hpp"
#include "test_support.hpp"

namespace preflight::analyzer {
namespace {

using preflight::test::data_dir;
using preflight::test::read_file;

std::string bridge(const std::string& name) {
  return (data_dir() / "frontends" / "bridge" / name).string();
}

/// A run of the time corpus by a substring of its name.
std::vector<std::string> corpus_args(const std::string& file, const std::string& name) {
  const auto j = nlohmann::json::parse(read_file(data_dir() / "time_corpus" / file));
  for (const auto& r : j["runs"])
    if (r["name"].get<std::string>().find(name) != std::string::npos)
      return r["args"].get<std::vector<std::string>>();
  ADD_FAILURE() << file << ": no run named " << name;
  return {};
}

double iteration_ms(const std::vector<std::string>& args, const std::string& system) {
  const MegatronConfig c = parse_megatron_args(args);
  return cost::estimate(c.model, c.strategy, cost::load_simumax_system(system)).iteration_ms;
}

bool has(const std::vector<std::string>& args, const std::string& flag, const std::string& value = "") {
  auto it = std::find(args.begin(), args.end(), flag);
  if (it == args.end()) return false;
  return value.empty() || (it + 1 != args.end() && *(it + 1) == value);
}

// Our own ConfigContainer YAMLs of two verification-card runs (written in ConfigContainer.to_yaml()'s form:
// _target_ keys, torch dtypes and functions as {_target_: …}, the attention backend as an AttnBackend enum;
// the model's seq_length its context, the dataset's sequence_length the training sequence): priced exactly as
// the time corpus's Megatron command lines of the same runs (tests/data/time_corpus/
// h100_nemo_verification_cards.json) — a dense GQA model with qk norm, and Nemotron-3-Super's hybrid
// LatentMoE with repeated MTP depths, expert capacity, selective recompute and the precision-aware
// optimizer's dtypes.
TEST(BridgeConfig, RunConfigPricesAsTheSameRunsMegatronArguments) {
  const std::vector<std::string> world16 = {"--nproc_per_node", "8", "--nnodes", "2"};
  const BridgeConfigArgs q = bridge_config_to_megatron_args(bridge("qwen3_8b_run_config.yaml"), world16);
  EXPECT_TRUE(has(q.args, "--seq-length", "4096"));  // the dataset's, not the model's 40960
  EXPECT_TRUE(has(q.args, "--max-position-embeddings", "40960"));
  EXPECT_TRUE(has(q.args, "--swiglu"));
  EXPECT_TRUE(has(q.args, "--attention-backend", "auto"));  // AttnBackend(5)
  EXPECT_TRUE(has(q.args, "--grad-reduce-in-bf16"));
  EXPECT_FALSE(has(q.args, "--recompute-modules"));  // Bridge's default list without selective recompute
  const double bridge_q = iteration_ms(q.args, "h100-sxm");
  const double corpus_q =
      iteration_ms(corpus_args("h100_nemo_verification_cards.json", "qwen3-8b"), "h100-sxm");
  EXPECT_NEAR(bridge_q / corpus_q, 1.0, 1e-9);

  const std::vector<std::string> world64 = {"--nproc_per_node", "8", "--nnodes", "8"};
  const BridgeConfigArgs s =
      bridge_config_to_megatron_args(bridge("nemotron3_super_h100_run_config.yaml"), world64);
  EXPECT_TRUE(has(s.args, "--hybrid-layer-pattern"));
  EXPECT_FALSE(has(s.args, "--num-layers"));  // the pattern gives them
  EXPECT_TRUE(has(s.args, "--squared-relu"));
  EXPECT_TRUE(has(s.args, "--moe-latent-size", "1024"));
  EXPECT_TRUE(has(s.args, "--main-params-dtype", "fp16"));
  const MegatronConfig sc = parse_megatron_args(s.args);
  EXPECT_EQ(sc.model.moe.latent_size, 1024);
  EXPECT_EQ(sc.model.mtp_num_layers, 2);
  EXPECT_EQ(sc.strategy.pp, 2);
  EXPECT_EQ(sc.strategy.ep, 32);
  const double bridge_s = iteration_ms(s.args, "h100-sxm");
  const double corpus_s =
      iteration_ms(corpus_args("h100_nemo_verification_cards.json", "nemotron-3-super"), "h100-sxm");
  EXPECT_NEAR(bridge_s / corpus_s, 1.0, 1e-9);
}

// A Megatron-Bridge training log prints the configuration between `------- Task Configuration -------` and a
// line of dashes (training/setup.py print_yaml): read from there, the same arguments; a log cut inside the
// block is refused with its last line; a log without one is read as YAML and refused for having no model.
TEST(BridgeConfig, ReadsTheConfigurationABridgeLogPrints) {
  const std::string yaml = read_file(bridge("qwen3_8b_run_config.yaml"));
  const std::string log =
      "INFO:megatron.core.datasets.gpt_dataset:> total number of epochs: 1\n"
      "done with setup ...\n"
      "------- Task Configuration -------\n" +
      yaml +
      "\n----------------------------------\n"
      "Training ...\n"
      " [2026-07-21 03:27:07] iteration       10/     100 | consumed samples:        10240 | elapsed time "
      "per "
      "iteration (ms): 25070.3 | global batch size:  1024 |\n";
  const auto from_log = bridge_config_text_to_megatron_args(log, "train.log", {});
  const auto from_yaml = bridge_config_text_to_megatron_args(yaml, "run_config.yaml", {});
  EXPECT_EQ(from_log.args, from_yaml.args);

  const std::string cut = log.substr(0, log.find("optimizer:"));
  try {
    bridge_config_text_to_megatron_args(cut, "train.log", {});
    ADD_FAILURE() << "a truncated configuration block was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("train.log:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
  try {
    bridge_config_text_to_megatron_args("iteration 1/10 | elapsed time per iteration (ms): 10.0\n",
                                        "other.log", {});
    ADD_FAILURE() << "a log without a configuration was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no `model` section"), std::string::npos) << e.what();
  }
}

// Hydra-style overrides change the YAML before it is read, as Megatron-Bridge's recipe scripts apply them;
// the other words are Megatron / torchrun arguments passed on after the file's.
TEST(BridgeConfig, OverridesApplyToTheYamlAndTheRestIsPassedOn) {
  const auto b = bridge_config_to_megatron_args(
      bridge("qwen3_8b_run_config.yaml"),
      {"model.tensor_model_parallel_size=2", "model.sequence_parallel=true", "train.global_batch_size=512",
       "mixed_precision=bf16_with_mxfp8_mixed", "--nproc_per_node", "8"});
  const MegatronConfig c = parse_megatron_args(b.args);
  EXPECT_EQ(c.strategy.tp, 2);
  EXPECT_TRUE(c.strategy.sequence_parallel);
  EXPECT_EQ(c.strategy.global_batch(), 512);
  EXPECT_EQ(c.strategy.world_size, 8);
  EXPECT_TRUE(has(b.args, "--fp8-format", "e4m3"));
  EXPECT_TRUE(has(b.args, "--fp8-recipe", "mxfp8"));
  EXPECT_TRUE(has(b.args, "--fp8-param-gather"));
  EXPECT_THROW(
      bridge_config_to_megatron_args(bridge("qwen3_8b_run_config.yaml"), {"mixed_precision=bf16_magic"}),
      InputError);
  // The gradient reduction: mixed_precision's wins over the DDP config's (Bridge's setup copies it there).
  const auto fp32 = bridge_config_to_megatron_args(
      bridge("qwen3_8b_run_config.yaml"),
      {"ddp.grad_reduce_in_fp32=false", "mixed_precision.grad_reduce_in_fp32=true"});
  EXPECT_FALSE(has(fp32.args, "--grad-reduce-in-bf16"));
  const auto bf16 = bridge_config_to_megatron_args(
      bridge("qwen3_8b_run_config.yaml"),
      {"ddp.grad_reduce_in_fp32=true", "mixed_precision.grad_reduce_in_fp32=false"});
  EXPECT_TRUE(has(bf16.args, "--grad-reduce-in-bf16"));
  // The interleaved schedule's micro-batch group and the output layer's deferred weight gradients
  // (CommOverlapConfig's, copied onto the model by Bridge's setup; with pipeline parallelism only).
  const auto vp = bridge_config_to_megatron_args(
      bridge("qwen3_8b_run_config.yaml"),
      {"model.pipeline_model_parallel_size=2", "model.virtual_pipeline_model_parallel_size=2",
       "model.microbatch_group_size_per_vp_stage=4", "comm_overlap.defer_embedding_wgrad_compute=true",
       "comm_overlap.wgrad_deferral_limit=22", "--nproc_per_node", "8"});
  const MegatronConfig v = parse_megatron_args(vp.args);
  EXPECT_EQ(v.strategy.microbatch_group_size_per_vp_stage, 4);
  EXPECT_TRUE(v.strategy.defer_embedding_wgrad);
  EXPECT_EQ(v.strategy.wgrad_deferral_limit, 22);
  const auto flat = bridge_config_to_megatron_args(bridge("qwen3_8b_run_config.yaml"),
                                                   {"comm_overlap.defer_embedding_wgrad_compute=true"});
  EXPECT_FALSE(has(flat.args, "--defer-embedding-wgrad-compute"));  // pp 1: Bridge does not set it
}

// Fields that change the layers are carried, not dropped: Qwen3-Next's gated delta net (every fourth layer
// attention), gated attention and the shared expert's gate.
TEST(BridgeConfig, LinearAttentionFieldsAreCarried) {
  const auto b = bridge_config_to_megatron_args(
      bridge("qwen3_8b_run_config.yaml"),
      {"model.experimental_attention_variant=gated_delta_net", "model.linear_attention_freq=4",
       "model.linear_num_key_heads=16", "model.linear_num_value_heads=32", "model.linear_key_head_dim=128",
       "model.linear_value_head_dim=128", "model.linear_conv_kernel_dim=4",
       "model.attention_output_gate=true", "--nproc_per_node", "8"});
  const MegatronConfig c = parse_megatron_args(b.args);
  ASSERT_EQ(c.model.gdn_layers.size(), 36u);
  EXPECT_EQ(std::count(c.model.gdn_layers.begin(), c.model.gdn_layers.end(), true), 27);  // 3 of every 4
  EXPECT_TRUE(has(b.args, "--attention-output-gate"));
  // CUDA graph modules as Megatron now stores them (CudaGraphModule members, by ordinal) and as it did
  // (CudaGraphScope, other ordinals): by name.
  const auto g = bridge_config_to_megatron_args(
      bridge("qwen3_8b_run_config.yaml"),
      {"model.cuda_graph_impl=transformer_engine",
       "model.cuda_graph_modules=[{_target_: megatron.core.transformer.enums.CudaGraphModule, _args_: [4]}, "
       "{_target_: megatron.core.transformer.enums.CudaGraphModule, _args_: [5]}]"});
  auto it = std::find(g.args.begin(), g.args.end(), "--cuda-graph-scope");
  ASSERT_NE(it, g.args.end());
  ASSERT_GE(g.args.end() - it, 3);
  EXPECT_EQ(*(it + 1), "moe_router");
  EXPECT_EQ(*(it + 2), "moe_preprocess");
  const auto old_scope = bridge_config_to_megatron_args(
      bridge("qwen3_8b_run_config.yaml"),
      {"model.cuda_graph_impl=transformer_engine",
       "model.cuda_graph_scope=[{_target_: megatron.core.transformer.enums.CudaGraphScope, _args_: [2]}]"});
  EXPECT_TRUE(has(old_scope.args, "--cuda-graph-scope", "attn"));
}

// A pipeline layout as Bridge serialises a PipelineParallelLayerLayout (its stages as lists of layer types,
// names or LayerType ordinals): Megatron's layout string, which the layout parser then places.
TEST(BridgeConfig, PipelineLayoutListBecomesMegatronsString) {
  std::string first = "[E", second = "[";
  for (int i = 0; i < 18; ++i) {
    first += ", t";
    second +=
        std::string(i ? ", " : "") + "{_target_: megatron.core.transformer.enums.LayerType, _args_: [4]}";
  }
  const auto b = bridge_config_to_megatron_args(
      bridge("qwen3_8b_run_config.yaml"),
      {"model.pipeline_model_parallel_size=2",
       "model.pipeline_model_parallel_layout=[" + first + "], " + second + ", loss]]", "--nproc_per_node",
       "8"});
  const std::string layout = "E" + std::string(18, 't') + "|" + std::string(18, 't') + "L";
  EXPECT_TRUE(has(b.args, "--pipeline-model-parallel-layout", layout));
  const MegatronConfig c = parse_megatron_args(b.args);
  EXPECT_EQ(c.strategy.pp, 2);
  EXPECT_THROW(bridge_config_to_megatron_args(bridge("qwen3_8b_run_config.yaml"),
                                              {"model.pipeline_model_parallel_layout=[[E, x]]"}),
               InputError);
}

// Bad files: the message names the file and line (malformed YAML) or the file and field (a wrong type).
TEST(BridgeConfig, BadInputNamesFileAndField) {
  try {
    bridge_config_text_to_megatron_args("model:\n  num_layers: [1, 2\n  hidden_size: 8\n", "bad.yaml", {});
    ADD_FAILURE() << "malformed yaml was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.yaml:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("malformed yaml"), std::string::npos) << e.what();
  }
  try {
    bridge_config_text_to_megatron_args("model:\n  num_layers: 4\n  hidden_size: big\n", "bad.yaml", {});
    ADD_FAILURE() << "a word for a size was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.yaml: model.hidden_size"), std::string::npos) << e.what();
  }
  try {
    bridge_config_text_to_megatron_args(
        "model:\n  attention_backend:\n    _target_: megatron.core.transformer.enums.AttnBackend\n"
        "    _args_: [9]\n",
        "bad.yaml", {});
    ADD_FAILURE() << "an unknown attention backend was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("model.attention_backend"), std::string::npos) << e.what();
  }
  EXPECT_THROW(bridge_config_to_megatron_args(bridge("no_such_file.yaml"), {}), InputError);

  // A saved configuration lacking a size names the field; a recipe script's override file (its model
  // section without the provider's _target_, as Megatron-Bridge's tutorials/recipes/*/conf/*.yaml are) is
  // said to be one, with where a run's whole configuration is.
  auto missing_layers = [](const std::string& model) {
    const auto b = bridge_config_text_to_megatron_args(
        "model:\n" + model +
            "  hidden_size: 64\n  num_attention_heads: 4\n  vocab_size: 512\n"
            "dataset:\n  sequence_length: 128\ntrain:\n  micro_batch_size: 1\n  global_batch_size: 8\n",
        "run.yaml", {});
    try {
      parse_bridge_args(b);
      ADD_FAILURE() << "a configuration without num_layers was read";
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string saved =
      missing_layers("  _target_: megatron.bridge.models.gpt_provider.GPTModelProvider\n");
  EXPECT_NE(saved.find("run.yaml: model.num_layers: is required"), std::string::npos) << saved;
  EXPECT_EQ(saved.find("override file"), std::string::npos) << saved;
  const std::string override_file = missing_layers("  tensor_model_parallel_size: 1\n");
  EXPECT_NE(override_file.find("run.yaml: model.num_layers: is required"), std::string::npos)
      << override_file;
  EXPECT_NE(override_file.find("override file"), std::string::npos) << override_file;
  EXPECT_NE(override_file.find("run_config.yaml"), std::string::npos) << override_file;
}

// The command line: `preflight estimate --bridge-config FILE -- <torchrun world size>` prices it;
// `preflight analyze --bridge-config FILE …` prints the tables of the same run; `preflight search
// --bridge-config FILE -- …` searches layouts with it as the launch.
// Megatron-Bridge's recipes by name (`run_recipe.py --recipe llama3_8b_pretrain_config`): the ConfigContainer
// the recipe function returns (analyzer/data/bridge/recipes.json, from Megatron-Bridge's source), its model
// the Hugging Face repository's architecture (here the llama3-8b preset) with the recipe's fields over it,
// the world the recipe's name gives unless torchrun's sizes are given, Hydra overrides over the recipe.
TEST(BridgeConfig, RecipesByName) {
  const BridgeConfigArgs r = bridge_recipe_to_megatron_args("llama3_8b_pretrain_config", {});
  EXPECT_EQ(r.base_model, "meta-llama/Meta-Llama-3-8B");
  EXPECT_TRUE(has(r.args, "--tokenizer-type", "NullTokenizer"));  // use_tokenizer_vocab_size: mock data
  const MegatronConfig c = parse_bridge_args(r);
  EXPECT_EQ(c.model.num_layers, 32);
  EXPECT_EQ(c.model.hidden_size, 4096);
  EXPECT_EQ(c.model.vocab_size, 32000);
  EXPECT_EQ(c.strategy.world_size, 2);  // llama3_8b_pretrain_2gpu_h100_bf16_config
  EXPECT_EQ(c.strategy.cp, 2);
  EXPECT_EQ(c.strategy.seq_length, 8192);
  EXPECT_EQ(c.strategy.global_batch_size, 512);
  EXPECT_TRUE(c.strategy.distributed_optimizer);
  EXPECT_NE(r.warnings.at(1).find("2 GPUs, as the recipe's name says"), std::string::npos)
      << r.warnings.at(1);
  const MegatronConfig o = parse_bridge_args(bridge_recipe_to_megatron_args(
      "llama3_8b_pretrain_config", {"model.tensor_model_parallel_size=2", "--nproc_per_node", "8"}));
  EXPECT_EQ(o.strategy.tp, 2);
  EXPECT_EQ(o.strategy.world_size, 8);
  // DeepSeek-V3's recipe sets its uneven pipeline layout through a helper, evaluated with the recipe
  const MegatronConfig d =
      parse_bridge_args(bridge_recipe_to_megatron_args("deepseek_v3_pretrain_config", {}));
  EXPECT_EQ(d.strategy.pp, 16);
  EXPECT_EQ(d.strategy.world_size, 1024);
  EXPECT_EQ(d.model.num_layers, 61);
  // a recipe asking for TP overlap with tp 1: off, as Bridge's setup turns it off, said
  const BridgeConfigArgs q = bridge_recipe_to_megatron_args("qwen3_30b_a3b_pretrain_config", {});
  EXPECT_FALSE(has(q.args, "--tp-comm-overlap"));
  EXPECT_TRUE(std::any_of(q.warnings.begin(), q.warnings.end(), [](const std::string& w) {
    return w.find("comm_overlap.tp_comm_overlap: off") != std::string::npos;
  }));
  EXPECT_EQ(parse_bridge_args(q).strategy.ep, 16);
  // a PEFT recipe's LoRA adapters
  EXPECT_TRUE(has(bridge_recipe_to_megatron_args("llama3_8b_peft_config", {}).args, "--lora-rank"));
  // --bridge-config takes a recipe's name where no such file is; an unknown name is said
  EXPECT_EQ(bridge_config_to_megatron_args("llama3_8b_pretrain_config", {}).args, r.args);
  EXPECT_FALSE(is_bridge_recipe("llama3_8b_pretrain_config.yaml"));
  try {
    bridge_recipe_to_megatron_args("llama9_pretrain_config", {});
    ADD_FAILURE() << "an unknown recipe was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not one of Megatron-Bridge's recipes"), std::string::npos);
  }
}

TEST(BridgeConfig, EstimateAndAnalyzeTakeIt) {
  using preflight::test::run_preflight;
  using preflight::test::shell_quote;
  const std::string file = shell_quote(bridge("qwen3_8b_run_config.yaml"));
  auto r = run_preflight("estimate --system h100-sxm --bridge-config " + file +
                         " -- --nproc_per_node 8 --nnodes 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("seq4096.mbs1.mbc64.gbs1024 tp1.cp1.ep1.pp1.dp16"), std::string::npos) << r.out;
  r = run_preflight("analyze --bridge-config " + file + " --nproc_per_node 8 --nnodes 2 model.num_layers=12");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("12 layers"), std::string::npos) << r.out;
  // search: the file's run as the launch (its own layout ranked among the searched ones).
  r = run_preflight("search --system h100-sxm --quiet --top 3 --tp 1,2 --pp 1,2 --bridge-config " + file +
                    " -- --nproc_per_node 8 --nnodes 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("the launch's own layout (tp 1 pp 1 ep 1 cp 1 vpp 1, micro batch 1)"),
            std::string::npos)
      << r.out;
  // A size the file lacks is named by its field, not only by Megatron's flag.
  const auto partial = preflight::test::scratch_dir() / "bridge_no_layers.yaml";
  preflight::test::write_file(partial,
                              "model:\n  hidden_size: 1024\n  num_attention_heads: 8\n  vocab_size: 32000\n"
                              "dataset:\n  sequence_length: 1024\ntrain:\n  global_batch_size: 8\n");
  for (const char* cmd : {"estimate --system h100-sxm --bridge-config ", "analyze --bridge-config ",
                          "search --system h100-sxm --quiet --bridge-config "}) {
    r = run_preflight(std::string(cmd) + shell_quote(partial.string()));
    EXPECT_EQ(r.exit_code, 2) << cmd;
    EXPECT_NE(r.err.find("bridge_no_layers.yaml: model.num_layers"), std::string::npos) << cmd << r.err;
  }
  r = run_preflight("estimate --system h100-sxm --bridge-config " + shell_quote(bridge("missing.yaml")));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("missing.yaml"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace preflight::analyzer

namespace preflight::analyzer {
namespace {

// `preflight calibrate --measured LOG` on a Megatron-Bridge log: no argument dump, the Task Configuration
// YAML instead, and no world size printed — refused without --world-size (named), then predicted per logged
// rank from the YAML as `analyze --bridge-config` predicts the same run (the log here is ours: the YAML and
// Megatron-style memory / iteration lines).
TEST(BridgeConfig, CalibrateReadsABridgeLogWithTheWorldGiven) {
  using preflight::test::run_preflight;
  using preflight::test::shell_quote;
  const std::string yaml = read_file(bridge("qwen3_8b_run_config.yaml"));
  const auto log = preflight::test::scratch_dir() / "bridge_qwen3_8b.log";
  preflight::test::write_file(
      log, "done with setup ...\n------- Task Configuration -------\n" + yaml +
               "\n----------------------------------\nTraining ...\n"
               " [2026-07-21 03:27:07] iteration       10/     100 | consumed samples:        10240 | "
               "elapsed time "
               "per iteration (ms): 25070.3 | global batch size:  1024 | lm loss: 9.76E+00 |\n"
               "[Rank 0] (after 10 iterations) memory (MB) | allocated: 40000.0 | max allocated: 60000.0 | "
               "reserved: 62000.0 | max reserved: 62000.0\n");
  auto r = run_preflight("calibrate --measured " + shell_quote(log.string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--world-size"), std::string::npos) << r.err;
  r = run_preflight("calibrate --measured " + shell_quote(log.string()) +
                    " --world-size 12 --gpus-per-node 8");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("do not fill nodes of 8"), std::string::npos) << r.err;
  r = run_preflight("calibrate --json --measured " + shell_quote(log.string()) + " --world-size 16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& rank = j["logs"][0]["ranks"][0];
  EXPECT_DOUBLE_EQ(rank["measured_max_allocated_mib"].get<double>(), 60000.0);
  const auto a =
      run_preflight("analyze --json --bridge-config " + shell_quote(bridge("qwen3_8b_run_config.yaml")) +
                    " --nproc_per_node 8 --nnodes 2");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const double analyzed =
      nlohmann::json::parse(a.out)["memory"]["stages"][0]["peak"]["bytes"].get<double>() / (1024.0 * 1024.0);
  EXPECT_NEAR(rank["predicted_peak_mib"].get<double>(), analyzed, 0.01);
}

}  // namespace
}  // namespace preflight::analyzer
