// Linux perf events over this process's threads (--paradnn_counters): the
// CPU time they take, always (a software event), and the hardware's
// cycles, instructions and last-level cache misses where the CPU exposes
// them here (virtual machines often expose none).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace paradnn {

class PerfCounters {
 public:
  // Opens every event on every thread the process has now (OpenMP's pools
  // included: they live from a case's first step on), counting user space
  // only, which unprivileged processes may.
  PerfCounters();
  ~PerfCounters();
  PerfCounters(const PerfCounters&) = delete;
  PerfCounters& operator=(const PerfCounters&) = delete;

  // Zeroes and starts the counts; Stop() stops them and returns each
  // event's count since Start() over all threads ("cpu_seconds",
  // "cycles", "instructions", "llc_misses"), scaled up where the kernel
  // shared a counter between events; only the events that opened.
  void Start();
  std::map<std::string, double> Stop();

  // Why the hardware events did not open ("" when they did): the event and
  // the error, e.g. "cycles: No such file or directory".
  const std::string& hardware_missing() const { return hardware_missing_; }

 private:
  struct Event {
    std::string name;
    std::vector<int> fds;  // one per thread
  };
  std::vector<Event> events_;
  std::string hardware_missing_;
};

}  // namespace paradnn
