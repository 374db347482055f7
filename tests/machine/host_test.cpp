// The machine's facts as the operating system gives them.
#include "machine/host.h"

#include <time.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "machine/perf_counters.h"
#include "tests/catch.h"
#include "tests/scratch.h"

namespace paradnn {
namespace {

TEST_CASE("cgroup CPU quotas, as cgroup v2 and v1 write them", "[platform]") {
  auto file = [](const std::string& name, const std::string& text) {
    const std::string path = test::Scratch("cgroup/" + name).string();
    std::ofstream(path) << text;
    return path;
  };
  CHECK(CpuQuota(file("v2_limited", "150000 100000\n")) == 2);
  CHECK(CpuQuota(file("v2_one", "100000 100000\n")) == 1);
  CHECK(CpuQuota(file("v2_half", "50000 100000\n")) == 1);
  CHECK(CpuQuota(file("v2_none", "max 100000\n")) == 0);
  CHECK(CpuQuota(file("v1_quota", "300000\n"), file("v1_period", "100000")) ==
        3);
  CHECK(CpuQuota(file("v1_none", "-1\n"), file("v1_period2", "100000")) == 0);
  CHECK(CpuQuota(test::Scratch("cgroup/missing").string()) == 0);
  CHECK(UsableCpus() >= 1);
}

TEST_CASE("streaming reads, triads and writes measure some bandwidth",
          "[report]") {
  // 16 MiB per array: beyond the caches of small machines, quick anywhere.
  for (Traffic t : {Traffic::kRead, Traffic::kTriad, Traffic::kWrite}) {
    CHECK(StreamBandwidth(t, size_t{16} << 20, 1, 2) > 1e8);
  }
}

double ThreadCpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

TEST_CASE(
    "perf events count this process's CPU time, and where the CPU "
    "exposes them its instructions",
    "[platform]") {
  PerfCounters counters;
  // 40 million dependent additions, at least one instruction each, for
  // about 50 ms of this thread's CPU time (the kernel's own account).
  counters.Start();
  const double t0 = ThreadCpuSeconds();
  volatile uint64_t sum = 0;
  for (int64_t i = 0; i < 40'000'000; ++i) sum = sum + i;
  const double cpu = ThreadCpuSeconds() - t0;
  const std::map<std::string, double> counts = counters.Stop();
  REQUIRE(counts.count("cpu_seconds") == 1);
  CHECK(counts.at("cpu_seconds") == Approx(cpu).epsilon(0.1).margin(0.002));
  if (!counters.hardware_missing().empty()) {
    WARN("no hardware counters here: " << counters.hardware_missing());
    CHECK(counts.count("cycles") == 0);
    return;
  }
  CHECK(counts.at("instructions") >= 4e7);
  CHECK(counts.at("cycles") > 0);
  CHECK(counts.count("llc_misses") == 1);
}

}  // namespace
}  // namespace paradnn
