#include "machine/host.h"

#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
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

double StreamBandwidth(Traffic traffic, size_t bytes_per_array, int threads,
                       int repeats) {
  const size_t n = bytes_per_array / sizeof(double);
  const bool read = traffic != Traffic::kWrite;
  std::vector<double> a(traffic == Traffic::kRead ? 0 : n),
      b(read ? n : 0, 1.0), c(traffic == Traffic::kTriad ? n : 0, 2.0);
  const double s = 3.0;
  double best = 0, sum = 0;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = Clock::now();
    switch (traffic) {
      case Traffic::kRead:
        sum = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : sum)
        for (size_t i = 0; i < n; ++i) sum += b[i];
        break;
      case Traffic::kTriad:
#pragma omp parallel for num_threads(threads) schedule(static)
        for (size_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
        break;
      case Traffic::kWrite:
        // A value per index, not one constant: a loop storing a constant
        // becomes memset, whose non-temporal stores no layer's kernel uses.
#pragma omp parallel for num_threads(threads) schedule(static)
        for (size_t i = 0; i < n; ++i) a[i] = s * static_cast<double>(i);
        break;
    }
    const double t = std::chrono::duration<double>(Clock::now() - t0).count();
    const int arrays = traffic == Traffic::kTriad ? 3 : 1;
    best = std::max(best, arrays * n * sizeof(double) / t);
  }
  const bool right = traffic == Traffic::kRead ? sum == static_cast<double>(n)
                     : traffic == Traffic::kTriad ? a[n / 2] == 7.0
                                                  : a[n / 2] == s * (n / 2);
  if (!right) throw std::logic_error("a streaming pass computed wrongly");
  return best;
}

}  // namespace paradnn
