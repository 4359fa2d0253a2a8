#pragma once
// Streaming splitter for Chrome traces (internal to log_parse): finds the event array — the top-level array,
// or the "traceEvents" array of the top-level object — and hands out batches of whole events as small
// JSON arrays for simdjson, without ever holding the whole file.  Strings (with escapes) and nesting are
// tracked by a 64-byte-block structural scan (SSE2 masks, prefix-xor for string state; blocks with a
// backslash take the scalar path).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "text/byte_source.hpp"
#include "text/file_read.hpp"

namespace preflight::log_parse::detail {

class TraceSplitter {
 public:
  /// A batch: `text` is "[ev,ev,…]" with at least 64 readable bytes after it (simdjson padding);
  /// `offset` is the absolute byte offset (in the decompressed stream) of text[1].
  struct Batch {
    const char* data = nullptr;
    std::size_t size = 0;
    std::size_t capacity = 0;
    std::uint64_t offset = 0;
    /// Absolute offsets of the events' opening '{', in order.
    const std::vector<std::uint64_t>* starts = nullptr;
  };

  /// `label` names the input in errors ("file@offset: …").
  TraceSplitter(ByteSource& source, std::string label, std::size_t batch_bytes = 1u << 20);

  /// The next batch of whole events; false after the last.  Throws InputError(label@offset, …) for a
  /// file that is not a Chrome trace, unbalanced or truncated JSON, or text after the document.
  bool next(Batch& batch);

  /// Moves the last batch's text and event starts into `text`/`starts` (swapping buffers, no copy), so the
  /// batch stays valid while the splitter produces the next one; `batch` is updated to point there.
  void take_batch(Batch& batch, ByteBuffer& text, std::vector<std::uint64_t>& starts);

  bool bare_array() const { return !root_object_; }
  /// The top-level object with the events array emptied ("{…,\"traceEvents\":[],…}"), for metadata; empty
  /// for a bare array or when it grew beyond 64 MiB (then outside_complete() is false).
  const std::string& outside() const { return outside_; }
  bool outside_complete() const { return !outside_overflow_; }
  /// A bare array that ends after a whole event without its closing ']' (allowed by the Chrome trace
  /// format for writers that were killed).
  bool unclosed_array() const { return unclosed_array_; }
  std::uint64_t bytes() const { return base_ + filled_; }
  const std::string& label() const { return label_; }

 private:
  enum class Mode { Start, Object, Events, AfterEvents, Done };

  void fill();
  void scan_available();
  void scan_scalar(std::size_t from, std::size_t to);
  void scan_block64(std::size_t at);
  void on_open(char c, std::size_t at);
  void on_close(char c, std::size_t at);
  void finish_at_eof();
  void capture_outside(std::size_t to);
  bool make_batch(std::uint64_t end, Batch& batch);
  [[noreturn]] void fail(std::uint64_t offset, const std::string& what) const;
  bool key_before_is_trace_events(std::size_t at) const;

  ByteSource& source_;
  std::string label_;
  std::size_t batch_bytes_;
  ByteBuffer buf_;
  std::uint64_t base_ = 0;  // absolute offset of buf_[0]
  std::size_t filled_ = 0;  // bytes in buf_
  std::size_t scan_ = 0;    // next byte to scan
  bool eof_ = false;

  Mode mode_ = Mode::Start;
  int depth_ = 0;
  bool in_string_ = false;
  bool escape_ = false;
  bool root_object_ = false;
  int events_depth_ = -1;
  bool first_batch_ = true;
  bool events_closed_ = false;
  std::uint64_t batch_from_ = 0;     // absolute: start of the events not yet handed out
  std::uint64_t last_elem_end_ = 0;  // absolute: end of the last whole event
  std::uint64_t elem_start_ = 0;     // absolute: start of the event being scanned
  bool in_elem_ = false;
  std::uint64_t done_at_ = 0;  // absolute: end of the document

  std::string outside_;
  bool outside_overflow_ = false;
  bool capturing_ = false;
  std::uint64_t capture_from_ = 0;
  bool unclosed_array_ = false;

  ByteBuffer batch_;
  std::vector<std::uint64_t> starts_;        // event starts not yet handed out
  std::vector<std::uint64_t> batch_starts_;  // those of the current batch
};

}  // namespace preflight::log_parse::detail
