// The streaming Chrome-trace reader: both layouts, value types, escapes across block and batch boundaries
// (against nlohmann::json as an independent parser), gzip, and every kind of broken input.
#include <gtest/gtest.h>

#include <random>

#include <nlohmann/json.hpp>

#include "text/byte_source.hpp"
#include "log_fixtures.hpp"
#include "preflight/common/error.hpp"
#include "preflight/log_parse/chrome_trace.hpp"
#include "test_support.hpp"
#include "chrome_trace/trace_split.hpp"

using namespace preflight::log_parse;
using namespace preflight::test;

namespace {

struct Copy {
  char ph;
  std::string name, cat, pid_text, tid_text;
  bool pid_numeric, tid_numeric;
  std::int64_t pid, tid;
  std::optional<std::int64_t> ts, dur;
  std::string args_name;
  std::uint64_t offset;
};

std::vector<Copy> read_all(std::string_view text, ChromeTraceInfo* info = nullptr) {
  std::vector<Copy> out;
  ChromeTraceInfo i = read_chrome_trace_text(text, "t.json", [&](const TraceEvent& e) {
    out.push_back(Copy{e.ph, std::string(e.name), std::string(e.cat), std::string(e.pid.text),
                       std::string(e.tid.text), e.pid.numeric, e.tid.numeric, e.pid.number, e.tid.number,
                       e.ts_ns, e.dur_ns, std::string(e.args_name), e.offset});
  });
  if (info) *info = i;
  return out;
}

std::string error_of(std::string_view text) {
  try {
    read_all(text);
  } catch (const preflight::InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(ChromeTrace, KinetoObjectWithMetadataAfterTheEvents) {
  std::string text = R"J({
  "schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "A100"}],
  "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8},
  "traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 597913, "tid": 597913, "ts": 4203669603187.439, "dur": 9288.291,
   "args": {"External id": 1, "Sequence number": 42, "Fwd thread id": 0, "Module Hierarchy": "top.layer1"}},
  {"ph": "X", "cat": "Trace", "ts": 1.5, "dur": 2, "pid": "Spans", "tid": "PyTorch Profiler", "name": "PyTorch Profiler (0)"},
  {"name": "process_name", "ph": "M", "ts": 0, "pid": 1, "tid": 0, "args": {"name": "python3"}},
  {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": 4203669613175.703}
  ],
  "traceName": "x.json", "displayTimeUnit": "ms", "baseTimeNanoseconds": 1735632360000000000
})J";
  ChromeTraceInfo info;
  std::vector<Copy> ev = read_all(text, &info);
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_FALSE(info.bare_array);
  EXPECT_EQ(info.events, 4u);
  EXPECT_EQ(info.base_time_ns, 1735632360000000000);
  EXPECT_EQ(info.display_time_unit, "ms");
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.world_size, 8);
  EXPECT_EQ(ev[0].ph, 'X');
  EXPECT_EQ(ev[0].name, "aten::mm");
  EXPECT_EQ(ev[0].cat, "cpu_op");
  EXPECT_EQ(ev[0].pid, 597913);
  EXPECT_EQ(ev[0].ts, 4203669603187439);
  EXPECT_EQ(ev[0].dur, 9288291);
  EXPECT_EQ(ev[0].offset, text.find("{\"ph\": \"X\", \"cat\": \"cpu_op\""));
  EXPECT_FALSE(ev[1].pid_numeric);
  EXPECT_EQ(ev[1].pid_text, "Spans");
  EXPECT_EQ(ev[1].ts, 1500);
  EXPECT_EQ(ev[1].dur, 2000);
  EXPECT_EQ(ev[2].args_name, "python3");
  EXPECT_FALSE(ev[3].pid_numeric);
  EXPECT_EQ(ev[3].pid_text, "");
  EXPECT_EQ(ev[3].ph, 'i');
  EXPECT_FALSE(ev[3].dur);
}

TEST(ChromeTrace, ArgsAccessors) {
  std::string text = R"({"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1,
    "args": {"Sequence number": 42, "Fwd thread id": "7", "Module Hierarchy": "top.layer1", "Bytes": -4096.0}}]})";
  int seen = 0;
  read_chrome_trace_text(text, "t", [&](const TraceEvent& e) {
    ++seen;
    EXPECT_EQ(e.arg_int("Sequence number"), 42);
    EXPECT_EQ(e.arg_int("Fwd thread id"), 7);
    EXPECT_EQ(e.arg_string("Module Hierarchy"), "top.layer1");
    EXPECT_EQ(e.arg_number("Bytes"), -4096.0);
    EXPECT_FALSE(e.arg_int("missing"));
    EXPECT_EQ(nlohmann::json::parse(e.args_json())["Sequence number"], 42);
  });
  EXPECT_EQ(seen, 1);
}

TEST(ChromeTrace, AscendBareArrayWithStringNumbers) {
  std::string text =
      "[{\"name\": \"process_name\", \"pid\": 3, \"tid\": 0, \"args\": {\"name\": \"Ascend Hardware\"}, "
      "\"ph\": \"M\"},\n"
      " {\"name\": \"Default/network/Cast-op239\", \"ph\": \"X\", \"pid\": \"3\", \"tid\": \"519\", "
      "\"ts\": \"1693377244716539.250\", \"dur\": \"12.345\"}]";
  ChromeTraceInfo info;
  std::vector<Copy> ev = read_all(text, &info);
  EXPECT_TRUE(info.bare_array);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].args_name, "Ascend Hardware");  // args before ph
  EXPECT_TRUE(ev[1].pid_numeric);
  EXPECT_EQ(ev[1].pid, 3);
  EXPECT_EQ(ev[1].tid, 519);
  EXPECT_EQ(ev[1].ts, 1693377244716539250);  // exact from a string
  EXPECT_EQ(ev[1].dur, 12345);
}

TEST(ChromeTrace, ParseMicrosecondsAsNanoseconds) {
  EXPECT_EQ(parse_us_as_ns("12.345"), 12345);
  EXPECT_EQ(parse_us_as_ns("12.3456"), 12346);
  EXPECT_EQ(parse_us_as_ns("-0.5"), -500);
  EXPECT_EQ(parse_us_as_ns("7"), 7000);
  EXPECT_EQ(parse_us_as_ns("1.5e3"), 1500000);
  EXPECT_EQ(parse_us_as_ns(" 3.25 "), 3250);
  EXPECT_FALSE(parse_us_as_ns("abc"));
  EXPECT_FALSE(parse_us_as_ns("1.2.3"));
  EXPECT_FALSE(parse_us_as_ns(""));
}

// Random events whose strings are full of quotes, backslashes, braces and brackets, cut into small read
// pieces and batches so that every boundary lands everywhere: names and times must equal what an
// independent parser (nlohmann::json) reads from the same text.
TEST(ChromeTrace, SplitterAgreesWithAnIndependentParser) {
  std::mt19937 rng(12345);
  const std::string alphabet = "ab{}[]\\\"\",: \n\tx\xc3\xa9";
  for (int round = 0; round < 6; ++round) {
    nlohmann::json events = nlohmann::json::array();
    int n = 300 + static_cast<int>(rng() % 300);
    for (int i = 0; i < n; ++i) {
      std::string name;
      int len = static_cast<int>(rng() % 90);
      for (int k = 0; k < len; ++k) {
        char c = alphabet[rng() % alphabet.size()];
        if (static_cast<unsigned char>(c) >= 0x80) {
          name += "\xc3\xa9";
          continue;
        }
        name += c;
      }
      nlohmann::json e = {{"ph", "X"},
                          {"name", name},
                          {"pid", static_cast<int>(rng() % 5)},
                          {"tid", "s" + std::to_string(rng() % 9)},
                          {"ts", static_cast<double>(rng() % 1000000) / 8.0},
                          {"dur", static_cast<int>(rng() % 1000)}};
      if (rng() % 3 == 0) e["args"] = {{"nested", {{"a", {1, 2, {{"b", name}}}}}}, {"s", "]}"}};
      events.push_back(e);
    }
    std::string text =
        round % 2 ? events.dump() : nlohmann::json{{"traceEvents", events}, {"after", "]}{["}}.dump(1);
    nlohmann::json reference = nlohmann::json::parse(text);
    const nlohmann::json& ref = round % 2 ? reference : reference["traceEvents"];

    auto source = preflight::log_parse::detail::memory_byte_source(text);
    preflight::log_parse::detail::TraceSplitter splitter(*source, "r.json", 64 + rng() % 512);
    preflight::log_parse::detail::TraceSplitter::Batch batch;
    std::size_t k = 0;
    while (splitter.next(batch)) {
      nlohmann::json part = nlohmann::json::parse(std::string_view(batch.data, batch.size));
      ASSERT_EQ(part.size(), batch.starts->size());
      for (std::size_t j = 0; j < part.size(); ++j, ++k) {
        ASSERT_LT(k, ref.size());
        EXPECT_EQ(part[j], ref[k]);
        EXPECT_EQ(text[(*batch.starts)[j]], '{');
      }
    }
    EXPECT_EQ(k, ref.size());

    std::size_t m = 0;
    read_chrome_trace_text(text, "r.json", [&](const TraceEvent& e) {
      ASSERT_LT(m, ref.size());
      EXPECT_EQ(e.name, ref[m]["name"].get<std::string>());
      EXPECT_EQ(e.tid.text, ref[m]["tid"].get<std::string>());
      EXPECT_EQ(*e.ts_ns, std::llround(ref[m]["ts"].get<double>() * 1000));
      ++m;
    });
    EXPECT_EQ(m, ref.size());
  }
}

TEST(ChromeTrace, GzipAndTruncatedGzip) {
  TempDir dir;
  std::string text = R"({"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]})";
  for (int i = 0; i < 2000; ++i)
    text.insert(text.size() - 2, R"(, {"ph": "i", "name": "m", "pid": 1, "tid": 1, "ts": 5})");
  auto plain = dir.path() / "t.json";
  write_file(plain, text);
  ASSERT_EQ(run_shell("gzip -k " + shell_quote(plain.string())).exit_code, 0);
  ChromeTraceInfo info = read_chrome_trace(dir.path() / "t.json.gz", [](const TraceEvent&) {});
  EXPECT_TRUE(info.gzip);
  EXPECT_EQ(info.events, 2001u);
  EXPECT_EQ(info.bytes, text.size());
  // Cut the compressed file in half.
  std::string gz = read_file(dir.path() / "t.json.gz");
  write_file(dir.path() / "cut.json.gz", gz.substr(0, gz.size() / 2));
  try {
    read_chrome_trace(dir.path() / "cut.json.gz", [](const TraceEvent&) {});
    FAIL() << "no error";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cut.json.gz@"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
}

TEST(ChromeTrace, BrokenInputNamesTheByte) {
  // Truncated inside an event.
  std::string t = R"({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2}, {"ph": "X", "na)";
  EXPECT_EQ(error_of(t), "t.json@" + std::to_string(t.size()) +
                             ": truncated: the file ends inside the event that starts at byte " +
                             std::to_string(t.rfind('{')));
  // Binary garbage.
  std::string garbage(
      "\x7f"
      "ELF\x02\x01\x01\0\0\0",
      10);
  EXPECT_EQ(error_of(garbage), "t.json@0: not a Chrome trace: expected '{' or '[' but found byte 0x7f");
  EXPECT_EQ(error_of("  \n"), "t.json: empty file: not a Chrome trace");
  EXPECT_EQ(error_of(R"({"schemaVersion": 1})"),
            "t.json: no \"traceEvents\" array in the top-level JSON object");
  EXPECT_EQ(error_of(R"([{"ph": "X"}] x)"), "t.json@14: text after the end of the JSON document: 'x'");
  EXPECT_EQ(error_of(R"([{"ph": "X"}, 5])"),
            "t.json@14: unexpected '5' in the event array (events must be JSON objects)");
  EXPECT_EQ(error_of(R"([{"ph": "X"}, ])"), "t.json@12: ',' before the ']' closing the event array");
  // Invalid JSON inside the second event: named by its start.
  std::string bad = R"([{"ph": "X", "ts": 1}, {"ph": "X", "ts": }, {"ph": "i"}])";
  std::string err = error_of(bad);
  EXPECT_EQ(err.substr(0, err.find(':', 8)),
            "t.json@" + std::to_string(bad.find("{\"ph\": \"X\", \"ts\": }")));
  EXPECT_NE(err.find("invalid JSON in the event that starts here"), std::string::npos) << err;
  EXPECT_NE(error_of(R"([{"ph": "X", "ts": true}])").find("\"ts\" is not a number"), std::string::npos);
  // The object form must close.
  EXPECT_NE(
      error_of(R"({"traceEvents": [{"ph": "X"}])").find("truncated: the file ends before the top-level"),
      std::string::npos);
}

TEST(ChromeTrace, UnclosedBareArrayIsAccepted) {
  ChromeTraceInfo info;
  std::vector<Copy> ev = read_all(
      "[{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, \"dur\": 1},\n{\"ph\": \"i\", \"ts\": 2},\n", &info);
  EXPECT_EQ(ev.size(), 2u);
  EXPECT_TRUE(info.unclosed_array);
}

// Every sample in ../shared/data/samples parses; event counts and summed X durations are those Python's
// json module gives for the same files.
TEST(ChromeTraceShared, EverySampleTrace) {
  if (!shared_data_available()) GTEST_SKIP() << shared_data_missing();
  struct Expect {
    const char* file;
    std::uint64_t events;
    double x_dur_us;  // Σ dur over ph == "X"
  };
  const Expect expect[] = {
      {"torch_chrome_trace/hta_simple_add_trace.json", 1348, 306668311},
      {"torch_chrome_trace/hta_amd_mi250_minitoy_kineto.json", 220, 52276.266},
      {"torch_chrome_trace/hta_cpu_only_rank34.pt.trace.json", 30, 3635095.146},
      {"torch_chrome_trace/kineto_tbplugin_resnet50_worker0.1623143089861.pt.trace.json.gz", 75718, 4924245},
      {"ascend_timeline/cann_msprof_0_2_1.json", 1108, 652691.4200048861},
      {"ascend_timeline/mindspore_ascend_timeline_display_0.json", 3, 681.0999732971192},
      {"ascend_timeline/mindspore_gpu_timeline_display_0.json", 2, 309.63199999999995},
  };
  for (const Expect& x : expect) {
    double dur_ns = 0;
    std::uint64_t memory = 0;
    ChromeTraceInfo info =
        read_chrome_trace(shared_data_dir() / "samples" / x.file, [&](const TraceEvent& e) {
          if (e.ph == 'X' && e.dur_ns) dur_ns += static_cast<double>(*e.dur_ns);
          if (e.name == "[memory]") ++memory;
        });
    EXPECT_EQ(info.events, x.events) << x.file;
    EXPECT_NEAR(dur_ns / 1000.0, x.x_dur_us, 0.01) << x.file;
    if (std::string(x.file).find("resnet50") != std::string::npos) {
      EXPECT_TRUE(info.gzip);
      EXPECT_EQ(memory, 12838u);
    }
  }
}
