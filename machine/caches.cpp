#include "machine/caches.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace paradnn {
namespace {

constexpr int64_t kLine = 64;
// The base page, which a buffer not given huge pages is made of
// (transparent huge pages are often only on request).
constexpr int64_t kPage = 4096;

#if defined(__x86_64__)
// clflush orders every flush after the one before: 50x slower than
// clflushopt (74 ms against 1.4 ms for 32 MB here).
bool HasClflushopt() {
  unsigned a, b, c, d;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 23));
}

__attribute__((target("clflushopt"))) void FlushLineOpt(const char* p) {
  _mm_clflushopt(const_cast<char*>(p));
}
#endif

void FlushLine(const char* p) {
#if defined(__x86_64__)
  static const bool opt = HasClflushopt();
  if (opt) {
    FlushLineOpt(p);
  } else {
    _mm_clflush(p);
  }
#elif defined(__aarch64__)
  asm volatile("dc civac, %0" ::"r"(p) : "memory");
#endif
}

}  // namespace

size_t KernelCacheBytes(int level) {
  for (int index = 0;; ++index) {
    const std::string dir =
        "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    int found = 0;
    size_t kb = 0;
    char unit = 0;
    if (!(std::ifstream(dir + "/level") >> found)) break;
    if (found == level && std::ifstream(dir + "/size") >> kb >> unit) {
      return kb << (unit == 'M' ? 20 : 10);
    }
  }
  return 0;
}

size_t CpuidCacheBytes(int level) {
  const long bytes =
      sysconf(level == 2 ? _SC_LEVEL2_CACHE_SIZE : _SC_LEVEL3_CACHE_SIZE);
  return bytes > 0 ? bytes : 0;
}

bool AmdCacheLeafMissing() {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return false;
  // "AuthenticAMD", in the order CPUID returns it: EBX, EDX, ECX.
  const bool amd = b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163;
  if (!amd || !__get_cpuid(0x80000001, &a, &b, &c, &d)) return false;
  return (c >> 22 & 1) == 0;
#else
  return false;
#endif
}

int64_t L2Bytes() {
  static const int64_t l2 = [] {
    const size_t kernel = KernelCacheBytes(2), cpuid = CpuidCacheBytes(2);
    return kernel > 0 ? kernel : cpuid > 0 ? cpuid : size_t{1} << 20;
  }();
  return l2;
}

namespace {

// One cache line of a chase: where the next load goes.
struct Line {
  Line* next;
  char rest[kLine - sizeof(Line*)];
};

Line* volatile chase_end;  // keeps the chase's loads from being optimized out

// Links `lines` lines into one cycle in random order (Sattolo's shuffle):
// every load depends on the one before, and no prefetcher guesses the next.
void LinkCycle(Line* line, size_t lines, std::mt19937_64& random) {
  std::vector<uint32_t> order(lines);
  std::iota(order.begin(), order.end(), 0);
  for (size_t i = lines - 1; i > 0; --i) {
    std::swap(order[i], order[random() % i]);
  }
  for (size_t i = 0; i < lines; ++i) line[i].next = &line[order[i]];
}

// Nanoseconds per load of `loads` loads along the cycle from `*from`.
double ChaseNs(Line** from, size_t loads) {
  using Clock = std::chrono::steady_clock;
  Line* p = *from;
  const auto start = Clock::now();
  for (size_t i = 0; i < loads; ++i) p = p->next;
  const double ns =
      std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  chase_end = *from = p;
  return ns / static_cast<double>(loads);
}

}  // namespace

size_t MeasureL3Bytes(size_t l2, size_t most) {
  constexpr size_t kHuge = size_t{2} << 20;
  constexpr size_t kLoads = size_t{1} << 15;
  constexpr int kPasses = 3;
  // Buffers from two L2s up, each a quarter larger than the one before
  // (in whole MBs).
  std::vector<size_t> sizes;
  for (size_t s = std::max<size_t>(2 * l2, kHuge); s <= most;
       s = std::max(s + (1 << 20), (s + s / 4) >> 20 << 20)) {
    sizes.push_back(s);
  }
  if (sizes.empty()) return most;
  // Memory's latency: loads of lines just flushed, from a buffer as large
  // as those the L3 no longer holds (a virtual machine's page walks grow
  // with the buffer).
  const size_t far = std::min(most, size_t{64} << 20);
  const size_t mapped_bytes = std::max(sizes.back(), far) + kHuge;
  // Huge pages: in 4 KB pages the chase would time the TLB's misses too.
  void* mapped = mmap(nullptr, mapped_bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) return most;
  auto* first = reinterpret_cast<Line*>(
      (reinterpret_cast<uintptr_t>(mapped) + kHuge - 1) & ~(kHuge - 1));
  madvise(first, mapped_bytes - kHuge, MADV_HUGEPAGE);
  std::mt19937_64 random(1);
  // Another machine's work on the shared caches and memory only ever
  // slows a chase: each buffer keeps its least time over the passes.
  std::vector<double> ns(sizes.size(), 1e300);
  double memory_ns = 1e300;
  double hit_ns = 1e300;
  for (int pass = 0; pass < kPasses; ++pass) {
    LinkCycle(first, far / kLine, random);
    FlushFromCaches(first, far, 1);
    Line* p = first;
    memory_ns = std::min(memory_ns, ChaseNs(&p, kLoads));
    // Up to the second buffer in a row of which fewer than half the loads
    // hit, between the smallest buffers' latency and memory's.
    for (size_t k = 0, missed = 0; k < sizes.size() && missed < 2; ++k) {
      const size_t lines = sizes[k] / kLine;
      LinkCycle(first, lines, random);
      p = first;
      // A whole turn first: each line is then read again after all the
      // buffer's others, as a layer's data after the rest of a model's.
      ChaseNs(&p, lines);
      const double pass_ns = ChaseNs(&p, std::min(lines, kLoads));
      ns[k] = std::min(ns[k], pass_ns);
      hit_ns = std::min(hit_ns, pass_ns);
      missed = pass_ns > (hit_ns + memory_ns) / 2 ? missed + 1 : 0;
    }
  }
  munmap(mapped, mapped_bytes);
  size_t l3 = sizes[0];
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (ns[k] <= (hit_ns + memory_ns) / 2) l3 = sizes[k];
  }
  return l3;
}

void FlushFromCaches(const void* data, size_t bytes, int threads) {
  const auto* first = static_cast<const char*>(data);
  const char* start = first - reinterpret_cast<uintptr_t>(first) % kLine;
  const int64_t lines = (first + bytes - start + kLine - 1) / kLine;
#pragma omp parallel num_threads(threads)
  {
#pragma omp for schedule(static)
    for (int64_t i = 0; i < lines; ++i) FlushLine(start + i * kLine);
#if defined(__x86_64__)
    _mm_mfence();
#elif defined(__aarch64__)
    asm volatile("dsb ish" ::: "memory");
#endif
  }
}

namespace {

// Inside a large model a layer finds its pages' translations gone: at
// least this much other data passes between two uses of a page.
constexpr size_t kOtherBytes = size_t{256} << 20;

// At least `bytes` of other data, kept for the process: a bricks run
// cools its bricks thousands of times. Grown, never shrunk: in a run of
// both backends, oneDNN's fill (which may want more than kOtherBytes) and
// LibTorch's translations take turns at it.
char* OtherData(size_t bytes) {
  static std::vector<char> other;
  if (other.size() < bytes) other.assign(bytes, 0);
  return other.data();
}

}  // namespace

void FillCachesWithOtherData(size_t l3, int threads) {
  // Twice the L3: writing the L3's size once left some of its older lines
  // in place (its replacement is not LRU), and oneDNN's CNN bricks then
  // estimated 0.91-0.93 of their measured step where twice gave 0.98-0.99
  // (docs/bricks.md at 23ff8d0). At least kOtherBytes: on a virtual EPYC of 8
  // MB of L3 fills of 16 and 64 MB left oneDNN's cold CNN bricks at 0.82 and
  // 0.90 of the models' steps, 256 MB and 1 GB at 0.99-1.03 (docs/bricks.md at
  // 23ff8d0, "Where the kernel does not say").
  const size_t bytes = std::max(2 * l3, kOtherBytes);
  volatile char* p = OtherData(bytes);
  const int64_t lines = static_cast<int64_t>(bytes) / kLine;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < lines; ++i) p[i * kLine] = static_cast<char>(i);
}

void DropTranslations(int threads) {
  const volatile char* p = OtherData(kOtherBytes);
  const int64_t pages = static_cast<int64_t>(kOtherBytes / kPage);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < pages; ++i) (void)p[i * kPage];
}

void ReadIntoCaches(const void* data, size_t bytes, int threads) {
  const auto* p = static_cast<const volatile char*>(data);
  const int64_t lines = static_cast<int64_t>((bytes + kLine - 1) / kLine);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < lines; ++i) (void)p[i * kLine];
}

}  // namespace paradnn
