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

// What Megatron-Bridge's setup does to a configuration before it trains (recipes are read before it):
// - a CommOverlapConfig with the distributed optimizer sets the DDP overlaps (data parallel > 1) over the DDP
//   config's own fields, unless the CommOverlapConfig gives them (comm_overlap.py
//   _get_optimizer_overlap_cfgs);
// - a pipeline layout gives the virtual stages: a recipe may also give virtual_pipeline_model_parallel_size
//   when they agree (Megatron-LM's command line refuses both), and is refused when they do not;
// - selective recompute of an empty module list recomputes nothing (only None means core_attn);
// - fp8_output_proj, a paged expert stash and FP4 parameter gathering are carried.
TEST(BridgeConfig, SetupRulesOfAConfigurationBeforeTraining) {
  const std::string file = bridge("qwen3_8b_run_config.yaml");
  const std::vector<std::string> world = {"--nproc_per_node", "8"};
  auto with = [&](std::vector<std::string> o) {
    o.insert(o.end(), world.begin(), world.end());
    return bridge_config_to_megatron_args(file, o).args;
  };
  // the file's DDP config overlaps both; with its CommOverlapConfig they stay on even where the DDP config
  // says no, and are off only where the CommOverlapConfig says so
  const auto setup_on = with({"ddp.overlap_grad_reduce=false", "ddp.overlap_param_gather=false"});
  EXPECT_TRUE(has(setup_on, "--overlap-grad-reduce"));
  EXPECT_TRUE(has(setup_on, "--overlap-param-gather"));
  const auto user_off = with({"comm_overlap.overlap_grad_reduce=false"});
  EXPECT_FALSE(has(user_off, "--overlap-grad-reduce"));
  EXPECT_TRUE(has(user_off, "--overlap-param-gather"));
  // without a CommOverlapConfig (null) the DDP config's own fields
  const auto no_setup =
      with({"comm_overlap=null", "ddp.overlap_grad_reduce=false", "ddp.overlap_param_gather=false"});
  EXPECT_FALSE(has(no_setup, "--overlap-grad-reduce"));
  EXPECT_FALSE(has(no_setup, "--overlap-param-gather"));

  // a layout of 4 stages at pp 2 with virtual_pipeline_model_parallel_size 2: the layout's 2 virtual stages
  std::string layout = "[[E, t, t, t, t, t, t, t, t, t]";
  for (int i = 0; i < 3; ++i)
    layout += ", [t, t, t, t, t, t, t, t, t" + std::string(i == 2 ? ", L" : "") + "]";
  layout += "]";
  const auto lv =
      with({"model.pipeline_model_parallel_size=2", "model.virtual_pipeline_model_parallel_size=2",
            "model.pipeline_model_parallel_layout=" + layout});
  EXPECT_FALSE(has(lv, "--num-virtual-stages-per-pipeline-rank"));
  const MegatronConfig c = parse_megatron_args(lv);
  EXPECT_EQ(c.strategy.pp, 2);
  EXPECT_EQ(c.strategy.vpp, 2);
  try {
    with({"model.pipeline_model_parallel_size=2", "model.virtual_pipeline_model_parallel_size=4",
          "model.pipeline_model_parallel_layout=" + layout});
    ADD_FAILURE() << "a layout of 4 stages was read with 4 virtual stages at pp 2";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("model.virtual_pipeline_model_parallel_size"), std::string::npos)
        << e.what();
  }

  // selective recompute: of nothing, of the default (core_attn), of the modules given
  EXPECT_FALSE(has(with({"model.recompute_granularity=selective", "model.recompute_modules=[]"}),
                   "--recompute-granularity"));
  EXPECT_TRUE(has(with({"model.recompute_granularity=selective", "model.recompute_modules=null"}),
                  "--recompute-granularity", "selective"));
  EXPECT_TRUE(has(with({"model.recompute_granularity=selective", "model.recompute_modules=[mlp]"}),
                  "--recompute-modules", "mlp"));

  // FP8 output projection and the paged expert stash; NVFP4's parameter gathering
  const auto fp8 = with(
      {"mixed_precision=bf16_with_mxfp8_mixed", "model.fp8_output_proj=true", "model.moe_paged_stash=true"});
  EXPECT_TRUE(has(fp8, "--fp8-output-proj"));
  EXPECT_TRUE(has(fp8, "--moe-paged-stash"));
  EXPECT_FALSE(has(with({"model.fp8_output_proj=true"}), "--fp8-output-proj"));  // (no FP8: Megatron refuses)
  const auto fp4 = with({"mixed_precision.fp4=e2m1", "mixed_precision.fp4_recipe=nvfp4",
                         "mixed_precision.fp4_param_gather=true"});
  EXPECT_TRUE(has(fp4, "--fp4-param-gather"));

  // an override of a section the ConfigContainer does not have is refused, as Bridge refuses it (it had been
  // dropped silently); the sections the analysis leaves out take theirs; an environment assignment is passed
  // on
  for (const std::string& config : {file, std::string("llama3_8b_pretrain_config")}) {
    try {
      bridge_config_to_megatron_args(config, {"modle.tensor_model_parallel_size=2"});
      ADD_FAILURE() << config << ": a misspelt section was read";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("'modle' is not a section of Megatron-Bridge's ConfigContainer"),
                std::string::npos)
          << e.what();
    }
    EXPECT_NO_THROW(bridge_config_to_megatron_args(
        config, {"logger.save_config_filepath=run.yaml", "checkpoint.save=/ckpt", "NCCL_DEBUG=INFO"}));
  }

  // window_attn_skip_freq as a list, one entry a layer (Bridge's Step-3.7 recipes), as Megatron takes it
  std::string skip = "[";
  for (int l = 0; l < 36; ++l) skip += std::string(l ? "," : "") + (l % 4 == 0 ? "0" : "1");
  const MegatronConfig w =
      parse_megatron_args(with({"model.window_size=[512, 0]", "model.window_attn_skip_freq=" + skip + "]"}));
  ASSERT_EQ(w.model.layer_has_window.size(), 36u);
  EXPECT_EQ(std::count(w.model.layer_has_window.begin(), w.model.layer_has_window.end(), true), 27);
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
  // a model provider class given by name: its dataclass defaults (OlMoEModelProvider: OLMoE-1B-7B) under the
  // recipe's fields
  const MegatronConfig olmoe =
      parse_bridge_args(bridge_recipe_to_megatron_args("olmoe_7b_sft_8gpu_h100_bf16_config", {}));
  EXPECT_EQ(olmoe.model.num_layers, 16);
  EXPECT_EQ(olmoe.model.hidden_size, 2048);
  EXPECT_EQ(olmoe.model.moe.num_experts, 64);
  EXPECT_EQ(olmoe.model.moe.router_topk, 8);
  EXPECT_EQ(olmoe.model.vocab_size, 50304);
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

// Megatron-Bridge's flat performance recipes (megatron.bridge.perf_recipes: what scripts/performance's
// setup_experiment.py -mr MODEL -ng N -g GPU -c PRECISION trains, the layouts of NVIDIA's published tables):
// by name (where both packages export one, this one, as Bridge's runner resolves it) or perf:NAME.  The GPU
// in the name is the system (4 GPUs a node on GB200 / GB300, as scripts/performance launches them).  Each
// prices exactly as the time corpus's command line of the published run it is the recipe of (to 1e-6) — which
// checks the generator's reading of Bridge's source (helpers re-exported under other names, the
// mixed-precision functions, apply_flex_dispatcher_backend) and the setup rules above on real recipes.
TEST(BridgeConfig, PerformanceRecipesPriceAsThePublishedRuns) {
  struct Case {
    const char* recipe;
    const char* corpus;
    const char* run;
    const char* system;
    int world, gpus_per_node;
  };
  const Case cases[] = {
      {"perf:deepseek_v3_pretrain_1024gpu_h100_bf16_config", "h100_nemo_verification_cards.json",
       "h100 deepseek-v3 bf16", "h100-sxm", 1024, 8},
      {"deepseek_v3_pretrain_256gpu_gb300_fp8mx_config", "gb300_nemo_full_iteration.json",
       "gb300 deepseek-v3 mxfp8 pp2 vp8 ep32 hybridep full-iteration graph ep-overlap fp8-attn mbs1 gbs4096 "
       "(NeMo 26.08)",
       "gb300", 256, 4},
      {"llama3_70b_sft_32gpu_gb300_fp8cs_config", "gb300_nemo_finetune.json", "gb300 llama3-70b sft fp8",
       "gb300", 32, 4},
      {"llama31_405b_pretrain_256gpu_gb200_fp8cs_config", "gb200_nemo_llama.json",
       "gb200 llama3.1-405b fp8 tp4 pp16 vp4 gbs1536 (NeMo 26.06)", "gb200", 256, 4},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.recipe);
    const BridgeConfigArgs b = bridge_config_to_megatron_args(k.recipe, {});
    EXPECT_EQ(b.system, k.system);
    EXPECT_TRUE(has(b.args, "--nproc_per_node", std::to_string(k.gpus_per_node)));
    const MegatronConfig c = parse_bridge_args(b);
    EXPECT_EQ(c.strategy.world_size, k.world);
    const double recipe =
        cost::estimate(c.model, c.strategy, cost::load_simumax_system(k.system)).iteration_ms;
    const double published = iteration_ms(corpus_args(k.corpus, k.run), k.system);
    EXPECT_NEAR(recipe / published, 1.0, 1e-6) << recipe << " ms vs " << published << " ms";
  }
  // the H100 DeepSeek-V3 recipe's HybridEP, applied by apply_flex_dispatcher_backend in Bridge's recipe
  const BridgeConfigArgs d =
      bridge_config_to_megatron_args("perf:deepseek_v3_pretrain_1024gpu_h100_bf16_config", {});
  EXPECT_TRUE(has(d.args, "--moe-token-dispatcher-type", "flex"));
  EXPECT_TRUE(has(d.args, "--moe-flex-dispatcher-backend", "hybridep"));
  EXPECT_FALSE(has(d.args, "--moe-shared-expert-overlap"));
  // a name both packages export is the benchmark one, as Bridge's runner resolves it (pp 8 × 4 virtual
  // stages); the library's (pp 16, no virtual stages) is its generic alias
  EXPECT_EQ(bridge_config_to_megatron_args("deepseek_v3_pretrain_1024gpu_h100_bf16_config", {}).args, d.args);
  EXPECT_EQ(parse_bridge_args(d).strategy.pp, 8);
  EXPECT_EQ(parse_bridge_args(bridge_config_to_megatron_args("deepseek_v3_pretrain_config", {})).strategy.pp,
            16);
  // a model of a Hugging Face repository keeps the recipe's MoE fields (its experts are the repository's)
  const BridgeConfigArgs q =
      bridge_config_to_megatron_args("qwen3_30b_a3b_pretrain_8gpu_gb200_fp8mx_config", {});
  EXPECT_TRUE(has(q.args, "--moe-grouped-gemm"));
  EXPECT_TRUE(has(q.args, "--moe-flex-dispatcher-backend", "hybridep"));
  EXPECT_TRUE(parse_bridge_args(q).strategy.overlap_moe_expert_parallel_comm);
  EXPECT_THROW(bridge_config_to_megatron_args("perf:llama3_8b_pretrain_config", {}), InputError);
  // On another world a performance recipe keeps each data-parallel rank's samples (Bridge's runner
  // weak-scales its global batch), unless the batch is given; a library recipe keeps its batch.
  const std::string llama = "llama3_8b_pretrain_8gpu_gb200_fp8cs_config";  // gbs 128 on dp 8
  auto gbs = [](const std::string& recipe, std::vector<std::string> extra) {
    return parse_bridge_args(bridge_config_to_megatron_args(recipe, extra)).strategy.global_batch_size;
  };
  EXPECT_EQ(gbs(llama, {"--nproc_per_node", "4", "--nnodes", "4"}), 256);
  EXPECT_EQ(gbs(llama, {"--nproc_per_node", "4", "--nnodes", "1"}), 64);
  EXPECT_EQ(gbs(llama, {"--nproc_per_node", "4", "--nnodes", "2"}), 128);
  EXPECT_EQ(gbs(llama, {"train.global_batch_size=96", "--nproc_per_node", "4", "--nnodes", "4"}), 96);
  EXPECT_EQ(gbs(llama, {"--nproc_per_node", "4", "--nnodes", "4", "--global-batch-size", "32"}), 32);
  // (tp 2 on 16 GPUs: data parallel 8, as the recipe's 8 GPUs at tp 1; on its own 8 GPUs, data parallel 4)
  EXPECT_EQ(gbs(llama, {"model.tensor_model_parallel_size=2", "--nproc_per_node", "4", "--nnodes", "4"}),
            128);
  EXPECT_EQ(gbs(llama, {"model.tensor_model_parallel_size=2"}), 64);
  EXPECT_EQ(gbs("llama3_8b_pretrain_config", {"--nproc_per_node", "4", "--nnodes", "4"}), 512);
  // perf:NAME of a GPU count no recipe has: scripts/performance's default recipe of that model, task, GPU and
  // precision (_DEFAULT_GPU_COUNT_OVERRIDES, else the largest), on the GPUs the name asks for
  const BridgeConfigArgs d70 =
      bridge_config_to_megatron_args("perf:llama3_70b_pretrain_128gpu_gb200_fp8mx_config", {});
  const MegatronConfig c70 = parse_bridge_args(d70);
  EXPECT_EQ(c70.strategy.world_size, 128);
  EXPECT_EQ(c70.strategy.global_batch_size, 512);  // the 64-GPU recipe's 256, weak-scaled
  EXPECT_TRUE(std::any_of(d70.warnings.begin(), d70.warnings.end(), [](const std::string& w) {
    return w.find(
               "llama3_70b_pretrain_64gpu_gb200_fp8mx_config (perf:llama3_70b_pretrain_128gpu_gb200_fp8mx_"
               "config): no performance recipe is") != std::string::npos;
  }));
  // llama3_8b on B200: its 8-GPU recipe is the default (an override), not the larger 64-GPU one
  const BridgeConfigArgs d8 =
      bridge_config_to_megatron_args("perf:llama3_8b_pretrain_16gpu_b200_bf16_config", {});
  EXPECT_NE(d8.warnings.front().find("recipe llama3_8b_pretrain_8gpu_b200_bf16_config (perf:"),
            std::string::npos)
      << d8.warnings.front();
  EXPECT_EQ(parse_bridge_args(d8).strategy.world_size, 16);
  EXPECT_THROW(bridge_config_to_megatron_args("llama3_70b_pretrain_128gpu_gb200_fp8mx_config", {}),
               InputError);
  const MegatronConfig scaled =
      parse_bridge_args(bridge_config_to_megatron_args(llama, {"--nproc_per_node", "4", "--nnodes", "4"}));
  EXPECT_TRUE(std::any_of(scaled.warnings.begin(), scaled.warnings.end(), [](const std::string& w) {
    return w.find("global batch 128 → 256, weak-scaled from the recipe's 8 GPUs") != std::string::npos;
  }));
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
  // A recipe named for a GPU is priced on it unless --system says otherwise (analyze: its time too).
  const std::string recipe = "llama3_8b_pretrain_8gpu_gb200_fp8cs_config";
  r = run_preflight("estimate --bridge-config " + recipe);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("llama3-8b on gb200:"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("priced on gb200, the GPU the recipe is named for"), std::string::npos) << r.err;
  r = run_preflight("estimate --system h100-sxm --bridge-config " + recipe);
  EXPECT_EQ(r.exit_code, 1) << r.err;  // GB200's micro batch of 2 without recompute: ~105 GiB, not 80
  EXPECT_NE(r.out.find("llama3-8b on h100-sxm:"), std::string::npos) << r.out;
  r = run_preflight("analyze --bridge-config " + recipe);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Iteration time on gb200"), std::string::npos) << r.out;
  // A GPU without a preset (Vera Rubin): estimate asks for --system, analyze prints its tables unpriced.
  const std::string rubin = "llama3_8b_pretrain_8gpu_vr200_fp8mx_config";
  r = run_preflight("estimate --bridge-config " + rubin);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("named for vr200, which preflight has no preset for: give --system"),
            std::string::npos)
      << r.err;
  r = run_preflight("analyze --bridge-config " + rubin);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("Iteration time on"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("its iteration time is not priced (give --system)"), std::string::npos) << r.out;
  EXPECT_EQ(run_preflight("estimate --system b300 --bridge-config " + rubin).exit_code, 0);
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

namespace preflight::analyzer {
namespace {

// Helpers of Megatron-Bridge's recipes the table's generator evaluates (scripts/bridge_recipes.py): the
// per-layer CUDA graph modules set through megatron/bridge/utils/cuda_graph.py (set_cuda_graph_modules), a
// model provider class's own defaults under the recipe's fields (HybridModelProvider: RMSNorm, no position
// embedding, no biases; its activation function passed by name), a pipeline layout a helper computes with
// list comprehensions (_get_kimi_k2_pipeline_layout).  Before, Nemotron-3 Nano's performance recipes lost
// their CUDA graph scope (priced as whole-layer graphs) and read as a GELU LayerNorm model with learned
// positions, and Kimi-K2's lost their layouts (61 layers over 16 stages refused).
bool has_words(const std::vector<std::string>& args, const std::vector<std::string>& run) {
  return std::search(args.begin(), args.end(), run.begin(), run.end()) != args.end();
}

TEST(BridgeConfig, RecipeHelpersReachTheAnalysis) {
  const std::vector<std::string> nano =
      bridge_config_to_megatron_args("nemotron_3_nano_pretrain_8gpu_b300_fp8mx_config", {}).args;
  EXPECT_TRUE(has_words(nano, {"--cuda-graph-scope", "attn", "mamba", "moe_router", "moe_preprocess"}));
  EXPECT_TRUE(has_words(nano, {"--squared-relu"}));
  EXPECT_TRUE(has_words(nano, {"--normalization", "RMSNorm"}));
  EXPECT_TRUE(has_words(nano, {"--position-embedding-type", "none"}));
  EXPECT_TRUE(has_words(nano, {"--disable-bias-linear"}));
  const MegatronConfig c = parse_bridge_args(
      bridge_config_to_megatron_args("nemotron_3_nano_pretrain_8gpu_b300_fp8mx_config", {}), {});
  EXPECT_FALSE(c.strategy.moe_experts_cuda_graph);  // the experts are not in the captured modules
  EXPECT_EQ(c.model.activation, Activation::SquaredReLU);
  const BridgeConfigArgs kimi =
      bridge_config_to_megatron_args("kimi_k2_pretrain_256gpu_b200_bf16_config", {});
  EXPECT_TRUE(has_words(kimi.args, {"--pipeline-model-parallel-layout"}));
  const MegatronConfig k = parse_bridge_args(kimi, {});
  ASSERT_EQ(k.strategy.chunk_layout.size(), 1u);
  EXPECT_EQ(k.strategy.chunk_layout[0].front(), 4);
  EXPECT_EQ(k.strategy.chunk_layout[0].back(), 1);  // 4 · 15 + 1 = 61 layers
  // A recipe on a Hugging Face MoE model that does not set moe_grouped_gemm has the grouped GEMMs Bridge's
  // model bridges set (NemotronH's provider_bridge): Super's B200 recipe recomputes moe_act, which needs
  // them.
  const MegatronConfig super_b200 = parse_bridge_args(
      bridge_config_to_megatron_args("nemotron_3_super_pretrain_64gpu_b200_bf16_config", {}), {});
  EXPECT_TRUE(super_b200.strategy.moe_grouped_gemm);
  EXPECT_EQ(super_b200.model.moe.latent_size, 1024);
}

}  // namespace
}  // namespace preflight::analyzer
