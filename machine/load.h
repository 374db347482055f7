// How busy the machine is and how it is set up for a run: its CPU time
// (busy, stolen), the CPUs this process may use, SMT, transparent huge
// pages, the frequencies and the load average, for a run's context.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace paradnn {

// The machine's CPU time since boot, in clock ticks: all of it, idle, and
// stolen by the hypervisor.
struct CpuTimes {
  double total = 0, idle = 0, steal = 0;
};
CpuTimes ReadCpuTimes();

// The machine between two readings of its CPU times, for the context.
struct MachineSample {
  std::vector<std::pair<std::string, std::string>> fields;
  double busy_cpus = 0;  // CPUs' worth of work (ours included) over it
  double steal = 0;      // share of CPU time stolen over it
};
// `over` says what the readings span ("over the run").
MachineSample Sample(const CpuTimes& before, const CpuTimes& after,
                     const std::string& over);

}  // namespace paradnn
