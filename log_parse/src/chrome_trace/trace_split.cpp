#include "chrome_trace/trace_split.hpp"

#include <algorithm>
#include <cstring>

#include "preflight/common/error.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#define PREFLIGHT_SSE2 1
#endif

namespace preflight::log_parse::detail {

namespace {

constexpr std::size_t kLookback = 256;            // bytes kept before the scan point (for the key lookback)
constexpr std::size_t kOutsideLimit = 64u << 20;  // metadata kept from outside the event array
constexpr std::size_t kPadding = 64;              // simdjson needs SIMDJSON_PADDING (64) readable bytes

bool blank(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

std::string describe_byte(unsigned char c) {
  if (c >= 0x20 && c < 0x7f) return std::string("'") + static_cast<char>(c) + "'";
  static const char* hex = "0123456789abcdef";
  return std::string("byte 0x") + hex[c >> 4] + hex[c & 15];
}

#ifdef PREFLIGHT_SSE2
inline std::uint64_t eq_mask(const char* p, char c) {
  const __m128i needle = _mm_set1_epi8(c);
  std::uint64_t m = 0;
  for (int k = 0; k < 4; ++k) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    m |= static_cast<std::uint64_t>(static_cast<std::uint16_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, needle))))
         << (16 * k);
  }
  return m;
}
#endif

#ifdef PREFLIGHT_SSE2
struct Masks {
  std::uint64_t backslash, quote, open, close;
};

Masks masks_sse2(const char* p) {
  return {eq_mask(p, '\\'), eq_mask(p, '"'), eq_mask(p, '{') | eq_mask(p, '['),
          eq_mask(p, '}') | eq_mask(p, ']')};
}

// 64 bytes at p compared with c, as a bit mask (bit i = byte i).
#define PREFLIGHT_EQ64(lo, hi, c)                                                                        \
  (static_cast<std::uint64_t>(                                                                           \
       static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8((lo), _mm256_set1_epi8(c))))) | \
   (static_cast<std::uint64_t>(                                                                          \
        static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8((hi), _mm256_set1_epi8(c)))))  \
    << 32))

__attribute__((target("avx2"))) Masks masks_avx2(const char* p) {
  const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
  // '{' 0x7b and '[' 0x5b differ only in bit 0x20, as do '}' 0x7d and ']' 0x5d: set that bit, compare once.
  const __m256i fold = _mm256_set1_epi8(0x20);
  const __m256i lo_f = _mm256_or_si256(lo, fold), hi_f = _mm256_or_si256(hi, fold);
  return {PREFLIGHT_EQ64(lo, hi, '\\'), PREFLIGHT_EQ64(lo, hi, '"'), PREFLIGHT_EQ64(lo_f, hi_f, '{'),
          PREFLIGHT_EQ64(lo_f, hi_f, '}')};
}
#undef PREFLIGHT_EQ64

bool have_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}
#endif

[[maybe_unused]] inline std::uint64_t prefix_xor(std::uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

}  // namespace

TraceSplitter::TraceSplitter(ByteSource& source, std::string label, std::size_t batch_bytes)
    : source_(source), label_(std::move(label)), batch_bytes_(batch_bytes) {}

void TraceSplitter::fail(std::uint64_t offset, const std::string& what) const {
  throw InputError(label_ + "@" + std::to_string(offset), what);
}

void TraceSplitter::fill() {
  std::size_t keep = scan_ > kLookback ? scan_ - kLookback : 0;
  if (mode_ == Mode::Events || last_elem_end_ > batch_from_)
    keep = std::min<std::size_t>(keep, static_cast<std::size_t>(batch_from_ - base_));
  if (capturing_) keep = std::min<std::size_t>(keep, static_cast<std::size_t>(capture_from_ - base_));
  if (keep > 0) {
    std::memmove(buf_.data(), buf_.data() + keep, filled_ - keep);
    base_ += keep;
    filled_ -= keep;
    scan_ -= keep;
  }
  buf_.set_size(filled_);
  buf_.reserve(filled_ + batch_bytes_);
  std::size_t n = source_.read(buf_.data() + filled_, batch_bytes_);
  filled_ += n;
  buf_.set_size(filled_);
  if (n == 0) eof_ = true;
}

bool TraceSplitter::key_before_is_trace_events(std::size_t at) const {
  static constexpr std::string_view kKey = "\"traceEvents\"";
  std::size_t i = at;
  while (i > 0 && blank(buf_.data()[i - 1])) --i;
  if (i == 0 || buf_.data()[i - 1] != ':') return false;
  --i;
  while (i > 0 && blank(buf_.data()[i - 1])) --i;
  if (i < kKey.size()) return false;
  return std::string_view(buf_.data() + i - kKey.size(), kKey.size()) == kKey;
}

void TraceSplitter::capture_outside(std::size_t to) {
  if (!capturing_ || outside_overflow_) return;
  std::size_t from = static_cast<std::size_t>(capture_from_ - base_);
  if (to > from) outside_.append(buf_.data() + from, to - from);
  capture_from_ = base_ + to;
  if (outside_.size() > kOutsideLimit) {
    outside_overflow_ = true;
    outside_.clear();
    outside_.shrink_to_fit();
  }
}

void TraceSplitter::on_open(char c, std::size_t at) {
  std::uint64_t abs = base_ + at;
  switch (mode_) {
    case Mode::Start:
      root_object_ = c == '{';
      if (root_object_) {
        mode_ = Mode::Object;
        capturing_ = true;
        capture_from_ = abs;
      } else {
        mode_ = Mode::Events;
        events_depth_ = 1;
        batch_from_ = last_elem_end_ = abs + 1;
      }
      break;
    case Mode::Object:
      if (depth_ == 1 && c == '[' && key_before_is_trace_events(at)) {
        mode_ = Mode::Events;
        events_depth_ = 2;
        batch_from_ = last_elem_end_ = abs + 1;
        capture_outside(at + 1);
        capturing_ = false;
      }
      break;
    case Mode::Events:
      if (depth_ == events_depth_) {
        elem_start_ = abs;
        in_elem_ = true;
        starts_.push_back(abs);
      }
      break;
    case Mode::AfterEvents:
      break;
    case Mode::Done:
      fail(abs, "text after the end of the JSON document");
  }
  ++depth_;
}

void TraceSplitter::on_close(char c, std::size_t at) {
  std::uint64_t abs = base_ + at;
  if (mode_ == Mode::Done) fail(abs, "text after the end of the JSON document");
  if (depth_ == 0) fail(abs, std::string("unbalanced '") + c + "'");
  --depth_;
  if (mode_ == Mode::Events) {
    if (depth_ == events_depth_) {
      last_elem_end_ = abs + 1;
      in_elem_ = false;
    } else if (depth_ == events_depth_ - 1) {
      if (c != ']') fail(abs, "'}' where the event array should close with ']'");
      std::size_t from = static_cast<std::size_t>(std::max(last_elem_end_, batch_from_) - base_);
      std::int64_t comma = -1;
      for (std::size_t i = from; i < at; ++i) {
        char b = buf_.data()[i];
        if (b == ',' && comma < 0) {
          comma = static_cast<std::int64_t>(i);
        } else if (!blank(b)) {
          fail(base_ + i, "unexpected " + describe_byte(static_cast<unsigned char>(b)) +
                              " in the event array (events must be JSON objects)");
        }
      }
      if (comma >= 0)
        fail(base_ + static_cast<std::uint64_t>(comma), "',' before the ']' closing the event array");
      events_closed_ = true;
      if (root_object_) {
        mode_ = Mode::AfterEvents;
        capturing_ = true;
        capture_from_ = abs;
      } else {
        mode_ = Mode::Done;
        done_at_ = abs + 1;
      }
    }
  }
  if (depth_ == 0 && (mode_ == Mode::Object || mode_ == Mode::AfterEvents)) {
    capture_outside(at + 1);
    capturing_ = false;
    if (mode_ == Mode::Object)
      throw InputError(label_, "no \"traceEvents\" array in the top-level JSON object");
    mode_ = Mode::Done;
    done_at_ = abs + 1;
  }
}

void TraceSplitter::scan_scalar(std::size_t from, std::size_t to) {
  const char* p = buf_.data();
  for (std::size_t i = from; i < to; ++i) {
    char c = p[i];
    if (in_string_) {
      if (escape_)
        escape_ = false;
      else if (c == '\\')
        escape_ = true;
      else if (c == '"')
        in_string_ = false;
    } else if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      on_open(c, i);
    } else if (c == '}' || c == ']') {
      on_close(c, i);
    }
    if (mode_ == Mode::Done) {
      // Only blanks may follow; checked by the caller from done_at_.
      return;
    }
  }
}

void TraceSplitter::scan_block64(std::size_t at) {
#ifdef PREFLIGHT_SSE2
  const char* p = buf_.data() + at;
  Masks m = have_avx2() ? masks_avx2(p) : masks_sse2(p);
  if (m.backslash || escape_) {
    scan_scalar(at, at + 64);
    return;
  }
  std::uint64_t quote = m.quote, open = m.open, close = m.close;
  std::uint64_t inside = prefix_xor(quote) ^ (in_string_ ? ~0ULL : 0ULL);
  std::uint64_t structural = (open | close) & ~inside;
  in_string_ = (inside >> 63) & 1;
  while (structural) {
    int i = __builtin_ctzll(structural);
    structural &= structural - 1;
    if ((open >> i) & 1)
      on_open(p[i], at + static_cast<std::size_t>(i));
    else
      on_close(p[i], at + static_cast<std::size_t>(i));
    if (mode_ == Mode::Done) return;
  }
#else
  scan_scalar(at, at + 64);
#endif
}

void TraceSplitter::scan_available() {
  std::size_t end = eof_ ? filled_ : scan_ + (filled_ - scan_) / 64 * 64;
  if (mode_ == Mode::Start) {
    const char* p = buf_.data();
    if (base_ + scan_ == 0 && filled_ >= 3 && std::memcmp(p, "\xEF\xBB\xBF", 3) == 0) scan_ = 3;  // UTF-8 BOM
    while (scan_ < filled_ && blank(p[scan_])) ++scan_;
    if (scan_ == filled_) return;
    char c = p[scan_];
    if (c != '{' && c != '[')
      fail(base_ + scan_, "not a Chrome trace: expected '{' or '[' but found " +
                              describe_byte(static_cast<unsigned char>(c)));
    end = eof_ ? filled_ : scan_ + (filled_ - scan_) / 64 * 64;
  }
  while (scan_ + 64 <= end && mode_ != Mode::Done) {
    scan_block64(scan_);
    scan_ += 64;
  }
  if (scan_ < end && mode_ != Mode::Done) scan_scalar(scan_, end);
  if (mode_ == Mode::Done) {
    std::size_t from = done_at_ >= base_ ? static_cast<std::size_t>(done_at_ - base_) : 0;
    for (std::size_t i = from; i < filled_; ++i)
      if (!blank(buf_.data()[i]))
        fail(base_ + i, "text after the end of the JSON document: " +
                            describe_byte(static_cast<unsigned char>(buf_.data()[i])));
    end = filled_;
  }
  scan_ = std::max(scan_, end);
  capture_outside(scan_);
}

void TraceSplitter::finish_at_eof() {
  switch (mode_) {
    case Mode::Start:
      throw InputError(label_, "empty file: not a Chrome trace");
    case Mode::Object:
    case Mode::AfterEvents:
      fail(bytes(), "truncated: the file ends before the top-level JSON object is closed");
    case Mode::Events:
      if (!root_object_ && !in_elem_ && !in_string_ && depth_ == events_depth_) {
        std::size_t from = static_cast<std::size_t>(std::max(last_elem_end_, batch_from_) - base_);
        for (std::size_t i = from; i < filled_; ++i) {
          char b = buf_.data()[i];
          if (!blank(b) && !(b == ',' && i == from))
            fail(base_ + i, "truncated: the file ends inside the event array after " +
                                describe_byte(static_cast<unsigned char>(b)));
        }
        unclosed_array_ = true;
        events_closed_ = true;
        mode_ = Mode::Done;
        return;
      }
      if (in_elem_)
        fail(bytes(),
             "truncated: the file ends inside the event that starts at byte " + std::to_string(elem_start_));
      fail(bytes(), "truncated: the file ends before the event array is closed");
    case Mode::Done:
      return;
  }
}

bool TraceSplitter::make_batch(std::uint64_t end, Batch& batch) {
  std::size_t from = static_cast<std::size_t>(batch_from_ - base_);
  std::size_t to = static_cast<std::size_t>(end - base_);
  const char* p = buf_.data();
  while (from < to && blank(p[from])) ++from;
  if (!first_batch_) {
    if (from >= to || p[from] != ',') fail(base_ + from, "expected ',' between events");
    ++from;
  }
  first_batch_ = false;
  std::size_t len = to - from;
  batch_.set_size(0);
  batch_.reserve(len + 2 + kPadding);
  char* out = batch_.data();
  out[0] = '[';
  std::memcpy(out + 1, p + from, len);
  out[len + 1] = ']';
  std::memset(out + len + 2, 0, kPadding);
  batch.data = out;
  batch.size = len + 2;
  batch.capacity = batch_.capacity();
  batch.offset = base_ + from;
  batch_from_ = end;
  batch_starts_.clear();
  std::size_t k = 0;
  while (k < starts_.size() && starts_[k] < end) ++k;
  batch_starts_.assign(starts_.begin(), starts_.begin() + static_cast<std::ptrdiff_t>(k));
  starts_.erase(starts_.begin(), starts_.begin() + static_cast<std::ptrdiff_t>(k));
  batch.starts = &batch_starts_;
  return true;
}

void TraceSplitter::take_batch(Batch& batch, ByteBuffer& text, std::vector<std::uint64_t>& starts) {
  std::swap(batch_, text);
  batch_starts_.swap(starts);
  batch.data = text.data();
  batch.capacity = text.capacity();
  batch.starts = &starts;
}

bool TraceSplitter::next(Batch& batch) {
  bool finished = false;
  for (;;) {
    bool pending = (mode_ == Mode::Events || events_closed_) && last_elem_end_ > batch_from_;
    if (pending && (last_elem_end_ - batch_from_ >= batch_bytes_ / 2 || events_closed_ || finished))
      return make_batch(last_elem_end_, batch);
    if (finished) return false;
    if (eof_ && scan_ >= filled_) {
      finish_at_eof();
      finished = true;
      continue;
    }
    if (scan_ < filled_ && (eof_ || filled_ - scan_ >= 64)) {
      std::size_t before = scan_;
      scan_available();
      if (scan_ != before || eof_) continue;
    }
    fill();
  }
}

}  // namespace preflight::log_parse::detail
