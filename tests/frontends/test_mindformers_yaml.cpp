// MindFormers training YAML front end: the 14 real configurations of tests/data/mindformers against the
// numbers of ../shared/data/mindformers_configs/README.md (world size, global batch, layer split, recompute,
// parameters), per-stage memory checked by hand, and the errors a bad file gets.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "preflight/analyzer/frontends/mindformers_yaml.hpp"
#include "preflight/analyzer/model/layer_graph.hpp"
#include "preflight/analyzer/model/memory.hpp"
#include "preflight/common/error.hpp"
#include "../support/test_support.hpp"

namespace preflight::analyzer {
namespace {

using I64 = std::int64_t;
using preflight::test::data_dir;

std::filesystem::path yaml(const std::string& name) {
  return data_dir() / "mindformers" / name;
}

MindFormersConfig load(const std::string& name) {
  MindFormersOptions o;
  if (name == "finetune_qwen3.yaml")
    o.overrides.emplace_back("pretrained_model_dir", (data_dir() / "frontends" / "hf" / "qwen3-32b").string());
  return load_mindformers_yaml(yaml(name), o);
}

/// Parameters per pipeline stage without tp/dp/ep slicing (the README's "params per stage").
std::vector<I64> unsharded_stage_params(const MindFormersConfig& c) {
  Strategy st = c.strategy;
  st.tp = st.cp = st.ep = 1;
  st.etp = 0;
  st.world_size = st.pp;
  st.global_batch_size = 0;
  st.sequence_parallel = false;
  st.shard_weights = false;
  st.vocab_parallel = false;
  LayerGraph g = build_layer_graph(c.model, st);
  std::vector<I64> out(static_cast<std::size_t>(st.pp), 0);
  for (const auto& ch : g.chunks) out[static_cast<std::size_t>(ch.pp_rank)] += ch.param_numel();
  return out;
}

std::vector<int> repeat(int value, int n) {
  return std::vector<int>(static_cast<std::size_t>(n), value);
}

struct Expected {
  std::string file;
  int world, dp, tp, cp, pp, ep, V;
  int global_batch;
  int split_layers;
  std::vector<int> layers_per_stage;
  I64 total_params;  ///< with MTP for DeepSeek
  I64 active_params;  ///< 0 = dense (= total)
  std::vector<I64> stage_params;  ///< empty for pp = 1
  std::vector<int> full_recompute_per_stage;
};

void PrintTo(const Expected& e, std::ostream* os) {
  *os << e.file;
}

// ../shared/data/mindformers_configs/README.md, "Numbers a test can assert" and "Per-stage parameters".
const std::vector<Expected>& expected() {
  static const std::vector<Expected> e = {
      {"pretrain_llama2_7b.yaml", 8, 8, 1, 1, 1, 1, 1, 64, 32, {32}, 6738415616, 0, {}, {0}},
      {"finetune_llama2_13b.yaml", 8, 8, 1, 1, 1, 1, 1, 32, 40, {40}, 13015864320, 0, {}, {40}},
      {"pretrain_llama2_70b_bf16_64p.yaml", 64, 2, 4, 1, 8, 1, 1, 512, 80, repeat(10, 8), 68976648192, 0,
       {8818688000, 8556544000, 8556544000, 8556544000, 8556544000, 8556544000, 8556544000, 8818696192},
       repeat(0, 8)},
      {"pretrain_llama3_70b.yaml", 64, 1, 8, 1, 8, 1, 1, 256, 80, repeat(10, 8), 70553706496, 0,
       {9607217152, 8556544000, 8556544000, 8556544000, 8556544000, 8556544000, 8556544000, 9607225344},
       repeat(0, 8)},
      {"finetune_llama3_1_8b.yaml", 8, 8, 1, 1, 1, 1, 1, 8, 32, {32}, 8030261248, 0, {}, {32}},
      {"finetune_qwen2_72b_32k.yaml", 64, 1, 8, 1, 8, 1, 1, 64, 80, {9, 10, 10, 10, 10, 10, 11, 10}, 72706203648, 0,
       {9144870912, 8776847360, 8776847360, 8776847360, 8776847360, 8776847360, 9654532096, 10022563840},
       {8, 8, 8, 7, 7, 5, 4, 2}},
      {"finetune_qwen2_7b.yaml", 8, 2, 4, 1, 1, 1, 1, 4, 28, {28}, 7615616512, 0, {}, {28}},
      {"finetune_qwen2_5_7b_8k.yaml", 8, 4, 1, 1, 2, 1, 1, 64, 28, {14, 14}, 7615616512, 0,
       {3807806464, 3807810048}, {7, 7}},
      {"pretrain_mixtral-8x7b.yaml", 16, 8, 1, 1, 2, 8, 1, 128, 32, {16, 16}, 46702792704, 12879925248,
       {23351394304, 23351398400}, {16, 16}},
      {"pretrain_deepseek3_671b.yaml", 1024, 16, 4, 1, 16, 8, 1, 512, 62,
       [] {
         auto v = repeat(4, 15);
         v.push_back(2);
         return v;
       }(),
       682636472320, 37552282624,
       [] {
         std::vector<I64> v(16, 46029144064);
         v[0] = 14184415232;
         v[15] = 24044040192;
         return v;
       }(),
       {3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3, 2, 0}},
      {"finetune_glm4_9b.yaml", 8, 2, 1, 1, 4, 1, 1, 128, 40, {9, 10, 12, 9}, 9399951360, 0,
       {2456404480, 2039608320, 2447529984, 2456408576}, {6, 3, 2, 3}},
      {"finetune_telechat_115b.yaml", 512, 8, 8, 1, 8, 1, 3, 64, 96, {10, 11, 12, 13, 13, 13, 13, 11}, 113282916352, 0,
       {12650348544, 12734267392, 13891928064, 15049588736, 15049588736, 15049588736, 15049588736, 13808017408},
       repeat(0, 8)},
      {"pretrain_qwen3_32b_4k.yaml", 16, 1, 4, 1, 4, 1, 1, 4, 64, {15, 15, 17, 17}, 32762123264, 0,
       {8091887360, 7313975040, 8289171712, 9067089152}, repeat(15, 1)},
      {"finetune_qwen3.yaml", 16, 1, 4, 1, 4, 1, 1, 4, 64, repeat(16, 4), 32762123264, 0,
       {8579485696, 7801573376, 7801573376, 8579490816}, repeat(16, 4)},
  };
  return e;
}

class MindFormersConfigs : public ::testing::TestWithParam<Expected> {};

TEST_P(MindFormersConfigs, MatchTheReadmeNumbers) {
  const Expected& x = GetParam();
  const MindFormersConfig c = load(x.file);
  const Strategy& st = c.strategy;
  EXPECT_EQ(c.world_size(), x.world);
  EXPECT_EQ(st.dp(), x.dp);
  EXPECT_EQ(st.tp, x.tp);
  EXPECT_EQ(st.cp, x.cp);
  EXPECT_EQ(st.pp, x.pp);
  EXPECT_EQ(st.ep, x.ep);
  EXPECT_EQ(c.interleave, x.V);
  EXPECT_EQ(st.vpp, x.V);
  EXPECT_EQ(st.global_batch(), x.global_batch);
  EXPECT_EQ(c.split_layers, x.split_layers);
  EXPECT_EQ(c.layers_per_stage(), x.layers_per_stage);
  EXPECT_EQ(count_parameters(c.model), x.total_params);
  if (!x.stage_params.empty()) {
    EXPECT_EQ(unsharded_stage_params(c), x.stage_params);
  }
  if (x.file == "pretrain_qwen3_32b_4k.yaml") {
    // recompute: True → every layer of every stage.
    EXPECT_EQ(c.full_recompute_per_stage(), x.layers_per_stage);
  } else {
    EXPECT_EQ(c.full_recompute_per_stage(), x.full_recompute_per_stage);
  }
  if (x.active_params > 0) {
    // Active: the routed experts term with E → top-k; DeepSeek's active count is the main model's (no MTP).
    const ModelSpec& m = c.model;
    int moe_layers = 0;
    for (int i = 0; i < m.num_layers; ++i) moe_layers += m.is_moe_layer(i) ? 1 : 0;
    const I64 idle = static_cast<I64>(m.moe.num_experts - m.moe.router_topk) * 3 * m.hidden_size * m.moe.ffn_hidden_size;
    ModelSpec main = m;
    main.mtp_num_layers = 0;
    EXPECT_EQ(count_parameters(main) - idle * moe_layers, x.active_params);
  }
}

INSTANTIATE_TEST_SUITE_P(Readme, MindFormersConfigs, ::testing::ValuesIn(expected()),
                         [](const ::testing::TestParamInfo<Expected>& p) {
                           std::string n = p.param.file.substr(0, p.param.file.find('.'));
                           for (auto& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

TEST(MindFormersYaml, TeleChatChunksAndRoundRobinCommRecompute) {
  const MindFormersConfig c = load("finetune_telechat_115b.yaml");
  const ChunkGrid chunks = {{3, 3, 4, 4, 4, 4, 4, 4}, {3, 4, 4, 4, 4, 4, 4, 4}, {4, 4, 4, 5, 5, 5, 5, 3}};
  EXPECT_EQ(c.layers, chunks);
  EXPECT_EQ(c.strategy.chunk_layout, chunks);
  // select_comm_recompute [8,8,10,11,10,7,5,4] dealt round-robin over the three chunks (README).
  const ChunkGrid comm = {{3, 3, 4, 4, 4, 3, 2, 2}, {3, 3, 3, 4, 3, 2, 2, 1}, {2, 2, 3, 3, 3, 2, 1, 1}};
  EXPECT_EQ(c.recompute.comm, comm);
  EXPECT_EQ(c.recompute.select, chunks);  // select_recompute: True
  // Layer 0 (chunk 0, stage 0, first layer): both; layer 3 (chunk 0 stage 1 first layer) both; the 4th
  // layer of chunk 0 on stage 2 (global 6+3 = 9) has select only (comm count 4 covers 4 layers: 6..9).
  const auto& per = c.strategy.per_layer_recompute;
  ASSERT_EQ(per.size(), 96u);
  EXPECT_EQ(per[0].modules, (std::vector<std::string>{"layernorm", "mlp_act"}));
  // Stage 5, chunk 0: layers 22..25 (3+3+4+4+4 = 18 before stage 5? chunk 0 holds 3,3,4,4,4,4,4,4).
  const int first_stage5 = 3 + 3 + 4 + 4 + 4;
  EXPECT_EQ(per[first_stage5 + 2].modules, (std::vector<std::string>{"layernorm", "mlp_act"}));
  EXPECT_EQ(per[first_stage5 + 3].modules, (std::vector<std::string>{"mlp_act"}));
  EXPECT_FALSE(per[first_stage5 + 3].full);
}

TEST(MindFormersYaml, BatchRulesFollowMindFormers) {
  // pp = 1: bs·dp·mbi·GA (micro_batch_num ignored); micro batch size = bs·mbi.
  const MindFormersConfig q = load("finetune_qwen2_7b.yaml");
  EXPECT_EQ(q.micro_batch_interleave_num, 2);
  EXPECT_EQ(q.strategy.micro_batch_size, 2);
  EXPECT_EQ(q.strategy.num_microbatches(), 1);
  const MindFormersConfig l = load("pretrain_llama2_7b.yaml");
  EXPECT_EQ(l.strategy.num_microbatches(), 8);  // GA 8
  // pp > 1: GA forced to 1 with a warning; micro_batch_num micro batches.
  MindFormersOptions o;
  o.overrides = {{"runner_config.gradient_accumulation_steps", "4"}};
  const MindFormersConfig g = load_mindformers_yaml(yaml("finetune_glm4_9b.yaml"), o);
  EXPECT_EQ(g.gradient_accumulation_steps, 1);
  EXPECT_EQ(g.strategy.num_microbatches(), 64);
  EXPECT_TRUE(std::any_of(g.warnings.begin(), g.warnings.end(),
                          [](const std::string& w) { return w.find("reset to 1") != std::string::npos; }));
}

TEST(MindFormersYaml, NumericsAndVocabularySplit) {
  const MindFormersConfig d = load("pretrain_deepseek3_671b.yaml");
  EXPECT_EQ(d.strategy.param_bytes, 4);  // param_init_type float32
  EXPECT_EQ(d.strategy.precision, Precision::BF16);
  EXPECT_TRUE(d.strategy.shard_weights);  // enable_parallel_optimizer
  EXPECT_TRUE(d.strategy.vocab_parallel);  // vocab_emb_dp True is reset with pp > 1; 129280 % 4 == 0
  EXPECT_EQ(d.strategy.expert_tp(), 1);    // use_gmm
  EXPECT_EQ(d.model.mtp_num_layers, 1);
  EXPECT_FALSE(d.model.mtp_embedding_copy);
  EXPECT_EQ(d.strategy.chunk_layout.back().back(), 1);  // 2 in the split, one of them the MTP layer
  const MindFormersConfig l = load("pretrain_llama2_7b.yaml");
  EXPECT_EQ(l.strategy.param_bytes, 2);  // float16
  EXPECT_FALSE(l.strategy.vocab_parallel);
  const MindFormersConfig q = load("finetune_qwen2_7b.yaml");
  EXPECT_TRUE(q.strategy.vocab_parallel);  // 152064 % 4 == 0, vocab_emb_dp False
  EXPECT_TRUE(q.strategy.sequence_parallel);
  EXPECT_EQ(load("pretrain_qwen3_32b_4k.yaml").max_device_memory_gib.value_or(0), 58.0);
}

// Per-stage memory by hand: dense (Llama-2-70B, 64 devices) and MoE (Mixtral-8x7B).
TEST(MindFormersYaml, DenseStageMemoryByHand) {
  const MindFormersConfig c = load("pretrain_llama2_70b_bf16_64p.yaml");
  const MemoryReport r = stage_memory(build_layer_graph(c.model, c.strategy));
  // Stage 0 on one device: 10 layers of (attention 8192·(8192 + 2·1024) + 8192·8192 and MLP 3·8192·28672)
  // split over tp 4, their two RMSNorms (8192 each) replicated, and the 32000×8192 embedding split over tp.
  const I64 per_rank = 10 * (8192LL * (8192 + 2 * 1024) + 8192LL * 8192 + 3LL * 8192 * 28672) / 4 +
                       10 * 2 * 8192LL + 32000LL * 8192 / 4;
  ASSERT_EQ(per_rank, 2204794880);
  const auto& s0 = r.stages[0];
  EXPECT_EQ(s0.params, per_rank);
  // bfloat16 parameters (2 B) sliced over dp 2 by the parallel optimizer, full bf16 gradients, fp32 Adam
  // moments (8 B) sliced over dp.
  EXPECT_DOUBLE_EQ(s0.weight_bytes, per_rank * 2.0 / 2);
  EXPECT_DOUBLE_EQ(s0.grad_bytes, per_rank * 2.0);
  EXPECT_DOUBLE_EQ(s0.optimizer_bytes, per_rank * 8.0 / 2);
}

// MindSpore's optimizer parallel slices a parameter over its replicas: with dp 1 and context_parallel 2 the
// dense weights (replicated over dp·cp: MindFormers' linears shard activations over dp·cp) are sliced over
// the two cp ranks; optimizer_weight_shard_size caps the group when it divides the replicas, else MindSpore
// ignores it (said).
TEST(MindFormersYaml, ParallelOptimizerGroups) {
  const I64 per_rank = 2204794880;  // stage 0 of Llama-2-70B on one device (DenseStageMemoryByHand)
  MindFormersOptions o;
  o.overrides = {{"parallel_config.data_parallel", "1"}, {"parallel_config.context_parallel", "2"}};
  MindFormersConfig c = load_mindformers_yaml(yaml("pretrain_llama2_70b_bf16_64p.yaml"), o);
  EXPECT_TRUE(c.strategy.shard_weights);
  MemoryReport r = stage_memory(build_layer_graph(c.model, c.strategy));
  EXPECT_DOUBLE_EQ(r.stages[0].weight_bytes, per_rank * 2.0 / 2);
  EXPECT_DOUBLE_EQ(r.stages[0].optimizer_bytes, per_rank * 8.0 / 2);

  o.overrides = {{"parallel_config.data_parallel", "8"},
                 {"parallel.parallel_optimizer_config.optimizer_weight_shard_size", "2"}};
  c = load_mindformers_yaml(yaml("pretrain_llama2_70b_bf16_64p.yaml"), o);
  EXPECT_EQ(c.strategy.dense_shard_group(), 2);
  r = stage_memory(build_layer_graph(c.model, c.strategy));
  EXPECT_DOUBLE_EQ(r.stages[0].weight_bytes, per_rank * 2.0 / 2);  // over 2 of the 8 replicas, not 8
  EXPECT_DOUBLE_EQ(r.stages[0].optimizer_bytes, per_rank * 8.0 / 2);

  o.overrides = {{"parallel_config.data_parallel", "8"},
                 {"parallel.parallel_optimizer_config.optimizer_weight_shard_size", "3"}};
  c = load_mindformers_yaml(yaml("pretrain_llama2_70b_bf16_64p.yaml"), o);
  EXPECT_EQ(c.strategy.dense_shard_group(), 8);
  EXPECT_TRUE(std::any_of(c.warnings.begin(), c.warnings.end(), [](const std::string& w) {
    return w.find("optimizer_weight_shard_size 3 does not divide the 8 replicas") != std::string::npos;
  }));
}

// MindFormers' sequence pipeline (parallel_config.seq_split_num): the graph holds one unit of seq / k tokens
// whose flash attention saves the keys and values of the whole sequence, each attention layer keeps four
// whole-sequence caches (keys, values and their gradients), and stage s holds pp − s + k − 1 units (SAPP's
// compute_activation_seq_nums).  Llama-3-70B (tp 8, pp 8, GQA 8 kv heads, seq 8192) with k = 4.
TEST(MindFormersYaml, SequencePipelineUnits) {
  MindFormersOptions o;
  o.overrides = {{"parallel_config.seq_split_num", "4"}};
  const MindFormersConfig c = load_mindformers_yaml(yaml("pretrain_llama3_70b.yaml"), o);
  const Strategy& st = c.strategy;
  ASSERT_EQ(st.seq_split, 4);
  EXPECT_EQ(st.pipeline_units(), 256 * 4);
  EXPECT_EQ(st.one_f_one_b_inflight(0), 8 + 4 - 1);
  EXPECT_EQ(st.one_f_one_b_inflight(7), 4);
  const LayerGraph g = build_layer_graph(c.model, st);
  const I64 kv_full =
      8192LL * 1 * 128 * 2;  // one whole-sequence key (or value) tensor: 1 kv head per tp rank
  bool seen = false;
  for (const Op& op : g.chunks[1].ops)
    if (op.role == OpRole::CoreAttention && !seen) {
      seen = true;
      for (const auto& t : op.saved) {
        if (t.name == "q") {
          EXPECT_EQ(t.bytes, 2048LL * 8 * 128 * 2);  // the unit's queries, 8 heads per rank
        } else if (t.name == "k" || t.name == "v") {
          EXPECT_EQ(t.bytes, kv_full);
        }
      }
    }
  EXPECT_TRUE(seen);
  Strategy whole = st;
  whole.seq_split = 1;
  const LayerGraph gw = build_layer_graph(c.model, whole);
  // The caches of the stage's 10 layers come in; the sequence-parallel gather buffer shrinks to a unit's
  // 2048 of the 8192 tokens (× hidden 8192 × 2 B).
  EXPECT_EQ(g.chunks[1].runtime_buffer_bytes - gw.chunks[1].runtime_buffer_bytes,
            10 * 4 * kv_full - (8192LL - 2048) * 8192 * 2);
  const MemoryReport r = stage_memory(g);
  EXPECT_DOUBLE_EQ(r.stages[0].inflight_microbatches, 11);
  EXPECT_DOUBLE_EQ(r.stages[0].activation_bytes, 11 * r.stages[0].activation_bytes_per_microbatch);
  EXPECT_DOUBLE_EQ(r.stages[7].inflight_microbatches, 4);

  // Full recompute is refused (MindFormers forbids it with seqpipe); a split that does not divide the
  // sequence is an error; with context parallelism the split is not modelled (whole micro batches, said).
  o.overrides = {{"parallel_config.seq_split_num", "4"}, {"recompute_config.recompute", "True"}};
  std::string e;
  try {
    load_mindformers_yaml(yaml("pretrain_llama3_70b.yaml"), o);
  } catch (const InputError& err) {
    e = err.what();
  }
  EXPECT_NE(e.find("parallel_config.seq_split_num"), std::string::npos) << e;
  EXPECT_NE(e.find("full recompute"), std::string::npos) << e;
  o.overrides = {{"parallel_config.seq_split_num", "3"}};
  EXPECT_THROW(load_mindformers_yaml(yaml("pretrain_llama3_70b.yaml"), o), InputError);
  o.overrides = {{"parallel_config.seq_split_num", "4"},
                 {"parallel_config.context_parallel", "2"},
                 {"parallel_config.model_parallel", "4"}};
  const MindFormersConfig cp = load_mindformers_yaml(yaml("pretrain_llama3_70b.yaml"), o);
  EXPECT_EQ(cp.strategy.seq_split, 1);
  EXPECT_TRUE(std::any_of(cp.warnings.begin(), cp.warnings.end(), [](const std::string& w) {
    return w.find("seq_split_num 4 (seqpipe) with context_parallel") != std::string::npos;
  }));
}

TEST(MindFormersYaml, MoEStageMemoryByHand) {
  const MindFormersConfig c = load("pretrain_mixtral-8x7b.yaml");
  const MemoryReport r = stage_memory(build_layer_graph(c.model, c.strategy));
  // Its time is priced with Megatron's dispatch, and the front end says how far that is from MindSpore's.
  EXPECT_TRUE(std::any_of(c.warnings.begin(), c.warnings.end(), [](const std::string& w) {
    return w.find("MoE on MindSpore") != std::string::npos;
  }));
  // Stage 0: 16 layers; per layer dense = attention 4096·(4096 + 2·1024) + 4096·4096, router 4096·8, two
  // norms; experts 8·3·4096·14336 over ep 8 (one expert per device, etp 1); embedding 32000·4096 (tp 1).
  const I64 dense = 16 * (4096LL * (4096 + 2 * 1024) + 4096LL * 4096 + 4096LL * 8 + 2 * 4096LL) + 32000LL * 4096;
  const I64 expert = 16 * (3LL * 4096 * 14336);
  const auto& s0 = r.stages[0];
  EXPECT_EQ(s0.params, dense + expert);
  EXPECT_EQ(s0.expert_params, expert);
  // fp32 parameters; the dense ones sliced over dp 8, the experts' expert-data-parallel group is 1.
  EXPECT_DOUBLE_EQ(s0.weight_bytes, dense * 4.0 / 8 + expert * 4.0);
  EXPECT_DOUBLE_EQ(s0.grad_bytes, (dense + expert) * 4.0);
  EXPECT_DOUBLE_EQ(s0.optimizer_bytes, dense * 8.0 / 8 + expert * 8.0);
  // Full recompute of every layer: each keeps its fp16 input, 4096 tokens × 4096 × 2 B, plus the
  // embedding's int64 token ids; stage 0 has pp − 0 = 2 micro batches in flight.
  const double per_micro = 16 * 4096.0 * 4096 * 2 + 4096.0 * 8;
  EXPECT_DOUBLE_EQ(s0.activation_bytes_per_microbatch, per_micro);
  EXPECT_DOUBLE_EQ(s0.inflight_microbatches, 2);
}

// --- errors name the file, line and key ---

std::string error_of(const std::string& text, const MindFormersOptions& o = {}) {
  try {
    parse_mindformers_yaml(text, "x.yaml", o);
  } catch (const InputError& e) {
    return std::string(e.where()) + " | " + e.detail();
  }
  return "no error";
}

const char* kSmall =
    "model:\n"
    "  model_config:\n"
    "    type: LlamaConfig\n"
    "    num_layers: 30\n"
    "    hidden_size: 1024\n"
    "    num_heads: 16\n"
    "    vocab_size: 32000\n"
    "    seq_length: 2048\n"
    "    offset: OFFSET\n"
    "parallel_config:\n"
    "  data_parallel: 1\n"
    "  model_parallel: 2\n"
    "  pipeline_stage: 4\n"
    "  micro_batch_num: 8\n"
    "runner_config:\n"
    "  batch_size: 1\n";

std::string small(const std::string& offset) {
  std::string t = kSmall;
  t.replace(t.find("OFFSET"), 6, offset);
  return t;
}

TEST(MindFormersYaml, OffsetErrorsNameTheKeyAndLine) {
  // 30 layers over 4 stages: 7 each + offsets summing to 2.
  EXPECT_EQ(parse_mindformers_yaml(small("[0, 1, 1, 0]"), "x.yaml").layers_per_stage(),
            (std::vector<int>{7, 8, 8, 7}));
  std::string e = error_of(small("0"));
  EXPECT_NE(e.find("x.yaml:9: model.model_config.offset"), std::string::npos) << e;
  EXPECT_NE(e.find("must sum to 30 % (pp·V = 4) = 2"), std::string::npos) << e;
  // An int offset passing MindFormers' sum check but placing 36 layers once broadcast.
  e = error_of(small("2"));
  EXPECT_NE(e.find("places 36 layers"), std::string::npos) << e;
  e = error_of(small("[1, 1]"));
  EXPECT_NE(e.find("has 2 entries but pipeline_stage is 4"), std::string::npos) << e;
  e = error_of(small("[-8, 8, 1, 1]"));
  EXPECT_NE(e.find("-1 layers"), std::string::npos) << e;
}

// Parameter-efficient fine-tuning (model_config.pet_config).  LoRA is modelled: lora_rank, and target_modules
// matched as MindFormers matches each linear cell's name (re.match) — '.*wq|.*wv' adapts the attention's
// projection in (its two separate adapters priced as one, said), '.*w1|.*w2|.*w3' the MLP; the frozen rest
// keeps no gradient or optimizer state.  A pattern naming no modelled linear is an error on its line;
// ptuning2 / prefixtuning are said to be priced as a full fine-tuning (an upper bound).
// MindFormers' attention refuses kv heads that model_parallel does not divide (llama_transformer.py), where
// Megatron-LM now runs tp a multiple of them: the yaml's 4 kv heads on model_parallel 8 are refused, naming
// the yaml's key.
TEST(MindFormersYaml, KvHeadsModelParallelDividesThem) {
  std::string text = small("[0, 1, 1, 0]");
  text.replace(text.find("model_parallel: 2"), 17, "model_parallel: 8");
  text.replace(text.find("    num_heads: 16\n"), 18, "    num_heads: 16\n    n_kv_heads: 2\n");
  try {
    parse_mindformers_yaml(text, "x.yaml");
    ADD_FAILURE() << "2 kv heads on model_parallel 8 were read";
  } catch (const InputError& e) {
    EXPECT_NE(e.detail().find("kv heads"), std::string::npos) << e.detail();
    EXPECT_NE(std::string(e.what()).find("model_parallel"), std::string::npos) << e.what();
  }
}

TEST(MindFormersYaml, ParameterEfficientFineTuning) {
  auto with_pet = [](const std::string& pet) {
    std::string t = small("[0, 1, 1, 0]");
    t.replace(t.find("    offset:"), 0, "    pet_config:\n" + pet);
    return t;
  };
  auto warning = [](const MindFormersConfig& c, const std::string& part) {
    for (const auto& w : c.warnings)
      if (w.find(part) != std::string::npos) return w;
    return std::string();
  };
  const MindFormersConfig plain = parse_mindformers_yaml(small("[0, 1, 1, 0]"), "x.yaml");
  EXPECT_FALSE(plain.model.lora.enabled());
  const MindFormersConfig qv = parse_mindformers_yaml(
      with_pet("      pet_type: lora\n      lora_rank: 16\n      target_modules: '.*wq|.*wv'\n"), "x.yaml");
  EXPECT_EQ(qv.model.lora.rank, 16);
  EXPECT_TRUE(qv.model.lora.linear_qkv);
  EXPECT_FALSE(qv.model.lora.linear_proj || qv.model.lora.linear_fc1 || qv.model.lora.linear_fc2);
  EXPECT_NE(warning(qv, "2 separate adapters of q / k / v"), "") << qv.warnings.size();
  EXPECT_EQ(warning(qv, "not modelled — priced as a full fine-tuning"), "");
  const MemoryReport m = stage_memory(build_layer_graph(qv.model, qv.strategy));
  for (const auto& s : m.stages) {  // gradients (in param_init_type) of the adapters alone
    EXPECT_GT(s.frozen_params, 0);
    EXPECT_DOUBLE_EQ(s.grad_bytes, static_cast<double>(s.params - s.frozen_params) * qv.strategy.param_bytes);
  }
  const MindFormersConfig mlp = parse_mindformers_yaml(
      with_pet("      pet_type: lora\n      lora_rank: 8\n      target_modules: '.*w1|.*w2|.*w3'\n"),
      "x.yaml");
  EXPECT_TRUE(mlp.model.lora.linear_fc1 && mlp.model.lora.linear_fc2);
  EXPECT_FALSE(mlp.model.lora.linear_qkv || mlp.model.lora.linear_proj);

  try {
    parse_mindformers_yaml(with_pet("      pet_type: lora\n      target_modules: '.*embedding'\n"), "x.yaml");
    ADD_FAILURE() << "a pattern naming no linear was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(e.where().find("model.model_config.pet_config.target_modules"), std::string::npos) << e.where();
    EXPECT_NE(e.detail().find("names none of the modelled linears"), std::string::npos) << e.detail();
  }
  const MindFormersConfig p2 =
      parse_mindformers_yaml(with_pet("      pet_type: ptuning2\n      pre_seq_len: 16\n"), "x.yaml");
  EXPECT_FALSE(p2.model.lora.enabled());
  EXPECT_NE(warning(p2, "pet_type ptuning2: parameter-efficient fine-tuning is not modelled"), "");
}

// Context parallelism as MindFormers runs it (parallel_config.context_parallel_algo): colossalai_cp, the
// default, gathers the k/v sequence (a ring with model_config.use_ring_attention), ulysses_cp exchanges heads
// all-to-all, hybrid_cp runs an all-to-all of ulysses_degree_in_cp ranks around a ring.
TEST(MindFormersYaml, ContextParallelAlgorithms) {
  auto yaml_with_cp = [](const std::string& parallel, const std::string& model) {
    std::string t = small("[0, 1, 1, 0]");
    t.replace(t.find("  pipeline_stage: 4"), 0, "  context_parallel: 4\n" + parallel);
    t.replace(t.find("    offset:"), 0, model);
    return t;
  };
  auto with_cp = [&](const std::string& parallel, const std::string& model) {
    return parse_mindformers_yaml(yaml_with_cp(parallel, "    use_flash_attention: True\n" + model), "x.yaml")
        .strategy;
  };
  // Without flash attention MindFormers refuses context parallelism (tools/check_rules.py): so does
  // preflight, naming the field.
  const std::string no_fa = error_of(yaml_with_cp("", ""));
  EXPECT_NE(no_fa.find("parallel_config.context_parallel"), std::string::npos) << no_fa;
  EXPECT_NE(no_fa.find("use_flash_attention"), std::string::npos) << no_fa;
  Strategy s = with_cp("", "");
  EXPECT_EQ(s.cp, 4);
  EXPECT_EQ(s.cp_comm_type, CpCommType::AllGather);
  EXPECT_EQ(with_cp("", "    use_ring_attention: True\n").cp_comm_type, CpCommType::P2P);
  EXPECT_EQ(with_cp("  context_parallel_algo: ulysses_cp\n", "").cp_comm_type, CpCommType::AllToAll);
  s = with_cp("  context_parallel_algo: hybrid_cp\n  ulysses_degree_in_cp: 2\n",
              "    use_ring_attention: True\n");
  EXPECT_EQ(s.cp_comm_type, CpCommType::P2P);
  EXPECT_EQ(s.cp_a2a_size, 2);
  std::string e;
  try {
    with_cp("  context_parallel_algo: hybrid_cp\n  ulysses_degree_in_cp: 3\n",
            "    use_ring_attention: True\n");
  } catch (const InputError& err) {
    e = err.what();
  }
  EXPECT_NE(e.find("parallel_config.ulysses_degree_in_cp"), std::string::npos) << e;
  EXPECT_NE(e.find("must divide context_parallel 4"), std::string::npos) << e;
}

TEST(MindFormersYaml, UnknownAndInconsistentFields) {
  std::string t = small("[0, 1, 1, 0]");
  // A pipeline scheduler MindSpore does not name (a typo of seqpipe): said, analysed as 1F1B; MindSpore's own
  // names are taken without a word.
  for (const char* name : {"seqpipes", "seqsmartvpp"}) {
    const MindFormersConfig c = parse_mindformers_yaml(
        t + "parallel:\n  pipeline_config:\n    pipeline_scheduler: " + name + "\n", "x.yaml");
    bool said = false;
    for (const auto& w : c.warnings) said = said || w.find("is none of MindSpore's") != std::string::npos;
    EXPECT_EQ(said, std::string(name) == "seqpipes") << name;
  }
  std::string bad = t;
  bad.replace(bad.find("  pipeline_stage: 4"), 18, "  pipline_stage: 4");
  std::string e = error_of(bad);
  EXPECT_NE(e.find("x.yaml:13: parallel_config.pipline_stage"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown key"), std::string::npos) << e;
  // 16 heads are not divisible by model_parallel 3: named in the yaml's terms.
  bad = t;
  bad.replace(bad.find("model_parallel: 2"), 17, "model_parallel: 3");
  e = error_of(bad);
  EXPECT_NE(e.find("parallel_config.model_parallel"), std::string::npos) << e;
  // micro_batch_num below the stages.
  bad = t;
  bad.replace(bad.find("micro_batch_num: 8"), 18, "micro_batch_num: 2");
  e = error_of(bad);
  EXPECT_NE(e.find("x.yaml:14: parallel_config.micro_batch_num"), std::string::npos) << e;
  // The launch's worker count must equal dp·tp·cp·pp.
  MindFormersOptions o;
  o.world_size = 16;
  o.world_source = "msrun --worker_num";
  e = error_of(t, o);
  EXPECT_NE(e.find("msrun --worker_num | the launch starts 16 workers"), std::string::npos) << e;
  EXPECT_NE(e.find("= 8 ranks"), std::string::npos) << e;
  // Malformed yaml and a mistyped value.
  e = error_of("model:\n  model_config: [1, 2\n");
  EXPECT_NE(e.find("x.yaml:"), std::string::npos) << e;
  EXPECT_NE(e.find("malformed yaml"), std::string::npos) << e;
  bad = t;
  bad.replace(bad.find("num_heads: 16"), 13, "num_heads: many");
  e = error_of(bad);
  EXPECT_NE(e.find("x.yaml:6: model.model_config.num_heads | expected an integer, got 'many'"), std::string::npos) << e;
}

// Auto parallel (parallel_mode 2, MindFormers r1.2's *_auto_parallel.yaml): check_rules does not tie
// parallel_config to the device count, so an 8-worker launch of an all-1 layout is data parallel over 8
// (not refused), with a warning that MindSpore's search may choose otherwise; workers that tp·cp·pp do not
// divide are refused.  r1.2's runner_config.per_epoch_size (the sink size) is read past.
TEST(MindFormersYaml, AutoParallelTakesTheLaunchWorkersAsDataParallel) {
  std::string t = small("0");
  const std::string pipeline = "  pipeline_stage: 4\n  micro_batch_num: 8\n";
  t.replace(t.find(pipeline), pipeline.size(), "  pipeline_stage: 1\n");
  t += "  per_epoch_size: 2\nparallel:\n  parallel_mode: 2\n";
  MindFormersOptions o;
  o.world_size = 8;
  o.world_source = "msrun --worker_num";
  const MindFormersConfig c = parse_mindformers_yaml(t, "x.yaml", o);
  EXPECT_EQ(c.strategy.tp, 2);
  EXPECT_EQ(c.strategy.dp(), 4);
  EXPECT_EQ(c.strategy.world_size, 8);
  bool warned = false;
  for (const auto& w : c.warnings)
    warned = warned || w.find("data parallel over the rest of the 8 workers (dp 4)") != std::string::npos;
  EXPECT_TRUE(warned);
  o.world_size = 7;
  const std::string e = error_of(t, o);
  EXPECT_NE(e.find("msrun --worker_num | the launch starts 7 workers, which tp·cp·pp = 2·1·1 = 2"),
            std::string::npos)
      << e;
  // Semi-auto parallel keeps MindFormers' rule.
  t.replace(t.find("parallel_mode: 2"), 16, "parallel_mode: 1");
  o.world_size = 8;
  EXPECT_NE(error_of(t, o).find("MindFormers requires them to be equal"), std::string::npos);
}

// Models the layer model does not describe are refused by family, at their key, rather than read with
// LlamaConfig's names and defaults (which would price a 7B decoder): multimodal configs nest their towers
// (MllamaConfig's vision_model / text_model), encoder-decoder ones have two stacks (WhisperConfig), and the
// encoder / vision families are named by their type (BertConfig, ViTConfig…).
TEST(MindFormersYaml, NonDecoderModelsAreRefusedByFamily) {
  std::string t = small("[0, 1, 1, 0]");
  std::string mm = t;
  mm.replace(mm.find("    type: LlamaConfig\n"), 22,
             "    type: MllamaConfig\n    vision_model:\n      arch: {type: MllamaVisionModel}\n"
             "    text_model:\n      arch: {type: MllamaForCausalLM}\n");
  std::string e = error_of(mm);
  EXPECT_NE(e.find("x.yaml:5: model.model_config.vision_model"), std::string::npos) << e;
  EXPECT_NE(e.find("multimodal model"), std::string::npos) << e;
  std::string ed = t;
  ed.replace(ed.find("    type: LlamaConfig\n"), 22,
             "    type: Seq2SeqAudioConfig\n    is_encoder_decoder: True\n");
  e = error_of(ed);
  EXPECT_NE(e.find("model.model_config.is_encoder_decoder"), std::string::npos) << e;
  EXPECT_NE(e.find("encoder-decoder model"), std::string::npos) << e;
  std::string bert = t;
  bert.replace(bert.find("LlamaConfig"), 11, "BertConfig");
  e = error_of(bert);
  EXPECT_NE(e.find("x.yaml:3: model.model_config.type"), std::string::npos) << e;
  EXPECT_NE(e.find("BertConfig is an encoder or vision model"), std::string::npos) << e;
  // A decoder under another type name is still read, with a note.
  std::string internlm = t;
  internlm.replace(internlm.find("LlamaConfig"), 11, "InternLM2Config");
  EXPECT_EQ(error_of(internlm), "no error");
}

TEST(MindFormersYaml, NewStyleWithoutArchitectureNeedsAModel) {
  std::string e;
  try {
    load_mindformers_yaml(yaml("finetune_qwen3.yaml"));
  } catch (const InputError& x) {
    e = x.where() + " | " + x.detail();
  }
  EXPECT_NE(e.find("finetune_qwen3.yaml:"), std::string::npos) << e;
  EXPECT_NE(e.find("pretrained_model_dir"), std::string::npos) << e;
  EXPECT_NE(e.find("--model"), std::string::npos) << e;
}

// MindFormers' DeepseekV3Config defaults each field to DeepSeek-V3's config.json; its own
// configs/deepseek3/pretrain_deepseek3_671b.yaml (mcore style) gives no head count and no experts.  It had
// been refused ("model.model_config.num_heads: is missing").
TEST(MindFormersYaml, DeepseekV3FieldsLeftOutAreTheConfigClassDefaults) {
  const std::string text =
      "run_mode: train\nuse_legacy: False\n"
      "parallel_config:\n  data_parallel: 2\n  model_parallel: 4\n  pipeline_stage: 1\n"
      "  expert_parallel: 8\n  micro_batch_num: 1\n"
      "model:\n  model_config:\n    model_type: \"deepseek_v3\"\n    seq_length: 4096\n"
      "    num_hidden_layers: 4\n    moe_intermediate_size: 1024\n";
  const MindFormersConfig c = parse_mindformers_yaml(text, "x.yaml");
  EXPECT_EQ(c.model.num_layers, 4);  // the yaml's own fields win
  EXPECT_EQ(c.model.num_attention_heads, 128);
  EXPECT_EQ(c.model.hidden_size, 7168);
  EXPECT_EQ(c.model.moe.num_experts, 256);
  EXPECT_EQ(c.model.moe.router_topk, 8);
  EXPECT_EQ(c.model.moe.ffn_hidden_size, 1024);
  EXPECT_TRUE(c.model.mla.enabled);
  // DeepSeek-V3's three leading dense layers (first_k_dense_replace), the rest of the yaml's 4 MoE
  EXPECT_EQ(c.model.moe.layer_is_moe, (std::vector<bool>{false, false, false, true}));
  bool said = false;
  for (const auto& w : c.warnings) said = said || w.find("DeepseekV3Config defaults") != std::string::npos;
  EXPECT_TRUE(said);
  // MindFormers' PyNative trainer config (torchtitan-style sections, the model flat under model:): refused
  // as what it is, not as a yaml missing model_config
  std::string pynative;
  try {
    parse_mindformers_yaml(
        "training:\n  local_batch_size: 2\nparallelism:\n  tensor_parallel: 1\n"
        "model:\n  model_type: deepseek_v3\n  num_hidden_layers: 12\n",
        "p.yaml");
  } catch (const InputError& e) {
    pynative = e.what();
  }
  EXPECT_NE(pynative.find("p.yaml:6: model.model_config"), std::string::npos) << pynative;
  EXPECT_NE(pynative.find("PyNative trainer config"), std::string::npos) << pynative;
  // another model type without its architecture is still refused by the field
  std::string other = text;
  other.replace(other.find("deepseek_v3"), 11, "qwen3");
  EXPECT_THROW(parse_mindformers_yaml(other, "x.yaml"), InputError);
}

TEST(MindFormersYaml, RunMindformerArguments) {
  MindFormersOptions o;
  const std::string config = read_run_mindformer_args(
      {"--config", "a.yaml", "--use_parallel", "True", "--batch_size=2", "--options", "parallel_config.data_parallel=4",
       "model.model_config.offset=[1,0]", "--run_mode", "train"},
      o);
  EXPECT_EQ(config, "a.yaml");
  ASSERT_TRUE(o.use_parallel.has_value());
  EXPECT_TRUE(*o.use_parallel);
  ASSERT_EQ(o.overrides.size(), 3u);
  EXPECT_EQ(o.overrides[0], (std::pair<std::string, std::string>{"runner_config.batch_size", "2"}));
  EXPECT_EQ(o.overrides[2], (std::pair<std::string, std::string>{"model.model_config.offset", "[1,0]"}));
  // Other run_mindformer.py options and their values are passed over; --flag=value; the last one wins.
  MindFormersOptions q;
  EXPECT_EQ(read_run_mindformer_args({"--load_checkpoint", "/ckpt", "--config=b.yaml", "--auto_trans_ckpt", "False",
                                      "--config", "c.yaml", "--use_parallel=0"},
                                     q),
            "c.yaml");
  ASSERT_TRUE(q.use_parallel.has_value());
  EXPECT_FALSE(*q.use_parallel);
  EXPECT_TRUE(q.overrides.empty());
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--config"}, {"--options", "no_equals"}, {"--use_parallel", "maybe"}}) {
    MindFormersOptions r;
    EXPECT_THROW(read_run_mindformer_args(bad, r), InputError) << bad.back();
  }
  // The overrides apply: dp 4 doubles the world and the global batch.
  MindFormersOptions p;
  p.overrides = {{"parallel_config.data_parallel", "2"}, {"runner_config.batch_size", "3"}};
  const MindFormersConfig c = parse_mindformers_yaml(small("[0, 1, 1, 0]"), "x.yaml", p);
  EXPECT_EQ(c.world_size(), 16);
  EXPECT_EQ(c.strategy.global_batch(), 3 * 2 * 8);
}

TEST(MindFormersYaml, RewriteKeepsEveryOtherByte) {
  const std::string text = preflight::test::read_file(yaml("finetune_qwen2_72b_32k.yaml"));
  const ChunkGrid offset = {{-1, 0, 0, 0, 1, 0, 0, 0}};
  const ChunkGrid full = {{9, 9, 8, 7, 6, 5, 3, 1}};
  const ChunkGrid none = {{0, 0, 0, 0, 0, 0, 0, 0}};
  const std::string out = rewrite_mindformers_yaml(text, "q.yaml", offset, full, none, none);
  // Read back: the new lists, and the same everything else.
  const MindFormersConfig c = parse_mindformers_yaml(out, "q.yaml");
  EXPECT_EQ(c.layers_per_stage(), (std::vector<int>{9, 10, 10, 10, 11, 10, 10, 10}));
  EXPECT_EQ(c.full_recompute_per_stage(), (std::vector<int>{9, 9, 8, 7, 6, 5, 3, 1}));
  // Only the three values changed: removing them from both texts leaves identical bytes.
  auto strip = [](std::string t) {
    for (const char* key : {"offset:", "  recompute:", "select_recompute:", "select_comm_recompute:"}) {
      std::size_t p = t.find(key);
      if (p == std::string::npos) continue;
      std::size_t e = t.find('\n', p);
      t.erase(p, e - p);
    }
    return t;
  };
  EXPECT_EQ(strip(out), strip(text));
  EXPECT_NE(out.find("offset: [-1, 0, 0, 0, 1, 0, 0, 0]"), std::string::npos);
  EXPECT_NE(out.find("  recompute: [9, 9, 8, 7, 6, 5, 3, 1]"), std::string::npos);
}

TEST(MindFormersYaml, RewriteAddsMissingKeysAndBlockLists) {
  const std::string text =
      "model:\n"
      "  model_config:\n"
      "    num_layers: 8\n"
      "    offset:\n"
      "      - 0\n"
      "      - 0\n"
      "    hidden_size: 64  # width\n"
      "recompute_config:\n"
      "  recompute: False  # none\n"
      "  mp_comm_recompute: True\n"
      "context:\n"
      "  mode: 0\n";
  const std::string out =
      rewrite_mindformers_yaml(text, "t.yaml", {{1, -1}}, {{2, 1}}, {{0, 0}}, {{3, 3}});
  EXPECT_EQ(out,
            "model:\n"
            "  model_config:\n"
            "    num_layers: 8\n"
            "    offset: [1, -1]\n"
            "    hidden_size: 64  # width\n"
            "recompute_config:\n"
            "  recompute: [2, 1]  # none\n"
            "  mp_comm_recompute: True\n"
            "  select_recompute: [0, 0]\n"
            "  select_comm_recompute: [3, 3]\n"
            "context:\n"
            "  mode: 0\n");
}

}  // namespace
}  // namespace preflight::analyzer

namespace preflight::analyzer {
namespace {

// What MindFormers' select / comm recompute drop from one layer, by hand (Qwen2.5-7B, tp 1, 8192 tokens,
// bf16): select (the SwiGLU activation and gate multiply) drops fc2's input, tokens · ffn · 2 B; comm
// (`.*\.norm`) drops the two RMSNorm outputs feeding qkv and fc1, 2 · tokens · hidden · 2 B.
TEST(MindFormersYaml, SelectAndCommRecomputeDropWhatTheyRecompute) {
  const MindFormersConfig c = load("finetune_qwen2_5_7b_8k.yaml");
  auto layer_bytes = [&](std::vector<std::string> modules) {
    Strategy s = c.strategy;
    Strategy::LayerRecomputeChoice choice;
    choice.modules = std::move(modules);
    s.per_layer_recompute.assign(static_cast<std::size_t>(c.model.num_layers), choice);
    const LayerGraph g = build_layer_graph(c.model, s);
    I64 bytes = 0;
    for (const auto& ch : g.chunks)
      for (const auto& op : ch.ops)
        if (op.layer == 3) bytes += op.kept_bytes;
    return bytes;
  };
  const I64 none = layer_bytes({});
  EXPECT_EQ(none - layer_bytes({"mlp_act"}), 8192LL * 18944 * 2);
  EXPECT_EQ(none - layer_bytes({"layernorm"}), 2 * 8192LL * 3584 * 2);
  EXPECT_EQ(none - layer_bytes({"layernorm", "mlp_act"}), 8192LL * 18944 * 2 + 2 * 8192LL * 3584 * 2);
}

// run_mindformer.py's other arguments are --KEY VALUE settings of the yaml (its parse_known_args rest):
// applied after --options, a dotted key's parents required, a new top-level key said; odd or malformed
// pairs refused.  Before, they were dropped and the yaml's own values priced.
TEST(MindFormersYaml, RunMindformerRestArgumentsSetYamlKeys) {
  MindFormersOptions o;
  read_run_mindformer_args({"--config", "a.yaml", "--parallel_config.data_parallel", "2", "--seed", "1",
                            "--runner_config.batch_size=3", "--load_checkpoint", "/ckpt", "--not_a_key", "7"},
                           o);
  EXPECT_EQ(o.rest_args, (std::vector<std::string>{"--parallel_config.data_parallel", "2",
                                                   "--runner_config.batch_size=3", "--not_a_key", "7"}));
  const MindFormersConfig c = parse_mindformers_yaml(small("[0, 1, 1, 0]"), "x.yaml", o);
  EXPECT_EQ(c.world_size(), 16);
  EXPECT_EQ(c.strategy.global_batch(), 3 * 2 * 8);
  bool said = false;
  for (const auto& w : c.warnings) said = said || w.find("--not_a_key") != std::string::npos;
  EXPECT_TRUE(said);

  MindFormersOptions missing;
  read_run_mindformer_args({"--no_such_section.data_parallel", "2"}, missing);
  InputError e("", "");
  try {
    parse_mindformers_yaml(small("[0, 1, 1, 0]"), "x.yaml", missing);
    ADD_FAILURE() << "a key under a missing section accepted";
  } catch (const InputError& x) {
    e = x;
  }
  EXPECT_EQ(e.where(), "--no_such_section.data_parallel");
  EXPECT_NE(e.detail().find("'no_such_section' is not a section"), std::string::npos) << e.detail();
  // Unpaired or stray words are refused when the yaml is read (a Megatron launch's words pass through the
  // argument reader too, which takes them as they come).
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--parallel_config.data_parallel"}, {"--seed", "1", "stray", "2"}}) {
    MindFormersOptions r;
    read_run_mindformer_args(bad, r);
    EXPECT_THROW(parse_mindformers_yaml(small("[0, 1, 1, 0]"), "x.yaml", r), InputError) << bad.back();
  }
}

// preflight's --moe-load-imbalance among run_mindformer.py's arguments prices the busiest expert-parallel
// rank of a MindFormers MoE run (DeepSeek-V3 at ep 16 here: its iteration slower); refused on a dense
// yaml and below 1.
TEST(MindFormersYaml, MoeLoadImbalanceArgument) {
  MindFormersOptions o;
  read_run_mindformer_args({"--config", "a.yaml", "--moe-load-imbalance", "1.3"}, o);
  ASSERT_TRUE(o.moe_load_imbalance.has_value());
  EXPECT_DOUBLE_EQ(*o.moe_load_imbalance, 1.3);
  const MindFormersConfig moe = load_mindformers_yaml(yaml("pretrain_deepseek3_671b.yaml"), o);
  EXPECT_DOUBLE_EQ(moe.strategy.moe_load_imbalance, 1.3);
  EXPECT_GT(moe.strategy.ep, 1);
  EXPECT_DOUBLE_EQ(moe_busiest_rank_factor(moe.model.moe, moe.strategy), 1.3);
  InputError e("", "");
  try {
    load_mindformers_yaml(yaml("pretrain_llama2_7b.yaml"), o);
    ADD_FAILURE() << "imbalance accepted on a dense model";
  } catch (const InputError& x) {
    e = x;
  }
  EXPECT_EQ(e.where(), "--moe-load-imbalance");
  // Not a number: refused with the arguments; out of range: when the yaml is read.
  for (const char* bad : {"0.9", "x", "inf"}) {
    std::string where;
    try {
      MindFormersOptions r;
      read_run_mindformer_args({"--moe-load-imbalance", bad}, r);
      load_mindformers_yaml(yaml("pretrain_deepseek3_671b.yaml"), r);
    } catch (const InputError& x) {
      where = x.where() + " " + x.detail();
    }
    EXPECT_NE(where.find("moe-load-imbalance"), std::string::npos) << bad << ": " << where;
  }
}

}  // namespace
}  // namespace preflight::analyzer
