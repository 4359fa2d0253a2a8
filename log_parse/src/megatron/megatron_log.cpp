#include "preflight/log_parse/megatron_log.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "preflight/common/error.hpp"
#include "preflight/common/table.hpp"
#include "preflight/common/units.hpp"
#include "text/byte_scan.hpp"
#include "text/file_read.hpp"
#include "text/log_text.hpp"

namespace preflight::log_parse {

namespace {

using detail::trim;

std::optional<double> to_double(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  if (s.front() == '+') s.remove_prefix(1);
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// The number a value starts with ("1234.5/1240.2", "456.7 (avg 450.1)", "150.23GB"): AMD Primus's iteration
// lines put a running average or a unit after it.
std::optional<double> leading_double(std::string_view s) {
  s = trim(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p == s.data()) return std::nullopt;
  return v;
}

// Primus's "USED GB/FREE GB/TOTAL GB/RATIO%" (or "USED GB/RATIO%"): the used share of the device, 0 … 1, from
// the last field's percentage.
std::optional<double> used_ratio(std::string_view s) {
  s = trim(s);
  const std::size_t slash = s.rfind('/');
  if (slash == std::string_view::npos || !s.ends_with('%')) return std::nullopt;
  const auto pct = leading_double(s.substr(slash + 1));
  if (!pct || *pct < 0 || *pct > 100) return std::nullopt;
  return *pct / 100.0;
}

std::optional<std::int64_t> to_int(std::string_view s) {
  s = trim(s);
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// "iteration <spaces><digits>/<spaces><digits><spaces>|" starting at `at`.
bool iteration_at(std::string_view s, std::size_t at) {
  static constexpr std::string_view kWord = "iteration ";
  if (s.substr(at, kWord.size()) != kWord) return false;
  std::size_t i = at + kWord.size();
  while (i < s.size() && s[i] == ' ') ++i;
  std::size_t d = i;
  while (i < s.size() && is_digit(s[i])) ++i;
  if (i == d || i >= s.size() || s[i] != '/') return false;
  ++i;
  while (i < s.size() && s[i] == ' ') ++i;
  d = i;
  while (i < s.size() && is_digit(s[i])) ++i;
  if (i == d) return false;
  while (i < s.size() && s[i] == ' ') ++i;
  return i < s.size() && s[i] == '|';
}

// "[Rank <digits>] (after "
bool memory_at(std::string_view s, std::size_t at) {
  if (s.substr(at, 6) != "[Rank ") return false;
  std::size_t i = at + 6;
  std::size_t d = i;
  while (i < s.size() && is_digit(s[i])) ++i;
  return i > d && s.substr(i, 9) == "] (after ";
}

enum class Kind { Iteration, Memory, Billions, Theoretical, RankParams, Sizes, MicroBatches, PaddedVocab };

struct Start {
  std::size_t at;
  Kind kind;
};

// Record starts in one physical line, in order (prints glued together by multi-rank stdout are split).
std::vector<Start> record_starts(std::string_view s) {
  std::vector<Start> out;
  for (std::size_t at = s.find("iteration "); at != std::string_view::npos;
       at = s.find("iteration ", at + 1)) {
    if (!iteration_at(s, at)) continue;
    std::size_t b = at;  // take a "[timestamp] " prefix along
    while (b > 0 && s[b - 1] == ' ') --b;
    if (b > 0 && s[b - 1] == ']') {
      std::size_t open = s.rfind('[', b - 1);
      if (open != std::string_view::npos && b - open <= 32) b = open;
    }
    out.push_back({b, Kind::Iteration});
  }
  for (std::size_t at = s.find("[Rank "); at != std::string_view::npos; at = s.find("[Rank ", at + 1))
    if (memory_at(s, at)) out.push_back({at, Kind::Memory});
  for (std::string_view w : {std::string_view("Number of "), std::string_view("Total number of ")})
    for (std::size_t at = s.find(w); at != std::string_view::npos; at = s.find(w, at + 1)) {
      std::size_t bill = s.find(" in billions:", at);
      std::size_t bar = s.find('|', at);
      if (bill != std::string_view::npos && (bar == std::string_view::npos || bar > bill))
        out.push_back({at, Kind::Billions});
    }
  if (auto at = s.find("Theoretical memory footprints:"); at != std::string_view::npos)
    out.push_back({at, Kind::Theoretical});
  if (auto at = s.find("number of parameters on ("); at != std::string_view::npos)
    out.push_back({at, Kind::RankParams});
  if (auto at = s.find("using world size:"); at != std::string_view::npos) out.push_back({at, Kind::Sizes});
  if (auto at = s.find("setting number of micro-batches to constant"); at != std::string_view::npos)
    out.push_back({at, Kind::MicroBatches});
  if (auto at = s.find("> padded vocab (size: "); at != std::string_view::npos)
    out.push_back({at, Kind::PaddedVocab});
  std::sort(out.begin(), out.end(), [](const Start& a, const Start& b) { return a.at < b.at; });
  // A "Total number of" start also contains no "Number of" start (capital N), so no duplicates; but an
  // iteration start found inside a memory record cannot happen either: keep the order as found.
  return out;
}

// "key: value | key: value |" → pairs (keys and values trimmed; pieces without ':' are skipped).
std::vector<std::pair<std::string_view, std::string_view>> bar_fields(std::string_view s) {
  std::vector<std::pair<std::string_view, std::string_view>> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    std::size_t bar = s.find('|', pos);
    std::string_view piece =
        s.substr(pos, bar == std::string_view::npos ? std::string_view::npos : bar - pos);
    std::size_t colon = piece.rfind(':');
    if (colon != std::string_view::npos)
      out.emplace_back(trim(piece.substr(0, colon)), trim(piece.substr(colon + 1)));
    if (bar == std::string_view::npos) break;
    pos = bar + 1;
  }
  return out;
}

class Reader {
 public:
  explicit Reader(MegatronLog& log) : log_(log) {}

  void line(std::string_view text, std::int64_t n, bool terminated) {
    text = without_tee_prefix(text);
    if (text.find("train_speed(s/it)") != std::string_view::npos &&
        text.find('{') != std::string_view::npos) {
      swift_record(text.substr(text.find('{')), n, !terminated);
      return;
    }
    if (text.find("train_step_timing in s=") != std::string_view::npos) {
      lightning_progress(text, n, terminated);
      return;
    }
    if (auto at = text.find("see_memory_usage] "); at != std::string_view::npos) {
      deepspeed_memory(text.substr(at + 18), n);
      return;
    }
    std::vector<Start> starts = record_starts(text);
    if (starts.empty()) {
      args_line(text);
      return;
    }
    if (starts.size() > 1 || (starts[0].at > 0 && !detail::is_blank(text.substr(0, starts[0].at)) &&
                              !prefix_ok(text.substr(0, starts[0].at))))
      glued_ = true;
    for (std::size_t i = 0; i < starts.size(); ++i) {
      std::size_t end = i + 1 < starts.size() ? starts[i + 1].at : text.size();
      std::string_view rec = text.substr(starts[i].at, end - starts[i].at);
      bool cut = !terminated && i + 1 == starts.size();
      switch (starts[i].kind) {
        case Kind::Iteration:
          iteration(rec, n, cut);
          break;
        case Kind::Memory:
          memory(rec, n, cut);
          break;
        case Kind::Billions:
          billions(rec, n);
          break;
        case Kind::Theoretical:
          theoretical(rec, n);
          break;
        case Kind::RankParams:
          rank_params(rec, n);
          break;
        case Kind::Sizes:
          sizes(rec, n);
          break;
        case Kind::MicroBatches:
          if (auto v = to_int(rec.substr(rec.rfind(' ') + 1))) log_.micro_batches = v;
          break;
        case Kind::PaddedVocab:
          // "> padded vocab (size: 50257) with 47 dummy tokens (new size: 50304)"
          if (auto at = rec.find("(new size: "); at != std::string_view::npos) {
            std::string_view v = rec.substr(at + 11);
            v = v.substr(0, v.find(')'));
            if (auto x = to_int(v)) log_.padded_vocab_size = x;
          }
          break;
      }
    }
  }
  bool glued() const { return glued_; }
  std::optional<std::pair<std::int64_t, double>>
      swift_last_;  ///< the previous ms-swift record: step, running s/it

 private:
  /// torchrun --tee / --redirects put `[<role><local rank>]:` before every line of a worker
  /// (`[default0]:`; newer `[rank0]:`).
  static std::string_view without_tee_prefix(std::string_view s) {
    if (s.empty() || s[0] != '[') return s;
    std::size_t i = 1;
    while (i < s.size() && (std::isalpha(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
    std::size_t digits = i;
    while (i < s.size() && is_digit(s[i])) ++i;
    if (i == digits || i + 1 >= s.size() || s[i] != ']' || s[i + 1] != ':') return s;
    return s.substr(i + 2);
  }

  /// After `see_memory_usage] `: the message, `MA … Max_CA … GB`, or the CPU memory line (left out).
  void deepspeed_memory(std::string_view rest, std::int64_t n) {
    rest = trim(rest);
    if (rest.starts_with("CPU Virtual Memory")) return;
    if (!rest.starts_with("MA ")) {
      deepspeed_label_ = std::string(rest);
      return;
    }
    DeepSpeedMemoryLine m;
    m.line = n;
    m.label = std::move(deepspeed_label_);
    deepspeed_label_.clear();
    std::optional<double> values[4];
    const char* keys[4] = {"MA", "Max_MA", "CA", "Max_CA"};
    std::size_t pos = 0;
    while (pos < rest.size()) {
      std::size_t end = rest.find(' ', pos);
      std::string_view word =
          rest.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
      pos = end == std::string_view::npos ? rest.size() : end + 1;
      for (int k = 0; k < 4; ++k)
        if (word == keys[k]) {
          while (pos < rest.size() && rest[pos] == ' ') ++pos;
          std::size_t vend = rest.find(' ', pos);
          values[k] = to_double(
              rest.substr(pos, vend == std::string_view::npos ? std::string_view::npos : vend - pos));
        }
    }
    if (!values[0] || !values[1] || !values[2] || !values[3]) {
      log_.notes.push_back("line " + std::to_string(n) +
                           ": DeepSpeed see_memory_usage line without MA, Max_MA, CA "
                           "and Max_CA; left out");
      return;
    }
    m.allocated_gib = *values[0];
    m.max_allocated_gib = *values[1];
    m.reserved_gib = *values[2];
    m.max_reserved_gib = *values[3];
    log_.deepspeed_memory.push_back(std::move(m));
  }

  // Prefixes forks put before a record: "> ", ">>> [FS] ", log-level stamps.
  static bool prefix_ok(std::string_view p) {
    p = trim(p);
    // (NeMo 2's progress printer: "Training epoch 0, iteration 3/49 | …")
    return p.empty() || p.back() == '>' || p.back() == ']' || p.back() == ':' ||
           (p.rfind("Training epoch ", 0) == 0 && p.back() == ',');
  }

  /// ms-swift's log record: str() of a dict on stdout (`{'loss': '2.03', 'iteration': '5/100', 'memory(GiB)':
  /// 39.6, 'train_speed(s/it)': 0.566}`) or a JSON line of its logging.jsonl
  /// (swift/megatron/callbacks/print.py; its transformers trainer's `global_step/max_steps` alike).
  /// train_speed is the run's running average (elapsed / steps since start), so an iteration's time is the
  /// interval since the previous record.
  void swift_record(std::string_view s, std::int64_t n, bool cut) {
    std::map<std::string, std::string> kv;
    for (std::size_t i = 0; i < s.size();) {
      const char q = s[i];
      if (q != '\'' && q != '"') {
        ++i;
        continue;
      }
      const std::size_t kend = s.find(q, i + 1);
      if (kend == std::string_view::npos) break;
      std::string key(s.substr(i + 1, kend - i - 1));
      std::size_t j = kend + 1;
      while (j < s.size() && (s[j] == ' ' || s[j] == '\t')) ++j;
      if (j >= s.size() || s[j] != ':') {
        i = kend + 1;
        continue;
      }
      ++j;
      while (j < s.size() && (s[j] == ' ' || s[j] == '\t')) ++j;
      std::string value;
      if (j < s.size() && (s[j] == '\'' || s[j] == '"')) {
        const std::size_t vend = s.find(s[j], j + 1);
        if (vend == std::string_view::npos) break;
        value = std::string(s.substr(j + 1, vend - j - 1));
        i = vend + 1;
      } else {
        std::size_t vend = j;
        while (vend < s.size() && s[vend] != ',' && s[vend] != '}') ++vend;
        value = std::string(trim(s.substr(j, vend - j)));
        i = vend;
      }
      kv[key] = value;
    }
    std::string steps = kv.count("iteration") ? kv["iteration"] : kv["global_step/max_steps"];
    const auto speed = kv.count("train_speed(s/it)") ? to_double(kv["train_speed(s/it)"]) : std::nullopt;
    const std::size_t slash = steps.find('/');
    const auto done =
        slash == std::string::npos ? std::nullopt : to_int(std::string_view(steps).substr(0, slash));
    if (!done || !speed) {
      log_.notes.push_back("line " + std::to_string(n) +
                           ": ms-swift record without its step or train_speed; left out");
      return;
    }
    const double sp = speed.value_or(0.0);
    const std::int64_t step = done.value_or(0);
    MegatronIteration it;
    it.line = n;
    it.unterminated = cut;
    it.iteration = step;
    it.train_iters = to_int(std::string_view(steps).substr(slash + 1)).value_or(0);
    for (const auto& [k, v] : kv) it.fields[k] = v;
    // the interval since the previous record: running averages × steps, differenced
    if (swift_last_ && step > swift_last_->first)
      it.elapsed_ms =
          (sp * static_cast<double>(step) - swift_last_->second * static_cast<double>(swift_last_->first)) /
          static_cast<double>(step - swift_last_->first) * 1000.0;
    else
      it.elapsed_ms = sp * 1000.0;
    swift_last_ = std::make_pair(step, sp);
    if (kv.count("loss"))
      if (auto l = to_double(kv["loss"])) {
        it.losses["loss"] = *l;
        it.lm_loss = l;
      }
    for (const char* k : {"lr", "learning_rate"})
      if (kv.count(k) && !it.learning_rate) it.learning_rate = to_double(kv[k]);
    if (kv.count("grad_norm")) it.grad_norm = to_double(kv["grad_norm"]);
    if (kv.count("tokens_per_gpu_per_sec")) it.tokens_per_gpu_per_s = to_double(kv["tokens_per_gpu_per_sec"]);
    log_.iterations.push_back(std::move(it));
  }

  /// NeMo 1 (PyTorch Lightning) progress bars: `Epoch 0: : 3%|▎ | 3/100 [00:42<22:30,
  /// reduced_train_loss=10.90, global_step=2.000, consumed_samples=768.0, train_step_timing in s=6.100]`,
  /// refreshed with '\r' in one physical line.  Each refresh whose fields hold the step time is an iteration
  /// (global_step + 1, else the bar's count); a refresh of the same step replaces the previous one.
  void lightning_progress(std::string_view text, std::int64_t n, bool terminated) {
    std::size_t pos = 0;
    while (pos < text.size()) {
      std::size_t end = text.find('\r', pos);
      if (end == std::string_view::npos) end = text.size();
      const std::string_view bar = text.substr(pos, end - pos);
      pos = end + 1;
      const std::size_t open = bar.rfind('[');
      if (bar.find("train_step_timing in s=") == std::string_view::npos || open == std::string_view::npos)
        continue;
      std::string_view inner = bar.substr(open + 1);
      const bool closed = inner.find(']') != std::string_view::npos;
      inner = inner.substr(0, inner.find(']'));
      MegatronIteration it;
      it.line = n;
      it.unterminated = !closed || (!terminated && end == text.size());
      // "N/T" before the bracket
      const std::string_view head = trim(bar.substr(0, open));
      const std::size_t slash = head.rfind('/');
      if (slash != std::string_view::npos) {
        std::size_t b = slash;
        while (b > 0 && is_digit(head[b - 1])) --b;
        it.iteration = to_int(head.substr(b, slash - b)).value_or(0);
        it.train_iters = to_int(head.substr(slash + 1)).value_or(0);
      }
      std::size_t at = 0;
      while (at <= inner.size()) {
        std::size_t comma = inner.find(',', at);
        if (comma == std::string_view::npos) comma = inner.size();
        const std::string_view kv = trim(inner.substr(at, comma - at));
        at = comma + 1;
        const std::size_t eq = kv.find('=');
        if (eq == std::string_view::npos) continue;
        const std::string key(trim(kv.substr(0, eq)));
        const std::string_view value = trim(kv.substr(eq + 1));
        it.fields[key] = std::string(value);
        const auto d = to_double(value);
        if (!d) continue;
        if (key == "train_step_timing in s") {
          it.elapsed_ms = *d * 1000.0;
        } else if (key == "global_step") {
          it.iteration = static_cast<std::int64_t>(*d) + 1;
        } else if (key == "consumed_samples") {
          it.consumed_samples = static_cast<std::int64_t>(*d);
        } else if (key == "lr") {
          it.learning_rate = d;
        } else if (key == "grad_norm") {
          it.grad_norm = d;
        } else if (key.ends_with("_loss")) {
          it.losses[key] = *d;
          if (key == "reduced_train_loss") it.lm_loss = d;
        }
      }
      if (!it.elapsed_ms) continue;
      if (!log_.iterations.empty() && log_.iterations.back().iteration == it.iteration &&
          log_.iterations.back().fields.count("train_step_timing in s"))
        log_.iterations.back() = std::move(it);
      else
        log_.iterations.push_back(std::move(it));
    }
  }

  void iteration(std::string_view rec, std::int64_t n, bool cut) {
    MegatronIteration it;
    it.line = n;
    it.unterminated = cut;
    std::string_view s = trim(rec);
    if (!s.empty() && s.front() == '[') {
      std::size_t close = s.find(']');
      it.timestamp = std::string(s.substr(1, close - 1));
      s = trim(s.substr(close + 1));
    }
    std::size_t slash = s.find('/');
    std::size_t bar = s.find('|');
    it.iteration = to_int(s.substr(10, slash - 10)).value_or(0);
    it.train_iters = to_int(s.substr(slash + 1, bar - slash - 1)).value_or(0);
    for (auto [key, value] : bar_fields(s.substr(bar + 1))) {
      std::string k(key);
      it.fields[k] = std::string(value);
      auto d = to_double(value);
      if (k == "elapsed time per iteration (ms)") {
        // AMD Primus: "instantaneous/running average"
        it.elapsed_ms = d ? d : leading_double(value);
      } else if (k == "elapsed time per iteration (s)") {  // Megatron-DeepSpeed (BigScience's fork): seconds
        if (d) it.elapsed_ms = *d * 1000.0;
      } else if (k == "throughput per GPU (TFLOP/s/GPU)") {
        it.tflops_per_gpu = d;
      } else if (k == "TFLOPs" && !it.tflops_per_gpu) {
        it.tflops_per_gpu = d;
      } else if (k == "tokens per gpu per second(tgs)") {
        it.tokens_per_gpu_per_s = d;
      } else if (k == "tokens/s") {  // MindSpeed-LLM FSDP2: all ranks' tokens a second
        it.tokens_per_s = d;
      } else if (k == "compute per GPU (TFLOP/s/GPU)") {  // AMD Primus: "X (avg Y)"
        it.tflops_per_gpu = leading_double(value);
      } else if (k == "tokens/s/GPU inst/harmonic mean" ||  // AMD Primus: "X/Y"
                 k == "Tokens per second per GPU (Tok/s/GPU)") {
        it.tokens_per_gpu_per_s = leading_double(value);
      } else if (k == "mem usages") {  // ROCm/Megatron-LM: 1 - free / total of the device
        it.device_used_fraction = d;
      } else if (k == "hip mem usage/free/total/usage_ratio") {  // AMD Primus: mem_get_info of this rank
        it.device_used_fraction = used_ratio(value);
      } else if (k.starts_with("rank-") && k.ends_with(" rocm max mem usage/usage_ratio")) {
        it.ranks_max_device_used_fraction = used_ratio(value);  // AMD Primus: rocm-smi, max over ranks
      } else if (k == "max_memory_allocated(GB)") {             // MindSpeed-LLM FSDP2: GiB, max over ranks
        it.max_allocated_gib = d;
      } else if (k == "max_memory_reserved(GB)") {
        it.max_reserved_gib = d;
      } else if (k == "learning rate") {
        it.learning_rate = d;
      } else if (k == "global batch size") {
        it.global_batch_size = to_int(value);
      } else if (k == "consumed samples") {
        it.consumed_samples = to_int(value);
      } else if (k == "loss scale") {
        it.loss_scale = d;
      } else if (k == "grad norm") {
        it.grad_norm = d;
      } else if (k == "num zeros") {
        it.num_zeros = d;
      } else if (k == "params norm") {
        it.params_norm = d;
      } else if (k == "number of skipped iterations") {
        it.skipped_iterations = to_int(value);
      } else if (k == "number of nan iterations") {
        it.nan_iterations = to_int(value);
      } else if (k == "train_step_timing in s") {  // NeMo 2 / Lightning: seconds
        if (!it.elapsed_ms && d) it.elapsed_ms = *d * 1000.0;
      } else if (k == "global_batch_size") {
        it.global_batch_size = to_int(value);
      } else if (k == "lr") {
        it.learning_rate = d;
      } else if (k == "consumed_samples") {
        it.consumed_samples = to_int(value);
      } else if (k == "tokens_per_sec_per_gpu") {
        it.tokens_per_gpu_per_s = d;
      } else if (k == "TFLOPS_per_GPU") {
        it.tflops_per_gpu = d;
      } else if (d && (k.ends_with(" loss") || k.ends_with("_loss"))) {
        it.losses[k] = *d;
        if (k == "lm loss") it.lm_loss = d;
      }
    }
    if (cut)
      log_.notes.push_back("line " + std::to_string(n) + ": iteration line without newline (may be cut)");
    log_.iterations.push_back(std::move(it));
  }

  void memory(std::string_view rec, std::int64_t n, bool cut) {
    MegatronMemoryLine m;
    m.line = n;
    m.rank = static_cast<int>(to_int(rec.substr(6, rec.find(']') - 6)).value_or(0));
    std::size_t after = rec.find("(after ");
    std::size_t sp = rec.find(' ', after + 7);
    m.after_iterations = to_int(rec.substr(after + 7, sp - after - 7)).value_or(0);
    std::optional<double> alloc, max_alloc, res, max_res;
    for (auto [key, value] :
         bar_fields(rec.substr(rec.find('|') == std::string_view::npos ? rec.size() : rec.find('|')))) {
      auto d = to_double(value);
      if (key == "allocated")
        alloc = d;
      else if (key == "max allocated")
        max_alloc = d;
      else if (key == "reserved")
        res = d;
      else if (key == "max reserved")
        max_res = d;
      else if (key == "total device memory used")
        m.total_device_used_mib = d;
    }
    if (!alloc || !max_alloc || !res || !max_res || cut) {
      log_.notes.push_back("line " + std::to_string(n) + ": memory line of rank " + std::to_string(m.rank) +
                           (cut ? " cut at the end of the file" : " without all four values") + "; left out");
      return;
    }
    m.allocated_mib = *alloc;
    m.max_allocated_mib = *max_alloc;
    m.reserved_mib = *res;
    m.max_reserved_mib = *max_res;
    log_.memory.push_back(m);
  }

  void billions(std::string_view rec, std::int64_t n) {
    std::size_t at = rec.find(" in billions:");
    std::string_view what = trim(rec.substr(0, at));
    std::string phrase;
    if (what.starts_with("Number of "))
      phrase = std::string(what.substr(10));
    else  // "Total number of parameters" → "total parameters"
      phrase = "total " + std::string(what.substr(16));
    std::string_view value = trim(rec.substr(at + 13));
    std::size_t end = 0;
    while (end < value.size() && (is_digit(value[end]) || value[end] == '.' || value[end] == '-')) ++end;
    auto v = to_double(value.substr(0, end));
    if (!v) return;
    log_.param_counts.push_back({phrase, *v, n});
  }

  void theoretical(std::string_view rec, std::int64_t n) {
    MegatronTheoreticalMemory t;
    t.line = n;
    std::string_view body = rec.substr(rec.find(':') + 1);
    std::size_t pos = 0;
    while (pos < body.size()) {
      std::size_t comma = body.find(',', pos);
      std::string_view part =
          trim(body.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos));
      std::size_t eq = part.find('=');
      if (eq != std::string_view::npos) {
        std::string_view key = trim(part.substr(0, eq));
        std::string_view val = trim(part.substr(eq + 1));
        if (val.ends_with("MB")) val.remove_suffix(2);
        auto v = to_double(val);
        if (key == "weight and optimizer")
          t.weight_and_optimizer_mib = v;
        else if (key == "activation")
          t.activation_mib = v;
        else if (key == "total")
          t.total_mib = v;
      }
      if (comma == std::string_view::npos) break;
      pos = comma + 1;
    }
    log_.theoretical = t;
  }

  void rank_params(std::string_view rec, std::int64_t n) {
    // number of parameters on (tensor, pipeline) model parallel rank (1, 0): 102483968
    std::size_t a0 = rec.find('('), a1 = rec.find(')', a0);
    std::size_t c0 = rec.find('(', a1), c1 = rec.find(')', c0);
    std::size_t colon = rec.find(':', c1);
    if (a1 == std::string_view::npos || c1 == std::string_view::npos || colon == std::string_view::npos)
      return;
    MegatronRankParams p;
    p.line = n;
    auto split = [](std::string_view s) {
      std::vector<std::string_view> out;
      std::size_t pos = 0;
      while (pos <= s.size()) {
        std::size_t c = s.find(',', pos);
        out.push_back(trim(s.substr(pos, c == std::string_view::npos ? std::string_view::npos : c - pos)));
        if (c == std::string_view::npos) break;
        pos = c + 1;
      }
      return out;
    };
    for (auto a : split(rec.substr(a0 + 1, a1 - a0 - 1))) p.axes.emplace_back(a);
    for (auto c : split(rec.substr(c0 + 1, c1 - c0 - 1)))
      p.coords.push_back(static_cast<int>(to_int(c).value_or(-1)));
    auto v = to_int(rec.substr(colon + 1));
    if (!v) return;
    p.parameters = *v;
    log_.rank_params.push_back(p);
  }

  /// "using world size: 16, data-parallel size: 4, context-parallel size: 1 tensor-model-parallel size: 4,
  /// …": each `<name> size: <n>` wherever it stands — Megatron's format string has lost a comma between two
  /// of them in some releases (`context-parallel size: 1 tensor-model-parallel size: 4`, 2024; `hierarchical
  /// context-parallel sizes: None` glued to the next).  The key is the name's first word (`tensor`, `data`,
  /// `context`, `pipeline`, `world`), `encoder-tensor` / `encoder-pipeline` for the encoder's.
  void sizes(std::string_view rec, std::int64_t n) {
    // (`data-parallel-size: 8` in 2020–23's Megatron and Megatron-DeepSpeed: the separator a hyphen)
    constexpr std::string_view kSize = "size:";
    for (std::size_t at = rec.find(kSize); at != std::string_view::npos; at = rec.find(kSize, at + 1)) {
      if (at == 0 || (rec[at - 1] != ' ' && rec[at - 1] != '-')) continue;
      std::size_t begin = at - 1;
      while (begin > 0 && (std::isalpha(static_cast<unsigned char>(rec[begin - 1])) || rec[begin - 1] == '-'))
        --begin;
      std::string_view word = rec.substr(begin, at - 1 - begin);
      if (word.starts_with("None") && word.size() > 4) word.remove_prefix(4);  // `sizes: None` glued to it
      if (word.empty()) continue;
      std::string name(word.substr(0, word.find('-')));
      if (name == "encoder" && word.size() > 8) {
        const std::string_view rest = word.substr(8);
        name += "-" + std::string(rest.substr(0, rest.find('-')));
      }
      std::string_view value = trim(rec.substr(at + kSize.size()));
      std::size_t digits = 0;
      while (digits < value.size() && is_digit(value[digits])) ++digits;
      if (auto v = to_int(value.substr(0, digits))) log_.sizes[name] = *v;
    }
    log_.sizes_line = n;
  }

  // "  seq_length ...................................... 1024"
  void args_line(std::string_view s) {
    if (s.size() < 8 || s[0] != ' ' || s[1] != ' ' || s[2] == ' ') return;
    std::size_t i = 2;
    while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
    if (i == 2 || i + 4 >= s.size() || s[i] != ' ' || s.substr(i + 1, 3) != "...") return;
    std::size_t j = i + 1;
    while (j < s.size() && s[j] == '.') ++j;
    if (j >= s.size() || s[j] != ' ') return;
    log_.args[std::string(s.substr(2, i - 2))] = std::string(trim(s.substr(j + 1)));
  }

  MegatronLog& log_;
  bool glued_ = false;
  std::string deepspeed_label_;  // the see_memory_usage message waiting for its MA line
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string num(double v, int digits) {
  return fixed(v, digits);
}

}  // namespace

std::optional<double> MegatronLog::billions(const std::string& what) const {
  for (const auto& p : param_counts)
    if (p.what == what) return p.billions;
  return std::nullopt;
}

MegatronLog read_megatron_text(std::string_view text, std::string label) {
  MegatronLog log;
  log.file = std::move(label);
  detail::ByteStats stats = detail::byte_stats(text.data(), text.size());
  if (stats.first_nul >= 0)
    throw InputError(log.file + "@" + std::to_string(stats.first_nul), "NUL byte: not a text log");
  log.partial_last_line = !text.empty() && text.back() != '\n';
  log.lines = static_cast<std::int64_t>(stats.newlines) + (log.partial_last_line ? 1 : 0);
  Reader reader(log);
  detail::for_each_line(text, 1, [&](std::string_view line, std::int64_t n, bool terminated) {
    reader.line(line, n, terminated);
    return true;
  });
  if (reader.glued()) log.notes.push_back("several prints glued on one line were split into their records");
  if (log.partial_last_line)
    log.notes.push_back("line " + std::to_string(log.lines) +
                        ": the last line has no newline (log still being written?)");
  return log;
}

MegatronLog read_megatron_log(const std::filesystem::path& file) {
  detail::ByteBuffer buffer;
  detail::read_whole_file(file, buffer);
  return read_megatron_text(buffer.view(), file.string());
}

MegatronSummary summarize_megatron(std::vector<MegatronLog>& logs, int warmup_lines) {
  MegatronSummary s;
  std::map<int, MegatronRankPeak> peaks;
  for (const MegatronLog& log : logs) {
    for (const MegatronMemoryLine& m : log.memory) {
      MegatronRankPeak& p = peaks[m.rank];
      p.rank = m.rank;
      if (p.reports == 0 || m.max_allocated_mib > p.max_allocated_mib) {
        p.max_allocated_mib = m.max_allocated_mib;
        p.file = log.file;
        p.line = m.line;
      }
      p.max_reserved_mib = std::max(p.max_reserved_mib, m.max_reserved_mib);
      ++p.reports;
    }
  }
  for (auto& [r, p] : peaks) s.ranks.push_back(p);

  for (MegatronLog& log : logs) {
    std::vector<const MegatronIteration*> its;
    for (const MegatronIteration& it : log.iterations)
      if (!it.unterminated && it.elapsed_ms) its.push_back(&it);
    if (its.empty()) continue;
    MegatronSteadyState st;
    st.file = log.file;
    st.iteration_lines = static_cast<std::int64_t>(its.size());
    st.first_iteration = its.front()->iteration;
    st.last_iteration = its.back()->iteration;
    std::size_t skip = 0;
    if (warmup_lines >= 0) {
      skip = static_cast<std::size_t>(warmup_lines);
    } else {
      skip = 1;
      while (skip < its.size() && its[skip]->iteration <= 2) ++skip;
    }
    if (skip >= its.size()) {
      log.notes.push_back("every iteration line falls in the warm-up; the steady state uses all " +
                          std::to_string(its.size()));
      skip = 0;
    }
    st.warmup_lines = static_cast<std::int64_t>(skip);
    auto keep_max = [](std::optional<double>& to, const std::optional<double>& v) {
      if (v && (!to || *v > *to)) to = v;
    };
    for (const MegatronIteration* it : its) {
      keep_max(st.max_device_used_fraction, it->device_used_fraction);
      keep_max(st.max_device_used_fraction, it->ranks_max_device_used_fraction);
      keep_max(st.max_allocated_gib, it->max_allocated_gib);
      keep_max(st.max_reserved_gib, it->max_reserved_gib);
    }
    std::vector<double> elapsed, tflops, tgs, logged_tokens;
    std::vector<double> gbs;
    for (std::size_t i = skip; i < its.size(); ++i) {
      elapsed.push_back(*its[i]->elapsed_ms);
      if (its[i]->tflops_per_gpu) tflops.push_back(*its[i]->tflops_per_gpu);
      if (its[i]->tokens_per_gpu_per_s) tgs.push_back(*its[i]->tokens_per_gpu_per_s);
      if (its[i]->tokens_per_s) logged_tokens.push_back(*its[i]->tokens_per_s);
      if (its[i]->global_batch_size) gbs.push_back(static_cast<double>(*its[i]->global_batch_size));
    }
    st.median_elapsed_ms = median(elapsed);
    if (!tflops.empty()) st.median_tflops_per_gpu = median(tflops);
    if (!tgs.empty()) st.median_tokens_per_gpu_per_s = median(tgs);
    auto seq = log.args.find("seq_length");
    std::optional<double> seq_len;
    if (seq != log.args.end()) seq_len = to_double(seq->second);
    if (seq_len && !gbs.empty() && *st.median_elapsed_ms > 0) {
      st.tokens_per_s = median(gbs) * *seq_len / (*st.median_elapsed_ms / 1000.0);
      st.tokens_per_s_from = "global batch × seq_length / median elapsed";
    } else if (!tgs.empty() && log.sizes.count("world")) {
      st.tokens_per_s = median(tgs) * static_cast<double>(log.sizes.at("world"));
      st.tokens_per_s_from = "median tokens per gpu per second × world size";
    } else if (!logged_tokens.empty()) {
      st.tokens_per_s = median(logged_tokens);
      st.tokens_per_s_from = "the lines' median tokens/s (MindSpeed FSDP2: all ranks' tokens)";
    }
    s.steady.push_back(st);
  }
  return s;
}

nlohmann::json megatron_json(const std::vector<MegatronLog>& logs, const MegatronSummary& summary) {
  using nlohmann::json;
  auto opt = [](const auto& v) { return v ? json(*v) : json(nullptr); };
  json files = json::array();
  for (const MegatronLog& log : logs) {
    json f;
    f["file"] = log.file;
    f["lines"] = log.lines;
    f["partial_last_line"] = log.partial_last_line;
    f["memory"] = json::array();
    for (const auto& m : log.memory)
      f["memory"].push_back({{"rank", m.rank},
                             {"after_iterations", m.after_iterations},
                             {"allocated_mib", m.allocated_mib},
                             {"max_allocated_mib", m.max_allocated_mib},
                             {"reserved_mib", m.reserved_mib},
                             {"max_reserved_mib", m.max_reserved_mib},
                             {"total_device_used_mib", opt(m.total_device_used_mib)},
                             {"line", m.line}});
    f["deepspeed_memory"] = json::array();
    for (const auto& m : log.deepspeed_memory)
      f["deepspeed_memory"].push_back({{"label", m.label},
                                       {"allocated_gib", m.allocated_gib},
                                       {"max_allocated_gib", m.max_allocated_gib},
                                       {"reserved_gib", m.reserved_gib},
                                       {"max_reserved_gib", m.max_reserved_gib},
                                       {"line", m.line}});
    f["iterations"] = json::array();
    for (const auto& it : log.iterations)
      f["iterations"].push_back({{"iteration", it.iteration},
                                 {"train_iters", it.train_iters},
                                 {"timestamp", it.timestamp},
                                 {"elapsed_ms", opt(it.elapsed_ms)},
                                 {"tflops_per_gpu", opt(it.tflops_per_gpu)},
                                 {"tokens_per_gpu_per_s", opt(it.tokens_per_gpu_per_s)},
                                 {"learning_rate", opt(it.learning_rate)},
                                 {"global_batch_size", opt(it.global_batch_size)},
                                 {"lm_loss", opt(it.lm_loss)},
                                 {"losses", it.losses},
                                 {"loss_scale", opt(it.loss_scale)},
                                 {"grad_norm", opt(it.grad_norm)},
                                 {"skipped_iterations", opt(it.skipped_iterations)},
                                 {"nan_iterations", opt(it.nan_iterations)},
                                 {"device_used_fraction", opt(it.device_used_fraction)},
                                 {"ranks_max_device_used_fraction", opt(it.ranks_max_device_used_fraction)},
                                 {"max_allocated_gib", opt(it.max_allocated_gib)},
                                 {"max_reserved_gib", opt(it.max_reserved_gib)},
                                 {"fields", it.fields},
                                 {"line", it.line},
                                 {"unterminated", it.unterminated}});
    if (log.theoretical)
      f["theoretical_memory"] = {{"weight_and_optimizer_mib", opt(log.theoretical->weight_and_optimizer_mib)},
                                 {"activation_mib", opt(log.theoretical->activation_mib)},
                                 {"total_mib", opt(log.theoretical->total_mib)},
                                 {"line", log.theoretical->line}};
    f["param_counts"] = json::array();
    for (const auto& p : log.param_counts)
      f["param_counts"].push_back({{"what", p.what}, {"billions", p.billions}, {"line", p.line}});
    f["rank_params"] = json::array();
    for (const auto& p : log.rank_params)
      f["rank_params"].push_back(
          {{"axes", p.axes}, {"coords", p.coords}, {"parameters", p.parameters}, {"line", p.line}});
    f["sizes"] = log.sizes;
    f["micro_batches"] = opt(log.micro_batches);
    f["notes"] = log.notes;
    files.push_back(std::move(f));
  }
  json ranks = json::array();
  for (const auto& r : summary.ranks)
    ranks.push_back({{"rank", r.rank},
                     {"max_allocated_mib", r.max_allocated_mib},
                     {"max_reserved_mib", r.max_reserved_mib},
                     {"file", r.file},
                     {"line", r.line},
                     {"reports", r.reports}});
  json steady = json::array();
  for (const auto& st : summary.steady)
    steady.push_back({{"file", st.file},
                      {"iteration_lines", st.iteration_lines},
                      {"warmup_lines", st.warmup_lines},
                      {"first_iteration", st.first_iteration},
                      {"last_iteration", st.last_iteration},
                      {"median_elapsed_ms", opt(st.median_elapsed_ms)},
                      {"median_tflops_per_gpu", opt(st.median_tflops_per_gpu)},
                      {"median_tokens_per_gpu_per_s", opt(st.median_tokens_per_gpu_per_s)},
                      {"tokens_per_s", opt(st.tokens_per_s)},
                      {"tokens_per_s_from", st.tokens_per_s_from},
                      {"max_device_used_fraction", opt(st.max_device_used_fraction)},
                      {"max_allocated_gib", opt(st.max_allocated_gib)},
                      {"max_reserved_gib", opt(st.max_reserved_gib)}});
  return {{"files", files}, {"ranks", ranks}, {"steady_state", steady}};
}

std::string megatron_text(const std::vector<MegatronLog>& logs, const MegatronSummary& summary) {
  std::ostringstream out;
  using A = TextTable::Align;
  for (const MegatronLog& log : logs) {
    out << log.file << ": " << log.lines << " lines, " << log.iterations.size() << " iteration lines, "
        << log.memory.size() << " memory lines";
    if (!log.sizes.empty()) {
      out << "; sizes";
      for (const auto& [k, v] : log.sizes) out << " " << k << " " << v;
    }
    if (log.micro_batches) out << "; " << *log.micro_batches << " micro batches";
    out << "\n";
    if (log.theoretical) {
      const auto& t = *log.theoretical;
      out << "  theoretical memory (line " << t.line << "): weight and optimizer "
          << (t.weight_and_optimizer_mib ? num(*t.weight_and_optimizer_mib, 2) : "-") << " MiB, activation "
          << (t.activation_mib ? num(*t.activation_mib, 2) : "-") << " MiB, total "
          << (t.total_mib ? num(*t.total_mib, 2) : "-") << " MiB\n";
    }
    for (const auto& p : log.param_counts)
      out << "  " << p.what << " (line " << p.line << "): " << num(p.billions, 4) << " billion\n";
    for (const auto& p : log.rank_params) {
      out << "  parameters on rank (";
      for (std::size_t i = 0; i < p.coords.size(); ++i)
        out << (i ? ", " : "") << p.axes[i] << " " << p.coords[i];
      out << ") (line " << p.line << "): " << with_commas(p.parameters) << "\n";
    }
    for (const auto& m : log.deepspeed_memory)
      out << "  DeepSpeed see_memory_usage (line " << m.line << ")" << (m.label.empty() ? "" : " " + m.label)
          << ": allocated " << num(m.allocated_gib, 2) << " GiB, max allocated "
          << num(m.max_allocated_gib, 2) << " GiB, reserved " << num(m.reserved_gib, 2)
          << " GiB, max reserved " << num(m.max_reserved_gib, 0) << " GiB\n";
    for (const auto& n : log.notes) out << "  note: " << n << "\n";
  }
  if (!summary.ranks.empty()) {
    out << "\nper-rank peak memory (MiB = Megatron's MB)\n";
    TextTable t;
    t.column("rank", A::Right)
        .column("max allocated", A::Right)
        .column("max reserved", A::Right)
        .column("reports", A::Right)
        .column("source");
    for (const auto& r : summary.ranks)
      t.row({std::to_string(r.rank), num(r.max_allocated_mib, 2), num(r.max_reserved_mib, 2),
             std::to_string(r.reports), location(r.file, r.line)});
    out << t.render();
  }
  if (!summary.steady.empty()) {
    out << "\nsteady state (median after warm-up)\n";
    TextTable t;
    t.column("file")
        .column("iterations")
        .column("warm-up lines", A::Right)
        .column("ms/iteration", A::Right)
        .column("TFLOP/s/GPU", A::Right)
        .column("tokens/s", A::Right);
    for (const auto& st : summary.steady)
      t.row({st.file, std::to_string(st.first_iteration) + "–" + std::to_string(st.last_iteration),
             std::to_string(st.warmup_lines), st.median_elapsed_ms ? num(*st.median_elapsed_ms, 1) : "-",
             st.median_tflops_per_gpu ? num(*st.median_tflops_per_gpu, 1) : "-",
             st.tokens_per_s ? num(*st.tokens_per_s, 0) : "-"});
    out << t.render();
    for (const auto& st : summary.steady) {
      if (st.max_allocated_gib || st.max_reserved_gib)
        out << st.file << ": iteration lines' peak memory (largest over the ranks): max allocated "
            << (st.max_allocated_gib ? num(*st.max_allocated_gib, 2) : "-") << " GiB, max reserved "
            << (st.max_reserved_gib ? num(*st.max_reserved_gib, 2) : "-") << " GiB\n";
      if (st.max_device_used_fraction)
        out << st.file << ": device memory in use up to " << num(100 * *st.max_device_used_fraction, 2)
            << " % of a device (ROCm/Megatron-LM's \"mem usages\", Primus's hip / rocm-smi usage ratios: "
               "every process and the allocator's cache)\n";
    }
  }
  return out.str();
}

}  // namespace preflight::log_parse
