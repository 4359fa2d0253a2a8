#include "text/byte_scan.hpp"

#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PREFLIGHT_X86 1
#endif

namespace preflight::log_parse::detail {

namespace {

ByteStats scalar_stats(const char* p, std::size_t n, std::size_t base) {
  ByteStats s;
  for (std::size_t i = 0; i < n; ++i) {
    s.newlines += p[i] == '\n';
    if (p[i] == '\0' && s.first_nul < 0) s.first_nul = static_cast<std::int64_t>(base + i);
  }
  return s;
}

std::int64_t find_nul(const char* p, std::size_t n, std::size_t base) {
  const void* z = std::memchr(p, 0, n);
  return z ? static_cast<std::int64_t>(base + (static_cast<const char*>(z) - p)) : -1;
}

#ifdef PREFLIGHT_X86
// Byte counters (cmpeq gives -1 per match; subtracting adds 1) summed with SAD every 255 vectors so
// no 8-bit lane overflows.
__attribute__((target("avx2"))) ByteStats avx2_stats(const char* p, std::size_t n) {
  ByteStats s;
  const __m256i nl = _mm256_set1_epi8('\n');
  const __m256i zero = _mm256_setzero_si256();
  std::size_t i = 0;
  while (i + 32 <= n) {
    __m256i acc = zero, nuls = zero;
    std::size_t end = i + 255 * 32 < n ? i + 255 * 32 : n - (n - i) % 32;
    for (; i < end; i += 32) {
      __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
      acc = _mm256_sub_epi8(acc, _mm256_cmpeq_epi8(v, nl));
      nuls = _mm256_or_si256(nuls, _mm256_cmpeq_epi8(v, zero));
    }
    __m256i sums = _mm256_sad_epu8(acc, zero);
    s.newlines += static_cast<std::uint64_t>(_mm256_extract_epi64(sums, 0) + _mm256_extract_epi64(sums, 1) +
                                             _mm256_extract_epi64(sums, 2) + _mm256_extract_epi64(sums, 3));
    if (s.first_nul < 0 && !_mm256_testz_si256(nuls, nuls)) s.first_nul = find_nul(p, i, 0);
  }
  ByteStats rest = scalar_stats(p + i, n - i, i);
  s.newlines += rest.newlines;
  if (s.first_nul < 0) s.first_nul = rest.first_nul;
  return s;
}

ByteStats sse2_stats(const char* p, std::size_t n) {
  ByteStats s;
  const __m128i nl = _mm_set1_epi8('\n');
  const __m128i zero = _mm_setzero_si128();
  std::size_t i = 0;
  while (i + 16 <= n) {
    __m128i acc = zero, nuls = zero;
    std::size_t end = i + 255 * 16 < n ? i + 255 * 16 : n - (n - i) % 16;
    for (; i < end; i += 16) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
      acc = _mm_sub_epi8(acc, _mm_cmpeq_epi8(v, nl));
      nuls = _mm_or_si128(nuls, _mm_cmpeq_epi8(v, zero));
    }
    __m128i sums = _mm_sad_epu8(acc, zero);
    s.newlines += static_cast<std::uint64_t>(_mm_cvtsi128_si64(sums) +
                                             _mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums)));
    if (s.first_nul < 0 && _mm_movemask_epi8(_mm_cmpeq_epi8(nuls, zero)) != 0xFFFF)
      s.first_nul = find_nul(p, i, 0);
  }
  ByteStats rest = scalar_stats(p + i, n - i, i);
  s.newlines += rest.newlines;
  if (s.first_nul < 0) s.first_nul = rest.first_nul;
  return s;
}

bool have_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}
#endif

}  // namespace

ByteStats byte_stats(const char* data, std::size_t size) {
#ifdef PREFLIGHT_X86
  return have_avx2() ? avx2_stats(data, size) : sse2_stats(data, size);
#else
  return scalar_stats(data, size, 0);
#endif
}

}  // namespace preflight::log_parse::detail
