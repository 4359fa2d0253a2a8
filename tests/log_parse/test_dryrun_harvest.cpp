// Harvesting a dryrun directory: layouts, stage mapping, checks, SAPP's memory_usage block, the CLI.
#include <gtest/gtest.h>

#include <regex>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "log_fixtures.hpp"
#include "preflight/common/error.hpp"
#include "preflight/log_parse/dryrun_harvest.hpp"
#include "test_support.hpp"

using namespace preflight::log_parse;
using namespace preflight::test;
using Kind = HarvestProblem::Kind;

namespace {

// Actual peaks of the 16 stages published in the SAPP readme (mindformers toolkit/pipeline_balance).
const std::vector<long> kSappActual = {96643, 60854, 27620, 54533, 100631, 31713, 38874, 146986,
                                       31713, 24553, 24553, 28484, 45016,  33763, 20463, 23531};

// SAPP readme layout: stage_<s>_rank_<s*1024>/mindformer.log; used peak = actual - 100 - s.
void write_sapp_tree(const TempDir& dir, int skip_stage = -1) {
  for (int s = 0; s < 16; ++s) {
    if (s == skip_stage) continue;
    std::string d = "stage_" + std::to_string(s) + "_rank_" + std::to_string(s * 1024);
    write_file(
        dir.path() / d / "mindformer.log",
        filler_lines(40 + s) + memory_block(kSappActual[s] - 100 - s, kSappActual[s]) + filler_lines(2));
  }
}

bool has_problem(const DryrunHarvest& h, Kind k, const std::string& where_part = "") {
  for (const auto& p : h.problems)
    if (p.kind == k && p.where.find(where_part) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST(DryrunHarvest, SappLayoutOneRowPerStage) {
  TempDir dir;
  write_sapp_tree(dir);
  HarvestOptions o;
  o.pp = 16;
  o.world_size = 16384;
  DryrunHarvest h = harvest_dryrun_logs(dir.path(), o);
  EXPECT_TRUE(h.ok()) << harvest_text(h);
  ASSERT_EQ(h.stages.size(), 16u);
  for (int s = 0; s < 16; ++s) {
    const StageMemory& m = h.stages[s];
    EXPECT_EQ(m.stage, s);
    const RankLog& l = h.logs[m.peak_log];
    EXPECT_EQ(l.rank, s * 1024);
    EXPECT_EQ(l.rank_from, "path");
    EXPECT_EQ(l.scan.block->actual_peak_mib->value, kSappActual[s]);
    EXPECT_EQ(l.scan.block->used_peak_mib->value, kSappActual[s] - 100 - s);
    EXPECT_EQ(l.scan.block->actual_peak_mib->line, 40 + s + 5);
  }
  EXPECT_TRUE(h.missing_stages.empty());
}

TEST(DryrunHarvest, SappYamlIsReadyToPaste) {
  TempDir dir;
  write_sapp_tree(dir);
  DryrunHarvest h = harvest_dryrun_logs(dir.path(), {});
  EXPECT_EQ(h.pp, 16);
  EXPECT_EQ(h.pp_from, "paths");
  std::string yaml = sapp_memory_usage_yaml(h);
  YAML::Node n = YAML::Load(yaml)["memory_usage"];
  EXPECT_EQ(n["head_memory"].as<long>(), 96643);
  EXPECT_EQ(n["tail_memory"].as<long>(), 23531);
  std::vector<long> ids = n["body_memories"]["stage_id"].as<std::vector<long>>();
  std::vector<long> mems = n["body_memories"]["memories"].as<std::vector<long>>();
  EXPECT_EQ(ids, (std::vector<long>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}));
  EXPECT_EQ(mems, std::vector<long>(kSappActual.begin() + 1, kSappActual.end() - 1));
  // --peak used
  YAML::Node u = YAML::Load(sapp_memory_usage_yaml(h, PeakKind::Used))["memory_usage"];
  EXPECT_EQ(u["head_memory"].as<long>(), 96643 - 100);
  EXPECT_EQ(u["tail_memory"].as<long>(), 23531 - 100 - 15);
}

TEST(DryrunHarvest, MissingStageIsReported) {
  TempDir dir;
  write_sapp_tree(dir, 5);
  HarvestOptions o;
  o.pp = 16;
  DryrunHarvest h = harvest_dryrun_logs(dir.path(), o);
  EXPECT_FALSE(h.ok());
  EXPECT_EQ(h.missing_stages, std::vector<int>{5});
  EXPECT_TRUE(has_problem(h, Kind::MissingStage, "stage 5"));
  // SAPP still gets the other body stages, with a comment.
  std::string yaml = sapp_memory_usage_yaml(h);
  EXPECT_NE(yaml.find("# no complete memory block for stage 5 (left out)"), std::string::npos);
  std::vector<long> ids =
      YAML::Load(yaml)["memory_usage"]["body_memories"]["stage_id"].as<std::vector<long>>();
  EXPECT_EQ(ids.size(), 13u);
  // With pp from the paths, a missing last stage cannot be seen; with --pp it is.
  TempDir dir2;
  write_sapp_tree(dir2, 15);
  EXPECT_TRUE(harvest_dryrun_logs(dir2.path(), {}).ok());
  DryrunHarvest h2 = harvest_dryrun_logs(dir2.path(), o);
  EXPECT_EQ(h2.missing_stages, std::vector<int>{15});
  EXPECT_THROW(sapp_memory_usage_yaml(h2), preflight::InputError);
}

TEST(DryrunHarvest, LogWithoutBlockNamesItsLastError) {
  TempDir dir;
  write_sapp_tree(dir, 7);
  write_file(dir.path() / "stage_7_rank_7168/mindformer.log",
             filler_lines(30) +
                 "Traceback (most recent call last):\n  File \"x.py\", line 1\n"
                 "RuntimeError: Out of Memory!!! total[65536M] used[64000M]\n");
  HarvestOptions o;
  o.pp = 16;
  DryrunHarvest h = harvest_dryrun_logs(dir.path(), o);
  ASSERT_TRUE(has_problem(h, Kind::NoMemoryBlock, "stage_7_rank_7168/mindformer.log:33"));
  EXPECT_TRUE(has_problem(h, Kind::MissingStage, "stage 7"));
  bool mentions = false;
  for (const auto& p : h.problems)
    mentions |= p.what.find("RuntimeError: Out of Memory!!!") != std::string::npos;
  EXPECT_TRUE(mentions);
}

TEST(DryrunHarvest, CutBlockIsAProblemNotANumber) {
  TempDir dir;
  write_sapp_tree(dir, 3);
  write_file(dir.path() / "stage_3_rank_3072/mindformer.log",
             filler_lines(10) + "Device MOC memory size: 62432M\nMindSpore Used memory size: 59392M\n");
  DryrunHarvest h = harvest_dryrun_logs(dir.path(), {});
  EXPECT_TRUE(has_problem(h, Kind::IncompleteBlock, "stage_3_rank_3072/mindformer.log:12"));
  EXPECT_EQ(h.missing_stages, std::vector<int>{3});
  for (const auto& p : h.problems)
    if (p.kind == Kind::IncompleteBlock) {
      EXPECT_NE(p.what.find("ends inside the memory block"), std::string::npos);
    }
}

TEST(DryrunHarvest, TwoLogsClaimingOneRank) {
  TempDir dir;
  write_file(dir.path() / "stage_0_rank_0/mindformer.log", memory_block(100, 200));
  write_file(dir.path() / "stage_1_rank_4/mindformer.log", memory_block(300, 400));
  // Agreeing copy (MindFormers info.log of the same rank): a note only.
  write_file(dir.path() / "rank_4/info.log", filler_lines(3) + memory_block(300, 400));
  HarvestOptions o;
  o.pp = 2;
  o.world_size = 8;
  DryrunHarvest h = harvest_dryrun_logs(dir.path(), o);
  EXPECT_TRUE(h.ok()) << harvest_text(h);
  ASSERT_EQ(h.notes.size(), 1u);
  EXPECT_NE(h.notes[0].find("repeats the memory block"), std::string::npos);
  // Disagreeing copy: a problem naming both files and lines; the higher peak is kept.
  write_file(dir.path() / "rank_4/info.log", filler_lines(3) + memory_block(300, 450));
  h = harvest_dryrun_logs(dir.path(), o);
  ASSERT_TRUE(has_problem(h, Kind::DisagreeingDuplicate, "rank 4"));
  std::string what;
  for (const auto& p : h.problems) what += p.what;
  EXPECT_NE(what.find("rank_4/info.log:4"), std::string::npos) << what;
  EXPECT_NE(what.find("stage_1_rank_4/mindformer.log:1"), std::string::npos) << what;
  EXPECT_EQ(h.logs[h.stage(1)->peak_log].scan.block->actual_peak_mib->value, 450);
}

TEST(DryrunHarvest, MsrunWorkerLogsMappedByPpAndWorld) {
  TempDir dir;
  for (int r = 0; r < 8; ++r)
    write_file(dir.path() / "msrun_log" / ("worker_" + std::to_string(r) + ".log"),
               filler_lines(5) + memory_block(1000 + r, 2000 + r));
  write_file(dir.path() / "msrun_log/scheduler.log", "scheduler chatter\n");
  HarvestOptions o;
  o.pp = 4;
  o.world_size = 8;
  DryrunHarvest h = harvest_dryrun_logs(dir.path(), o);
  EXPECT_TRUE(h.ok()) << harvest_text(h);
  EXPECT_EQ(h.logs.size(), 8u);  // scheduler.log is not a rank log
  ASSERT_EQ(h.stages.size(), 4u);
  for (int s = 0; s < 4; ++s) {
    EXPECT_EQ(h.stages[s].logs.size(), 2u);
    const RankLog& peak = h.logs[h.stages[s].peak_log];
    EXPECT_EQ(peak.rank, 2 * s + 1);  // the higher of ranks 2s, 2s+1
    EXPECT_EQ(peak.stage_from, "pp/world");
    EXPECT_EQ(h.stages[s].min_actual_peak_mib, 2000 + 2 * s);
  }
  // Without --world, ranks 0…7 all present give the world size (with a note).
  o.world_size.reset();
  DryrunHarvest h2 = harvest_dryrun_logs(dir.path(), o);
  EXPECT_EQ(h2.world_size, 8);
  EXPECT_EQ(h2.world_from, "rank logs");
  EXPECT_TRUE(h2.ok());
}

TEST(DryrunHarvest, WorkerNumberVersusGlobalRankLine) {
  TempDir dir;
  // Node 1 of 2, without --node_rank: file numbers restart at 0; the log says the global rank.
  write_file(dir.path() / "worker_0.log", "Global rank id: 2\n" + memory_block(5, 6));
  write_file(dir.path() / "worker_1.log", "Global rank id: 3\n" + memory_block(7, 8));
  HarvestOptions o;
  o.pp = 2;
  o.world_size = 4;
  DryrunHarvest h = harvest_dryrun_logs(dir.path(), o);
  ASSERT_EQ(h.stages.size(), 1u);
  EXPECT_EQ(h.stages[0].stage, 1);
  EXPECT_EQ(h.logs[0].rank, 2);
  EXPECT_EQ(h.logs[0].rank_from, "log");
  EXPECT_EQ(h.missing_stages, std::vector<int>{0});
}

TEST(DryrunHarvest, DryrunShLayoutAndPpFromTheLog) {
  TempDir dir;
  // SAPP utils/dryrun.sh: OUTPUT/log/stage<i>_<rank>/mindformer.log
  for (int s = 0; s < 4; ++s)
    write_file(
        dir.path() / "log" / ("stage" + std::to_string(s) + "_" + std::to_string(s * 2)) / "mindformer.log",
        "2025 - mindformers - INFO - Pipeline parallel was opened: pipeline_stages = 4, full batch\n" +
            memory_block(10 * s + 1, 10 * s + 2));
  DryrunHarvest h = harvest_dryrun_logs(dir.path(), {});
  EXPECT_EQ(h.pp, 4);
  EXPECT_EQ(h.pp_from, "log");
  EXPECT_TRUE(h.ok()) << harvest_text(h);
  ASSERT_EQ(h.stages.size(), 4u);
  EXPECT_EQ(h.logs[h.stages[3].peak_log].rank, 6);
}

TEST(DryrunHarvest, PathStageDisagreeingWithRankIsAProblem) {
  TempDir dir;
  write_file(dir.path() / "stage_0_rank_0/a.log", memory_block(1, 2));
  write_file(dir.path() / "stage_1_rank_1/a.log", memory_block(1, 2));  // rank 1 of 8 in 2 stages: stage 0
  HarvestOptions o;
  o.pp = 2;
  o.world_size = 8;
  DryrunHarvest h = harvest_dryrun_logs(dir.path(), o);
  EXPECT_TRUE(has_problem(h, Kind::StageMismatch, "stage_1_rank_1/a.log"));
  EXPECT_EQ(h.missing_stages, std::vector<int>{1});
}

TEST(DryrunHarvest, UnmappedLogAndSingleFile) {
  TempDir dir;
  write_file(dir.path() / "mindformer.log", filler_lines(4) + memory_block(1, 2));
  DryrunHarvest h = harvest_dryrun_logs(dir.path(), {});
  EXPECT_TRUE(has_problem(h, Kind::Unmapped, "mindformer.log"));
  EXPECT_TRUE(h.stages.empty());
  // One file with pp 1: stage 0.
  HarvestOptions o;
  o.pp = 1;
  DryrunHarvest one = harvest_dryrun_logs(dir.path() / "mindformer.log", o);
  EXPECT_TRUE(one.ok()) << harvest_text(one);
  ASSERT_EQ(one.stages.size(), 1u);
  EXPECT_EQ(one.logs[0].scan.block->actual_peak_mib->line, 9);
}

TEST(DryrunHarvest, BadInputThrows) {
  TempDir dir;
  EXPECT_THROW(harvest_dryrun_logs(dir.path() / "nope", {}), preflight::InputError);
  EXPECT_THROW(harvest_dryrun_logs(dir.path(), {}), preflight::InputError);  // no *.log
  write_file(dir.path() / "stage_0_rank_0/x.log", memory_block(1, 2));
  HarvestOptions o;
  o.pp = 3;
  o.world_size = 10;
  EXPECT_THROW(harvest_dryrun_logs(dir.path(), o), preflight::InputError);
  o.pp = 0;
  EXPECT_THROW(harvest_dryrun_logs(dir.path(), o), preflight::InputError);
}

TEST(DryrunHarvest, ThreadCountDoesNotChangeTheResult) {
  TempDir dir;
  for (int r = 0; r < 64; ++r)
    write_file(dir.path() / ("rank_" + std::to_string(r)) / "info.log",
               filler_lines(100 + r) + memory_block(r * 3, r * 5));
  HarvestOptions a, b;
  a.pp = b.pp = 8;
  a.jobs = 1;
  b.jobs = 4;
  EXPECT_EQ(harvest_json(harvest_dryrun_logs(dir.path(), a)),
            harvest_json(harvest_dryrun_logs(dir.path(), b)));
}

TEST(LogsDryrunCli, TableJsonCsvSappAndExitCodes) {
  TempDir dir;
  write_sapp_tree(dir);
  RunResult r = run_preflight("logs dryrun " + shell_quote(dir.str()) + " --pp 16");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n\s+7\s+7168\s+1\s+62432\s+59392\s+146879\s+146986\s+)"
                                                  R"(stage_7_rank_7168/mindformer\.log:48-52\n)")))
      << r.out;

  r = run_preflight("logs dryrun " + shell_quote(dir.str()) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["stages"].size(), 16u);
  EXPECT_EQ(j["stages"][4]["actual_peak_mib"], 100631);
  EXPECT_EQ(j["stages"][4]["block"]["actual_peak"]["line"], 49);
  EXPECT_EQ(j["ok"], true);

  r = run_preflight("logs dryrun " + shell_quote(dir.str()) + " --csv");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')),
            "stage,rank,file,device_mib,device_line,used_mib,used_line,used_peak_mib,used_peak_line,actual_"
            "peak_mib,"
            "actual_peak_line,status,oom_requested_bytes");
  EXPECT_NE(r.out.find("\n0,0,stage_0_rank_0/mindformer.log,62432,41,59392,42,96543,44,96643,45,ok,\n"),
            std::string::npos)
      << r.out;

  r = run_preflight("logs dryrun " + shell_quote(dir.str()) + " --sapp");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("memory_usage:\n  head_memory: 96643\n  tail_memory: 23531\n"), std::string::npos)
      << r.out;

  // A missing stage: exit 1, named.
  std::filesystem::remove_all(dir.path() / "stage_9_rank_9216");
  r = run_preflight("logs dryrun " + shell_quote(dir.str()) + " --pp 16");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("stage 9: no log with a complete memory block"), std::string::npos) << r.out;

  // Bad input: exit 2 with preflight: error: <where>: <what>.
  r = run_preflight("logs dryrun " + shell_quote((dir.path() / "nope").string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("preflight: error: " + (dir.path() / "nope").string() + ": no such file or directory"),
            std::string::npos)
      << r.err;
  r = run_preflight("logs dryrun " + shell_quote(dir.str()) + " --pp 3 --world 10");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("preflight: error: --world:"), std::string::npos) << r.err;
  r = run_preflight("logs dryrun " + shell_quote(dir.str()) + " --pp 1 --sapp");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("preflight: error: --sapp:"), std::string::npos) << r.err;
}

// The 16 published grep lines of the SAPP readme, rebuilt as logs with the block on the published line:
// our file:line and numbers must reproduce the listing, and --sapp the memory_usage block of the
// init YAML that was written from it (shared/data/sapp/cfgs/init_llama175b.yaml).
TEST(LogsDryrunShared, ReproducesThePublishedGrepListing) {
  if (!shared_data_available()) GTEST_SKIP() << shared_data_missing();
  std::string listing = read_file(shared_data_dir() / "samples/mindspore_dryrun/mindformers_sapp_readme.txt");
  std::regex line_re(
      R"((stage_(\d+)_rank_(\d+)/mindformer\.log):(\d+):Actual peak memory usage \(with fragments\): (\d+)M)");
  TempDir dir;
  std::vector<std::string> expected;
  for (auto it = std::sregex_iterator(listing.begin(), listing.end(), line_re); it != std::sregex_iterator();
       ++it) {
    const std::smatch& m = *it;
    int line = std::stoi(m[4]);
    long actual = std::stol(m[5]);
    write_file(dir.path() / m[1].str(),
               filler_lines(line - 5) + memory_block(actual - 1, actual) + filler_lines(7));
    expected.push_back(m[0].str());
  }
  ASSERT_EQ(expected.size(), 16u);
  RunResult r = run_preflight("logs dryrun " + shell_quote(dir.str()) + " --pp 16 --world 16384 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  std::vector<std::string> ours;
  for (const auto& s : j["stages"])
    ours.push_back(
        s["file"].get<std::string>() + ":" + std::to_string(s["block"]["actual_peak"]["line"].get<int>()) +
        ":Actual peak memory usage (with fragments): " + std::to_string(s["actual_peak_mib"].get<long>()) +
        "M");
  EXPECT_EQ(ours, expected);

  r = run_preflight("logs dryrun " + shell_quote(dir.str()) + " --sapp");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  YAML::Node ref =
      YAML::LoadFile((shared_data_dir() / "sapp/cfgs/init_llama175b.yaml").string())["memory_usage"];
  YAML::Node got = YAML::Load(r.out)["memory_usage"];
  EXPECT_EQ(got["head_memory"].as<long>(), ref["head_memory"].as<long>());
  EXPECT_EQ(got["tail_memory"].as<long>(), ref["tail_memory"].as<long>());
  EXPECT_EQ(got["body_memories"]["stage_id"].as<std::vector<int>>(),
            ref["body_memories"]["stage_id"].as<std::vector<int>>());
  EXPECT_EQ(got["body_memories"]["memories"].as<std::vector<long>>(),
            ref["body_memories"]["memories"].as<std::vector<long>>());
}

// A stage whose log ends in MindSpore's allocation failure (the error block of the MindSpore docs, quoted
// in tests/data/dryrun) is out of memory on that stage — with the bytes asked for and the device size — in
// the table, the problems, --json and --csv; not "the log ends inside the memory block".
TEST(DryrunHarvest, OutOfMemoryIsReportedOnItsStage) {
  TempDir dir;
  write_sapp_tree(dir, 5);
  std::string oom = read_file(data_dir() / "dryrun/mindspore_docs_out_of_memory.txt");
  write_file(dir.path() / "stage_5_rank_5120/mindformer.log", filler_lines(20) + oom);
  DryrunHarvest h = harvest_dryrun_logs(dir.path(), {});
  ASSERT_EQ(h.out_of_memory.size(), 1u);
  EXPECT_EQ(h.out_of_memory[0].first, 5);
  const DryrunOutOfMemory& o = *h.logs[h.out_of_memory[0].second].scan.out_of_memory;
  EXPECT_EQ(o.requested_bytes, 33100113920);
  EXPECT_EQ(o.device_mib, 32768);
  EXPECT_EQ(o.line, 24);  // 20 filler lines, 3 banner lines, then the error
  EXPECT_FALSE(has_problem(h, Kind::IncompleteBlock));
  EXPECT_FALSE(has_problem(h, Kind::MissingStage));
  ASSERT_TRUE(has_problem(h, Kind::OutOfMemory, "stage_5_rank_5120/mindformer.log:24"));
  for (const auto& p : h.problems) {
    if (p.kind != Kind::OutOfMemory) continue;
    EXPECT_EQ(p.what,
              "out of memory on stage 5 (rank 5120): MindSpore could not allocate 33100113920 bytes "
              "(31566.7 MiB) on a 32768 MiB device");
  }
  EXPECT_FALSE(h.ok());
  std::string text = harvest_text(h);
  EXPECT_NE(text.find("OUT OF MEMORY (+31566.7 requested)"), std::string::npos) << text;
  nlohmann::json j = harvest_json(h);
  EXPECT_EQ(j["out_of_memory"][0]["stage"], 5);
  EXPECT_EQ(j["out_of_memory"][0]["requested_bytes"], 33100113920);
  EXPECT_EQ(j["out_of_memory"][0]["device_memory_mib"], 32768);
  std::string csv = harvest_csv(h);
  EXPECT_NE(csv.find(",out_of_memory,33100113920\n"), std::string::npos) << csv;
  // The same error printed on the line of the statistic (as MS_LOG(ERROR) joins them in some builds).
  write_file(
      dir.path() / "stage_5_rank_5120/mindformer.log",
      filler_lines(3) +
          "[ERROR] DEVICE(1,ffff,python):2025-03-12-10:21:46.000.001 Out of Memory!!! Request memory size: "
          "1073741824B, Memory Statistic: Device MOC memory size: 62432M\nMindSpore Used memory size: 59");
  DryrunHarvest cut = harvest_dryrun_logs(dir.path(), {});
  ASSERT_EQ(cut.out_of_memory.size(), 1u);
  const DryrunOutOfMemory& c = *cut.logs[cut.out_of_memory[0].second].scan.out_of_memory;
  EXPECT_EQ(c.requested_bytes, 1073741824);
  EXPECT_EQ(c.device_mib, 62432);
  EXPECT_EQ(c.line, 4);
}
