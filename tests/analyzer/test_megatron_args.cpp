// The Megatron/torchrun front end: defaults, spellings, launcher sizes and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/analyzer/frontends/presets.hpp"
#include "preflight/analyzer/model/layer_graph.hpp"
#include "preflight/analyzer/model/memory.hpp"
#include "preflight/analyzer/model/memory_timeline.hpp"
#include "preflight/analyzer/model/rank_groups.hpp"
#include "preflight/common/error.hpp"
#include "test_support.hpp"

using namespace preflight::analyzer;
using Words = std::vector<std::string>;

namespace {
Words base_args() {
  return {"--num-layers", "24",           "--hidden-size", "1024",         "--num-attention-heads",
          "16",           "--seq-length", "1024",          "--vocab-size", "50257"};
}
Words with(Words a, const Words& more) {
  a.insert(a.end(), more.begin(), more.end());
  return a;
}
}  // namespace

TEST(MegatronArgs, DefaultsFollowMegatron) {
  MegatronConfig c = parse_megatron_args(base_args());
  EXPECT_EQ(c.model.ffn_hidden_size, 4096);
  EXPECT_EQ(c.model.kv_channels, 64);
  EXPECT_EQ(c.model.num_query_groups, 16);
  EXPECT_EQ(c.model.max_position_embeddings, 1024);
  EXPECT_TRUE(c.model.add_bias_linear);
  EXPECT_EQ(c.model.normalization, Normalization::LayerNorm);
  EXPECT_EQ(c.model.position_embedding, PositionEmbedding::LearnedAbsolute);
  EXPECT_DOUBLE_EQ(c.model.hidden_dropout, 0.1);
  EXPECT_EQ(c.strategy.precision, Precision::FP32);
  EXPECT_EQ(c.strategy.world_size, 1);  // no torchrun flags: tp·pp·cp
}

TEST(MegatronArgs, SwigluFfnRoundsDownToMultipleOf64) {
  // Megatron: int((4h·2/3)/64)·64; h = 4096 → 10922.67 → 10880.
  MegatronConfig c = parse_megatron_args(with(base_args(), {"--hidden-size", "4096", "--swiglu"}));
  EXPECT_EQ(c.model.activation, Activation::SwiGLU);
  EXPECT_EQ(c.model.ffn_hidden_size, 10880);
  MegatronConfig e = parse_megatron_args(with(base_args(), {"--swiglu", "--ffn-hidden-size", "3000"}));
  EXPECT_EQ(e.model.ffn_hidden_size, 3000);
}

TEST(MegatronArgs, TorchrunBothSpellingsAndEnvironment) {
  MegatronConfig a = parse_megatron_args(with(base_args(), {"--nproc_per_node", "8", "--nnodes", "2"}));
  EXPECT_EQ(a.strategy.world_size, 16);
  EXPECT_EQ(a.strategy.gpus_per_node, 8);
  MegatronConfig b = parse_megatron_args(with(base_args(), {"--nproc-per-node=4", "--nnodes=1:3"}));
  EXPECT_EQ(b.strategy.world_size, 12);
  MegatronConfig c = parse_megatron_args(base_args(), {{"PET_NPROC_PER_NODE", "8"}, {"PET_NNODES", "4"}});
  EXPECT_EQ(c.strategy.world_size, 32);
}

TEST(MegatronArgs, GqaNeedsTheSwitchAsInMegatron) {
  MegatronConfig a = parse_megatron_args(with(base_args(), {"--num-query-groups", "4"}));
  EXPECT_EQ(a.model.num_query_groups, 16);
  EXPECT_FALSE(a.warnings.empty());
  MegatronConfig b =
      parse_megatron_args(with(base_args(), {"--group-query-attention", "--num-query-groups", "4"}));
  EXPECT_EQ(b.model.num_query_groups, 4);
}

TEST(MegatronArgs, MegatronDeepSpeedSpellings) {
  // deepspeedai/Megatron-DeepSpeed megatron/arguments.py: --normalization {layernorm,rmsnorm} and
  // --num-key-value-heads (GQA without a switch), as examples_deepspeed/pretrain_llama2_distributed.sh uses.
  MegatronConfig c =
      parse_megatron_args(with(base_args(), {"--normalization", "rmsnorm", "--num-key-value-heads", "4"}));
  EXPECT_EQ(c.model.normalization, Normalization::RMSNorm);
  EXPECT_EQ(c.model.num_query_groups, 4);
  MegatronConfig l = parse_megatron_args(with(base_args(), {"--normalization", "layernorm"}));
  EXPECT_EQ(l.model.normalization, Normalization::LayerNorm);
  EXPECT_EQ(l.model.num_query_groups, 16);
}

// Pai-Megatron-Patch's DeepSeek scripts name the MLA head dimensions --qk-nope-head-dim / --qk-rope-head-dim.
// Pai-Megatron-Patch's scripts pass the padded vocabulary (--padded-vocab-size 151936 for Qwen) and a tokenizer
// of their own: taken as is, not padded again for tp.
TEST(MegatronArgs, PaiMegatronPatchPaddedVocabulary) {
  Words w = {"--num-layers", "2", "--hidden-size", "64", "--num-attention-heads", "4", "--seq-length", "16",
             "--padded-vocab-size", "151937", "--patch-tokenizer-type", "Qwen3Tokenizer",
             "--tensor-model-parallel-size", "1"};
  MegatronConfig c = parse_megatron_args(w);
  EXPECT_EQ(c.model.vocab_size, 151937);
  EXPECT_EQ(c.model.padded_vocab_size(1), 151937);
}

TEST(MegatronArgs, PaiMegatronPatchMlaSpellings) {
  MegatronConfig c = parse_megatron_args(with(base_args(), {"--multi-latent-attention", "--kv-lora-rank", "32",
                                                            "--qk-nope-head-dim", "96", "--qk-rope-head-dim", "32"}));
  EXPECT_EQ(c.model.mla.qk_head_dim, 96);
  EXPECT_EQ(c.model.mla.qk_pos_emb_head_dim, 32);
}

// --cp-comm-type takes one type, or one per layer (Megatron's nargs '+'): a list of one type is that type, a
// list that mixes them is priced with the first for every layer and said so.
TEST(MegatronArgs, ContextParallelCommTypePerLayer) {
  auto parse = [](const std::vector<std::string>& types) {
    Words w = with(base_args(), {"--context-parallel-size", "2", "--cp-comm-type"});
    w.insert(w.end(), types.begin(), types.end());
    return parse_megatron_args(w);
  };
  auto said = [](const MegatronConfig& c) {
    for (const auto& w : c.warnings)
      if (w.find("--cp-comm-type gives a type per layer") != std::string::npos) return true;
    return false;
  };
  const MegatronConfig same = parse({"a2a", "a2a"});
  EXPECT_EQ(same.strategy.cp_comm_type, CpCommType::AllToAll);
  EXPECT_FALSE(said(same));
  const MegatronConfig mixed = parse({"p2p", "a2a"});
  EXPECT_EQ(mixed.strategy.cp_comm_type, CpCommType::P2P);
  EXPECT_TRUE(said(mixed));
}

TEST(MegatronArgs, UnknownFlagsAndTheirValuesAreSkipped) {
  Words w = with(base_args(), {"--lr", "0.00015", "--data-path", "/x/y_text_document", "--split", "949,50,1",
                               "pretrain_gpt.py", "--rampup-batch-size", "16", "16", "5859375",
                               "--tensor-model-parallel-size", "2", "--eod-mask-loss"});
  MegatronConfig c = parse_megatron_args(w);
  EXPECT_EQ(c.strategy.tp, 2);
  EXPECT_NE(std::find(c.ignored.begin(), c.ignored.end(), "--rampup-batch-size"), c.ignored.end());
  // Of the flags read past, those whose names say they may change memory or time are named (a batch-size
  // ramp-up changes the iteration: said with what the price assumes); the learning rate, data and logging
  // are not.
  std::string unread;
  for (const auto& warning : c.warnings)
    if (warning.find("read past") != std::string::npos) unread = warning;
  EXPECT_TRUE(std::any_of(c.warnings.begin(), c.warnings.end(), [](const std::string& warning) {
    return warning.rfind("--rampup-batch-size: the batch-size ramp is not priced", 0) == 0;
  }));
  EXPECT_EQ(unread.find("--lr"), std::string::npos) << unread;
  EXPECT_EQ(unread.find("--data-path"), std::string::npos) << unread;
  MegatronConfig newer = parse_megatron_args(
      with(base_args(), {"--overlap-p2p-communication-warmup-flush", "--log-params-norm", "--save-interval",
                         "100", "--fsdp-double-buffer", "--fp8-dot-product-attention", "--moe-paged-stash",
                         "--dist-ckpt-optim-fully-reshardable", "--keep-fp8-transpose-cache"}));
  unread.clear();
  for (const auto& warning : newer.warnings)
    if (warning.find("read past") != std::string::npos) unread = warning;
  EXPECT_NE(unread.find("--overlap-p2p-communication-warmup-flush"), std::string::npos) << unread;
  EXPECT_NE(unread.find("--fsdp-double-buffer"), std::string::npos) << unread;
  // Megatron-FSDP keeps every FP8 weight's transpose (parameters × 1 byte, fsdp/src/README.md): not priced.
  EXPECT_NE(unread.find("--keep-fp8-transpose-cache"), std::string::npos) << unread;
  EXPECT_EQ(unread.find("--dist-ckpt-optim"), std::string::npos) << unread;  // a checkpoint format
  // These two have warnings of their own (UnmodelledFeaturesAreNamed).
  EXPECT_EQ(unread.find("--fp8-dot-product-attention"), std::string::npos) << unread;
  EXPECT_EQ(unread.find("--moe-paged-stash"), std::string::npos) << unread;
  auto said = [&](const std::string& text) {
    for (const auto& warning : newer.warnings)
      if (warning.rfind(text, 0) == 0) return true;
    return false;
  };
  EXPECT_TRUE(said("--fp8-dot-product-attention: FP8 attention is priced as 16-bit attention"));
  EXPECT_TRUE(said("--moe-paged-stash: the paged expert-activation stash is not modelled"));
  EXPECT_EQ(unread.find("--log-params-norm"), std::string::npos) << unread;
  EXPECT_EQ(unread.find("--save-interval"), std::string::npos) << unread;
}

// Megatron's T5 gives encoder and decoder depths instead of --num-layers: refused as a model family, not as a
// missing size.
TEST(MegatronArgs, EncoderDecoderModelsAreRefusedByName) {
  try {
    parse_megatron_args(Words{"--encoder-num-layers", "12", "--decoder-num-layers", "12", "--hidden-size",
                              "768", "--num-attention-heads", "12", "--seq-length", "512", "--vocab-size",
                              "30000"});
    ADD_FAILURE() << "a T5 command line was accepted";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--encoder-num-layers"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("encoder-decoder"), std::string::npos) << e.what();
  }
}

TEST(MegatronArgs, ArrayItemsHoldingFlagAndValueInOneWord) {
  MegatronConfig c = parse_megatron_args(
      with(base_args(), {"--bf16", "--fp8-format hybrid", "--tokenizer-type NullTokenizer"}));
  EXPECT_EQ(c.strategy.fp8, Fp8Format::Hybrid);
  EXPECT_EQ(c.model.vocab_size, 50257);  // NullTokenizer: exactly --vocab-size (Megatron-LM since 2026-04-22)
}

// Megatron-LM's NullTokenizer appended an EOD token (vocabulary --vocab-size + 1) until 2026-04-22; the
// current rule is the default, with a note, and --megatron-version gives an older checkout's rule.
TEST(MegatronArgs, NullTokenizerVocabularyFollowsTheMegatronVersion) {
  Words base = with(base_args(), {"--tokenizer-type", "NullTokenizer"});
  MegatronConfig now = parse_megatron_args(base);
  EXPECT_EQ(now.model.vocab_size, 50257);
  bool noted = false;
  for (const auto& w : now.warnings) noted = noted || w.find("--megatron-version") != std::string::npos;
  EXPECT_TRUE(noted);
  EXPECT_EQ(parse_megatron_args(with(base, {"--megatron-version", "2026-04-21"})).model.vocab_size, 50258);
  MegatronConfig later = parse_megatron_args(with(base, {"--megatron-version", "2026-04-22"}));
  EXPECT_EQ(later.model.vocab_size, 50257);
  for (const auto& w : later.warnings) EXPECT_EQ(w.find("NullTokenizer"), std::string::npos) << w;
  EXPECT_THROW(parse_megatron_args(with(base, {"--megatron-version", "core_r0.8"})), preflight::InputError);
}

// Megatron's validate_args takes --encoder-seq-length as the sequence when --seq-length is absent.  An
// encoder-decoder launch (T5: encoder and decoder sequences, as Megatron-LM's pretrain_t5.sh examples) is
// refused by the flag, saying what is modelled — it had been refused as "--seq-length: is required".
TEST(MegatronArgs, EncoderSequenceAndEncoderDecoderLaunches) {
  const Words base = preflight::test::words(
      "--num-layers 12 --hidden-size 768 --num-attention-heads 12 --vocab-size 30592 --micro-batch-size 4");
  EXPECT_EQ(parse_megatron_args(with(base, {"--encoder-seq-length", "512"})).strategy.seq_length, 512);
  EXPECT_EQ(parse_megatron_args(with(base, {"--encoder-seq-length", "512", "--seq-length", "1024"}))
                .strategy.seq_length,
            1024);
  // with or without --seq-length (Megatron-DeepSpeed's T5 examples give all three)
  for (const Words& t5 :
       {with(base, {"--encoder-seq-length", "512", "--decoder-seq-length", "128"}),
        with(base, {"--encoder-seq-length", "512", "--decoder-seq-length", "128", "--seq-length", "512"})}) {
    try {
      parse_megatron_args(t5);
      ADD_FAILURE() << "a T5 launch was read";
    } catch (const preflight::InputError& e) {
      EXPECT_NE(std::string(e.what()).find("--decoder-seq-length"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("encoder-decoder"), std::string::npos) << e.what();
    }
  }
}

// A launch that reads its architecture from its checkpoint (--use-checkpoint-args, epfLLM Megatron-LLM's
// finetune.sh) is refused by that flag with the way out (--model), not as "--num-layers: is required"; with a
// preset named it is analysed.  Megatron-LLM's --position-embedding-type rotary is rope.
TEST(MegatronArgs, ArchitectureFromTheCheckpointNeedsAModel) {
  const Words launch = preflight::test::words(
      "--tensor-model-parallel-size 2 --load /ckpt/llama2-7b-tp2 --use-checkpoint-args --seq-length 4096 "
      "--micro-batch-size 1 --global-batch-size 8 --tokenizer-type SentencePieceTokenizer --vocab-size 32000 "
      "--position-embedding-type rotary");
  try {
    parse_megatron_args(launch);
    ADD_FAILURE() << "parsed without an architecture";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--use-checkpoint-args"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("/ckpt/llama2-7b-tp2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--model"), std::string::npos) << e.what();
  }
  const ModelSpec preset = preflight::analyzer::preset_model("llama2-7b");
  const MegatronConfig c = parse_megatron_args(launch, {}, &preset);
  EXPECT_EQ(c.model.num_layers, 32);
  EXPECT_EQ(c.model.position_embedding, preflight::analyzer::PositionEmbedding::Rope);
  EXPECT_THROW(parse_megatron_args(with(base_args(), {"--position-embedding-type", "xpos"})),
               preflight::InputError);
  // Megatron-DeepSpeed's ALiBi (BLOOM): no position embedding table, said.
  const MegatronConfig alibi = parse_megatron_args(with(base_args(), {"--position-embedding-type", "alibi"}));
  EXPECT_EQ(alibi.model.position_embedding, preflight::analyzer::PositionEmbedding::None);
  bool said = false;
  for (const auto& w : alibi.warnings) said = said || w.find("alibi") != std::string::npos;
  EXPECT_TRUE(said);
}

// A hybrid stack given by --hybrid-attention-ratio / --hybrid-mlp-ratio (Megatron-LM's
// examples/mamba/train.sh) is allocated as Megatron allocates it.  The expected layers were printed by
// Megatron-LM's own megatron/core/ssm/mamba_hybrid_layer_allocation.py (_allocate_auto) on this machine; 10 ×
// 0.25 = 2.5 rounds to 2 (Python's round half to even).  It had been refused.
TEST(MegatronArgs, HybridLayersAllocatedFromRatios) {
  const struct {
    const char* layers;
    const char* attention;
    const char* mlp;
    const char* expected;
  } cases[] = {{"48", "0.08", "0.5", "M-M-M--M-*M-M-M-M--*M-M-M-M-*M--M-M-M-*M-M--M-M-"},
               {"56", "0.08", "0.5", "M-M-M--M-M*-M-M-M-M--M*-M-M-M-M-M*--M-M-M-M-M*-M--M-M-M-"},
               {"48", "0.5", "0.2", "M*-*M*M*-*M*-*M*M*-*M*-**M*-*M*M*-*M*-*M*M*-*M*-"},
               {"10", "0.3", "0.3", "M-*MM*-*M-"},
               {"7", "0.5", "0", "M**M**M"},
               {"10", "0.25", "0", "MMM*MM*MMM"}};
  for (const auto& c : cases) {
    const MegatronConfig m = parse_megatron_args(preflight::test::words(
        std::string(
            "--hidden-size 256 --num-attention-heads 4 --seq-length 128 --vocab-size 1000 --num-layers ") +
        c.layers + " --hybrid-attention-ratio " + c.attention + " --hybrid-mlp-ratio " + c.mlp));
    EXPECT_EQ(m.model.hybrid_pattern, c.expected) << c.layers << " " << c.attention << " " << c.mlp;
    EXPECT_EQ(m.model.num_layers, std::stoi(c.layers));
  }
  const Words base = preflight::test::words(
      "--hidden-size 256 --num-attention-heads 4 --seq-length 128 --vocab-size 1000 --num-layers 10");
  EXPECT_THROW(
      parse_megatron_args(with(base, {"--hybrid-attention-ratio", "0.6", "--hybrid-mlp-ratio", "0.5"})),
      preflight::InputError);
  EXPECT_THROW(parse_megatron_args(with(base, {"--hybrid-attention-ratio", "1.5"})), preflight::InputError);
}

// Megatron-DeepSpeed's own flags in BigScience's BLOOM-176B script (train/tr11-176B-ml): the embedding padded
// to
// --pad-vocab-size-to exactly; --pp-partition-method 'type:transformer|embedding' counting the embedding at
// each end as a layer (70 layers + 2 over pp 12: 5 on the first and last stage, 6 on the others, where 70 /
// 12 had been refused); and bf16 at ZeRO stage 0, which DeepSpeed runs with its BF16_Optimizer sharding the
// fp32 master weights and optimizer states over data parallel (ZeRO-1's).  fp16 at stage 0 shards nothing.
TEST(MegatronArgs, MegatronDeepSpeedBloomFlags) {
  const Words bloom = preflight::test::words(
      "--num-layers 70 --hidden-size 14336 --num-attention-heads 112 --seq-length 2048 --micro-batch-size 2 "
      "--global-batch-size 2048 --tensor-model-parallel-size 4 --pipeline-model-parallel-size 12 "
      "--nproc_per_node 8 --nnodes 48 --tokenizer-type PretrainedFromHF --tokenizer-name-or-path org/tok "
      "--pad-vocab-size-to 250880 --position-embedding-type alibi --embed-layernorm --checkpoint-activations "
      "--deepspeed --zero-stage 0 --deepspeed-activation-checkpointing");
  const MegatronConfig c =
      parse_megatron_args(with(bloom, {"--pp-partition-method", "type:transformer|embedding", "--bf16"}));
  EXPECT_EQ(c.model.vocab_size, 250880);
  EXPECT_EQ(c.model.padded_vocab_size(4), 250880);
  EXPECT_TRUE(c.strategy.account_for_embedding_in_pipeline_split);
  EXPECT_TRUE(c.strategy.account_for_loss_in_pipeline_split);
  EXPECT_EQ(c.strategy.zero_stage, 1);
  EXPECT_TRUE(c.strategy.distributed_optimizer);
  c.strategy.validate(c.model);
  const MegatronConfig fp16 =
      parse_megatron_args(with(bloom, {"--pp-partition-method", "type:transformer|embedding", "--fp16"}));
  EXPECT_EQ(fp16.strategy.zero_stage, 0);
  EXPECT_FALSE(fp16.strategy.distributed_optimizer);
  // Without the embedding counted, 70 layers do not split over 12 stages.
  EXPECT_THROW(parse_megatron_args(with(bloom, {"--bf16"})).strategy.validate(c.model),
               preflight::InputError);
  // A padding below the vocabulary is refused by the flag.
  EXPECT_THROW(parse_megatron_args(with(base_args(), {"--pad-vocab-size-to", "1000"})),
               preflight::InputError);
}

TEST(MegatronArgs, VocabFileIsCountedWhenPresentElseTokenizerDefault) {
  auto dir = std::filesystem::temp_directory_path() / "preflight_vocab_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "vocab.json") << R"({"a": 0, "b": 1, "c": 2})";
  Words a = {"--num-layers",          "2",
             "--hidden-size",         "64",
             "--num-attention-heads", "4",
             "--seq-length",          "16",
             "--vocab-file",          (dir / "vocab.json").string()};
  EXPECT_EQ(parse_megatron_args(a).model.vocab_size, 3);
  Words b = {"--num-layers",          "2",
             "--hidden-size",         "64",
             "--num-attention-heads", "4",
             "--seq-length",          "16",
             "--vocab-file",          "/cluster/path/gpt2-vocab.json"};
  MegatronConfig c = parse_megatron_args(b);
  EXPECT_EQ(c.model.vocab_size, 50257);
  ASSERT_FALSE(c.warnings.empty());
  EXPECT_NE(c.warnings[0].find("GPT2BPETokenizer"), std::string::npos);
  // Left empty by the script (Megatron-LM's examples/gpt3 script run without its positional arguments):
  // --vocab-file and --merge-file without values still mean GPT-2's BPE; a bare --vocab-file says nothing.
  const Words empty = preflight::test::words(
      "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 16 --vocab-file --merge-file "
      "--split 1");
  EXPECT_EQ(parse_megatron_args(empty).model.vocab_size, 50257);
  const Words bare = preflight::test::words(
      "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 16 --vocab-file");
  EXPECT_THROW(parse_megatron_args(bare), preflight::InputError);
}

// SentencePiece tokenizers (Megatron's SentencePieceTokenizer, GPTSentencePieceTokenizer, Llama2Tokenizer:
// vocabulary = the model's get_piece_size()): a readable --tokenizer-model is read as a ModelProto (protobuf
// wire format; sentencepiece_model.proto: pieces = 1, trainer_spec = 2, normalizer_spec = 3) and its pieces
// counted — over --vocab-size, which these tokenizers ignore.  A file that is not such a model is refused by
// name; an absent one falls back as before (Llama2Tokenizer: 32000; GPTSentencePieceTokenizer: --vocab-size).
TEST(MegatronArgs, SentencePieceModelPiecesAreTheVocabulary) {
  auto varint = [](std::uint64_t v) {
    std::string out;
    do {
      unsigned char b = v & 0x7f;
      v >>= 7;
      out += static_cast<char>(v ? (b | 0x80) : b);
    } while (v);
    return out;
  };
  auto field = [&](int number, int wire, const std::string& payload) {
    return varint(static_cast<std::uint64_t>(number) << 3 | static_cast<std::uint64_t>(wire)) +
           (wire == 2 ? varint(payload.size()) : std::string()) + payload;
  };
  auto piece = [&](const std::string& text, int type) {
    return field(1, 2, text) + field(2, 5, std::string("\0\0\x80\xbf", 4)) + field(3, 0, varint(type));
  };
  // 300 pieces (two-byte lengths past 127 bytes of pieces), a trainer spec with varints and a string, a
  // normalizer spec with bytes: the layout of a real tokenizer.model.
  std::string model;
  model += field(1, 2, piece("<unk>", 2)) + field(1, 2, piece("<s>", 3)) + field(1, 2, piece("</s>", 3));
  for (int i = 3; i < 300; ++i) model += field(1, 2, piece("\xe2\x96\x81tok" + std::to_string(i), 1));
  model += field(2, 2, field(1, 2, "corpus.txt") + field(3, 0, varint(300)) + field(40, 0, varint(1)));
  model += field(3, 2, field(1, 2, "nmt_nfkc") + field(2, 2, std::string(200, '\x07')));
  const auto dir = std::filesystem::temp_directory_path() / "preflight_spm_test";
  std::filesystem::create_directories(dir);
  { std::ofstream(dir / "tokenizer.model", std::ios::binary) << model; }
  const Words base = preflight::test::words(
      "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 16 --tokenizer-type");
  const std::string file = (dir / "tokenizer.model").string();
  for (const char* type : {"GPTSentencePieceTokenizer", "Llama2Tokenizer", "SentencePieceTokenizer"}) {
    EXPECT_EQ(parse_megatron_args(with(base, {type, "--tokenizer-model", file})).model.vocab_size, 300)
        << type;
    EXPECT_EQ(parse_megatron_args(with(base, {type, "--tokenizer-model", file, "--vocab-size", "1000"}))
                  .model.vocab_size,
              300)
        << type;
  }
  // Absent: Llama2Tokenizer's known size, GPTSentencePieceTokenizer needs --vocab-size.
  EXPECT_EQ(
      parse_megatron_args(with(base, {"Llama2Tokenizer", "--tokenizer-model", "/nowhere/tokenizer.model"}))
          .model.vocab_size,
      32000);
  try {  // the message names the file it looked for and the flag that would give it
    parse_megatron_args(with(base, {"GPTSentencePieceTokenizer", "--tokenizer-model", "/nowhere/t.model"}));
    ADD_FAILURE() << "an absent GPTSentencePieceTokenizer model was read";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--tokenizer-model '/nowhere/t.model' not found"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("a readable --tokenizer-model"), std::string::npos) << e.what();
  }
  // Truncated, or not a protobuf at all (a Hugging Face tokenizer.json given by mistake): refused by name.
  { std::ofstream(dir / "truncated.model", std::ios::binary) << model.substr(0, model.size() - 50); }
  { std::ofstream(dir / "tokenizer.json") << R"({"model": {"vocab": {"a": 0}}})"; }
  for (const char* bad : {"truncated.model", "tokenizer.json"}) {
    try {
      parse_megatron_args(
          with(base, {"GPTSentencePieceTokenizer", "--tokenizer-model", (dir / bad).string()}));
      ADD_FAILURE() << bad << " was read";
    } catch (const preflight::InputError& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("not a SentencePiece model"), std::string::npos) << e.what();
    }
  }
  std::filesystem::remove_all(dir);
}

// Pai-Megatron-Patch's scripts load the tokenizer from the --load checkpoint (a Hugging Face folder): its
// config.json's vocab_size is the vocabulary, taken as the embedding size; an empty --load is tolerated.
// --tokenizer-type HuggingFaceTokenizer --tokenizer-model ORG/REPO (Megatron-LM's Megatron-FSDP DeepSeek-V3
// script): the vocabulary of a preset's repository or of a local model folder's config.json; an unknown
// repository still asks for --vocab-size.
TEST(MegatronArgs, HuggingFaceTokenizerVocabulary) {
  const Words a = preflight::test::words(
      "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 16 --tokenizer-type "
      "HuggingFaceTokenizer --make-vocab-size-divisible-by 3232 --tokenizer-model");
  const MegatronConfig ds = parse_megatron_args(with(a, {"deepseek-ai/DeepSeek-V3"}));
  EXPECT_EQ(ds.model.vocab_size, 129280);
  EXPECT_EQ(ds.model.padded_vocab_size(1), 129280);
  auto dir = std::filesystem::temp_directory_path() / "preflight_hf_tokenizer_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({"vocab_size": 151936})";
  EXPECT_EQ(parse_megatron_args(with(a, {dir.string()})).model.vocab_size, 151936);
  // A tokenizer.json beside it: Megatron's HuggingFaceTokenizer counts the tokenizer, len() — its model
  // vocabulary and added tokens (one of them already in the vocabulary) — over --vocab-size, and pads it.
  {
    std::ofstream(dir / "tokenizer.json")
        << R"({"version": "1.0", "added_tokens": [{"id": 5, "content": "<|im_start|>"},
              {"id": 6, "content": "<|im_end|>"}, {"id": 2, "content": "c"}],
              "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 2, "d": 3, "e": 4}}})";
  }
  const MegatronConfig own = parse_megatron_args(with(a, {dir.string(), "--vocab-size", "1000"}));
  EXPECT_EQ(own.model.vocab_size, 7);
  EXPECT_EQ(own.model.padded_vocab_size(1), 3232);
  {  // a Unigram model's [piece, score] list
    std::ofstream(dir / "tokenizer.json")
        << R"({"added_tokens": [], "model": {"type": "Unigram", "vocab": [["<unk>", 0.0], ["x", -1.5], ["y", -2]]}})";
  }
  EXPECT_EQ(parse_megatron_args(with(a, {dir.string()})).model.vocab_size, 3);
  {  // truncated: refused by name
    std::ofstream(dir / "tokenizer.json") << R"({"model": {"type": "BPE", "vocab": {"a": 0, "b)";
  }
  try {
    parse_megatron_args(with(a, {dir.string()}));
    ADD_FAILURE() << "a truncated tokenizer.json was read";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.json"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
  // Megatron-DeepSpeed's PretrainedFromHF takes the same as --tokenizer-name-or-path.
  {
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "tokenizer.json")
        << R"({"added_tokens": [], "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 2}}})";
  }
  const Words mds = preflight::test::words(
      "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 16 --tokenizer-type "
      "PretrainedFromHF "
      "--tokenizer-name-or-path");
  EXPECT_EQ(parse_megatron_args(with(mds, {dir.string()})).model.vocab_size, 3);
  try {
    parse_megatron_args(with(mds, {"t5-small"}));
    ADD_FAILURE() << "an unknown Hub tokenizer was read";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--tokenizer-name-or-path t5-small is not a folder"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(dir);
  // An empty --tokenizer-model (an unset variable): the refusal says so.
  try {
    parse_megatron_args(with(a, {"--data-path"}));
    ADD_FAILURE() << "parsed without a tokenizer";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--tokenizer-model has no value"), std::string::npos) << e.what();
  }
  // A Hub name that is neither a folder here nor a preset: refused, saying so.
  try {
    parse_megatron_args(with(a, {"someone/unknown-model"}));
    ADD_FAILURE() << "an unknown Hub tokenizer was read";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is not a folder on this machine"), std::string::npos) << e.what();
  }
  EXPECT_EQ(
      parse_megatron_args(with(a, {"deepseek-ai/DeepSeek-V3", "--vocab-size", "128815"})).model.vocab_size,
      128815);
}

// A mirror of a gated repository under another organisation (ROCm/Megatron-LM's
// examples/llama/train_llama3.sh names NousResearch/Meta-Llama-3-8B; its Llama-2 recipe
// NousResearch/Llama-2-7b-chat-hf) is read as the preset of that repository name, said; a repository name no
// preset has still asks for --vocab-size.
TEST(MegatronArgs, HuggingFaceTokenizerMirrorOfAPresetsRepository) {
  const Words a = preflight::test::words(
      "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 16 --tokenizer-type "
      "HuggingFaceTokenizer --tokenizer-model");
  const MegatronConfig llama3 = parse_megatron_args(with(a, {"NousResearch/Meta-Llama-3-8B"}));
  EXPECT_EQ(llama3.model.vocab_size, 128256);
  bool said = false;
  for (const auto& w : llama3.warnings)
    said |= w.find("the llama3-8b preset (NousResearch/Meta-Llama-3-8B taken as a re-upload") !=
            std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_EQ(parse_megatron_args(with(a, {"NousResearch/Llama-2-7b-chat-hf"})).model.vocab_size, 32000);
  EXPECT_EQ(parse_megatron_args(with(a, {"unsloth/Meta-Llama-3.1-70B-Instruct"})).model.vocab_size, 128256);
  EXPECT_EQ(parse_megatron_args(with(a, {"Qwen/Qwen2.5-72B-Instruct"})).model.vocab_size, 152064);
  try {
    parse_megatron_args(with(a, {"NousResearch/Hermes-3-Llama-3.1-8B"}));
    ADD_FAILURE() << "a repository no preset names was read";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is not a folder on this machine"), std::string::npos) << e.what();
  }
}

// Repositories that are no preset but whose embedding size is published
// (analyzer/data/models/tokenizers.json: Megatron-LM's ModelOpt configurations name nvidia/Nemotron-H-*,
// nvidia/Nemotron-Mini-4B): read, said with the source; a re-upload by name too.  Qwen3's small sizes are
// presets now; DeepSeek-R1 is DeepSeek-V3's architecture.  A name neither has still asks for --vocab-size.
TEST(MegatronArgs, HuggingFaceTokenizerOfAPublishedFamily) {
  const Words a = preflight::test::words(
      "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 16 --tokenizer-type "
      "HuggingFaceTokenizer --tokenizer-model");
  const MegatronConfig nemotron = parse_megatron_args(with(a, {"nvidia/Nemotron-H-8B-Base-8K"}));
  EXPECT_EQ(nemotron.model.vocab_size, 131072);
  bool said = false;
  for (const auto& w : nemotron.warnings)
    said |= w.find("from nvidia/Nemotron-H-8B-Base-8K (their config.json") != std::string::npos;
  EXPECT_TRUE(said);
  const MegatronConfig mirror = parse_megatron_args(with(a, {"someone/Nemotron-H-47B-Reasoning-128K"}));
  EXPECT_EQ(mirror.model.vocab_size, 131072);
  said = false;
  for (const auto& w : mirror.warnings)
    said |=
        w.find("of which someone/Nemotron-H-47B-Reasoning-128K is taken as a re-upload") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_EQ(parse_megatron_args(with(a, {"nvidia/Nemotron-Mini-4B-Instruct"})).model.vocab_size, 256000);
  EXPECT_EQ(parse_megatron_args(with(a, {"Qwen/Qwen3-0.6B"})).model.vocab_size, 151936);
  EXPECT_EQ(parse_megatron_args(with(a, {"unsloth/Qwen3-4B-Instruct-2507"})).model.vocab_size, 151936);
  EXPECT_EQ(parse_megatron_args(with(a, {"deepseek-ai/DeepSeek-R1"})).model.vocab_size, 129280);
  EXPECT_EQ(parse_megatron_args(with(a, {"deepseek-ai/DeepSeek-R1-0528"})).model.vocab_size, 129280);
  // Megatron's SFTTokenizer (Megatron-LM's ModelOpt training scripts) is len() of the same Hugging Face
  // tokenizer; it had been refused for want of --vocab-size
  const Words sft = preflight::test::words(
      "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 16 --tokenizer-type SFTTokenizer "
      "--tokenizer-model");
  EXPECT_EQ(parse_megatron_args(with(sft, {"nvidia/Nemotron-H-8B-Base-8K"})).model.vocab_size, 131072);
  EXPECT_EQ(parse_megatron_args(with(sft, {"nvidia/Llama-3.1-70B-Instruct-FP8"})).model.vocab_size, 128256);
  try {
    parse_megatron_args(with(a, {"Qwen/Qwen3-2B"}));  // no such repository
    ADD_FAILURE() << "a repository the table lacks was read";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is not a folder on this machine"), std::string::npos) << e.what();
  }
}

// MindSpeed-LLM's FSDP2 trainer: its YAML's sections and the command line's dotted keys (winning) as
// Megatron's words; sizes checked against the launch's world, errors naming the file and line or the flag.
TEST(MindSpeedFsdp2, Words) {
  const auto dir = std::filesystem::temp_directory_path() / "preflight_fsdp2_words_test";
  std::filesystem::create_directories(dir);
  const std::string yaml = (dir / "run.yaml").string();
  std::ofstream(yaml) << "model:\n  model_name_or_path: /m/Qwen3-8B\n"
                         "data:\n  cutoff_len: 8192\n  packing: True\n"
                         "parallel:\n  tp_size: 2\n  fsdp_size: 8\n  cp_size: 2\n  cp_type: ring\n"
                         "  reduce_dtype: bf16\n  reshard_after_forward: False\n  recompute: True\n  "
                         "recompute_modules:\n    - model.layers.{*}.mlp\n"
                         "training:\n  per_device_train_batch_size: 2\n  gradient_accumulation_steps: 3\n";
  auto has = [](const Words& w, const Words& seq) {
    return std::search(w.begin(), w.end(), seq.begin(), seq.end()) != w.end();
  };
  std::vector<std::string> notes;
  const Words w = megatron_words_from_mindspeed_fsdp2({yaml, "--data.cutoff_len=4096"}, 64, notes);
  EXPECT_TRUE(has(w, {"--model", "/m/Qwen3-8B"}));
  EXPECT_TRUE(has(w, {"--seq-length", "4096"}));  // the command line over the YAML
  EXPECT_TRUE(has(w, {"--tensor-model-parallel-size", "2", "--context-parallel-size", "2"}));
  EXPECT_TRUE(has(w, {"--cp-comm-type", "p2p"}));
  EXPECT_TRUE(has(w, {"--global-batch-size", "96"}));                   // 2 × 3 × 64 / (tp 2 · cp 2)
  EXPECT_TRUE(has(w, {"--num-distributed-optimizer-instances", "4"}));  // 32 ranks / fsdp 8
  EXPECT_TRUE(has(w, {"--grad-reduce-in-bf16"}));
  EXPECT_TRUE(has(w, {"--torch-fsdp2-no-reshard-after-forward"}));
  EXPECT_TRUE(has(w, {"--recompute-granularity", "full"}));
  std::string all;
  for (const auto& n : notes) all += n + "\n";
  EXPECT_NE(all.find("recompute of model.layers.{*}.mlp is priced as the recompute of whole layers"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("packed samples"), std::string::npos) << all;
  // HSDP with an expert-parallel size whose expert dp the replicas do not divide: not Megatron's instances
  // (they must divide it), said
  notes.clear();
  const Words hsdp_ep =
      megatron_words_from_mindspeed_fsdp2({yaml, "--parallel.tp_size", "1", "--parallel.cp_size", "1",
                                           "--parallel.fsdp_size", "16", "--parallel.ep_size", "32"},
                                          64, notes);
  EXPECT_FALSE(has(hsdp_ep, {"--num-distributed-optimizer-instances"}));
  all.clear();
  for (const auto& n : notes) all += n + "\n";
  EXPECT_NE(all.find("priced sharded over all data- and context-parallel ranks"), std::string::npos) << all;
  // world unknown: no global batch, the accumulation said
  notes.clear();
  EXPECT_FALSE(has(megatron_words_from_mindspeed_fsdp2({yaml}, 0, notes), {"--global-batch-size"}));
  // errors: a size that is no number (file and line), one that does not divide the world (the flag), bad YAML
  std::ofstream(dir / "bad.yaml") << "model:\n  model_name_or_path: x\nparallel:\n  cp_size: two\n";
  try {
    megatron_words_from_mindspeed_fsdp2({(dir / "bad.yaml").string()}, 8, notes);
    ADD_FAILURE() << "cp_size: two was read";
  } catch (const preflight::InputError& e) {
    EXPECT_EQ(e.where(), (dir / "bad.yaml").string() + ":4 (parallel.cp_size)");
  }
  try {
    megatron_words_from_mindspeed_fsdp2({yaml, "--parallel.fsdp_size", "5"}, 64, notes);
    ADD_FAILURE() << "fsdp 5 of 32 was read";
  } catch (const preflight::InputError& e) {
    EXPECT_EQ(e.where(), "--parallel.fsdp_size");
  }
  std::ofstream(dir / "broken.yaml") << "model: [unclosed\n";
  EXPECT_THROW(megatron_words_from_mindspeed_fsdp2({(dir / "broken.yaml").string()}, 8, notes),
               preflight::InputError);
  std::filesystem::remove_all(dir);
}

// The launch as analyze, estimate and search read it (`… train_fsdp2.py CONFIG.yaml --parallel.fsdp_size
// 16`): the launcher's sizes before the entry point give the world, the model its folder's preset.
TEST(MindSpeedFsdp2, LaunchRead) {
  const std::string yaml =
      (std::filesystem::path(PREFLIGHT_SOURCE_DIR) / "tests" / "data" / "wrap" / "mindspeed_fsdp2_style.yaml")
          .string();
  const MegatronConfig c = parse_megatron_args(
      {"--nproc_per_node", "8", "--nnodes", "2", "/x/train_fsdp2.py", yaml, "--parallel.fsdp_size", "16"});
  EXPECT_EQ(c.model.num_layers, 28);  // qwen3-0.6b, by /home/data/Qwen3-0.6B/
  EXPECT_EQ(c.strategy.world_size, 16);
  EXPECT_EQ(c.strategy.cp, 2);
  EXPECT_EQ(c.strategy.global_batch(), 2 * 4 * 8);
  EXPECT_TRUE(c.strategy.fsdp);
  // the world read as any launch's: an elastic --nnodes 1:2 is its largest size (the global batch with it)
  const MegatronConfig elastic = parse_megatron_args(
      {"--nproc_per_node=8", "--nnodes=1:2", "train_fsdp2.py", yaml, "--parallel.fsdp_size", "16"});
  EXPECT_EQ(elastic.strategy.world_size, 16);
  EXPECT_EQ(elastic.strategy.global_batch(), 2 * 4 * 8);
}

TEST(MegatronArgs, VocabularyFromTheLoadedCheckpoint) {
  auto dir = std::filesystem::temp_directory_path() / "preflight_load_vocab_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({"vocab_size": 129280, "hidden_size": 7168})";
  Words a = {"--num-layers",
             "2",
             "--hidden-size",
             "64",
             "--num-attention-heads",
             "4",
             "--seq-length",
             "16",
             "--patch-tokenizer-type",
             "DeepSeekV2Tokenizer",
             "--tensor-model-parallel-size",
             "2",
             "--load",
             dir.string()};
  MegatronConfig c = parse_megatron_args(a);
  EXPECT_EQ(c.model.vocab_size, 129280);
  EXPECT_EQ(c.model.padded_vocab_size(2), 129280);
  bool said = false;
  for (const auto& w : c.warnings) said = said || w.find("config.json") != std::string::npos;
  EXPECT_TRUE(said);
  // --vocab-size still wins; a folder without config.json says nothing.
  EXPECT_EQ(parse_megatron_args(with(a, {"--vocab-size", "32000"})).model.vocab_size, 32000);
  std::filesystem::remove(dir / "config.json");
  try {
    parse_megatron_args(a);
    ADD_FAILURE() << "no vocabulary source, yet parsed";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--vocab-size"), std::string::npos) << e.what();
    // Named as Pai's tokenizer reading the checkpoint, not as a missing --vocab-file.
    EXPECT_NE(e.detail().find("--patch-tokenizer-type DeepSeekV2Tokenizer (Pai-Megatron-Patch) reads the "
                              "tokenizer of the --load checkpoint (" +
                              dir.string() + "/config.json not found)"),
              std::string::npos)
        << e.detail();
  }
  {  // a config.json that is not a Hugging Face one: named so
    std::ofstream(dir / "config.json") << "{\"model\": \"x\"}";
  }
  try {
    parse_megatron_args(a);
    ADD_FAILURE() << "a config.json without vocab_size, yet parsed";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(e.detail().find("/config.json has no integer vocab_size)"), std::string::npos) << e.detail();
  }
  std::filesystem::remove(dir / "config.json");
  // Pai's Llama tokenizers are one family's vocabulary plus --extra-vocab-size (its Llama 3.1 scripts: 256):
  // the checkpoint's config.json is not needed for them.
  auto llama = [&](const char* tokenizer, const char* extra) {
    Words w = a;
    *std::find(w.begin(), w.end(), "DeepSeekV2Tokenizer") = tokenizer;
    return parse_megatron_args(with(w, {"--extra-vocab-size", extra})).model;
  };
  EXPECT_EQ(llama("LLama3Tokenizer", "256").vocab_size, 128256);
  EXPECT_EQ(llama("LLama3Tokenizer", "256").padded_vocab_size(2), 128256);
  EXPECT_EQ(llama("LLama2Tokenizer", "0").vocab_size, 32000);
  EXPECT_EQ(llama("Qwen2Tokenizer", "421").vocab_size, 152064);  // Qwen2.5-72B's config.json
  EXPECT_EQ(llama("Qwen3Tokenizer", "293").vocab_size, 151936);
  // Its vision-language models' tokenizer: the language model alone is analysed, and said so.
  const MegatronConfig vl = parse_megatron_args(with(
      [&] {
        Words w = a;
        *std::find(w.begin(), w.end(), "DeepSeekV2Tokenizer") = "Qwen2VLTokenizer";
        return w;
      }(),
      {"--extra-vocab-size", "421"}));
  EXPECT_TRUE(std::any_of(vl.warnings.begin(), vl.warnings.end(), [](const std::string& w) {
    return w.find("vision encoder") != std::string::npos;
  }));
  EXPECT_THROW(llama("LLama3Tokenizer", "-1"), preflight::InputError);
  Words empty_load = {"--num-layers",          "2",    "--hidden-size", "64",
                      "--num-attention-heads", "4",    "--seq-length",  "16",
                      "--vocab-size",          "1000", "--load"};
  EXPECT_EQ(parse_megatron_args(empty_load).model.vocab_size, 1000);
}

TEST(MegatronArgs, RecomputeAndVirtualPipeline) {
  MegatronConfig c = parse_megatron_args(with(
      base_args(),
      {"--pipeline-model-parallel-size", "4", "--num-layers-per-virtual-pipeline-stage", "2",
       "--recompute-granularity", "full", "--recompute-method", "block", "--recompute-num-layers", "3"}));
  EXPECT_EQ(c.strategy.vpp, 3);  // 24/4 = 6 layers per stage, chunks of 2
  EXPECT_EQ(c.strategy.recompute_granularity, RecomputeGranularity::Full);
  EXPECT_EQ(c.strategy.recompute_method, RecomputeMethod::Block);
  EXPECT_EQ(c.strategy.recompute_num_layers, 3);
}

// --microbatch-group-size-per-virtual-pipeline-stage (Megatron's functional test
// gpt3_mcore_te_tp1_pp4_vp1_tunable_overlap: pp 4, 5 micro batches in one group of 5) is read, and the
// rules of schedules.py hold: the group lies in [pp, micro batches], the last group has 0 or >= pp.
// TikTokenizer (Megatron's functional tests, Nemotron recipes): --vocab-size, else Megatron's fallback of
// 2^17 = 131072 entries whatever the tokenizer file holds; padded to a multiple of 128·tp as usual.
TEST(MegatronArgs, TikTokenizerVocabularyIsItsFixedSize) {
  Words tik = {"--num-layers",          "2",
               "--hidden-size",         "64",
               "--num-attention-heads", "4",
               "--seq-length",          "16",
               "--tokenizer-type",      "TikTokenizer",
               "--tokenizer-model",     "/nonexistent/multiMixV8.gpt4o_nc_sd.json",
               "--tiktoken-pattern",    "v2"};
  EXPECT_EQ(parse_megatron_args(tik).model.vocab_size, 131072);
  EXPECT_EQ(parse_megatron_args(with(tik, {"--vocab-size", "100000"})).model.vocab_size, 100000);
}

TEST(MegatronArgs, MicrobatchGroupPerVirtualStage) {
  auto cfg = [](const std::string& gbs, Words more) {
    return parse_megatron_args(with(
        with(base_args(), {"--pipeline-model-parallel-size", "4", "--num-layers-per-virtual-pipeline-stage",
                           "2", "--global-batch-size", gbs, "--nproc_per_node", "4"}),
        more));
  };
  MegatronConfig c = cfg("5", {"--microbatch-group-size-per-virtual-pipeline-stage", "5"});
  EXPECT_EQ(c.strategy.microbatch_group_size_per_vp_stage, 5);
  EXPECT_NO_THROW(build_layer_graph(c.model, c.strategy));
  auto expect_refused = [&](const std::string& gbs, Words more, const std::string& what) {
    try {
      cfg(gbs, std::move(more));
      FAIL() << "expected an InputError: " << what;
    } catch (const preflight::InputError& e) {
      EXPECT_EQ(e.where(), "--microbatch-group-size-per-virtual-pipeline-stage");
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  expect_refused("8", {"--microbatch-group-size-per-virtual-pipeline-stage", "3"},
                 "outside [pp, micro batches]");
  expect_refused("4", {"--microbatch-group-size-per-virtual-pipeline-stage", "5"},
                 "outside [pp, micro batches]");
  expect_refused("6", {"--microbatch-group-size-per-virtual-pipeline-stage", "4"}, "has 2 < pp = 4");
  expect_refused("5", {}, "has 1 < pp = 4");  // the default group is pp
  EXPECT_NO_THROW(build_layer_graph(cfg("12", {}).model, cfg("12", {}).strategy));
  // No --global-batch-size (one micro batch per step): analysed as before, not refused.
  EXPECT_NO_THROW(parse_megatron_args(
      with(base_args(), {"--pipeline-model-parallel-size", "4", "--num-layers-per-virtual-pipeline-stage",
                         "2", "--nproc_per_node", "4"})));
}

// --use-tp-pp-dp-mapping: Megatron's 'tp-cp-ep-pp-dp' order (training/initialize.py), which allows cp and
// ep; 16 ranks of tp 2, cp 2, pp 2, dp 2: rank = t + 2·c + 4·p + 8·d (default: t + 2·c + 4·d + 8·p).
TEST(MegatronArgs, TpPpDpMappingKeepsContextAndExpertParallel) {
  Words layout = with(base_args(),
                      {"--tensor-model-parallel-size", "2", "--sequence-parallel", "--context-parallel-size",
                       "2", "--pipeline-model-parallel-size", "2", "--num-experts", "4",
                       "--expert-model-parallel-size", "2", "--nproc_per_node", "8", "--nnodes", "2"});
  MegatronConfig mapped = parse_megatron_args(with(layout, {"--use-tp-pp-dp-mapping"}));
  EXPECT_EQ(mapped.strategy.order, "tp-cp-ep-pp-dp");
  RankGroups g = megatron_rank_groups(mapped.strategy, true);
  EXPECT_EQ(g.pp[0], (std::vector<int>{0, 4}));
  EXPECT_EQ(g.dp[0], (std::vector<int>{0, 8}));
  EXPECT_EQ(g.cp[0], (std::vector<int>{0, 2}));
  // experts: etp 2, ep 2, edp 2 in the order tp-ep-pp-dp: rank = t + 2·e + 4·p + 8·d.
  EXPECT_EQ(g.ep[0], (std::vector<int>{0, 2}));
  EXPECT_EQ(g.edp[0], (std::vector<int>{0, 8}));
  EXPECT_NO_THROW(build_layer_graph(mapped.model, mapped.strategy));
  RankGroups d = megatron_rank_groups(parse_megatron_args(layout).strategy, true);
  EXPECT_EQ(d.pp[0], (std::vector<int>{0, 8}));
  EXPECT_EQ(d.dp[0], (std::vector<int>{0, 4}));
}

// Megatron-DeepSpeed's dialect (microsoft/Megatron-DeepSpeed megatron/arguments.py, examples_deepspeed):
// experts in every --expert-interval-th layer (default 2) over --moe-expert-parallel-size ranks, top --topk
// (default 1), capacity-padded unless --disable-moe-token-dropping; --checkpoint-activations is full, uniform
// recompute; DeepSpeed-Ulysses (--ds-sequence-parallel-size) is all-to-all context parallelism; the ZeRO
// stage comes from the DeepSpeed config when it can be read, else --zero-stage.
// MindSpeed-LLM (Ascend/MindSpeed-LLM examples/mcore: Megatron-LM patched for Ascend NPUs) spells several
// features its own way; each is read as Megatron's own spelling of the same model and layout.  Before, its
// DeepSeek-V3 script was priced with 64 MoE layers (its 3 dense ones and 3 no-op ones as MoE: 750 B
// parameters), Gemma 2 without its gated MLP (19 B for 27 B) and the Qwen3-MoE scripts refused.
TEST(MegatronArgs, MindSpeedLlmDialectAsMegatronSpellsIt) {
  const Words base = {"--nproc_per_node",
                      "8",
                      "--nnodes",
                      "64",
                      "--hidden-size",
                      "1024",
                      "--num-attention-heads",
                      "8",
                      "--seq-length",
                      "1024",
                      "--vocab-size",
                      "32000",
                      "--swiglu",
                      "--ffn-hidden-size",
                      "4096",
                      "--num-experts",
                      "16",
                      "--moe-ffn-hidden-size",
                      "512",
                      "--tensor-model-parallel-size",
                      "2",
                      "--pipeline-model-parallel-size",
                      "8",
                      "--expert-model-parallel-size",
                      "4",
                      "--mtp-num-layers",
                      "1",
                      "--bf16",
                      "--use-distributed-optimizer",
                      "--sequence-parallel"};
  // DeepSeek-V3's: 64 layers of which 61..63 are no-ops, the first 3 dense, one shared expert.
  const MegatronConfig ms = parse_megatron_args(with(
      base,
      {"--num-layers", "64", "--noop-layers", "61,62,63", "--first-k-dense-replace", "3", "--moe-layer-freq",
       "1", "--n-shared-experts", "1", "--moe-permutation-async-comm", "--seq-aux"}));
  const MegatronConfig mg =
      parse_megatron_args(with(base, {"--num-layers", "61", "--moe-layer-freq", "[0]*3+[1]*58",
                                      "--moe-shared-expert-intermediate-size", "512",
                                      "--pipeline-model-parallel-layout", "Et*8|(t*8|)*6,t*5mL"}));
  EXPECT_EQ(ms.model.num_layers, 61);
  EXPECT_EQ(count_parameters(ms.model), count_parameters(mg.model));
  EXPECT_FALSE(ms.model.is_moe_layer(2));
  EXPECT_TRUE(ms.model.is_moe_layer(3));
  EXPECT_EQ(ms.model.moe.shared_expert_ffn_hidden_size, 512);
  EXPECT_EQ(ms.strategy.chunk_layout, mg.strategy.chunk_layout);
  EXPECT_EQ(ms.strategy.chunk_layout.at(0).at(7), 5);
  // With a virtual pipeline: chunks of 2 of the 64 layers, the last chunk of the last rank one layer short.
  const MegatronConfig vp = parse_megatron_args(with(
      base, {"--num-layers", "64", "--noop-layers", "63", "--num-layers-per-virtual-pipeline-stage", "2"}));
  ASSERT_EQ(vp.strategy.chunk_layout.size(), 4u);
  EXPECT_EQ(vp.strategy.chunk_layout[3][7], 1);
  EXPECT_EQ(vp.strategy.chunk_layout[0][0], 2);
  // --moe-layer-freq -1 (Qwen3-MoE's scripts) and --first-k-dense-replace -1: every layer MoE, as Python's
  // remainder by -1 makes it.
  for (const Words& every :
       {Words{"--moe-layer-freq", "-1"}, Words{"--moe-layer-freq", "-1", "--first-k-dense-replace", "-1"}}) {
    const MegatronConfig c = parse_megatron_args(with(with(base, {"--num-layers", "16"}), every));
    for (int layer = 0; layer < 16; ++layer) EXPECT_TRUE(c.model.is_moe_layer(layer));
  }
  // Per-stage layers (Gemma 2 27B: 20 + 26 on two stages).
  const Words dense = {
      "--num-layers",     "46",   "--hidden-size", "512",   "--num-attention-heads",          "8",
      "--seq-length",     "1024", "--vocab-size",  "32000", "--pipeline-model-parallel-size", "2",
      "--nproc_per_node", "2"};
  const MegatronConfig split = parse_megatron_args(with(dense, {"--num-layer-list", "20,26"}));
  EXPECT_EQ(split.strategy.chunk_layout, (std::vector<std::vector<int>>{{20, 26}}));
  EXPECT_EQ(parse_megatron_args(with(dense, {"--num-layer-list", "20 26"})).strategy.chunk_layout,
            split.strategy.chunk_layout);  // blanks separate as commas do (they had been glued into 2026)
  EXPECT_THROW(parse_megatron_args(with(dense, {"--num-layer-list", "20,20"})), preflight::InputError);
  EXPECT_THROW(parse_megatron_args(with(
                   dense, {"--num-layer-list", "20,26", "--num-layers-per-virtual-pipeline-stage", "1"})),
               preflight::InputError);
  // Gemma 2's GeLU-gated MLP and alternating local attention.
  const MegatronConfig gemma = parse_megatron_args(
      with(dense, {"--gelu-tanh", "--ffn-hidden-size", "2048", "--interleave-sliding-window", "4096"}));
  EXPECT_EQ(gemma.model.activation, Activation::SwiGLU);
  EXPECT_EQ(gemma.model.ffn_hidden_size, 2048);
  EXPECT_EQ(gemma.model.sliding_window, 4096);
  EXPECT_TRUE(gemma.model.is_window_layer(0));
  EXPECT_FALSE(gemma.model.is_window_layer(1));
  EXPECT_EQ(parse_megatron_args(with(dense, {"--geglu"})).model.ffn_hidden_size, 2048);  // 4h, not 2/3 of it
  // Context parallelism's algorithms; experts over tp × ep; the optimizer swapped to the host.
  EXPECT_EQ(parse_megatron_args(with(dense, {"--context-parallel-size", "2", "--nproc_per_node", "4",
                                             "--context-parallel-algo", "ulysses_cp_algo"}))
                .strategy.cp_comm_type,
            CpCommType::AllToAll);
  const MegatronConfig hybrid = parse_megatron_args(
      with(dense, {"--context-parallel-size", "4", "--nproc_per_node", "8", "--context-parallel-algo",
                   "hybrid_cp_algo", "--ulysses-degree-in-cp", "2"}));
  EXPECT_EQ(hybrid.strategy.cp_comm_type, CpCommType::P2P);
  EXPECT_EQ(hybrid.strategy.cp_a2a_size, 2);
  EXPECT_THROW(parse_megatron_args(with(dense, {"--context-parallel-algo", "zigzag"})),
               preflight::InputError);
  const MegatronConfig extend =
      parse_megatron_args(with(with(base, {"--num-layers", "16"}), {"--moe-tp-extend-ep"}));
  EXPECT_EQ(extend.strategy.ep, 8);
  EXPECT_EQ(extend.strategy.etp, 1);
  EXPECT_DOUBLE_EQ(parse_megatron_args(with(dense, {"--swap-optimizer", "--use-distributed-optimizer"}))
                       .strategy.optimizer_cpu_offload_fraction,
                   1.0);
  // Qwen3-Next's gated delta nets: 1-based layers 4, 8, … full attention, the others linear.
  const MegatronConfig next =
      parse_megatron_args(with(dense, {"--full-attention-interval", "4", "--mamba-d-conv", "4",
                                       "--linear-num-key-heads", "4", "--linear-num-value-heads", "8",
                                       "--linear-key-head-dim", "64", "--linear-value-head-dim", "64"}));
  EXPECT_TRUE(next.model.is_gdn_layer(0));
  EXPECT_FALSE(next.model.is_gdn_layer(3));
  EXPECT_TRUE(next.model.attention_output_gate);
  EXPECT_EQ(next.model.gdn.conv_kernel, 4);
  // LoRA by its target modules, rank --lora-r (16 by default).
  EXPECT_EQ(parse_megatron_args(with(dense, {"--lora-target-modules", "linear_qkv", "linear_proj"}))
                .model.lora.rank,
            16);
  EXPECT_EQ(parse_megatron_args(with(dense, {"--lora-r", "8", "--lora-target-modules", "linear_qkv"}))
                .model.lora.rank,
            8);
  // --reuse-fp32-param: the main copy is the bf16 parameter plus a 16-bit residual — 2 bytes a parameter
  // less, sharded over dp with the distributed optimizer (MindSpeed's docs: sizeof(bf16) × parameters / DP).
  {
    const Words run = with(dense, {"--bf16", "--use-distributed-optimizer", "--nproc_per_node", "8"});
    const MegatronConfig plain = parse_megatron_args(run);
    const MegatronConfig reuse = parse_megatron_args(with(run, {"--reuse-fp32-param"}));
    const StageMemory a0 = stage_memory(build_layer_graph(plain.model, plain.strategy)).stages.at(0);
    const StageMemory b0 = stage_memory(build_layer_graph(reuse.model, reuse.strategy)).stages.at(0);
    const int dp = plain.strategy.dp();
    EXPECT_NEAR(a0.optimizer_bytes - b0.optimizer_bytes, 2.0 * static_cast<double>(a0.params) / dp,
                0.001 * a0.optimizer_bytes);
    EXPECT_THROW(parse_megatron_args(with(dense, {"--reuse-fp32-param", "--fp16"})), preflight::InputError);
  }
  // --recompute-activation-function: each dense MLP's activation output (fc2's input: tokens × ffn, bf16) is
  // dropped and recomputed.
  {
    const Words run =
        with(dense, {"--bf16", "--swiglu", "--ffn-hidden-size", "2048", "--micro-batch-size", "1"});
    const MegatronConfig plain = parse_megatron_args(run);
    const MegatronConfig act = parse_megatron_args(with(run, {"--recompute-activation-function"}));
    const StageMemory a0 = stage_memory(build_layer_graph(plain.model, plain.strategy)).stages.at(0);
    const StageMemory b0 = stage_memory(build_layer_graph(act.model, act.strategy)).stages.at(0);
    EXPECT_DOUBLE_EQ(a0.activation_bytes_per_microbatch - b0.activation_bytes_per_microbatch,
                     a0.num_layers * 1024.0 * 2048 * 2);  // seq 1024, ffn 2048, 2 bytes
  }
  // MindSpeed's DeepSpeed-style MoE: padded to its training capacity.
  const MegatronConfig dsmoe =
      parse_megatron_args(with(with(base, {"--num-layers", "16"}),
                               {"--moe-model-type", "deepspeed_moe", "--moe-train-capacity-factor", "1.1"}));
  EXPECT_TRUE(dsmoe.model.moe.pad_expert_input_to_capacity);
  EXPECT_DOUBLE_EQ(dsmoe.model.moe.capacity_factor, 1.1);
  EXPECT_FALSE(
      parse_megatron_args(with(with(base, {"--num-layers", "16"}), {"--moe-model-type", "megatron_moe"}))
          .model.moe.pad_expert_input_to_capacity);
  EXPECT_THROW(parse_megatron_args(with(dense, {"--moe-model-type", "tutel"})), preflight::InputError);
  // Refused by name: preference optimisation, DeepSeek sparse attention, hyper-connections.
  EXPECT_THROW(parse_megatron_args(with(dense, {"--stage", "dpo"})), preflight::InputError);
  EXPECT_NO_THROW(parse_megatron_args(with(dense, {"--stage", "sft"})));
  EXPECT_THROW(parse_megatron_args(with(dense, {"--enable-dsa-indexer", "--index-n-heads", "32"})),
               preflight::InputError);
  EXPECT_THROW(parse_megatron_args(with(dense, {"--enable-mhc", "--hc-mult", "4"})), preflight::InputError);
  EXPECT_THROW(parse_megatron_args(with(dense, {"--noop-layers", "46"})), preflight::InputError);
  EXPECT_THROW(parse_megatron_args(with(dense, {"--full-attention-interval", "-3"})), preflight::InputError);
  try {  // named as the flag whose layer numbers need the count, not as a missing size
    parse_megatron_args({"--hidden-size", "512", "--num-attention-heads", "8", "--seq-length", "1024",
                         "--vocab-size", "32000", "--noop-layers", "3"});
    ADD_FAILURE() << "--noop-layers without --num-layers parsed";
  } catch (const preflight::InputError& e) {
    EXPECT_EQ(e.where(), "--noop-layers") << e.what();
  }
}

// Megatron limits the routing to groups only when --moe-router-group-topk is given too (moe_utils.py); groups
// alone (MindSpeed-LLM's Kimi-K2 script: --moe-router-num-groups 1) route over every expert.
TEST(MegatronArgs, RouterGroupsWithoutGroupTopkDoNotLimit) {
  const MegatronConfig c = parse_megatron_args(
      with(base_args(), {"--num-experts", "8", "--moe-router-num-groups", "1", "--moe-router-topk", "2"}));
  EXPECT_EQ(c.model.moe.router_num_groups, 0);
  EXPECT_THROW(parse_megatron_args(with(base_args(), {"--num-experts", "8", "--moe-router-group-topk", "1"})),
               preflight::InputError);
}

// MegaBlocks's Megatron fork (databricks/megablocks exp/dmoe, exp/moe: --moe-num-experts, --moe-top-k,
// --moe-capacity-factor, --moe-expert-model-parallelism; megablocks/layers/arguments.py's defaults: top 1,
// experts over the data-parallel group).  Before, these flags were read past without a word and the run
// was priced as a dense model.
TEST(MegatronArgs, MegaBlocksExpertsAsItsForkRunsThem) {
  const Words run =
      with(base_args(), {"--nproc_per_node", "8", "--micro-batch-size", "16", "--global-batch-size", "512",
                         "--bf16", "--DDP-impl", "local", "--use-flash-attn", "--moe-num-experts=64",
                         "--moe-loss-weight=0.1", "--moe-expert-model-parallelism"});
  const MegatronConfig c = parse_megatron_args(run);
  EXPECT_EQ(c.model.moe.num_experts, 64);
  EXPECT_EQ(c.model.moe.router_topk, 1);  // MegaBlocks's default, not Megatron's 2
  EXPECT_EQ(c.model.moe.ffn_hidden_size, 4096);
  for (int layer = 0; layer < 24; ++layer) EXPECT_TRUE(c.model.is_moe_layer(layer));
  EXPECT_FALSE(c.model.moe.pad_expert_input_to_capacity);  // dMoE: dropless
  EXPECT_EQ(c.strategy.moe_dispatcher, MoeDispatcher::AllToAll);
  EXPECT_TRUE(c.strategy.moe_grouped_gemm);
  EXPECT_EQ(c.strategy.ep, 8);  // the data-parallel group
  // 24 layers of 64 experts of 2·1024·4096 weights (+ biases, the legacy model's): ~13 B, not 356 M.
  EXPECT_GT(count_parameters(c.model), 12'800'000'000);
  EXPECT_TRUE(std::any_of(c.warnings.begin(), c.warnings.end(), [](const std::string& w) {
    return w.find("MegaBlocks") != std::string::npos && w.find("dropless") != std::string::npos;
  }));
  // exp/moe: capacity, padded; --moe-top-k; GLU experts.
  const MegatronConfig cap =
      parse_megatron_args(with(run, {"--moe-capacity-factor=1.25", "--moe-top-k=2", "--mlp-type", "glu"}));
  EXPECT_TRUE(cap.model.moe.pad_expert_input_to_capacity);
  EXPECT_DOUBLE_EQ(cap.model.moe.capacity_factor, 1.25);
  EXPECT_EQ(cap.model.moe.router_topk, 2);
  EXPECT_EQ(cap.model.activation, Activation::SwiGLU);
  // Without expert parallelism every rank holds every expert; with more ranks than experts MegaBlocks
  // shards each expert further (priced as replicas, said).
  EXPECT_EQ(parse_megatron_args(with(base_args(), {"--nproc_per_node", "8", "--moe-num-experts", "64"}))
                .strategy.ep,
            1);
  const MegatronConfig wide =
      parse_megatron_args(with(base_args(), {"--nproc_per_node", "8", "--nnodes", "2", "--moe-num-experts",
                                             "8", "--expert-model-parallelism"}));
  EXPECT_EQ(wide.strategy.ep, 8);
  EXPECT_TRUE(std::any_of(wide.warnings.begin(), wide.warnings.end(), [](const std::string& w) {
    return w.find("shards each expert") != std::string::npos;
  }));
  // Neither divides the other; the two dialects mixed; a fork flag without experts; an MLP MegaBlocks lacks.
  EXPECT_THROW(parse_megatron_args(with(base_args(), {"--nproc_per_node", "6", "--moe-num-experts", "64",
                                                      "--moe-expert-model-parallelism"})),
               preflight::InputError);
  EXPECT_THROW(parse_megatron_args(with(run, {"--num-experts", "64"})), preflight::InputError);
  EXPECT_THROW(parse_megatron_args(with(run, {"--moe-router-topk", "2"})), preflight::InputError);
  EXPECT_THROW(parse_megatron_args(with(base_args(), {"--moe-top-k", "2"})), preflight::InputError);
  EXPECT_THROW(parse_megatron_args(with(run, {"--mlp-type", "residual"})), preflight::InputError);
  // FastMoE's patch counts experts per GPU: refused by name, not read as the layer's count.
  EXPECT_THROW(parse_megatron_args(with(base_args(), {"--fmoefy", "--num-experts", "4"})),
               preflight::InputError);
}

// A MoE flag the analysis does not read is named among the flags read past; Megatron's loss and routing
// numerics flags (no cost as priced) are not.
TEST(MegatronArgs, UnreadMoeFlagsAreNamed) {
  const Words moe = with(base_args(), {"--num-experts", "8", "--moe-aux-loss-coeff", "1e-2",
                                       "--moe-z-loss-coeff", "1e-3", "--moe-router-load-balancing-type",
                                       "aux_loss", "--moe-router-dtype", "fp32", "--moe-permute-fusion"});
  auto read_past = [](const MegatronConfig& c) {
    for (const auto& w : c.warnings)
      if (w.rfind("read past", 0) == 0) return w;
    return std::string();
  };
  EXPECT_EQ(read_past(parse_megatron_args(moe)), "");
  // A batch-size schedule is said with what the price assumes (Megatron-LM's GPT-3 175B example).
  const MegatronConfig ramp =
      parse_megatron_args(with(moe, {"--step-batch-size-schedule", "0:16 2.4B:320 12B:1536"}));
  EXPECT_TRUE(std::any_of(ramp.warnings.begin(), ramp.warnings.end(), [](const std::string& w) {
    return w.rfind("--step-batch-size-schedule: the batch-size schedule is not priced", 0) == 0;
  }));
  const std::string named =
      read_past(parse_megatron_args(with(moe, {"--moe-expert-shuffle", "--router-warmup-iters", "10"})));
  EXPECT_NE(named.find("--moe-expert-shuffle"), std::string::npos);
  EXPECT_NE(named.find("--router-warmup-iters"), std::string::npos);
}

TEST(MegatronArgs, MegatronDeepSpeedDialect) {
  const Words ds = with(base_args(), {"--deepspeed", "--num-layers", "4", "--num-experts", "8",
                                      "--moe-expert-parallel-size", "4", "--nproc_per_node", "8"});
  MegatronConfig c = parse_megatron_args(ds);
  EXPECT_EQ(c.model.moe.num_experts, 8);
  EXPECT_EQ(c.model.moe.router_topk, 1);
  EXPECT_EQ(c.model.moe.layer_is_moe, (std::vector<bool>{false, true, false, true}));
  EXPECT_TRUE(c.model.moe.pad_expert_input_to_capacity);
  EXPECT_DOUBLE_EQ(c.model.moe.capacity_factor, 1.0);
  EXPECT_EQ(c.strategy.ep, 4);
  EXPECT_EQ(c.strategy.effective_zero_stage(), 1);  // --zero-stage's default
  EXPECT_TRUE(c.strategy.distributed_optimizer);
  EXPECT_FALSE(c.strategy.fsdp);
  EXPECT_EQ(parse_megatron_args(with(ds, {"--num-experts", "8", "8", "--topk", "2"})).model.moe.router_topk,
            2);
  EXPECT_FALSE(
      parse_megatron_args(with(ds, {"--disable-moe-token-dropping"})).model.moe.pad_expert_input_to_capacity);
  EXPECT_THROW(parse_megatron_args(with(ds, {"--num-experts", "8", "16"})), preflight::InputError);
  EXPECT_THROW(parse_megatron_args(with(ds, {"--mlp-type", "residual"})), preflight::InputError);
  // The ZeRO stage of the DeepSpeed config file wins over --zero-stage; a malformed file is named.
  const auto dir = std::filesystem::temp_directory_path() / "preflight_ds_config_test";
  std::filesystem::create_directories(dir);
  const auto config = (dir / "ds.json").string();
  std::ofstream(config) << R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3}})";
  MegatronConfig z3 = parse_megatron_args(with(ds, {"--zero-stage", "1", "--deepspeed_config", config}));
  EXPECT_EQ(z3.strategy.effective_zero_stage(), 3);
  EXPECT_TRUE(z3.strategy.fsdp);
  EXPECT_EQ(z3.strategy.zero3_sub_group_elements, 1000000000);  // DeepSpeed's default sub_group_size
  EXPECT_EQ(parse_megatron_args(with(ds, {"--zero-stage", "2"})).strategy.zero3_sub_group_elements, -1);
  // ZeRO-3 steps its partition one sub group at a time: the fp32 gradient copies at the step are one sub
  // group's (at least the largest parameter's partition), not the partition's.
  {
    const Words fp16 =
        with(base_args(), {"--deepspeed", "--fp16", "--deepspeed_config", config, "--nproc_per_node", "1",
                           "--seq-length", "128", "--checkpoint-activations"});
    std::ofstream(config, std::ios::trunc)
        << R"({"zero_optimization": {"stage": 3, "sub_group_size": 1000000000000}})";
    const MegatronConfig whole = parse_megatron_args(fp16);
    std::ofstream(config, std::ios::trunc)
        << R"({"zero_optimization": {"stage": 3, "sub_group_size": 1000}})";
    const MegatronConfig tiny = parse_megatron_args(fp16);
    EXPECT_EQ(tiny.strategy.zero3_sub_group_elements, 1000);
    const LayerGraph gw = build_layer_graph(whole.model, whole.strategy);
    const LayerGraph gt = build_layer_graph(tiny.model, tiny.strategy);
    const PeakPoint pw = stage_peak(gw, 0), pt = stage_peak(gt, 0);
    const double shard = static_cast<double>(count_parameters(whole.model));  // dp 1
    double largest = 0;
    for (const auto& chunk : gt.chunks)
      for (const auto& op : chunk.ops)
        for (const auto& p : op.params) largest = std::max(largest, static_cast<double>(p.numel()));
    ASSERT_EQ(pw.phase, "optimizer");
    EXPECT_NEAR(pw.bytes - pw.static_bytes, 4 * shard, 64);
    EXPECT_DOUBLE_EQ(pt.static_bytes, pw.static_bytes);
    EXPECT_LT(largest, shard / 2);
    EXPECT_GE(pt.bytes, pt.static_bytes + 4 * largest - 1);
    EXPECT_LT(pt.bytes, pw.bytes);
    if (pt.phase == "optimizer") {
      EXPECT_NEAR(pt.bytes - pt.static_bytes, 4 * largest, 64);
    }
    // A sub group of half the partition: half the copies.
    std::ofstream(config, std::ios::trunc) << R"({"zero_optimization": {"stage": 3, "sub_group_size": )"
                                           << static_cast<long long>(shard / 2) << "}}";
    const MegatronConfig half = parse_megatron_args(fp16);
    const PeakPoint ph = stage_peak(build_layer_graph(half.model, half.strategy), 0);
    ASSERT_EQ(ph.phase, "optimizer");
    EXPECT_NEAR(ph.bytes - ph.static_bytes, 4 * std::floor(shard / 2), 64);
  }
  std::ofstream(config, std::ios::trunc) << "";  // a script whose template was missing wrote nothing
  MegatronConfig empty = parse_megatron_args(with(ds, {"--zero-stage", "2", "--deepspeed_config", config}));
  EXPECT_EQ(empty.strategy.effective_zero_stage(), 2);
  EXPECT_TRUE(std::any_of(empty.warnings.begin(), empty.warnings.end(), [](const std::string& w) {
    return w.find("is empty: ZeRO stage 2") != std::string::npos;
  }));
  std::ofstream(config, std::ios::trunc) << "{";
  try {
    parse_megatron_args(with(ds, {"--deepspeed_config", config}));
    ADD_FAILURE() << "accepted a malformed DeepSpeed config";
  } catch (const preflight::InputError& e) {
    EXPECT_EQ(e.where(), config);
  }
  std::filesystem::remove_all(dir);
  // The DeepSpeed-MoE paper's sizes (Rajbhandari et al. 2022, Table 1) of Megatron-DeepSpeed's MoE examples
  // (examples_deepspeed/MoE: 125M+MoE-64, 350M+MoE-128, 1.3B+MoE-128; GPT, seq 2048, vocab 50257): 1.9 B,
  // 13 B and 52 B parameters.
  auto moe_params = [](const std::string& layers, const std::string& hidden, const std::string& heads,
                       const std::string& experts) {
    return static_cast<double>(count_parameters(
        parse_megatron_args({"--deepspeed", "--num-layers", layers, "--hidden-size", hidden,
                             "--num-attention-heads", heads, "--seq-length", "2048",
                             "--max-position-embeddings", "2048", "--vocab-size", "50257", "--num-experts",
                             experts, "--moe-expert-parallel-size", "8", "--nproc_per_node", "8"})
            .model));
  };
  EXPECT_NEAR(moe_params("12", "768", "12", "64") / 1e9, 1.9, 0.05);
  EXPECT_NEAR(moe_params("24", "1024", "16", "128") / 1e9, 13, 0.3);
  EXPECT_NEAR(moe_params("24", "2048", "16", "128") / 1e9, 52, 1);
  // Recompute and Ulysses.
  MegatronConfig ck =
      parse_megatron_args(with(base_args(), {"--checkpoint-activations", "--checkpoint-num-layers", "2"}));
  EXPECT_EQ(ck.strategy.recompute_granularity, RecomputeGranularity::Full);
  EXPECT_EQ(ck.strategy.recompute_method, RecomputeMethod::Uniform);
  EXPECT_EQ(ck.strategy.recompute_num_layers, 2);
  MegatronConfig sp =
      parse_megatron_args(with(base_args(), {"--ds-sequence-parallel-size", "4", "--nproc_per_node", "8",
                                             "--global-batch-size", "2"}));
  EXPECT_EQ(sp.strategy.cp, 4);
  EXPECT_EQ(sp.strategy.cp_comm_type, CpCommType::AllToAll);
  EXPECT_EQ(sp.strategy.dp(), 2);
}

TEST(MegatronArgs, MoeLayerFrequencyPattern) {
  MegatronConfig c = parse_megatron_args(
      with(base_args(), {"--num-layers", "5", "--num-experts", "8", "--moe-layer-freq", "[0]*2+[1]*3"}));
  ASSERT_EQ(c.model.moe.layer_is_moe.size(), 5u);
  EXPECT_FALSE(c.model.is_moe_layer(1));
  EXPECT_TRUE(c.model.is_moe_layer(2));
  EXPECT_EQ(c.model.moe.ffn_hidden_size, 4096);
}

TEST(MegatronArgs, BadInputNamesTheFlag) {
  auto expect_error = [](const Words& w, const std::string& where) {
    try {
      parse_megatron_args(w);
      FAIL() << "expected an InputError at " << where;
    } catch (const preflight::InputError& e) {
      EXPECT_EQ(e.where(), where) << e.what();
    }
  };
  expect_error(
      {"--hidden-size", "64", "--num-attention-heads", "4", "--seq-length", "8", "--vocab-size", "10"},
      "--num-layers");
  expect_error(with(base_args(), {"--tensor-model-parallel-size", "two"}), "--tensor-model-parallel-size");
  expect_error(with(base_args(), {"--recompute-granularity", "full"}), "--recompute-method");
  expect_error(with(base_args(), {"--nproc_per_node", "cpu"}), "--nproc_per_node");
  expect_error(
      {"--num-layers", "2", "--hidden-size", "64", "--num-attention-heads", "4", "--seq-length", "16"},
      "--vocab-size");
  expect_error(with(base_args(), {"--bf16", "--fp16"}), "--bf16");
  // A hybrid model's ratios out of range (an allocation from valid ones: HybridLayersAllocatedFromRatios);
  // the hybrid patterns' symbols and separators preflight does not model.
  expect_error(with(base_args(), {"--is-hybrid-model", "--hybrid-mlp-ratio", "-0.5"}), "--hybrid-mlp-ratio");
  expect_error(with(base_args(), {"--hybrid-layer-pattern", "M*DM"}), "--hybrid-layer-pattern");
  expect_error(with(base_args(), {"--hybrid-layer-pattern", "M*-M/MM"}), "--hybrid-layer-pattern");
  expect_error(with(base_args(), {"--hybrid-layer-pattern", "M*|-M|-", "--pipeline-model-parallel-size", "2",
                                  "--nproc_per_node", "2"}),
               "--hybrid-layer-pattern");  // 3 segments over 2 stages
  expect_error(with(base_args(), {"--hybrid-layer-pattern", "M*|-M", "--pipeline-model-parallel-size", "2",
                                  "--nproc_per_node", "2", "--decoder-first-pipeline-num-layers", "1"}),
               "--decoder-first-pipeline-num-layers");
  expect_error(with(base_args(), {"--hybrid-layer-pattern", "M*-M", "--hybrid-override-pattern", "M*-M"}),
               "--hybrid-override-pattern");
  // Gated delta net layers are read (tests/analyzer/test_gdn.cpp); sparse attention and GDN2 are refused by
  // name, not priced as softmax attention (DeepSeek-V3.2's indexer).
  EXPECT_TRUE(
      parse_megatron_args(with(base_args(), {"--experimental-attention-variant", "gated_delta_net",
                                             "--linear-attention-freq", "3", "--linear-num-key-heads", "4"}))
          .model.has_gdn());
  expect_error(with(base_args(), {"--experimental-attention-variant", "dsa"}),
               "--experimental-attention-variant");
  expect_error(
      with(base_args(), {"--experimental-attention-variant", "gdn2", "--linear-attention-freq", "3"}),
      "--experimental-attention-variant");
  expect_error(with(base_args(), {"--dsa-indexer-n-heads", "64"}), "--dsa-indexer-n-heads");
  // A layer pattern of a trillion entries is refused at once (it used to be built, entry by entry).
  expect_error(with(base_args(), {"--num-experts", "8", "--moe-layer-freq", "([1]*1000000000000)"}),
               "--moe-layer-freq");
  // Latent MoE (experts at --moe-latent-size) is read, not priced at the hidden width (it was read past
  // silently, then refused); its latent size must be positive, as Megatron asserts.
  EXPECT_EQ(parse_megatron_args(with(base_args(), {"--num-experts", "8", "--moe-latent-size", "256"}))
                .model.moe.latent_size,
            256);
  expect_error(with(base_args(), {"--num-experts", "8", "--moe-latent-size", "-1"}), "--moe-latent-size");
  expect_error(with(base_args(), {"--num-experts", "8", "--moe-latent-size", "0"}), "--moe-latent-size");
  expect_error(with(base_args(), {"--enable-mhc-connections", "--mhc-num-residual-streams", "4"}),
               "--enable-mhc-connections");
  // Heterogeneous stacks (Llama-Nemotron NAS: per-layer shapes) are refused, not priced as identical layers.
  expect_error(with(base_args(), {"--heterogeneous-layers-config-path", "nas.json"}),
               "--heterogeneous-layers-config-path");
  // Vision-language (LLaVA) and RL (GRPO) runs are refused rather than priced as their language model's
  // training step (Megatron-LM's CI measured 50 … 85 % more than that).
  expect_error(with(base_args(), {"--img-h", "336", "--img-w", "336", "--patch-dim", "14"}), "--img-h");
  expect_error(with(base_args(), {"--perform-rl-step", "--grpo-group-size", "8"}), "--perform-rl-step");
  // Selective-recompute modules Megatron refuses for the model (TransformerConfig.__post_init__).
  expect_error(with(base_args(), {"--recompute-granularity", "selective", "--recompute-modules", "moe_act"}),
               "--recompute-modules");
  expect_error(
      with(base_args(), {"--recompute-granularity", "selective", "--recompute-modules", "mla_up_proj"}),
      "--recompute-modules");
  // Virtual stages larger than a pipeline stage (24 layers over pp 8: 3 per stage) name the virtual-stage
  // flag, not an internal "virtual pipeline size" of 0; fewer micro batches than pp under interleaving name
  // the global batch, not a group-size flag the launch did not give.
  expect_error(with(base_args(), {"--pipeline-model-parallel-size", "8",
                                  "--num-layers-per-virtual-pipeline-stage", "4", "--nproc_per_node", "8"}),
               "--num-layers-per-virtual-pipeline-stage");
  expect_error(with(base_args(),
                    {"--pipeline-model-parallel-size", "4", "--num-layers-per-virtual-pipeline-stage", "2",
                     "--global-batch-size", "2", "--micro-batch-size", "1", "--nproc_per_node", "4"}),
               "--global-batch-size");
  // MoE with tp > 1 trains only with sequence parallelism (Megatron's moe_layer.py).
  expect_error(with(base_args(), {"--num-experts", "8", "--tensor-model-parallel-size", "2"}),
               "--sequence-parallel");
  // --tp-comm-overlap at tp 1 (Megatron drops sequence parallelism there, then asserts): the message says
  // why.
  try {
    const MegatronConfig c =
        parse_megatron_args(with(base_args(), {"--sequence-parallel", "--tp-comm-overlap"}));
    c.strategy.validate(c.model);
    ADD_FAILURE() << "accepted --tp-comm-overlap at tp 1";
  } catch (const preflight::InputError& e) {
    EXPECT_EQ(e.where(), "--tp-comm-overlap");
    EXPECT_NE(std::string(e.what()).find("needs tensor parallelism"), std::string::npos) << e.what();
  }
  // Megatron's other emerging optimizers are named as not modelled, not as a typo.
  try {
    parse_megatron_args(with(base_args(), {"--optimizer", "adaptive_muon"}));
    ADD_FAILURE() << "accepted --optimizer adaptive_muon";
  } catch (const preflight::InputError& e) {
    EXPECT_EQ(e.where(), "--optimizer");
    EXPECT_NE(std::string(e.what()).find("adaptive_muon optimizer is not modelled"), std::string::npos)
        << e.what();
  }
}

// Muon as Megatron's argument validation runs it (training/arguments.py, "emerging optimizer check"): plain
// muon keeps every state on every rank; muon with --use-distributed-optimizer, or the deprecated dist_muon,
// is the layer-wise distributed optimizer (with the parameter layout unless
// --no-use-layer-wise-param-layout); its own flags are read and checked.
TEST(MegatronArgs, MuonOptimizerAsMegatronValidatesIt) {
  const MegatronConfig plain = parse_megatron_args(with(base_args(), {"--optimizer", "muon"}));
  EXPECT_EQ(plain.strategy.optimizer, Optimizer::Muon);
  EXPECT_FALSE(plain.strategy.muon.layer_wise);
  EXPECT_FALSE(plain.strategy.distributed_optimizer);
  EXPECT_EQ(plain.strategy.muon.ns_steps, 5);
  EXPECT_EQ(plain.strategy.muon.tp_mode, "duplicated");
  EXPECT_TRUE(plain.strategy.muon.split_qkv);
  EXPECT_EQ(plain.strategy.muon.scalar_states, 2);

  const MegatronConfig dist =
      parse_megatron_args(with(base_args(), {"--optimizer", "muon", "--use-distributed-optimizer"}));
  EXPECT_TRUE(dist.strategy.muon.layer_wise);
  EXPECT_TRUE(dist.strategy.muon.param_layout);
  EXPECT_TRUE(dist.strategy.distributed_optimizer);

  const MegatronConfig legacy =
      parse_megatron_args(with(base_args(), {"--optimizer", "dist_muon", "--no-use-layer-wise-param-layout",
                                             "--muon-num-ns-steps", "3", "--muon-tp-mode", "blockwise",
                                             "--muon-no-split-qkv", "--muon-scalar-optimizer", "lion"}));
  EXPECT_TRUE(legacy.strategy.muon.layer_wise);
  EXPECT_FALSE(legacy.strategy.muon.param_layout);
  EXPECT_EQ(legacy.strategy.muon.ns_steps, 3);
  EXPECT_EQ(legacy.strategy.muon.tp_mode, "blockwise");
  EXPECT_FALSE(legacy.strategy.muon.split_qkv);
  EXPECT_EQ(legacy.strategy.muon.scalar_states, 1);

  auto refused = [](const Words& a, const std::string& where, const std::string& text) {
    try {
      parse_megatron_args(a);
      ADD_FAILURE() << "accepted " << where;
    } catch (const preflight::InputError& e) {
      EXPECT_EQ(e.where(), where);
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  refused(with(base_args(), {"--optimizer", "muon", "--muon-tp-mode", "sharded"}), "--muon-tp-mode",
          "unknown mode 'sharded'");
  refused(with(base_args(), {"--optimizer", "muon", "--muon-num-ns-steps", "0"}), "--muon-num-ns-steps",
          "must be 1");
  refused(with(base_args(), {"--optimizer", "muon", "--muon-scalar-optimizer", "sgd"}),
          "--muon-scalar-optimizer", "unknown scalar optimizer 'sgd'");
  refused(with(base_args(), {"--optimizer", "muon", "--use-megatron-fsdp", "--use-distributed-optimizer"}),
          "--optimizer", "support neither Megatron-FSDP");
}

// A launch that starts fewer ranks than its layout needs (Megatron's train_gpt3_175b_distributed.sh: one
// node for tp 8 × pp 16) is analysed on the fewest ranks the layout runs on, dp = 1, with a warning naming
// what to set; a size that is larger but not a multiple stays an error.
TEST(MegatronArgs, WorldSmallerThanTheLayoutIsAnalysedAtItsSmallestSize) {
  auto note_with = [](const MegatronConfig& c, const std::string& text) {
    for (const auto& w : c.warnings)
      if (w.find(text) != std::string::npos) return true;
    return false;
  };
  Words layout =
      with(base_args(), {"--tensor-model-parallel-size", "8", "--pipeline-model-parallel-size", "4"});
  MegatronConfig a = parse_megatron_args(with(layout, {"--nproc_per_node", "8", "--nnodes", "1"}));
  EXPECT_EQ(a.strategy.world_size, 32);
  EXPECT_EQ(a.strategy.dp(), 1);
  EXPECT_EQ(a.nnodes, 4);
  EXPECT_TRUE(note_with(a,
                        "world size 8 is smaller than the layout's tp·pp·cp = 8·4·1 = 32: analysing 32 GPUs "
                        "(dp = 1); the run needs --nnodes 4 (8 GPUs per node)"));
  EXPECT_NO_THROW(build_layer_graph(a.model, a.strategy));
  // The size from torchrun's environment, from --world-size, and with the script's variable named by wrap.
  MegatronConfig e = parse_megatron_args(layout, {{"PET_NPROC_PER_NODE", "8"}, {"PET_NNODES", "2"}});
  EXPECT_TRUE(note_with(e, "the run needs PET_NNODES=4"));
  EXPECT_TRUE(
      note_with(parse_megatron_args(with(layout, {"--world-size", "16"})), "the run needs --world-size 32"));
  EXPECT_TRUE(note_with(
      parse_megatron_args(with(layout, {"--nproc_per_node", "8", "--nnodes-variable", "NUM_NODES"})),
      "set NUM_NODES=4 in the launch script"));
  // Experts: dp·cp must hold whole expert groups (8 experts over ep 8 on tp 1 × pp 1 needs 8 ranks).
  MegatronConfig moe = parse_megatron_args(with(
      base_args(), {"--num-experts", "8", "--expert-model-parallel-size", "8", "--nproc_per_node", "4"}));
  EXPECT_EQ(moe.strategy.world_size, 8);
  // Larger than the layout but not a multiple: the error says what the sizes are.
  MegatronConfig odd = parse_megatron_args(with(layout, {"--nproc_per_node", "8", "--nnodes", "5"}));
  EXPECT_EQ(odd.strategy.world_size, 40);
  EXPECT_THROW(build_layer_graph(odd.model, odd.strategy), preflight::InputError);
}

// Layers that do not divide over the pipeline stages: the error says what would make the layout valid, and
// the layout it proposes reads back as an even-as-possible split of every layer — of the transformer layers
// alone when the split also counted the embedding and the loss as slots (the layout places them itself).
TEST(MegatronArgs, UnevenLayersGetAValidAlternative) {
  MegatronConfig c = parse_megatron_args(with(
      base_args(), {"--num-layers", "12", "--pipeline-model-parallel-size", "8", "--nproc_per_node", "8"}));
  try {
    build_layer_graph(c.model, c.strategy);
    ADD_FAILURE() << "12 layers on 8 stages accepted";
  } catch (const preflight::InputError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("--pipeline-model-parallel-size 1, 2, 3, 4, 6 or 12"), std::string::npos) << what;
    EXPECT_NE(
        what.find("--decoder-first-pipeline-num-layers 0 --decoder-last-pipeline-num-layers 0 (2 on each of "
                  "the 6 middle stages)"),
        std::string::npos)
        << what;
    // balanced_pipeline_layout: 13 units of weight (12 layers and the loss) over 8 stages, none above 2 — the
    // first stage and the loss's lightened first.
    EXPECT_NE(what.find("--pipeline-model-parallel-layout \"Et|t|(t*2|)*5,L\""), std::string::npos) << what;
  }
  auto chunks = parse_pipeline_layout("Et|t|(t*2|)*5,L", 8, 12, 0);
  EXPECT_EQ(chunks, (std::vector<std::vector<int>>{{1, 1, 2, 2, 2, 2, 2, 0}}));
  MegatronConfig slots = parse_megatron_args(with(
      base_args(), {"--num-layers", "13", "--pipeline-model-parallel-size", "8", "--nproc_per_node", "8",
                    "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split"}));
  try {
    build_layer_graph(slots.model, slots.strategy);
    ADD_FAILURE() << "15 slots on 8 stages accepted";
  } catch (const preflight::InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("(sizes that divide 15)"), std::string::npos) << what;
    const auto at = what.find("--pipeline-model-parallel-layout \"");
    ASSERT_NE(at, std::string::npos) << what;
    const auto from = at + std::string("--pipeline-model-parallel-layout \"").size();
    const std::string layout = what.substr(from, what.find('"', from) - from);
    const auto stages = parse_pipeline_layout(layout, 8, 13, 0);  // 13 transformer layers, not 15
    int placed = 0;
    for (int n : stages.front()) placed += n;
    EXPECT_EQ(placed, 13) << layout;
  }
  MegatronConfig fixed = parse_megatron_args(with(
      base_args(), {"--num-layers", "12", "--pipeline-model-parallel-size", "8", "--nproc_per_node", "8",
                    "--decoder-first-pipeline-num-layers", "0", "--decoder-last-pipeline-num-layers", "0"}));
  EXPECT_NO_THROW(build_layer_graph(fixed.model, fixed.strategy));
}

// MTP in a pipeline layout, by Megatron-LM's date (pipeline_parallel_layer_layout.py): since 2025-08-26 the
// layout names the MTP layers and Megatron asserts their count; before, it could not name them ("MTP layer is
// not supported for flexible pipeline layout") and the MTP block sat on the last stage unnamed — NeMo 2's
// DeepSeek-V3 performance layouts of that time are written so.
TEST(MegatronArgs, PipelineLayoutsMtpByMegatronsDate) {
  const std::string unnamed = "Et*4|(t*4|)*14tL";  // 61 layers on 16 stages, the MTP depth not named
  try {
    parse_pipeline_layout(unnamed, 16, 61, 1);
    ADD_FAILURE() << "current Megatron asserts the layout's MTP count";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--megatron-version YYYY-MM-DD for such a checkout"),
              std::string::npos)
        << e.what();
  }
  const auto old = parse_pipeline_layout(unnamed, 16, 61, 1, "2025-07-01");
  EXPECT_EQ(old.front().back(), 1);  // the last stage's one transformer layer, the MTP beside the loss
  EXPECT_THROW(parse_pipeline_layout("Et*4|(t*4|)*14tmL", 16, 61, 1, "2025-07-01"), preflight::InputError);
  EXPECT_NO_THROW(parse_pipeline_layout("Et*4|(t*4|)*14tmL", 16, 61, 1, "2025-09-01"));
  // through the command line: --megatron-version reaches the layout's reading
  std::vector<std::string> args = {"--num-layers",
                                   "61",
                                   "--hidden-size",
                                   "1024",
                                   "--num-attention-heads",
                                   "8",
                                   "--seq-length",
                                   "1024",
                                   "--max-position-embeddings",
                                   "1024",
                                   "--vocab-size",
                                   "32000",
                                   "--micro-batch-size",
                                   "1",
                                   "--global-batch-size",
                                   "64",
                                   "--pipeline-model-parallel-size",
                                   "16",
                                   "--mtp-num-layers",
                                   "1",
                                   "--pipeline-model-parallel-layout",
                                   unnamed,
                                   "--nproc_per_node",
                                   "16"};
  EXPECT_THROW(parse_megatron_args(args), preflight::InputError);
  args.insert(args.end(), {"--megatron-version", "2025-07-01"});
  EXPECT_EQ(parse_megatron_args(args).strategy.pp, 16);
}

// An even-as-possible layout over pp · vpp chunks that the layers do not divide (what `preflight search`
// offers there): NeMo's published DeepSeek-V3 layouts (61 layers, one MTP depth; the time corpus's command
// lines of its recipes) come out exactly — 16, 8 and 32 chunks; every layout reads back through Megatron's
// parser with all the layers and the MTP depths on the last chunk.
TEST(MegatronArgs, BalancedPipelineLayoutIsNeMosForDeepSeekV3) {
  struct Case {
    int pp, vpp;
    const char* nemo;
  };
  for (const Case& c :
       {Case{4, 4, "Et*4|(t*4|)*14tmL"}, Case{8, 1, "Et*8|(t*8|)*6t*5mL"}, Case{8, 4, "Et|(tt|)*30mL"}}) {
    const auto mine = balanced_pipeline_layout(61, c.pp, c.vpp, 1);
    EXPECT_EQ(mine, parse_pipeline_layout(c.nemo, c.pp, 61, 1)) << c.nemo;
    EXPECT_EQ(parse_pipeline_layout(format_pipeline_layout(mine, 1), c.pp, 61, 1), mine) << c.nemo;
  }
  // Without an MTP depth the loss alone weighs the last chunk: 61 layers over 16 chunks, no chunk above 4.
  const auto plain = balanced_pipeline_layout(61, 4, 4, 0);
  int total = 0, heaviest = 0;
  for (std::size_t v = 0; v < plain.size(); ++v)
    for (std::size_t r = 0; r < plain[v].size(); ++r) {
      total += plain[v][r];
      heaviest = std::max(heaviest, plain[v][r] + (v == 3 && r == 3 ? 1 : 0));
    }
  EXPECT_EQ(total, 61);
  EXPECT_EQ(heaviest, 4);
  EXPECT_EQ(format_pipeline_layout(balanced_pipeline_layout(10, 2, 2, 2), 2).back(), 'L');
  EXPECT_NE(format_pipeline_layout(balanced_pipeline_layout(10, 2, 2, 2), 2).find("mmL"), std::string::npos);
  EXPECT_THROW(balanced_pipeline_layout(7, 4, 2, 0), preflight::InputError);  // fewer layers than chunks
}

// The checkout's age decides Megatron's defaults: the legacy model before Megatron-core became the default
// (2024-05; --use-mcore-models opts in), math attention for the legacy model and the local spec without
// --use-flash-attn, and the interleaved p2p overlap opt-in (--overlap-p2p-communication) before 2024-06.
TEST(MegatronArgs, DefaultsFollowTheCheckoutDate) {
  const MegatronConfig old = parse_megatron_args(with(base_args(), {"--megatron-version", "2022-05-10"}));
  EXPECT_TRUE(old.strategy.legacy_model);
  EXPECT_EQ(old.strategy.attention_backend, AttentionBackend::Math);
  EXPECT_FALSE(old.strategy.pp_comm_overlap);
  bool said = false;
  for (const auto& w : old.warnings)
    said = said ||
           w.find("the legacy model (megatron/model, math attention unless --use-flash-attn) is assumed") !=
               std::string::npos;
  EXPECT_TRUE(said);
  const MegatronConfig core =
      parse_megatron_args(with(base_args(), {"--megatron-version", "2024-01-01", "--use-mcore-models",
                                             "--overlap-p2p-communication"}));
  EXPECT_FALSE(core.strategy.legacy_model);
  EXPECT_EQ(core.strategy.attention_backend, AttentionBackend::Flash);  // TE picks flash (with a warning)
  EXPECT_TRUE(core.strategy.pp_comm_overlap);
  const MegatronConfig local =
      parse_megatron_args(with(base_args(), {"--transformer-impl", "local"}));
  EXPECT_EQ(local.strategy.attention_backend, AttentionBackend::Math);
  const MegatronConfig now = parse_megatron_args(with(base_args(), {"--megatron-version", "2025-10-08"}));
  EXPECT_FALSE(now.strategy.legacy_model);
  EXPECT_TRUE(now.strategy.pp_comm_overlap);
  EXPECT_FALSE(parse_megatron_args(with(base_args(), {"--no-overlap-p2p-communication"})).strategy.pp_comm_overlap);
  try {
    parse_megatron_args(with(base_args(), {"--overlap-p2p-communication", "--no-overlap-p2p-communication"}));
    ADD_FAILURE() << "contradicting flags accepted";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("contradicts --no-overlap-p2p-communication"), std::string::npos);
  }
}


// --DDP-impl (Megatron before 2023): torch = PyTorch DDP, whose all-reduce overlaps the backward pass.
TEST(MegatronArgs, DdpImplTorchOverlapsTheGradientReduce) {
  EXPECT_TRUE(parse_megatron_args(with(base_args(), {"--DDP-impl", "torch"})).strategy.overlap_grad_reduce);
  EXPECT_FALSE(parse_megatron_args(with(base_args(), {"--DDP-impl", "local"})).strategy.overlap_grad_reduce);
  try {
    parse_megatron_args(with(base_args(), {"--DDP-impl", "fsdp"}));
    ADD_FAILURE() << "unknown --DDP-impl accepted";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--DDP-impl"), std::string::npos) << e.what();
  }
}

// --recompute-method block --recompute-num-layers 0 recomputes nothing (a valid Megatron run, as SimuMax's
// DeepSeek scripts launch it); uniform needs groups of at least one layer.
TEST(MegatronArgs, BlockRecomputeOfZeroLayers) {
  const MegatronConfig c = parse_megatron_args(with(
      base_args(), {"--recompute-granularity", "full", "--recompute-method", "block", "--recompute-num-layers", "0"}));
  c.strategy.validate(c.model);
  EXPECT_EQ(c.strategy.effective_layer_recompute(c.model).layers, 0);
  for (const char* method : {"uniform", "block"}) {
    try {
      const MegatronConfig bad =
          parse_megatron_args(with(base_args(), {"--recompute-granularity", "full", "--recompute-method", method,
                                                 "--recompute-num-layers", std::string(method) == "block" ? "-1" : "0"}));
      bad.strategy.validate(bad.model);
      ADD_FAILURE() << method << " accepted";
    } catch (const preflight::InputError& e) {
      EXPECT_NE(std::string(e.what()).find("--recompute-num-layers"), std::string::npos) << e.what();
    }
  }
}

// Megatron's get_num_layers_to_build with --account-for-embedding/loss-in-pipeline-split and virtual stages:
// Llama-3.1-405B (126 layers) on pp 8 with chunks of 2 slots: 128 slots, vpp 8; the embedding takes a slot of
// the first stage's first chunk, the loss one of the last stage's last chunk (NeMo's 405B recipes).
TEST(MegatronArgs, AccountedEmbeddingAndLossWithVirtualStages) {
  Words w = base_args();
  for (auto& x : w)
    if (x == "24") x = "126";  // --num-layers
  const MegatronConfig c = parse_megatron_args(with(
      w, {"--pipeline-model-parallel-size", "8", "--num-layers-per-virtual-pipeline-stage", "2",
          "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split", "--nproc_per_node", "8"}));
  ASSERT_EQ(c.model.num_layers, 126);
  EXPECT_EQ(c.strategy.vpp, 8);
  const auto chunks = c.strategy.layers_per_chunk(126);
  ASSERT_EQ(chunks.size(), 8u);
  EXPECT_EQ(chunks[0][0], 1);
  EXPECT_EQ(chunks[7][7], 1);
  EXPECT_EQ(chunks[0][1], 2);
  EXPECT_EQ(chunks[7][6], 2);
  const auto stages = c.strategy.layers_per_stage(126);
  EXPECT_EQ(stages.front(), 15);
  EXPECT_EQ(stages[3], 16);
  EXPECT_EQ(stages.back(), 15);
}

// Megatron features read past without modelling are named with what that does to the numbers.
TEST(MegatronArgs, UnmodelledFeaturesAreNamed) {
  const MegatronConfig c =
      parse_megatron_args(with(base_args(), {"--use-torch-fsdp2", "--cpu-offloading-weights", "--lr", "1e-4",
                                             "--fp8-dot-product-attention"}));
  auto said = [&](const std::string& text) {
    for (const auto& w : c.warnings)
      if (w.find(text) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(said("--cpu-offloading-weights: weight offloading to the CPU is not modelled"));
  EXPECT_TRUE(said("--fp8-dot-product-attention: FP8 attention is priced as 16-bit attention"));
  EXPECT_FALSE(said("read past, not modelled (they may change memory or time): --fp8-dot-product-attention"));
  // A custom layer spec is named; the router's quantization padding (the experts pad the same rows
  // without it) is not.
  const MegatronConfig spec =
      parse_megatron_args(with(base_args(), {"--spec", "my_specs", "get_my_layer_spec", "--num-experts", "8",
                                             "--moe-grouped-gemm", "--moe-router-padding-for-quantization"}));
  auto spec_said = [&](const std::string& text) {
    return std::any_of(spec.warnings.begin(), spec.warnings.end(),
                       [&](const std::string& w) { return w.find(text) != std::string::npos; });
  };
  EXPECT_TRUE(spec_said("--spec: a custom layer spec"));
  EXPECT_FALSE(spec_said("--moe-router-padding-for-quantization"));
  // FSDP is modelled (MegatronMemory.FsdpShardsWhatItsStrategySaysAndHoldsOneUnitUnsharded), not named.
  EXPECT_TRUE(c.strategy.fsdp);
  EXPECT_FALSE(said("--use-torch-fsdp2"));
  EXPECT_FALSE(said("--lr"));
  // Offloading flags are named (the word "load" of --no-load-optim hid every "offload" flag before), and
  // checkpoint / logging flags still are not.
  const MegatronConfig off = parse_megatron_args(
      with(base_args(), {"--fine-grained-activation-offloading", "--offload-modules", "moe_act",
                         "--fine-grained-offloading-max-inflight-offloads", "2", "--no-load-optim",
                         "--log-num-zeros-in-grad", "--logging-level", "20", "--load", "/ckpt"}));
  std::string read_past;
  for (const auto& w : off.warnings)
    if (w.rfind("read past", 0) == 0) read_past = w;
  EXPECT_NE(read_past.find("--fine-grained-offloading-max-inflight-offloads"), std::string::npos)
      << read_past;
  auto said_in = [](const MegatronConfig& m, const std::string& text) {
    for (const auto& w : m.warnings)
      if (w.rfind(text, 0) == 0) return true;
    return false;
  };
  // Fine-grained activation offloading is modelled (Memory.FineGrainedActivationOffloadingFreesSavedInputs).
  EXPECT_TRUE(said_in(off, "--fine-grained-activation-offloading: the tensors saved by moe_act"));
  EXPECT_EQ(off.strategy.offload_modules, std::vector<std::string>{"moe_act"});
  // Memory features read past say which way the numbers are off.
  const MegatronConfig mem =
      parse_megatron_args(with(base_args(), {"--fp32-residual-connection", "--distribute-saved-activations",
                                             "--mlp-chunks-for-training", "2"}));
  EXPECT_TRUE(said_in(mem, "--fp32-residual-connection: the residual stream is priced in the compute dtype"));
  EXPECT_TRUE(said_in(mem, "--distribute-saved-activations: checkpointed layer inputs are priced whole"));
  EXPECT_TRUE(said_in(mem, "--mlp-chunks-for-training: the MLP is priced over the whole sequence"));
  // A per-module precision file (Transformer Engine recipes by module-name pattern; read and applied in
  // test_precision_config.cpp) is said to do nothing in a 16-bit run; a newer flag naming precision or
  // quantization is listed.
  const MegatronConfig mixed = parse_megatron_args(
      with(base_args(), {"--te-precision-config-file", "te_quant.yaml", "--fp8-quant-something", "x"}));
  EXPECT_TRUE(said_in(mixed, "--te-precision-config-file: no effect without --fp8-format"));
  std::string mixed_past;
  for (const auto& w : mixed.warnings)
    if (w.rfind("read past", 0) == 0) mixed_past = w;
  EXPECT_NE(mixed_past.find("--fp8-quant-something"), std::string::npos) << mixed_past;
  // --offload-optimizer-states is modelled (Memory.OffloadedOptimizerStatesLeaveTheTrainingPeak).
  const MegatronConfig offloaded =
      parse_megatron_args(with(base_args(), {"--use-distributed-optimizer", "--offload-optimizer-states"}));
  EXPECT_TRUE(offloaded.strategy.offload_optimizer_states);
  EXPECT_FALSE(said_in(offloaded, "--offload-optimizer-states"));
  for (const char* quiet : {"--no-load-optim", "--log-num-zeros-in-grad", "--logging-level", "--load"})
    EXPECT_EQ(read_past.find(std::string(quiet) + ","), std::string::npos) << quiet << ": " << read_past;
  EXPECT_EQ(read_past.find("--logging-level"), std::string::npos) << read_past;
}

// Megatron-LM's 2021 spellings (its sc21 scripts): --activations-checkpoint-method uniform|block is full
// recompute by that method (--activations-checkpoint-num-layers, default 1), and --DDP-impl without a
// --megatron-version means the legacy model, whose attention is math unless --use-flash-attn.  A launch
// without torchrun takes its ranks from the launcher's environment (WORLD_SIZE, else srun's tasks).
TEST(MegatronArgs, SC21EraSpellingsAndLauncherEnvironment) {
  const MegatronConfig u =
      parse_megatron_args(with(base_args(), {"--activations-checkpoint-method", "uniform"}));
  EXPECT_EQ(u.strategy.recompute_granularity, RecomputeGranularity::Full);
  EXPECT_EQ(u.strategy.recompute_method, RecomputeMethod::Uniform);
  EXPECT_EQ(u.strategy.recompute_num_layers, 1);
  const MegatronConfig b = parse_megatron_args(with(
      base_args(), {"--activations-checkpoint-method", "block", "--activations-checkpoint-num-layers", "3"}));
  EXPECT_EQ(b.strategy.recompute_method, RecomputeMethod::Block);
  EXPECT_EQ(b.strategy.recompute_num_layers, 3);
  EXPECT_THROW(parse_megatron_args(with(base_args(), {"--activations-checkpoint-method", "all"})),
               preflight::InputError);
  const MegatronConfig ddp = parse_megatron_args(with(base_args(), {"--DDP-impl", "local"}));
  EXPECT_TRUE(ddp.strategy.legacy_model);
  EXPECT_EQ(ddp.strategy.attention_backend, AttentionBackend::Math);
  EXPECT_FALSE(parse_megatron_args(with(base_args(), {"--DDP-impl", "local", "--use-mcore-models"}))
                   .strategy.legacy_model);
  EXPECT_EQ(parse_megatron_args(with(base_args(), {"--DDP-impl", "local", "--use-flash-attn"}))
                .strategy.attention_backend,
            AttentionBackend::Flash);

  const Words sized = with(base_args(), {"--tensor-model-parallel-size", "8"});
  EXPECT_EQ(parse_megatron_args(sized, {{"WORLD_SIZE", "32"}, {"LOCAL_WORLD_SIZE", "8"}}).strategy.world_size,
            32);
  const MegatronConfig slurm =
      parse_megatron_args(sized, {{"SLURM_NNODES", "4"}, {"SLURM_NTASKS_PER_NODE", "8(x4)"}});
  EXPECT_EQ(slurm.strategy.world_size, 32);
  EXPECT_EQ(slurm.strategy.gpus_per_node, 8);
  EXPECT_EQ(parse_megatron_args(sized, {{"SLURM_NTASKS", "16"}, {"SLURM_NNODES", "2"}}).strategy.world_size,
            16);
  // an MPI rank: Open MPI's sizes, MPICH's
  const MegatronConfig ompi =
      parse_megatron_args(sized, {{"OMPI_COMM_WORLD_SIZE", "64"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}});
  EXPECT_EQ(ompi.strategy.world_size, 64);
  EXPECT_EQ(ompi.strategy.gpus_per_node, 4);
  EXPECT_EQ(parse_megatron_args(sized, {{"PMI_SIZE", "24"}, {"MPI_LOCALNRANKS", "8"}}).strategy.world_size,
            24);
  // torchrun's own sizes win; nothing set: the fewest ranks the layout needs.
  EXPECT_EQ(
      parse_megatron_args(with(sized, {"--nproc_per_node", "8"}), {{"WORLD_SIZE", "64"}}).strategy.world_size,
      8);
  EXPECT_EQ(parse_megatron_args(sized, {}).strategy.world_size, 8);
}

// Megatron-DeepSpeed (--deepspeed) builds its models from megatron/model: math attention unless one of its
// --use-flash-attn[-v1|-v2|-triton|-builder] switches.
TEST(MegatronArgs, MegatronDeepSpeedRunsTheLegacyModel) {
  const MegatronConfig ds = parse_megatron_args(with(base_args(), {"--deepspeed", "--zero-stage", "1"}));
  EXPECT_TRUE(ds.strategy.legacy_model);
  EXPECT_EQ(ds.strategy.attention_backend, AttentionBackend::Math);
  bool said = false;
  for (const auto& w : ds.warnings)
    said = said || w.rfind("Megatron-DeepSpeed (--deepspeed) builds its models", 0) == 0;
  EXPECT_TRUE(said);
  for (const char* flash : {"--use-flash-attn-v2", "--use-flash-attn-triton", "--use-flash-attn"})
    EXPECT_EQ(parse_megatron_args(with(base_args(), {"--deepspeed", flash})).strategy.attention_backend,
              AttentionBackend::Flash)
        << flash;
}

// Context parallelism is Megatron-core's Transformer Engine attention only: the legacy model has none, and
// the core's unfused (math) attention asserts context_parallel_size == 1 — both refused by the flag (the math
// path would price each rank's scores over its own chunk only).  DeepSpeed-Ulysses' all-to-all gathers the
// sequence first and runs with either kernel.
TEST(MegatronArgs, ContextParallelNeedsTransformerEnginesAttention) {
  const Words cp2 = {"--context-parallel-size", "2", "--nproc_per_node", "8", "--global-batch-size", "4"};
  auto refused_by_cp = [&](const Words& extra) {
    Words w = cp2;
    w.insert(w.end(), extra.begin(), extra.end());
    try {
      parse_megatron_args(with(base_args(), w));
      return std::string("accepted");
    } catch (const preflight::InputError& e) {
      return std::string(e.what());
    }
  };
  EXPECT_NE(refused_by_cp({"--attention-backend", "unfused"}).find("--context-parallel-size"),
            std::string::npos);
  EXPECT_NE(refused_by_cp({"--attention-backend", "unfused"}).find("Transformer Engine's attention"),
            std::string::npos);
  EXPECT_NE(refused_by_cp({"--use-legacy-models", "--use-flash-attn"}).find("legacy model"),
            std::string::npos);
  EXPECT_NE(refused_by_cp({"--megatron-version", "2021-04-01"}).find("legacy model"), std::string::npos);
  // Megatron-core's all-to-all context parallelism still runs TE's attention: refused with the unfused one.
  EXPECT_NE(refused_by_cp({"--cp-comm-type", "a2a", "--attention-backend", "unfused"}).find("flash / fused"),
            std::string::npos);
  EXPECT_EQ(refused_by_cp({"--attention-backend", "flash"}), "accepted");
  EXPECT_EQ(refused_by_cp({"--use-mcore-models", "--megatron-version", "2024-01-15", "--use-flash-attn"}),
            "accepted");
  // DeepSpeed-Ulysses with math attention: accepted (all-to-all context parallelism).
  EXPECT_EQ(parse_megatron_args(with(base_args(), {"--deepspeed", "--ds-sequence-parallel-size", "4",
                                                   "--nproc_per_node", "8", "--global-batch-size", "2"}))
                .strategy.cp,
            4);
}

// --use-precision-aware-optimizer (NeMo's DeepSeek-V3 recipes: bf16 main grads and moments): 2-byte gradients
// and 4 + 2 + 2 optimizer bytes per parameter instead of 4 and 4 + 4 + 4; the dtypes alone are refused, as
// Megatron refuses them.
TEST(MegatronArgs, PrecisionAwareOptimizerDtypes) {
  const Words bf16 = with(base_args(), {"--bf16", "--use-distributed-optimizer"});
  const BytesPerParam plain = bytes_per_param(parse_megatron_args(bf16).strategy);
  EXPECT_EQ(plain.grad, 4);
  EXPECT_EQ(plain.optimizer, 12);
  const MegatronConfig aware =
      parse_megatron_args(with(bf16, {"--use-precision-aware-optimizer", "--main-grads-dtype", "bf16",
                                      "--exp-avg-dtype", "bf16", "--exp-avg-sq-dtype", "bf16"}));
  const BytesPerParam b = bytes_per_param(aware.strategy);
  EXPECT_EQ(b.grad, 2);
  EXPECT_EQ(b.optimizer, 8);
  EXPECT_TRUE(aware.strategy.grad_reduce_in_bf16);  // the DP reduce-scatter is bf16 too
  EXPECT_EQ(bytes_per_param(parse_megatron_args(with(bf16, {"--use-precision-aware-optimizer", "--exp-avg-dtype",
                                                            "fp8", "--main-params-dtype", "fp16"}))
                                .strategy)
                .optimizer,
            2 + 1 + 4);
  try {
    parse_megatron_args(with(bf16, {"--exp-avg-dtype", "bf16"}));
    ADD_FAILURE() << "accepted --exp-avg-dtype without --use-precision-aware-optimizer";
  } catch (const preflight::InputError& e) {
    EXPECT_EQ(e.where(), "--exp-avg-dtype");
  }
  try {
    parse_megatron_args(with(bf16, {"--use-precision-aware-optimizer", "--main-grads-dtype", "fp16"}));
    ADD_FAILURE() << "accepted an fp16 main grad";
  } catch (const preflight::InputError& e) {
    EXPECT_EQ(e.where(), "--main-grads-dtype");
  }
}

// A list flag written as one word, the way YAML configs and Megatron-LM's CI recipes spell it ("[layernorm
// moe_act]", "['attn', 'mlp']"), is read as its items, as the separate words argparse's nargs takes.
TEST(MegatronArgs, ListFlagsWrittenAsOneBracketedWord) {
  const MegatronConfig words =
      parse_megatron_args(with(base_args(), {"--recompute-granularity", "selective", "--recompute-modules",
                                             "layernorm", "core_attn"}));
  for (const char* one : {"[layernorm core_attn]", "['layernorm', 'core_attn']", "[layernorm,core_attn]"}) {
    const MegatronConfig c = parse_megatron_args(
        with(base_args(), {"--recompute-granularity", "selective", "--recompute-modules", one}));
    EXPECT_EQ(c.strategy.recompute_modules, words.strategy.recompute_modules) << one;
  }
  EXPECT_EQ(words.strategy.recompute_modules, (std::vector<std::string>{"layernorm", "core_attn"}));
}

// Megatron-LM's experimental YAML config (`--yaml-cfg FILE`, megatron/training/yaml_arguments.py): the file
// replaces the command line — its top-level keys, model_parallel:'s and language_model:'s (TransformerConfig
// names) — and the launcher gives the world.  A launch passing one (Jetteyc/Megatron-LM-AutoTuner's
// train_gpt3.sh, Megatron's examples/gpt3/gpt_config.yaml style) had been refused ("--num-layers: is
// required").
TEST(MegatronArgs, YamlConfigReplacesTheCommandLine) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "preflight_yaml_cfg";
  fs::create_directories(dir);
  const fs::path cfg = dir / "gpt_config.yaml";
  std::ofstream(cfg)
      << "# our own, in the style of Megatron's examples/gpt3/gpt_config.yaml\n"
         "language_model:\n"
         "  num_layers: 12\n  hidden_size: 2048\n  num_attention_heads: 16\n"
         "  num_query_groups: 4\n  ffn_hidden_size: null\n  layernorm_epsilon: 1.e-5\n"
         "  add_bias_linear: False\n  activation_func: swiglu\n  normalization: RMSNorm\n"
         "  num_moe_experts: 8\n  moe_router_topk: 2\n  moe_grouped_gemm: True\n"
         "  recompute_granularity: selective\n  masked_softmax_fusion: True\n"
         "model_parallel:\n  tensor_model_parallel_size: 2\n  pipeline_model_parallel_size: 2\n"
         "  expert_model_parallel_size: 2\n  sequence_parallel: True\n  bf16: True\n"
         "  timers: null\n"
         "optimizer_config:\n  lr: 1.0\n"
         "micro_batch_size: 1\nglobal_batch_size: 64\nseq_length: 2048\n"
         "max_position_embeddings: 2048\nposition_embedding_type: rope\n"
         "group_query_attention: True\nuntie_embeddings_and_output_weights: True\n"
         "tokenizer_type: GPT2BPETokenizer\nvocab_file: null\nmake_vocab_size_divisible_by: 128\n";
  const MegatronConfig c = parse_megatron_args({"--nproc_per_node", "8", "--nnodes", "2", "pretrain_gpt.py",
                                                "--yaml-cfg", cfg.string(), "--num-layers", "99", "--fp16"});
  EXPECT_EQ(c.model.num_layers, 12);  // the file's, not the command line's
  EXPECT_EQ(c.model.hidden_size, 2048);
  EXPECT_EQ(c.model.num_query_groups, 4);
  EXPECT_EQ(c.model.ffn_hidden_size,
            5440);  // int(4 · 2048 · 2/3 / 64) · 64, as Megatron derives it for swiglu
  EXPECT_EQ(c.model.activation, Activation::SwiGLU);
  EXPECT_EQ(c.model.normalization, Normalization::RMSNorm);
  EXPECT_FALSE(c.model.add_bias_linear);
  EXPECT_EQ(c.model.moe.num_experts, 8);
  EXPECT_EQ(c.model.vocab_size, 50257);
  EXPECT_EQ(c.strategy.world_size, 16);
  EXPECT_EQ(c.strategy.tp, 2);
  EXPECT_EQ(c.strategy.pp, 2);
  EXPECT_EQ(c.strategy.ep, 2);
  EXPECT_TRUE(c.strategy.sequence_parallel);
  EXPECT_EQ(c.strategy.precision,
            Precision::BF16);  // --fp16 on the command line is ignored, as Megatron does
  bool said = false;
  for (const auto& w : c.warnings)
    said = said ||
           (w.find("ignores the command line's other flags (--num-layers, --fp16)") != std::string::npos);
  EXPECT_TRUE(said);
  // Errors name the file: a malformed one by its line, one without language_model:, a size it lacks.
  std::ofstream(dir / "bad.yaml") << "language_model:\n  num_layers: [12\n";
  try {
    parse_megatron_args({"--yaml-cfg", (dir / "bad.yaml").string()});
    ADD_FAILURE() << "a malformed YAML was read";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(e.where().find("bad.yaml:"), std::string::npos) << e.what();
  }
  std::ofstream(dir / "flat.yaml") << "num_layers: 12\n";
  EXPECT_THROW(parse_megatron_args({"--yaml-cfg", (dir / "flat.yaml").string()}), preflight::InputError);
  std::ofstream(dir / "nohidden.yaml") << "language_model:\n  num_layers: 2\n  num_attention_heads: 4\n"
                                          "micro_batch_size: 1\nseq_length: 128\nvocab_size: 1000\n";
  try {
    parse_megatron_args({"--yaml-cfg", (dir / "nohidden.yaml").string()});
    ADD_FAILURE() << "a YAML without hidden_size was read";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("nohidden.yaml"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("hidden_size"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

namespace {

/// A two-layer model's launch words (whitespace-separated) and `extra`.
std::vector<std::string> tiny_launch(const std::string& extra) {
  std::istringstream in(
      "--num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 128 "
      "--max-position-embeddings 128 --micro-batch-size 1 --vocab-size 1000 " +
      extra);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace

// Megatron-LM's --freeze-all-layers (a forward-only teacher run): said to be priced as training, an upper
// bound, once, not listed among the flags read past.
TEST(MegatronArgs, FreezeAllLayersIsSaidToBeAnUpperBound) {
  const MegatronConfig c = parse_megatron_args(
      tiny_launch("--nproc_per_node 1 --global-batch-size 8 --freeze-all-layers --freeze-all-layers"));
  int said = 0;
  for (const auto& w : c.warnings) {
    said += w.rfind("--freeze-all-layers: Megatron runs this model forward only", 0) == 0;
    EXPECT_EQ(w.find("read past"), std::string::npos) << w;
  }
  EXPECT_EQ(said, 1);
}

// `--nproc_per_node=$(nvidia-smi -L | wc -l)` counted on a login node: 0, said, and the world taken from the
// layout (it had analysed 1 GPU a node, "the run needs --nnodes 2").
TEST(MegatronArgs, ZeroProcessesPerNodeIsSaid) {
  const MegatronConfig c = parse_megatron_args(
      tiny_launch("--nproc_per_node=0 --nnodes 1 --global-batch-size 16 --tensor-model-parallel-size 2"));
  EXPECT_EQ(c.strategy.world_size, 2);
  EXPECT_EQ(c.strategy.gpus_per_node, 2);
  bool said = false;
  for (const auto& w : c.warnings) said = said || w.rfind("--nproc_per_node 0 (GPUs counted", 0) == 0;
  EXPECT_TRUE(said);
  // `--nnodes 0` likewise (it had analysed one GPU, silently)
  const MegatronConfig n = parse_megatron_args(
      tiny_launch("--nproc_per_node=8 --nnodes 0 --global-batch-size 16 --tensor-model-parallel-size 2"));
  EXPECT_EQ(n.strategy.world_size, 2);
  said = false;
  for (const auto& w : n.warnings) said = said || w.rfind("--nnodes 0 (nodes counted", 0) == 0;
  EXPECT_TRUE(said);
}

// torchrun's `--nproc_per_node gpu` / `auto` (one process per GPU of the launching node): the node size the
// analysis runs for — PREFLIGHT_GPUS_PER_NODE, else 8 — said in a warning; it had been refused.  `cpu` is a
// CPU run, refused with why.
TEST(MegatronArgs, ProcessesPerNodeByTheLaunchingNodesGpus) {
  const MegatronConfig c =
      parse_megatron_args(tiny_launch("--nproc_per_node=gpu --nnodes 2 --global-batch-size 16"));
  EXPECT_EQ(c.strategy.world_size, 16);
  EXPECT_EQ(c.strategy.gpus_per_node, 8);
  bool said = false;
  for (const auto& w : c.warnings)
    said = said ||
           w.rfind("--nproc_per_node gpu is one process per GPU of the launching node: 8 assumed", 0) == 0;
  EXPECT_TRUE(said);
  const MegatronConfig four =
      parse_megatron_args(tiny_launch("--nproc-per-node auto --nnodes 2 --global-batch-size 16"),
                          {{"PREFLIGHT_GPUS_PER_NODE", "4"}});
  EXPECT_EQ(four.strategy.world_size, 8);
  EXPECT_EQ(four.strategy.gpus_per_node, 4);
  try {
    parse_megatron_args(tiny_launch("--nproc_per_node cpu --global-batch-size 16"));
    ADD_FAILURE() << "--nproc_per_node cpu was analysed";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("a CPU run"), std::string::npos) << e.what();
  }
}

// The training script the launch started (`--entry-point`, passed by wrap and run): pretrain_mamba.py builds
// Megatron's Mamba model — every layer a Mamba mixer unless a pattern or ratios say otherwise (it had been
// analysed as a GPT stack); pretrain_t5.py is refused; BERT and VLM scripts are analysed with a warning.
TEST(MegatronArgs, EntryPointSaysWhatTheScriptBuilds) {
  const MegatronConfig gpt = parse_megatron_args(tiny_launch("--nproc_per_node 1 --global-batch-size 8"));
  EXPECT_TRUE(gpt.model.hybrid_pattern.empty());
  const MegatronConfig mamba = parse_megatron_args(
      tiny_launch("--nproc_per_node 1 --global-batch-size 8 --entry-point=/w/Megatron-LM/pretrain_mamba.py"));
  EXPECT_EQ(mamba.model.hybrid_pattern, "MM");
  const MegatronConfig hybrid =
      parse_megatron_args(tiny_launch("--nproc_per_node 1 --global-batch-size 8 --entry-point "
                                      "pretrain_mamba.py --hybrid-override-pattern M*"));
  EXPECT_EQ(hybrid.model.hybrid_pattern, "M*");
  try {
    parse_megatron_args(tiny_launch("--nproc_per_node 1 --global-batch-size 8 --entry-point pretrain_t5.py"));
    ADD_FAILURE() << "pretrain_t5.py was analysed";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("encoder-decoder"), std::string::npos) << e.what();
  }
  const MegatronConfig bert = parse_megatron_args(
      tiny_launch("--nproc_per_node 1 --global-batch-size 8 --entry-point pretrain_bert.py"));
  EXPECT_TRUE(bert.model.hybrid_pattern.empty());
  bool said = false;
  for (const auto& w : bert.warnings)
    said = said || w.rfind("pretrain_bert.py: analysed as its transformer", 0) == 0;
  EXPECT_TRUE(said);
}

// BigCode's Megatron-LM fork: TokenizerFromFile(WithFIM) reads a Hugging Face tokenizer.json
// (--tokenizer-file): its vocabulary counts the added tokens (an id once); a file not on this machine is
// named in the error.
TEST(MegatronArgs, TokenizerFromFileCountsItsTokenizerJson) {
  const auto file = preflight::test::scratch_dir() / "bigcode_tokenizer.json";
  preflight::test::write_file(
      file,
      "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"c\": 2}}, "
      "\"added_tokens\": [{\"id\": 3, \"content\": \"<fim_prefix>\"}, {\"id\": 2, \"content\": \"c\"}]}");
  const MegatronConfig c = parse_megatron_args(tiny_launch(
      "--nproc_per_node 1 --global-batch-size 8 --tokenizer-type TokenizerFromFileWithFIM --tokenizer-file " +
      file.string()));
  EXPECT_EQ(c.model.vocab_size, 4);
  try {
    std::vector<std::string> args = tiny_launch("--nproc_per_node 1 --global-batch-size 8");
    args.erase(std::find(args.begin(), args.end(), "--vocab-size"),
               std::find(args.begin(), args.end(), "--vocab-size") + 2);
    for (const char* w :
         {"--tokenizer-type", "TokenizerFromFile", "--tokenizer-file", "/nowhere/tokenizer.json"})
      args.push_back(w);
    parse_megatron_args(args);
    ADD_FAILURE() << "a vocabulary was guessed";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("(--tokenizer-file '/nowhere/tokenizer.json' not found)"),
              std::string::npos)
        << e.what();
  }
}

// BigCode's fork spells multi-query attention `--attention-head-type multiquery` (SantaCoder, StarCoder): one
// key/value head; it had been read past silently, as full multi-head attention.
TEST(MegatronArgs, BigCodeMultiQueryAttention) {
  const MegatronConfig mq = parse_megatron_args(
      tiny_launch("--nproc_per_node 1 --global-batch-size 8 --attention-head-type multiquery"));
  EXPECT_EQ(mq.model.num_query_groups, 1);
  const MegatronConfig mh = parse_megatron_args(
      tiny_launch("--nproc_per_node 1 --global-batch-size 8 --attention-head-type multihead"));
  EXPECT_EQ(mh.model.num_query_groups, 4);
  // with tp the key/value head is whole on every rank: one a rank, said
  const MegatronConfig tp2 =
      parse_megatron_args(tiny_launch("--nproc_per_node 2 --global-batch-size 8 --tensor-model-parallel-size "
                                      "2 --attention-head-type multiquery"));
  EXPECT_EQ(tp2.model.num_query_groups, 2);
  EXPECT_TRUE(std::any_of(tp2.warnings.begin(), tp2.warnings.end(), [](const std::string& w) {
    return w.rfind("--attention-head-type multiquery with tp 2: BigCode's fork replicates", 0) == 0;
  }));
  EXPECT_THROW(
      parse_megatron_args(tiny_launch("--nproc_per_node 1 --global-batch-size 8 --attention-head-type mqa")),
      preflight::InputError);
}

// A flag read past whose name speaks of attention heads (a fork's `--head-dim`) is named among the flags that
// may change memory or time, not dropped silently.
TEST(MegatronArgs, UnknownHeadFlagsAreNamed) {
  const MegatronConfig c =
      parse_megatron_args(tiny_launch("--nproc_per_node 1 --global-batch-size 8 --head-dim 128"));
  EXPECT_TRUE(std::any_of(c.warnings.begin(), c.warnings.end(), [](const std::string& w) {
    return w.rfind("read past, not modelled", 0) == 0 && w.find("--head-dim") != std::string::npos;
  }));
}

// Pai-Megatron-Patch's shared expert, as ROCm/Megatron-LM's DeepSeek scripts pass it (--enable-shared-expert
// --num-shared-experts 2 --moe-shared-expert-intermediate-size 2816): Megatron's size taken, the fork's
// switch and count read (they had been named among the flags read past); the size from the count, or Pai's
// own
// --shared-moe-ffn-hidden-size, when Megatron's is absent; the switch without any size refused by name.
TEST(MegatronArgs, PaiSharedExpertFlags) {
  const Words moe = with(base_args(), {"--nproc_per_node", "8", "--num-experts", "8", "--moe-ffn-hidden-size",
                                       "1408", "--expert-model-parallel-size", "8"});
  auto parsed = [&](std::vector<std::string> extra) { return parse_megatron_args(with(moe, extra)); };
  auto read_past = [](const MegatronConfig& c) {
    for (const auto& w : c.warnings)
      if (w.find("read past") != std::string::npos) return w;
    return std::string();
  };
  const MegatronConfig both = parsed({"--enable-shared-expert", "--num-shared-experts", "2",
                                      "--moe-shared-expert-intermediate-size", "2816"});
  EXPECT_EQ(both.model.moe.shared_expert_ffn_hidden_size, 2816);
  EXPECT_EQ(read_past(both), "");
  for (const auto& w : both.warnings) EXPECT_EQ(w.find("--num-shared-experts"), std::string::npos) << w;
  EXPECT_EQ(
      parsed({"--enable-shared-expert", "--num-shared-experts", "2"}).model.moe.shared_expert_ffn_hidden_size,
      2816);
  EXPECT_EQ(parsed({"--enable-shared-expert", "--shared-moe-ffn-hidden-size", "5632"})
                .model.moe.shared_expert_ffn_hidden_size,
            5632);
  const MegatronConfig odd = parsed({"--enable-shared-expert", "--num-shared-experts", "1",
                                     "--moe-shared-expert-intermediate-size", "2816"});
  EXPECT_EQ(odd.model.moe.shared_expert_ffn_hidden_size, 2816);
  bool said = false;
  for (const auto& w : odd.warnings)
    said |= w.find("is 1408, not --moe-shared-expert-intermediate-size 2816") != std::string::npos;
  EXPECT_TRUE(said);
  try {
    parsed({"--enable-shared-expert"});
    ADD_FAILURE() << "a shared expert without a size";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--enable-shared-expert"), std::string::npos) << e.what();
  }
}
