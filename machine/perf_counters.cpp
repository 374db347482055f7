#include "machine/perf_counters.h"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace paradnn {
namespace {

int Open(uint32_t type, uint64_t config, pid_t tid) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  attr.type = type;
  attr.config = config;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  // The time the event was counting and enabled: where the kernel shares
  // a hardware counter between events, the count is scaled by their ratio.
  attr.read_format =
      PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  return static_cast<int>(
      syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC));
}

std::vector<pid_t> Threads() {
  std::vector<pid_t> tids;
  std::error_code ec;
  for (const auto& d :
       std::filesystem::directory_iterator("/proc/self/task", ec)) {
    tids.push_back(static_cast<pid_t>(std::atol(d.path().filename().c_str())));
  }
  if (tids.empty()) tids.push_back(static_cast<pid_t>(syscall(SYS_gettid)));
  return tids;
}

}  // namespace

PerfCounters::PerfCounters() {
  struct Spec {
    const char* name;
    uint32_t type;
    uint64_t config;
  };
  static const Spec kSpecs[] = {
      {"cpu_seconds", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
      {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
      {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
      // The kernel's generic cache miss: the last level's on x86 and Arm.
      {"llc_misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
  };
  const std::vector<pid_t> tids = Threads();
  for (const Spec& s : kSpecs) {
    Event e{s.name, {}};
    std::string error;
    for (pid_t tid : tids) {
      const int fd = Open(s.type, s.config, tid);
      // A thread that ended since the listing is no loss; any other error
      // leaves the event out.
      if (fd < 0 && errno == ESRCH) continue;
      if (fd < 0) {
        error = std::string(s.name) + ": " + std::strerror(errno);
        break;
      }
      e.fds.push_back(fd);
    }
    if (error.empty() && !e.fds.empty()) {
      events_.push_back(std::move(e));
      continue;
    }
    for (int fd : e.fds) close(fd);
    if (s.type == PERF_TYPE_HARDWARE && hardware_missing_.empty()) {
      hardware_missing_ = error;
    }
  }
}

PerfCounters::~PerfCounters() {
  for (const Event& e : events_) {
    for (int fd : e.fds) close(fd);
  }
}

void PerfCounters::Start() {
  for (const Event& e : events_) {
    for (int fd : e.fds) {
      ioctl(fd, PERF_EVENT_IOC_RESET, 0);
      ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    }
  }
}

std::map<std::string, double> PerfCounters::Stop() {
  for (const Event& e : events_) {
    for (int fd : e.fds) ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
  }
  std::map<std::string, double> counts;
  for (const Event& e : events_) {
    double sum = 0;
    for (int fd : e.fds) {
      uint64_t v[3] = {0, 0, 0};  // value, time enabled, time running
      if (read(fd, v, sizeof(v)) != static_cast<ssize_t>(sizeof(v))) continue;
      if (v[2] > 0) sum += static_cast<double>(v[0]) * v[1] / v[2];
    }
    // The task clock counts nanoseconds.
    counts[e.name] = e.name == "cpu_seconds" ? sum / 1e9 : sum;
  }
  return counts;
}

}  // namespace paradnn
