#include "machine/host.h"

#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace paradnn {

using Clock = std::chrono::steady_clock;

std::string HostName() {
  char buf[256] = {};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

int CpuQuota(const std::string& quota_file, const std::string& period_file) {
  std::ifstream quota_in(quota_file);
  std::string quota;
  double period = 0;
  if (!(quota_in >> quota)) return 0;
  if (period_file.empty()) {
    quota_in >> period;  // v2: "quota period" in one file
  } else {
    std::ifstream(period_file) >> period;
  }
  if (quota == "max" || quota == "-1" || period <= 0) return 0;
  const double cpus = std::atof(quota.c_str()) / period;
  return cpus > 0 ? static_cast<int>(std::ceil(cpus - 1e-9)) : 0;
}

int64_t AvailableMemory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

int UsableCpus() {
  int cpus = static_cast<int>(std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cpus = CPU_COUNT(&set);
  // This process's cgroup: "0::/path" (v2), or "N:cpu,cpuacct:/path" (v1).
  std::ifstream cgroups("/proc/self/cgroup");
  std::string line;
  while (std::getline(cgroups, line)) {
    const size_t colon = line.find(':'), path = line.find(':', colon + 1);
    if (colon == std::string::npos || path == std::string::npos) continue;
    const std::string controllers = line.substr(colon + 1, path - colon - 1);
    const std::string dir = line.substr(path + 1);
    int quota = 0;
    if (controllers.empty()) {
      quota = CpuQuota("/sys/fs/cgroup" + dir + "/cpu.max");
    } else if (controllers.find("cpu") != std::string::npos) {
      const std::string v1 = "/sys/fs/cgroup/cpu,cpuacct" + dir;
      quota = CpuQuota(v1 + "/cpu.cfs_quota_us", v1 + "/cpu.cfs_period_us");
    }
    if (quota > 0) cpus = std::min(cpus, quota);
  }
  return std::max(1, cpus);
}

std::string CpuName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0)
      return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

namespace {

constexpr size_t kBlock = 4096;  // doubles a write pass numbers from 0

// One pass of `traffic` over n doubles (n a multiple of kBlock); a read's
// sum. Built for the widest vectors the CPU has, as the libraries' kernels
// are: narrower ones would put a cache's roof below what those reach.
__attribute__((target_clones("avx512f", "avx2", "default"))) double Pass(
    Traffic traffic, double* a, const double* b, const double* c, size_t n,
    int threads) {
  const double s = 3.0;
  double sum = 0;
  switch (traffic) {
    case Traffic::kRead:
#pragma omp parallel num_threads(threads) reduction(+ : sum)
    {
      // 32 sums in flight: one chain of dependent adds would time the
      // adder's latency, not the memory.
      double acc[32] = {0};
#pragma omp for schedule(static)
      for (size_t i = 0; i < n / 32; ++i) {
        for (int k = 0; k < 32; ++k) acc[k] += b[32 * i + k];
      }
      for (double v : acc) sum += v;
    } break;
    case Traffic::kTriad:
#pragma omp parallel for num_threads(threads) schedule(static)
      for (size_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
      break;
    case Traffic::kWrite:
      // A value per index, not one constant, which compilers turn into
      // memset (non-temporal stores past the caches); numbered within
      // blocks, as 32-bit integers vectors convert at full width.
#pragma omp parallel for num_threads(threads) schedule(static)
      for (size_t block = 0; block < n / kBlock; ++block) {
        double* out = a + block * kBlock;
        for (int32_t j = 0; j < static_cast<int32_t>(kBlock); ++j) {
          out[j] = s * j;
        }
      }
      break;
  }
  return sum;
}

}  // namespace

double StreamBandwidth(Traffic traffic, size_t bytes_per_array, int threads,
                       int repeats) {
  const size_t n =
      std::max(kBlock, bytes_per_array / sizeof(double) / kBlock * kBlock);
  const bool read = traffic != Traffic::kWrite;
  std::vector<double> a(traffic == Traffic::kRead ? 0 : n),
      b(read ? n : 0, 1.0), c(traffic == Traffic::kTriad ? n : 0, 2.0);
  double best = 0, sum = 0;
  const double bytes =
      (traffic == Traffic::kTriad ? 3 : 1) * n * sizeof(double);
  auto seconds = [](Clock::time_point since) {
    return std::chrono::duration<double>(Clock::now() - since).count();
  };
  for (int r = 0; r < repeats; ++r) {
    if (traffic == Traffic::kWrite) {
      // Writes may also go past the caches (memset's non-temporal stores
      // on large buffers, as some kernels write large outputs), skipping
      // the read of each line before it is written: the faster way is
      // the roof.
      const auto t0 = Clock::now();
#pragma omp parallel num_threads(threads)
      {
        const size_t t = omp_get_thread_num(), k = omp_get_num_threads();
        std::memset(a.data() + n * t / k, 0,
                    (n * (t + 1) / k - n * t / k) * sizeof(double));
      }
      best = std::max(best, bytes / seconds(t0));
    }
    const auto t0 = Clock::now();
    sum = Pass(traffic, a.data(), b.data(), c.data(), n, threads);
    best = std::max(best, bytes / seconds(t0));
  }
  const size_t mid = n / 2;
  const bool right = traffic == Traffic::kRead ? sum == static_cast<double>(n)
                     : traffic == Traffic::kTriad
                         ? a[mid] == 7.0
                         : a[mid] == 3.0 * static_cast<double>(mid % kBlock);
  if (!right) throw std::logic_error("a streaming pass computed wrongly");
  return best;
}

}  // namespace paradnn
