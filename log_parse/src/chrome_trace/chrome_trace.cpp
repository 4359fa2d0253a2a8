#include "preflight/log_parse/chrome_trace.hpp"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "text/byte_source.hpp"
#include "preflight/common/error.hpp"
#include "chrome_trace/trace_split.hpp"

namespace preflight::log_parse {

std::optional<std::int64_t> parse_us_as_ns(std::string_view t) {
  while (!t.empty() && (t.back() == ' ' || t.back() == '\n' || t.back() == '\r' || t.back() == '\t'))
    t.remove_suffix(1);
  while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
  if (t.empty()) return std::nullopt;
  std::size_t i = 0;
  bool negative = false;
  if (t[i] == '-' || t[i] == '+') negative = t[i++] == '-';
  std::int64_t whole = 0;
  std::size_t digits = 0;
  while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
    if (digits++ > 15) return std::nullopt;  // beyond ~3 years in µs·1000 headroom; not a timestamp
    whole = whole * 10 + (t[i++] - '0');
  }
  std::int64_t frac_ns = 0;
  int round_digit = 0;
  std::size_t frac_digits = 0;
  if (i < t.size() && t[i] == '.') {
    ++i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
      if (frac_digits < 3)
        frac_ns = frac_ns * 10 + (t[i] - '0');
      else if (frac_digits == 3)
        round_digit = t[i] - '0';
      ++frac_digits;
      ++i;
    }
    for (std::size_t k = frac_digits; k < 3; ++k) frac_ns *= 10;
  }
  if (digits == 0 && frac_digits == 0) return std::nullopt;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    std::string copy(t);
    char* end = nullptr;
    double us = std::strtod(copy.c_str(), &end);
    if (end != copy.c_str() + copy.size() || !std::isfinite(us)) return std::nullopt;
    return static_cast<std::int64_t>(std::llround(us * 1000.0));
  }
  if (i != t.size()) return std::nullopt;
  std::int64_t ns = whole * 1000 + frac_ns + (round_digit >= 5 ? 1 : 0);
  return negative ? -ns : ns;
}

namespace {

namespace dom = simdjson::dom;

std::optional<std::int64_t> id_number(std::string_view text) {
  std::size_t n = text.size();
  if (n == 0 || n > 19) return std::nullopt;
  bool neg = text[0] == '-';
  std::size_t i = neg ? 1 : 0;
  if (i == n) return std::nullopt;
  std::int64_t v = 0;
  for (; i < n; ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    v = v * 10 + (text[i] - '0');
  }
  return neg ? -v : v;
}

// Text of a DOM number used as a name.
std::string number_text(const dom::element& e) {
  std::int64_t i;
  if (!e.get_int64().get(i)) return std::to_string(i);
  std::uint64_t u;
  if (!e.get_uint64().get(u)) return std::to_string(u);
  double d = 0;
  if (e.get_double().get(d)) return {};
  char buf[64];
  // 17 significant digits round-trip a double; enough for µs timestamps with a ns fraction below 2^53 ns.
  std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}

class EventParser {
 public:
  EventParser(const std::string& label, const TraceEventHandler& on_event)
      : label_(label), on_event_(on_event) {}

  std::uint64_t events() const { return events_; }

  /// Delivers the events of a batch parsed into `root` (or reports `parse_error` at its event).
  void deliver(const detail::TraceSplitter::Batch& batch, const dom::element& root,
               simdjson::error_code parse_error) {
    const std::vector<std::uint64_t>& starts = *batch.starts;
    if (parse_error) locate_error(batch, parse_error);
    dom::array arr;
    if (root.get_array().get(arr)) locate_error(batch, simdjson::INCORRECT_TYPE);
    std::size_t k = 0;
    for (dom::element e : arr) {
      std::uint64_t offset = k < starts.size() ? starts[k] : (starts.empty() ? batch.offset : starts.back());
      ++k;
      dom::object obj;
      if (e.get_object().get(obj)) throw InputError(where(offset), "an event is not a JSON object");
      TraceEvent ev;
      ev.offset = offset;
      dom::element args;
      bool has_args = false;
      for (dom::key_value_pair kv : obj) {
        std::string_view key = kv.key;
        const dom::element& v = kv.value;
        if (key.empty()) continue;
        switch (key[0]) {
          case 'p':
            if (key == "ph")
              ev.ph = first_char(v);
            else if (key == "pid")
              ev.pid = read_id(v, offset, "pid");
            break;
          case 'n':
            if (key == "name") ev.name = read_text(v);
            break;
          case 'c':
            if (key == "cat") ev.cat = read_text(v);
            break;
          case 't':
            if (key == "tid")
              ev.tid = read_id(v, offset, "tid");
            else if (key == "ts")
              ev.ts_ns = read_time(v, offset, "ts");
            break;
          case 'd':
            if (key == "dur") ev.dur_ns = read_time(v, offset, "dur");
            break;
          case 'a':
            if (key == "args" && v.is_object()) {
              args = v;
              has_args = true;
            }
            break;
          default:
            break;
        }
      }
      if (has_args) {
        ev.args_ = &args;
        if (ev.ph == 'M') {
          std::string_view n;
          if (!args["name"].get_string().get(n) || !args["labels"].get_string().get(n)) ev.args_name = n;
        }
      }
      ++events_;
      on_event_(ev);
    }
  }

 private:
  std::string where(std::uint64_t offset) const { return label_ + "@" + std::to_string(offset); }

  // The batch did not parse: find the first event that does not parse on its own, for its offset.
  [[noreturn]] void locate_error(const detail::TraceSplitter::Batch& batch,
                                 simdjson::error_code batch_error) {
    const std::vector<std::uint64_t>& starts = *batch.starts;
    dom::parser one;
    for (std::size_t k = 0; k < starts.size(); ++k) {
      std::size_t from = static_cast<std::size_t>(starts[k] - batch.offset) + 1;
      std::size_t to =
          k + 1 < starts.size() ? static_cast<std::size_t>(starts[k + 1] - batch.offset) + 1 : batch.size - 1;
      std::string_view text(batch.data + from, to - from);
      while (!text.empty() && (text.back() == ' ' || text.back() == '\n' || text.back() == '\r' ||
                               text.back() == '\t' || text.back() == ','))
        text.remove_suffix(1);
      simdjson::padded_string padded(text);
      dom::element e;
      if (auto err = one.parse(padded).get(e))
        throw InputError(where(starts[k]), std::string("invalid JSON in the event that starts here: ") +
                                               simdjson::error_message(err));
    }
    throw InputError(where(batch.offset),
                     std::string("invalid JSON in the event array: ") + simdjson::error_message(batch_error));
  }

  static char first_char(const dom::element& v) {
    std::string_view s;
    if (v.get_string().get(s) || s.empty()) return 0;
    return s[0];
  }

  std::string_view read_text(const dom::element& v) {
    std::string_view s;
    if (!v.get_string().get(s)) return s;
    if (v.is_number()) {
      scratch_.push_back(number_text(v));
      return scratch_.back();
    }
    return {};
  }

  TraceId read_id(const dom::element& v, std::uint64_t offset, const char* key) {
    TraceId id;
    if (v.is_null()) return id;
    id.present = true;
    std::string_view s;
    if (!v.get_string().get(s)) {
      if (auto n = id_number(s)) {
        id.number = *n;
      } else {
        id.numeric = false;
        id.text = s;
      }
      return id;
    }
    std::int64_t i;
    if (!v.get_int64().get(i)) {
      id.number = i;
      return id;
    }
    double d;
    if (!v.get_double().get(d) && d == static_cast<double>(static_cast<std::int64_t>(d))) {
      id.number = static_cast<std::int64_t>(d);
      return id;
    }
    throw InputError(where(offset), std::string("\"") + key + "\" is neither an integer nor a string");
  }

  std::optional<std::int64_t> read_time(const dom::element& v, std::uint64_t offset, const char* key) {
    if (v.is_null()) return std::nullopt;
    std::string_view s;
    std::optional<std::int64_t> ns;
    if (!v.get_string().get(s)) {
      ns = parse_us_as_ns(s);
    } else {
      std::int64_t i;
      if (!v.get_int64().get(i) && i < INT64_MAX / 1000 && i > INT64_MIN / 1000) {
        ns = i * 1000;
      } else {
        double d;
        if (!v.get_double().get(d)) ns = static_cast<std::int64_t>(std::llround(d * 1000.0));
      }
    }
    if (!ns) throw InputError(where(offset), std::string("\"") + key + "\" is not a number");
    return ns;
  }

  const std::string& label_;
  const TraceEventHandler& on_event_;
  std::vector<std::string> scratch_;
  std::uint64_t events_ = 0;
};

void read_outside(const std::string& outside, ChromeTraceInfo& info) {
  if (outside.empty()) return;
  simdjson::dom::parser p;
  simdjson::dom::element root;
  if (p.parse(outside).get(root)) return;  // the events were fine; metadata is optional
  std::int64_t base = 0;
  if (!root["baseTimeNanoseconds"].get_int64().get(base)) info.base_time_ns = base;
  std::string_view unit;
  if (!root["displayTimeUnit"].get_string().get(unit)) info.display_time_unit = std::string(unit);
  std::int64_t v = 0;
  if (!root["distributedInfo"]["rank"].get_int64().get(v)) info.rank = v;
  if (!root["distributedInfo"]["world_size"].get_int64().get(v)) info.world_size = v;
}

// Threads: a reader (read, structural scan, batch copy) fills slots; parse workers run simdjson on them;
// the caller's thread walks each parsed batch and calls the handler, strictly in file order.  kSlots bounds
// the memory: each slot holds one batch and its parse.
class BatchPipe {
 public:
  static constexpr std::size_t kSlots = 4;
  struct Slot {
    detail::TraceSplitter::Batch batch;
    detail::ByteBuffer text;
    std::vector<std::uint64_t> starts;
    dom::parser parser;
    dom::element root;
    simdjson::error_code error = simdjson::SUCCESS;
    std::uint64_t seq = 0;
    enum class State { Free, Filled, Parsing, Parsed } state = State::Free;
  };

  BatchPipe(detail::TraceSplitter& splitter, unsigned workers) : splitter_(splitter), slots_(kSlots) {
    reader_ = std::thread([this] { produce(); });
    for (unsigned i = 0; i < workers; ++i) parsers_.emplace_back([this] { parse_loop(); });
  }
  ~BatchPipe() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    reader_.join();
    for (auto& t : parsers_) t.join();
  }
  BatchPipe(const BatchPipe&) = delete;
  BatchPipe& operator=(const BatchPipe&) = delete;

  /// The next batch in file order, parsed; nullptr at the end (rethrows the reader's error in order).
  Slot* next() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      for (Slot& s : slots_)
        if (s.state == Slot::State::Parsed && s.seq == next_seq_) {
          ++next_seq_;
          return &s;
        }
      if (done_ && filled_seq_ == next_seq_) {
        if (error_) std::rethrow_exception(error_);
        return nullptr;
      }
      changed_.wait(lock);
    }
  }
  void release(Slot* s) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      s->state = Slot::State::Free;
    }
    changed_.notify_all();
  }

 private:
  void produce() {
    try {
      for (;;) {
        Slot* slot = nullptr;
        {
          std::unique_lock<std::mutex> lock(mutex_);
          changed_.wait(lock, [&] {
            if (stop_) return true;
            for (Slot& s : slots_)
              if (s.state == Slot::State::Free) return true;
            return false;
          });
          if (stop_) break;
          for (Slot& s : slots_)
            if (s.state == Slot::State::Free) {
              slot = &s;
              break;
            }
        }
        if (!splitter_.next(slot->batch)) break;
        splitter_.take_batch(slot->batch, slot->text, slot->starts);
        {
          std::lock_guard<std::mutex> lock(mutex_);
          slot->seq = filled_seq_++;
          slot->state = Slot::State::Filled;
        }
        changed_.notify_all();
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    changed_.notify_all();
  }

  void parse_loop() {
    for (;;) {
      Slot* slot = nullptr;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] {
          if (stop_) return true;
          for (Slot& s : slots_)
            if (s.state == Slot::State::Filled) return true;
          return done_ && !any_filled();
        });
        if (stop_) return;
        for (Slot& s : slots_)
          if (s.state == Slot::State::Filled && (!slot || s.seq < slot->seq)) slot = &s;
        if (!slot) return;  // reader done, nothing left
        slot->state = Slot::State::Parsing;
      }
      slot->error = slot->parser.parse(slot->batch.data, slot->batch.size, false).get(slot->root);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        slot->state = Slot::State::Parsed;
      }
      changed_.notify_all();
    }
  }
  bool any_filled() const {
    for (const Slot& s : slots_)
      if (s.state == Slot::State::Filled) return true;
    return false;
  }

  detail::TraceSplitter& splitter_;
  std::vector<Slot> slots_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stop_ = false, done_ = false;
  std::uint64_t filled_seq_ = 0, next_seq_ = 0;
  std::exception_ptr error_;
  std::thread reader_;
  std::vector<std::thread> parsers_;
};

ChromeTraceInfo read_from(detail::ByteSource& source, const std::string& label,
                          const TraceEventHandler& on_event) {
  ChromeTraceInfo info;
  info.file = label;
  info.gzip = source.gzip();
  detail::TraceSplitter splitter(source, label);
  EventParser parser(label, on_event);
  {
    unsigned workers = std::clamp(std::thread::hardware_concurrency(), 1u, 2u);
    BatchPipe pipe(splitter, workers);
    while (BatchPipe::Slot* slot = pipe.next()) {
      parser.deliver(slot->batch, slot->root, slot->error);
      pipe.release(slot);
    }
  }
  info.bare_array = splitter.bare_array();
  info.unclosed_array = splitter.unclosed_array();
  info.bytes = splitter.bytes();
  info.events = parser.events();
  read_outside(splitter.outside(), info);
  return info;
}

}  // namespace

namespace {
const simdjson::dom::element* args_of(const TraceEvent& e) {
  return static_cast<const simdjson::dom::element*>(e.args_);
}
}  // namespace

std::optional<double> TraceEvent::arg_number(std::string_view key) const {
  if (!args_) return std::nullopt;
  simdjson::dom::element v;
  if ((*args_of(*this))[key].get(v)) return std::nullopt;
  double d;
  if (!v.get_double().get(d)) return d;
  std::int64_t i;
  if (!v.get_int64().get(i)) return static_cast<double>(i);
  std::uint64_t u;
  if (!v.get_uint64().get(u)) return static_cast<double>(u);
  std::string_view s;
  if (!v.get_string().get(s))
    if (auto ns = parse_us_as_ns(s)) return static_cast<double>(*ns) / 1000.0;
  return std::nullopt;
}

std::optional<std::int64_t> TraceEvent::arg_int(std::string_view key) const {
  if (!args_) return std::nullopt;
  simdjson::dom::element v;
  if ((*args_of(*this))[key].get(v)) return std::nullopt;
  std::int64_t i;
  if (!v.get_int64().get(i)) return i;
  std::string_view s;
  if (!v.get_string().get(s)) return id_number(s);
  return std::nullopt;
}

std::optional<std::string_view> TraceEvent::arg_string(std::string_view key) const {
  if (!args_) return std::nullopt;
  std::string_view s;
  if ((*args_of(*this))[key].get_string().get(s)) return std::nullopt;
  return s;
}

std::string TraceEvent::args_json() const {
  return args_ ? simdjson::minify(*args_of(*this)) : std::string();
}

ChromeTraceInfo read_chrome_trace(const std::filesystem::path& file, const TraceEventHandler& on_event) {
  auto source = detail::open_byte_source(file);
  return read_from(*source, file.string(), on_event);
}

ChromeTraceInfo read_chrome_trace_text(std::string_view text, const std::string& label,
                                       const TraceEventHandler& on_event) {
  auto source = detail::memory_byte_source(text);
  return read_from(*source, label, on_event);
}

}  // namespace preflight::log_parse
