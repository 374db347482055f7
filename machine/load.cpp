#include "machine/load.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace paradnn {
namespace {

std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// "0-3,6": the CPUs this process may run on.
std::string Affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return "?";
  std::string out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    int last = cpu;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set)) ++last;
    if (!out.empty()) out += ",";
    out += std::to_string(cpu);
    if (last > cpu) out += "-" + std::to_string(last);
    cpu = last;
  }
  return out;
}

// The bracketed choice of a sysfs multiple choice ("always [madvise] never").
std::string Chosen(const std::string& path) {
  const std::string line = FirstLine(path);
  const size_t open = line.find('['), close = line.find(']');
  if (open == std::string::npos || close == std::string::npos) {
    return line.empty() ? "unknown" : line;
  }
  return line.substr(open + 1, close - open - 1);
}

std::string Smt() {
  const std::string active = FirstLine("/sys/devices/system/cpu/smt/active");
  const std::string siblings =
      FirstLine("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list");
  std::string out = active == "1" ? "on" : active == "0" ? "off" : "unknown";
  if (!siblings.empty())
    out += " (CPU 0 shares its core with " + siblings + ")";
  return out;
}

// "2000-3700 MHz" over the CPUs /proc/cpuinfo lists, and the governor.
std::string Frequency() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  double low = 0, high = 0;
  while (std::getline(in, line)) {
    if (line.rfind("cpu MHz", 0) != 0) continue;
    const double mhz = std::atof(line.substr(line.find(':') + 1).c_str());
    low = low == 0 ? mhz : std::min(low, mhz);
    high = std::max(high, mhz);
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.0f-%.0f MHz", low, high);
  std::string out = buf;
  const std::string governor =
      FirstLine("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  out += governor.empty() ? " (no cpufreq governor visible)"
                          : " (governor " + governor + ")";
  return out;
}

std::string Percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", 100 * share);
  return buf;
}

}  // namespace

CpuTimes ReadCpuTimes() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  in >> cpu;
  CpuTimes t;
  // user nice system idle iowait irq softirq steal (guests are in user).
  double v[8] = {0};
  for (double& x : v) in >> x;
  for (double x : v) t.total += x;
  t.idle = v[3] + v[4];
  t.steal = v[7];
  return t;
}

MachineSample Sample(const CpuTimes& before, const CpuTimes& after,
                     const std::string& over) {
  MachineSample m;
  const double total = std::max(1.0, after.total - before.total);
  const double cpus = static_cast<double>(sysconf(_SC_NPROCESSORS_ONLN));
  m.busy_cpus = cpus * (total - (after.idle - before.idle)) / total;
  m.steal = (after.steal - before.steal) / total;
  char busy[96];
  std::snprintf(busy, sizeof(busy), "%.2f of %d CPUs busy, %s stolen (%s)",
                m.busy_cpus, static_cast<int>(cpus), Percent(m.steal).c_str(),
                over.c_str());
  const char* bind = std::getenv("OMP_PROC_BIND");
  m.fields = {
      {"affinity", Affinity()},
      {"smt", Smt()},
      {"transparent_hugepages",
       Chosen("/sys/kernel/mm/transparent_hugepage/enabled") + " (defrag " +
           Chosen("/sys/kernel/mm/transparent_hugepage/defrag") + ")"},
      {"frequency", Frequency()},
      {"load_average", FirstLine("/proc/loadavg")},
      {"cpu_use", busy},
      {"omp_proc_bind", bind != nullptr ? bind : "unset"}};
  return m;
}

}  // namespace paradnn
