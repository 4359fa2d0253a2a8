// Megatron's transient memory terms (megatron_transients.cpp, memory_timeline.cpp) by hand on small models,
// the argument dump of a log back to its command line, and Megatron's rank order.
#include <gtest/gtest.h>

#include "preflight/analyzer/calibrate/log_prediction.hpp"
#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/analyzer/model/layer_graph.hpp"
#include "preflight/analyzer/model/memory.hpp"
#include "preflight/analyzer/model/memory_timeline.hpp"
#include "preflight/common/error.hpp"

namespace preflight::analyzer {
namespace {

using Words = std::vector<std::string>;
using I64 = std::int64_t;

// GPT: 2 layers, h 256, 4 heads, vocab 1024 (padded as is), seq 128, mbs 2 → T = 256 tokens, N = T·V logits.
Words small(Words extra) {
  Words w = {"--num-layers", "2", "--hidden-size", "256", "--num-attention-heads", "4", "--seq-length", "128",
             "--max-position-embeddings", "128", "--vocab-size", "1024", "--make-vocab-size-divisible-by", "1",
             "--micro-batch-size", "2", "--bf16", "--attention-dropout", "0", "--hidden-dropout", "0",
             "--runtime-overhead-mib", "0"};
  w.insert(w.end(), extra.begin(), extra.end());
  return w;
}
LayerGraph graph(const Words& w) {
  const MegatronConfig c = parse_megatron_args(w);
  return build_layer_graph(c.model, c.strategy);
}
const Op& op_of(const LayerGraph& g, OpKind kind) {
  for (const auto& ch : g.chunks)
    for (const auto& op : ch.ops)
      if (op.kind == kind) return op;
  throw std::runtime_error("no such op");
}

TEST(MegatronMemory, CrossEntropyKeepsLogitsAndItsFp32Copies) {
  const I64 N = 256 * 1024;
  // Current Megatron: bf16 logits + one fp32 copy (which becomes the kept softmax).
  const LayerGraph now = graph(small({"--use-flash-attn"}));
  EXPECT_EQ(op_of(now, OpKind::CrossEntropy).fwd_transient_bytes, 2 * N);
  // Before 2024-06-13 (commit 9634c0e): the max was subtracted out of place, one more fp32 tensor.
  const LayerGraph old = graph(small({"--use-flash-attn", "--megatron-version", "2024-01-01"}));
  EXPECT_EQ(op_of(old, OpKind::CrossEntropy).fwd_transient_bytes, 2 * N + 4 * N);
  // The forward peak of a one-stage run is at the loss: static + everything kept before + the transient.
  const PeakPoint p = stage_peak(old, 0);
  EXPECT_EQ(p.phase, "forward");
  EXPECT_EQ(p.op, "loss");
}

TEST(MegatronMemory, UnfusedAttentionHoldsTheScoreBufferAndItsGradients) {
  // b·heads·s·s bf16 scores: 2·4·128·128·2 bytes, kept in the global memory buffer for the whole run.
  const I64 scores = 2 * 4 * 128 * 128 * 2;
  const LayerGraph g =
      graph(small({"--attention-backend", "unfused", "--attention-dropout", "0.1", "--transformer-impl", "local"}));
  EXPECT_EQ(stage_memory(g).stages[0].buffer_bytes, static_cast<double>(scores));
  // Backward: the probabilities' gradient and the dropout's, next to grad_v (T·h bf16).
  const I64 v = 256 * 256 * 2;
  EXPECT_EQ(op_of(g, OpKind::CoreAttention).bwd_transient_bytes, 2 * scores + v);
}

TEST(MegatronMemory, Fp16MainGradsGetFp32CopiesAtTheOptimizerStep) {
  // Tiny activations (1 token) so the step is the peak: static + 4 bytes per parameter for its fp32 grad.
  Words w = small({"--fp16", "--use-flash-attn", "--seq-length", "1", "--micro-batch-size", "1"});
  w.erase(std::find(w.begin(), w.end(), "--bf16"));
  const LayerGraph g = graph(w);
  const PeakPoint p = stage_peak(g, 0);
  EXPECT_EQ(p.phase, "optimizer");
  EXPECT_DOUBLE_EQ(p.transient_bytes, 4.0 * static_cast<double>(stage_memory(g).stages[0].params));
  // bf16 with fp32 main grads: `.float()` is the buffer itself, no step transient.
  const LayerGraph b = graph(small({"--use-flash-attn", "--seq-length", "1", "--micro-batch-size", "1"}));
  EXPECT_NE(stage_peak(b, 0).phase, "optimizer");
}

TEST(MegatronMemory, TransformerEngineDummyWeightGradientsPerShape) {
  // TE >= 2.3 caches one bf16 dummy wgrad per distinct linear shape: qkv [768,256], proj [256,256],
  // fc1 [1024,256], fc2 [256,1024] — not the output layer (Megatron's own linear).
  const I64 dummies = (768 * 256 + 256 * 256 + 1024 * 256 + 256 * 1024) * 2;
  const LayerGraph te = graph(small({"--use-flash-attn", "--te-version", "2.11.0", "--disable-bias-linear"}));
  const LayerGraph old_te = graph(small({"--use-flash-attn", "--te-version", "2.2.0", "--disable-bias-linear"}));
  EXPECT_EQ(stage_memory(te).stages[0].buffer_bytes - stage_memory(old_te).stages[0].buffer_bytes,
            static_cast<double>(dummies));
  // The output layer returns a fresh torch.empty of its weight's shape in backward (grad_added_to_main_grad).
  for (const auto& op : te.chunks[0].ops)
    if (op.role == OpRole::OutputLayer) {
      EXPECT_EQ(op.bwd_transient_bytes, op.input_bytes + 1024 * 256 * 2);
    }
}

TEST(MegatronMemory, LegacyModelKeepsSiluOutputAndFlashOutput) {
  const Words w = small({"--use-flash-attn", "--swiglu"});
  Words legacy = w;
  legacy.push_back("--use-legacy-models");
  const double core = stage_memory(graph(w)).stages[0].activation_bytes_per_microbatch;
  const double old = stage_memory(graph(legacy)).stages[0].activation_bytes_per_microbatch;
  // Per layer: the SiLU output T·f and the flash output T·h, bf16 (f = 4h·2/3 rounded down to 64: 640).
  EXPECT_DOUBLE_EQ(old - core, 2.0 * (256.0 * 640 * 2 + 256.0 * 256 * 2));
}

// Megatron-FSDP on 8 ranks, by hand: optim_grads_params (the default) keeps an eighth of the bf16 weights
// and of the fp32 main grads, and the unsharded copies of its largest unit — a transformer layer of 789,760
// parameters (qkv 256·768 + 768, proj 256·256 + 256, fc1 256·1024 + 1024, fc2 1024·256 + 256, two norms
// 2·512; the embedding unit holds 294,912) — twice in bf16 (the layer computed and the one prefetched) and
// once as its fp32 gradient before the reduce-scatter; optim_grads shards the gradients only.  (A checkout
// before 2026-07-01: a 16-bit run's Megatron-FSDP gradients were fp32; since, the parameters' dtype by
// default.)
TEST(MegatronMemory, FsdpShardsWhatItsStrategySaysAndHoldsOneUnitUnsharded) {
  auto stage = [](Words extra) {
    Words w =
        small({"--nproc_per_node", "8", "--global-batch-size", "16", "--megatron-version", "2026-06-01"});
    w.insert(w.end(), extra.begin(), extra.end());
    return stage_memory(graph(w)).stages.front();
  };
  const StageMemory dist = stage({"--use-distributed-optimizer"});
  const StageMemory full = stage({"--use-megatron-fsdp"});
  const StageMemory grads =
      stage({"--use-megatron-fsdp", "--data-parallel-sharding-strategy", "optim_grads"});
  const double p = static_cast<double>(dist.params), unit = 789'760;
  ASSERT_EQ(full.params, dist.params);
  EXPECT_DOUBLE_EQ(dist.weight_bytes, 2 * p);
  EXPECT_DOUBLE_EQ(full.weight_bytes, 2 * p / 8);
  EXPECT_DOUBLE_EQ(full.grad_bytes, 4 * p / 8);
  EXPECT_DOUBLE_EQ(full.optimizer_bytes, dist.optimizer_bytes);
  EXPECT_DOUBLE_EQ(full.buffer_bytes - dist.buffer_bytes, 2 * unit * 2 + unit * 4);
  EXPECT_DOUBLE_EQ(grads.weight_bytes, 2 * p);
  EXPECT_DOUBLE_EQ(grads.grad_bytes, 4 * p / 8);
  EXPECT_DOUBLE_EQ(grads.buffer_bytes - dist.buffer_bytes, unit * 4);
  // Current Megatron-LM: bf16 main gradients (auto), fp32 with --megatron-fsdp-main-grads-dtype fp32; bf16
  // main weights with --megatron-fsdp-main-params-dtype bf16 (the optimizer's 4-byte master copy becomes 2).
  auto now = [](Words extra) {
    Words w = small({"--nproc_per_node", "8", "--global-batch-size", "16", "--use-megatron-fsdp"});
    w.insert(w.end(), extra.begin(), extra.end());
    return stage_memory(graph(w)).stages.front();
  };
  EXPECT_DOUBLE_EQ(now({}).grad_bytes, 2 * p / 8);
  EXPECT_DOUBLE_EQ(now({}).buffer_bytes - dist.buffer_bytes, 2 * unit * 2 + unit * 2);
  EXPECT_DOUBLE_EQ(now({"--megatron-fsdp-main-grads-dtype", "fp32"}).grad_bytes, 4 * p / 8);
  EXPECT_DOUBLE_EQ(now({"--megatron-fsdp-main-params-dtype", "bf16"}).optimizer_bytes,
                   dist.optimizer_bytes * (2.0 + 8) / (4 + 8));
  EXPECT_THROW(graph(small({"--use-megatron-fsdp", "--megatron-fsdp-main-grads-dtype", "int8"})), InputError);
  const MegatronConfig fsdp2 = parse_megatron_args(small({"--nproc_per_node", "8", "--use-torch-fsdp2"}));
  EXPECT_TRUE(fsdp2.strategy.fsdp);
  EXPECT_EQ(fsdp2.strategy.effective_zero_stage(), 3);
  EXPECT_THROW(
      parse_megatron_args(small({"--use-megatron-fsdp", "--data-parallel-sharding-strategy", "zero3"})),
      InputError);
}

// Megatron's CPU offloading of the first layer of two: its kept activations leave the device, and two layers'
// worth of it stay as the double buffer; Megatron's refusals (pp > 1, recompute, N >= layers) are ours.
TEST(MegatronMemory, CpuOffloadingMovesTheFirstLayersActivationsToTheHost) {
  const LayerGraph plain = graph(small({}));
  const LayerGraph off = graph(small({"--cpu-offloading", "--cpu-offloading-num-layers", "1"}));
  I64 layer0 = 0;
  for (const auto& op : plain.chunks.front().ops)
    if (op.layer == 0) layer0 += op.kept_bytes;
  ASSERT_GT(layer0, 0);
  for (const auto& op : off.chunks.front().ops)
    if (op.layer == 0) {
      EXPECT_EQ(op.kept_bytes, 0) << op.path;
    }
  EXPECT_EQ(off.chunks.front().kept_activation_bytes(),
            plain.chunks.front().kept_activation_bytes() - layer0);
  EXPECT_EQ(off.chunks.front().runtime_buffer_bytes, plain.chunks.front().runtime_buffer_bytes + 2 * layer0);
  EXPECT_THROW(parse_megatron_args(small({"--cpu-offloading-num-layers", "2"})), InputError);
  EXPECT_THROW(
      parse_megatron_args(small({"--cpu-offloading-num-layers", "1", "--pipeline-model-parallel-size", "2"})),
      InputError);
  EXPECT_THROW(parse_megatron_args(small({"--cpu-offloading-num-layers", "1", "--recompute-activations"})),
               InputError);
}

// --defer-embedding-wgrad-compute on pp 2 (4 micro batches of 2 × 128 tokens, tp 1, vocabulary 1024, hidden
// 256, bf16): the last stage keeps each deferred call's output-layer input (256 × 256 × 2 bytes) and output
// gradient (256 × 1024 × 2) — all four calls by default, two with --wgrad-deferral-limit 2; the first stage
// holds nothing more.  Megatron's refusals (pp 1, no gradient-accumulation fusion, a negative limit) are
// ours.
TEST(MegatronMemory, DeferredOutputLayerWgradsKeepTheirInputsOnTheLastStage) {
  const Words pp2 = {
      "--pipeline-model-parallel-size", "2", "--nproc_per_node", "2", "--global-batch-size", "8"};
  auto with = [&](Words extra) {
    Words w = pp2;
    w.insert(w.end(), extra.begin(), extra.end());
    return stage_memory(graph(small(w))).stages;
  };
  const auto plain = with({});
  const auto all = with({"--defer-embedding-wgrad-compute"});
  const auto two = with({"--defer-embedding-wgrad-compute", "--wgrad-deferral-limit", "2"});
  const double per_call = 256.0 * 256 * 2 + 256.0 * 1024 * 2;
  EXPECT_DOUBLE_EQ(all[1].buffer_bytes - plain[1].buffer_bytes, 4 * per_call);
  EXPECT_DOUBLE_EQ(two[1].buffer_bytes - plain[1].buffer_bytes, 2 * per_call);
  EXPECT_DOUBLE_EQ(all[0].buffer_bytes, plain[0].buffer_bytes);
  EXPECT_THROW(parse_megatron_args(small({"--defer-embedding-wgrad-compute"})), InputError);
  Words no_fusion = pp2;
  no_fusion.insert(no_fusion.end(), {"--defer-embedding-wgrad-compute", "--no-gradient-accumulation-fusion"});
  EXPECT_THROW(parse_megatron_args(small(no_fusion)), InputError);
  Words negative = pp2;
  negative.insert(negative.end(), {"--defer-embedding-wgrad-compute", "--wgrad-deferral-limit", "-1"});
  EXPECT_THROW(parse_megatron_args(small(negative)), InputError);
}

// --num-distributed-optimizer-instances 2 on dp 8: the optimizer states are sharded over 4 ranks, not 8;
// Megatron's conditions (the distributed optimizer, instances dividing dp) are ours.
TEST(MegatronMemory, DistributedOptimizerInstancesShardOverTheirPart) {
  auto stage = [](Words extra) {
    Words w = small({"--nproc_per_node", "8", "--global-batch-size", "16", "--use-distributed-optimizer"});
    w.insert(w.end(), extra.begin(), extra.end());
    return stage_memory(graph(w)).stages.front();
  };
  const StageMemory whole = stage({});
  const StageMemory two = stage({"--num-distributed-optimizer-instances", "2"});
  const double p = static_cast<double>(whole.params);
  EXPECT_DOUBLE_EQ(whole.optimizer_bytes, 12 * p / 8);
  EXPECT_DOUBLE_EQ(two.optimizer_bytes, 12 * p / 4);
  EXPECT_DOUBLE_EQ(two.weight_bytes, whole.weight_bytes);
  EXPECT_THROW(graph(small({"--nproc_per_node", "8", "--num-distributed-optimizer-instances", "2"})),
               InputError);
  EXPECT_THROW(graph(small({"--nproc_per_node", "8", "--use-distributed-optimizer",
                            "--num-distributed-optimizer-instances", "3"})),
               InputError);
}

// torch FSDP2 without resharding after forward (Megatron's "FSDP ZeRO-2"): the parameters gathered in the
// forward pass stay until the backward — the stage's whole 16-bit weights, not its dp-th; gradients and
// optimizer states stay sharded.  The flag had been read past.
TEST(MegatronMemory, TorchFsdp2WithoutReshardAfterForward) {
  auto stage = [](Words extra) {
    Words w = small({"--nproc_per_node", "8", "--global-batch-size", "16", "--use-torch-fsdp2"});
    w.insert(w.end(), extra.begin(), extra.end());
    const MegatronConfig c = parse_megatron_args(w);
    return std::pair{c.strategy.effective_zero_stage(),
                     stage_memory(build_layer_graph(c.model, c.strategy)).stages.front()};
  };
  const auto [z3, resharded] = stage({});
  const auto [z2, kept] = stage({"--torch-fsdp2-no-reshard-after-forward"});
  EXPECT_EQ(z3, 3);
  EXPECT_EQ(z2, 2);
  EXPECT_DOUBLE_EQ(kept.weight_bytes, 8 * resharded.weight_bytes);
  EXPECT_DOUBLE_EQ(kept.grad_bytes, resharded.grad_bytes);
  EXPECT_DOUBLE_EQ(kept.optimizer_bytes, resharded.optimizer_bytes);
}

// Megatron-FSDP's hybrid sharding: --num-distributed-optimizer-instances 2 on dp 8 shards within 4 ranks;
// with
// --outer-dp-sharding-strategy optim the optimizer states are sharded across both instances (over 8) while
// the parameters and gradients stay within 4.  Megatron's rule (optim needs optim_grads_params) is ours.  The
// flag had been read past.
TEST(MegatronMemory, HybridFsdpOuterOptimizerSharding) {
  auto stage = [](Words extra) {
    Words w = small({"--nproc_per_node", "8", "--global-batch-size", "16", "--use-megatron-fsdp",
                     "--data-parallel-sharding-strategy", "optim_grads_params",
                     "--num-distributed-optimizer-instances", "2"});
    w.insert(w.end(), extra.begin(), extra.end());
    return stage_memory(graph(w)).stages.front();
  };
  const StageMemory replicated = stage({"--outer-dp-sharding-strategy", "no_shard"});
  const StageMemory sharded = stage({"--outer-dp-sharding-strategy", "optim"});
  EXPECT_DOUBLE_EQ(sharded.optimizer_bytes, replicated.optimizer_bytes / 2);
  EXPECT_DOUBLE_EQ(sharded.weight_bytes, replicated.weight_bytes);
  EXPECT_DOUBLE_EQ(sharded.grad_bytes, replicated.grad_bytes);
  EXPECT_THROW(
      graph(small({"--nproc_per_node", "8", "--use-distributed-optimizer",
                   "--num-distributed-optimizer-instances", "2", "--outer-dp-sharding-strategy", "optim"})),
      InputError);
  EXPECT_THROW(
      graph(small({"--nproc_per_node", "8", "--use-megatron-fsdp", "--outer-dp-sharding-strategy", "all"})),
      InputError);
}

TEST(MegatronArgsDump, BackToTheCommandLine) {
  std::map<std::string, std::string> args = {
      {"world_size", "16"},          {"num_layers", "4"},          {"hidden_size", "512"},
      {"num_attention_heads", "8"},  {"seq_length", "256"},        {"max_position_embeddings", "256"},
      {"micro_batch_size", "2"},     {"global_batch_size", "64"},  {"tensor_model_parallel_size", "2"},
      {"pipeline_model_parallel_size", "2"},                       {"add_bias_linear", "False"},
      {"fp16", "False"},             {"bf16", "True"},             {"padded_vocab_size", "50432"},
      {"vocab_file", "/data/gpt2-vocab.json"},                     {"use_flash_attn", "False"},
      {"recompute_modules", "['core_attn', 'mlp']"},               {"attention_backend", "AttnBackend.flash"},
      {"use_mcore_models", "True"},  {"cross_entropy_loss_fusion", "False"},
      {"decoder_first_pipeline_num_layers", "None"}};
  const Words w = megatron_words_from_args_dump(args, "x.log");
  auto has = [&](const Words& seq) { return std::search(w.begin(), w.end(), seq.begin(), seq.end()) != w.end(); };
  EXPECT_TRUE(has({"--nproc_per_node", "8", "--nnodes", "2"}));
  EXPECT_TRUE(has({"--disable-bias-linear"}));
  EXPECT_TRUE(has({"--bf16"}));
  EXPECT_FALSE(has({"--fp16"}));
  EXPECT_TRUE(has({"--vocab-size", "50432", "--make-vocab-size-divisible-by", "1"}));
  EXPECT_FALSE(has({"--vocab-file"}));
  EXPECT_TRUE(has({"--recompute-modules", "core_attn", "mlp"}));
  EXPECT_TRUE(has({"--attention-backend", "flash"}));
  EXPECT_FALSE(has({"--use-legacy-models"}));
  EXPECT_FALSE(has({"--megatron-version"}));  // cross_entropy_loss_fusion is in the dump: after 2024-06-14
  EXPECT_FALSE(has({"--decoder-first-pipeline-num-layers"}));
  const MegatronConfig c = parse_megatron_args(w);
  EXPECT_EQ(c.model.padded_vocab_size(2), 50432);
  EXPECT_FALSE(c.model.add_bias_linear);
  EXPECT_EQ(c.strategy.dp(), 4);
  // A 2023 dump: neither use_mcore_models nor cross_entropy_loss_fusion → legacy model, old loss.
  std::map<std::string, std::string> old = {{"world_size", "1"},   {"num_layers", "2"}, {"hidden_size", "64"},
                                            {"num_attention_heads", "2"}, {"seq_length", "32"},
                                            {"max_position_embeddings", "32"}, {"vocab_size", "100"}};
  const Words ow = megatron_words_from_args_dump(old, "old.log");
  EXPECT_NE(std::find(ow.begin(), ow.end(), "--use-legacy-models"), ow.end());
  EXPECT_NE(std::find(ow.begin(), ow.end(), "2024-06-12"), ow.end());
  EXPECT_NE(std::find(ow.begin(), ow.end(), "unfused"), ow.end());  // no flash in the dump
  // No overlap_p2p_comm key: a checkout before the overlapped interleaved p2p; its value when it is there.
  EXPECT_NE(std::find(ow.begin(), ow.end(), "--no-overlap-p2p-communication"), ow.end());
  EXPECT_FALSE(parse_megatron_args(ow).strategy.pp_comm_overlap);
  // (the first dump above has no overlap_p2p_comm key either)
  EXPECT_NE(std::find(w.begin(), w.end(), "--no-overlap-p2p-communication"), w.end());
  auto with_key = args;
  with_key["overlap_p2p_comm"] = "True";
  const Words kw = megatron_words_from_args_dump(with_key, "x.log");
  EXPECT_EQ(std::find(kw.begin(), kw.end(), "--no-overlap-p2p-communication"), kw.end());
  EXPECT_TRUE(parse_megatron_args(kw).strategy.pp_comm_overlap);
  // Destinations named otherwise than their flags: `fp8 hybrid` is --fp8-format (it had been passed as --fp8
  // and the run priced in bf16); TransformerEngine's overlaps are store-false (--disable-tp-comm-overlap-ag);
  // a 0 of T5's extra ids or of an encoder's sizes is Megatron's default, dropped.
  auto fp8 = args;
  fp8["fp8"] = "hybrid";
  fp8["tp_comm_overlap_ag"] = "False";
  fp8["tp_comm_overlap_rs"] = "True";
  fp8["vocab_extra_ids"] = "0";
  fp8["encoder_pipeline_model_parallel_size"] = "0";
  const Words fw = megatron_words_from_args_dump(fp8, "x.log");
  auto in = [&](const Words& seq) {
    return std::search(fw.begin(), fw.end(), seq.begin(), seq.end()) != fw.end();
  };
  EXPECT_TRUE(in({"--fp8-format", "hybrid"}));
  EXPECT_TRUE(in({"--disable-tp-comm-overlap-ag"}));
  EXPECT_FALSE(in({"--tp-comm-overlap-rs"}));
  EXPECT_FALSE(in({"--vocab-extra-ids"}));
  EXPECT_FALSE(in({"--encoder-pipeline-model-parallel-size"}));
  EXPECT_NE(parse_megatron_args(fw).strategy.fp8, preflight::analyzer::Fp8Format::None);
  // No dump: the run is unknown.
  try {
    megatron_words_from_args_dump({}, "bare.log");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "bare.log");
    EXPECT_NE(e.detail().find("no argument dump"), std::string::npos);
  }
  EXPECT_THROW(megatron_words_from_args_dump({{"num_layers", "2"}}, "x.log"), InputError);
}

TEST(MegatronRankOrder, TpFastestPipelineOutermost) {
  Strategy st;
  st.world_size = 16;
  st.tp = 2;
  st.pp = 2;
  int tp = 0, pp = 0, dp = 0;
  megatron_rank_coords(st, 13, tp, pp, dp);  // 13 = 1 + 2·(2 + 4·1)
  EXPECT_EQ(tp, 1);
  EXPECT_EQ(dp, 2);
  EXPECT_EQ(pp, 1);
  st.order = "tp-pp-dp";
  megatron_rank_coords(st, 13, tp, pp, dp);  // 13 = 1 + 2·(0 + 2·3)
  EXPECT_EQ(pp, 0);
  EXPECT_EQ(dp, 3);
  EXPECT_THROW(megatron_rank_coords(st, 16, tp, pp, dp), InputError);
  // --use-tp-pp-dp-mapping in a current Megatron: tp-cp-ep-pp-dp; with cp 2, 13 = 1 + 2·(0 + 2·(1 + 2·1)).
  st.order = "tp-cp-ep-pp-dp";
  st.cp = 2;
  megatron_rank_coords(st, 13, tp, pp, dp);
  EXPECT_EQ(tp, 1);
  EXPECT_EQ(pp, 1);
  EXPECT_EQ(dp, 1);
}

// The token combine keeps the expert outputs for the probabilities' gradient: one routed-tokens × hidden
// tensor (capacity-padded rows) per MoE layer and micro batch, in the activation dtype.
TEST(MegatronTransients, MoeCombineKeepsTheExpertOutputs) {
  const LayerGraph g = graph(small({"--num-experts", "8", "--moe-router-topk", "2", "--expert-model-parallel-size", "2",
                                    "--moe-expert-capacity-factor", "1.5", "--moe-pad-expert-input-to-capacity",
                                    "--moe-token-dispatcher-type", "alltoall", "--nproc_per_node", "2"}));
  const Op* combine = nullptr;
  for (const auto& op : g.chunks.front().ops)
    if (op.role == OpRole::Combine) combine = &op;
  ASSERT_NE(combine, nullptr);
  std::int64_t kept = 0;
  for (const auto& t : combine->saved)
    if (t.name == "expert_output") kept = t.bytes;
  const std::int64_t tokens = g.strategy.micro_batch_size * g.strategy.seq_length;
  const std::int64_t per_expert = (tokens * 2 * 3 + 2 * 8 - 1) / (2 * 8);  // ceil(tokens·topk / E · 1.5)
  EXPECT_EQ(kept, per_expert * 8 * g.model.hidden_size * 2);
}

// The token exchanges' transients (megatron/core/transformer/moe/token_dispatcher.py), T = 256 tokens of
// h 256 bf16 on each rank, 8 experts top 2.  All-to-all: the tensor sent lives beside the one received.
// Allgather (Megatron's default): the expert-tp × ep group's hidden states gathered into the global memory
// buffer, its routing map and probabilities as new tensors, the combine's unpermuted output of the gathered
// size; no expert-tp exchange of its own (its gather spans expert tp).
TEST(MegatronTransients, TokenExchangesByDispatcher) {
  const I64 T = 256, h = 256, E = 8, routed = T * 2;
  auto ops = [&](const std::string& dispatcher, Words extra) {
    Words w = {"--num-experts", "8", "--moe-router-topk", "2", "--moe-token-dispatcher-type", dispatcher};
    w.insert(w.end(), extra.begin(), extra.end());
    const LayerGraph g = graph(small(w));
    return std::make_pair(g,
                          std::pair<Op, Op>{op_of(g, OpKind::TokenDispatch), op_of(g, OpKind::TokenCombine)});
  };
  const auto [a2a_graph, a2a] =
      ops("alltoall", {"--expert-model-parallel-size", "2", "--nproc_per_node", "2"});
  EXPECT_EQ(a2a.first.fwd_transient_bytes, routed * h * 2);
  EXPECT_EQ(a2a.second.fwd_transient_bytes, routed * h * 2);
  EXPECT_EQ(a2a.first.bwd_transient_bytes, routed * h * 2 + a2a.first.input_bytes);
  // ep 2 × expert tp 2 on 4 ranks (tp 2 with sequence parallelism: T / 2 tokens each, 4 gathered).
  const auto [ag_graph, ag] =
      ops("allgather", {"--expert-model-parallel-size", "2", "--expert-tensor-parallel-size", "2",
                        "--tensor-model-parallel-size", "2", "--sequence-parallel", "--nproc_per_node", "4"});
  const I64 gathered_tokens = T / 2 * 4;
  EXPECT_EQ(ag.first.fwd_transient_bytes, gathered_tokens * E * 3);  // bool map + bf16 probabilities
  EXPECT_EQ(ag.second.fwd_transient_bytes, gathered_tokens * h * 2);
  EXPECT_EQ(ag.second.bwd_transient_bytes, gathered_tokens * h * 2 + ag.second.input_bytes);
  EXPECT_GE(stage_memory(ag_graph).stages[0].buffer_bytes, static_cast<double>(gathered_tokens * h * 2));
  I64 gather_volume = 0;
  for (const auto& comm : ag.first.comms) {
    EXPECT_NE(comm.group, ParallelDim::ETP) << comm.what;
    if (comm.group == ParallelDim::EP && comm.pass == Pass::Forward) gather_volume = comm.bytes;
  }
  EXPECT_EQ(gather_volume, gathered_tokens * h * 2);
  // The all-to-all dispatcher exchanges over expert tp on top.
  const auto [a2a_etp_graph, a2a_etp] =
      ops("alltoall", {"--expert-model-parallel-size", "2", "--expert-tensor-parallel-size", "2",
                       "--tensor-model-parallel-size", "2", "--sequence-parallel", "--nproc_per_node", "4"});
  bool etp = false;
  for (const auto& comm : a2a_etp.first.comms) etp = etp || comm.group == ParallelDim::ETP;
  EXPECT_TRUE(etp);
}

}  // namespace
}  // namespace preflight::analyzer
