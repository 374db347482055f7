// How many threads of this process really worked while `work` ran: those
// whose CPU time (utime + stime in /proc/self/task/*/stat) grew by at least
// `min_ticks` clock ticks. A library told to use N threads is checked by
// what it ran, not by the count it stores; threads sharing a busy CPU still
// each gain time, so the count holds on a loaded machine.
#pragma once

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "backends/backend.h"
#include "generators/spec.h"

namespace paradnn::test {

inline std::map<int, long> ThreadTicks() {
  std::map<int, long> ticks;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream in(task.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    // After "pid (comm)": field 3 is the state, 14 utime, 15 stime.
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));
    std::string field;
    long total = 0;
    for (int i = 3; i <= 15 && fields >> field; ++i) {
      if (i >= 14) total += std::stol(field);
    }
    ticks[std::stoi(task.path().filename().string())] = total;
  }
  return ticks;
}

template <typename Work>
int BusyThreads(Work work, long min_ticks = 5) {
  const std::map<int, long> before = ThreadTicks();
  work();
  int busy = 0;
  for (const auto& [tid, ticks] : ThreadTicks()) {
    const auto it = before.find(tid);
    busy += ticks - (it == before.end() ? 0 : it->second) >= min_ticks;
  }
  return busy;
}

// Steps `runner` for about `seconds` of wall time.
inline void StepFor(Runner& runner, double seconds) {
  const auto start = std::chrono::steady_clock::now();
  do {
    runner.Step();
  } while (
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count() < seconds);
}

// How many threads `backend` keeps busy, told to use `threads`, stepping an
// FC training case large enough to give every thread work for 0.5 s.
inline int BusyThreadsOf(const Backend& backend, int threads) {
  const Case c =
      ParseCaseName("FC/layers:2/nodes:1024/input:1024/output:1024/batch:256/" +
                    backend.name() + "/fp32/train");
  const Graph g = c.model.BuildGraph();
  RunOptions opt;
  opt.threads = threads;
  auto runner = backend.Prepare({g, c.dtype, c.mode}, opt);
  return BusyThreads([&] { StepFor(*runner, 0.5); });
}

}  // namespace paradnn::test
