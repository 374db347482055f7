// Known step times (the clock backends): every figure over a step.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <string_view>

#include "adapters/mlperf/reader.h"
#include "analysis/compare.h"
#include "bricks/bricks.h"
#include "generators/cost.h"
#include "generators/spec.h"
#include "machine/caches.h"
#include "records/results.h"
#include "records/rounds.h"
#include "tests/backends/clock_costs.h"
#include "tests/catch.h"
#include "tests/runner/runner.h"
#include "tests/scratch.h"

namespace paradnn::runner_tests {
namespace {

// The clock backends' `cases` (--paradnn_case flags), 10 steps each,
// against a platform file holding `platform`: the runner's JSON.
json RunOnPlatform(const std::string& cases, const std::string& platform) {
  const std::string path = Scratch("platform.json");
  std::ofstream(path) << platform;
  const Result r = RunRunner(cases +
                                 " --paradnn_steps=10 --paradnn_threads=1"
                                 " --paradnn_platform=" +
                                 path + " --benchmark_format=json",
                             ClockPath());
  INFO(r.err);
  REQUIRE(r.status == 0);
  return json::parse(r.out);
}

TEST_CASE(
    "a case's step time and every rate over it are the known step's, and "
    "flops_util is a plain fraction of the peak, never over 1",
    "[runner][platform][serial]") {
  // The clock backend's step spins for a known time: step_ms lies between
  // it and what a busy machine adds, and so does every rate over it,
  // known before the run from the step, the counts by hand and the
  // platform file's peak.
  // Steps of 11 ms: a time slice the machine takes from a step is a small
  // part of it.
  const std::string name =
      "FC/layers:2/nodes:4096/input:512/output:10/batch:64/clock/fp32/infer";
  const Case c = ParseCaseName(name);
  const double truth_s = test::ClockStepUs(c.model.BuildGraph(), c.mode) / 1e6;
  // 2 x 64 x (512 x 4096 + 4096 x 4096 + 4096 x 10) multiply-adds.
  const double flops = 2421161984;
  const double slack = 1.3;  // what another process may add to a step
  auto run = [&](double peak) {
    std::ostringstream platform;
    platform << "{\"peak_flops\": {\"fp32\": " << peak
             << "}, \"memory_bandwidth\": 1e10}";
    const json b = RunOnPlatform("--paradnn_case=" + name,
                                 platform.str())["benchmarks"][0];
    CHECK(b["flop_per_step"].get<double>() == flops);
    CHECK(b["step_ms"].get<double>() >= truth_s * 1e3 * (1 - 1e-3));
    CHECK(b["step_ms"].get<double>() <= truth_s * 1e3 * slack);
    CHECK(b["FLOPS"].get<double>() <= flops / truth_s * (1 + 1e-3));
    CHECK(b["FLOPS"].get<double>() >= flops / truth_s / slack);
    CHECK(b["examples_per_second"].get<double>() <= 64 / truth_s * (1 + 1e-3));
    CHECK(b["examples_per_second"].get<double>() >= 64 / truth_s / slack);
    return b;
  };
  // The step does about 220 GFLOP/s: a fifth of a 1e12 peak.
  const json under = run(1e12);
  const double share = flops / truth_s / 1e12;
  REQUIRE(share > 0.1);
  REQUIRE(under.contains("flops_util"));
  CHECK_FALSE(under.contains("flops_over_peak"));
  CHECK(under["flops_util"].get<double>() <= share * (1 + 1e-3));
  CHECK(under["flops_util"].get<double>() >= share / slack);
  // Twenty times a 1e10 peak: no utilization over 1, the ratio instead.
  const json over = run(1e10);
  CHECK_FALSE(over.contains("flops_util"));
  REQUIRE(over.contains("flops_over_peak"));
  CHECK(over["flops_over_peak"].get<double>() <= share * 100 * (1 + 1e-3));
  CHECK(over["flops_over_peak"].get<double>() >= share * 100 / slack);
}

TEST_CASE(
    "a device's cases: its free memory limits them, its peak and memory "
    "bandwidth are their roofs",
    "[runner][platform][serial]") {
  // clockgpu (tests/backends/clock_module.cpp): steps of a known time on a
  // "gpu" with 8 MiB free. The platform's GPU roofs are a thousand times
  // the CPU's: a case measured against the CPU's would be over its peak.
  const std::string small =
      "FC/layers:2/nodes:256/input:512/output:10/batch:64/clockgpu/fp32/infer";
  // 4 x 1024 x 1024 weights alone are 16 MiB.
  const std::string large =
      "FC/layers:4/nodes:1024/input:1024/output:10/batch:8/clockgpu/fp32/"
      "infer";
  const std::string platform = Scratch("platform.json");
  std::ofstream(platform)
      << "{\"peak_flops\": {\"fp32\": 1e9}, \"memory_bandwidth\": 1e9, "
         "\"devices\": {\"gpu\": {\"fp32\": 1e12}}, "
         "\"device_bandwidth\": {\"gpu\": 1e12}}";
  const std::string args = " --paradnn_case=" + small +
                           " --paradnn_case=" + large +
                           " --paradnn_steps=10 --paradnn_threads=1"
                           " --paradnn_platform=" +
                           platform + " --benchmark_format=json";
  Result r = RunRunner(args, ClockPath());
  INFO(r.err);
  REQUIRE(r.status == 0);
  json j = json::parse(r.out);
  REQUIRE(j["benchmarks"].size() == 2);
  const json& b = j["benchmarks"][0];
  REQUIRE(b["name"].get<std::string>().rfind(small + "/", 0) == 0);
  // The step spins for its known time; a busy machine only stretches it.
  const Case c = ParseCaseName(small);
  const double truth_s = test::ClockStepUs(c.model.BuildGraph(), c.mode) / 1e6;
  // 2 x 64 x (512 x 256 + 256 x 256 + 256 x 10) multiply-adds.
  const double flops = 25493504;
  REQUIRE(b.contains("flops_util"));
  CHECK(b["flops_util"].get<double>() <= flops / truth_s / 1e12 * 1.02);
  CHECK(b["flops_util"].get<double>() >= flops / truth_s / 1e12 / 1.5);
  const double bytes = b["bytes_per_step"].get<double>();
  CHECK(b["bandwidth_util"].get<double>() <= bytes / truth_s / 1e12 * 1.02);
  CHECK(b["bandwidth_util"].get<double>() >= bytes / truth_s / 1e12 / 1.5);
  // 80% of 8 MiB, not the host's memory.
  CHECK(j["benchmarks"][1]["error_occurred"] == true);
  CHECK_THAT(j["benchmarks"][1]["error_message"].get<std::string>(),
             ContainsSubstring("over the 0.0 GiB limit of the gpu "
                               "(--paradnn_max_memory)"));
  // The flag is the device's limit too.
  r = RunRunner(args + " --paradnn_max_memory=1G", ClockPath());
  INFO(r.err);
  REQUIRE(r.status == 0);
  j = json::parse(r.out);
  REQUIRE(j["benchmarks"].size() == 2);
  CHECK_FALSE(j["benchmarks"][1].contains("error_occurred"));
}

TEST_CASE(
    "a CPU case's bandwidth roof: a cache's where all it holds fits in that "
    "working set, else the memory's",
    "[runner][platform][serial]") {
  // Two working sets measured, 256 KiB and 8 MiB, each faster than memory.
  // The small case's weights alone, 512 x 256 + 256 x 256 + 256 x 10
  // floats, are 0.8 MB: over 256 KiB, and with its activations of batch 64
  // under 8 MiB. The large one's 4 x 1024 x 1024 weights are 16 MiB.
  const std::string small =
      "FC/layers:2/nodes:256/input:512/output:10/batch:64/clock/fp32/infer";
  const std::string large =
      "FC/layers:4/nodes:1024/input:1024/output:10/batch:8/clock/fp32/infer";
  const json j = RunOnPlatform(
      "--paradnn_case=" + small + " --paradnn_case=" + large,
      "{\"peak_flops\": {\"fp32\": 1e12}, \"memory_bandwidth\": 1e9, "
      "\"cache_bandwidth\": {\"262144\": 1e12, \"8388608\": 1e11}}");
  REQUIRE(j["benchmarks"].size() == 2);
  // The roof a case was set against: its bytes per second over its share.
  auto roof = [](const json& b) {
    return b["bytes_per_step"].get<double>() /
           (b["step_ms"].get<double>() / 1e3) /
           b["bandwidth_util"].get<double>();
  };
  const json& s = j["benchmarks"][0];
  const json& l = j["benchmarks"][1];
  REQUIRE(s["name"].get<std::string>().rfind(small + "/", 0) == 0);
  REQUIRE(l["name"].get<std::string>().rfind(large + "/", 0) == 0);
  CHECK(roof(s) == Approx(1e11).epsilon(1e-6));
  CHECK(roof(l) == Approx(1e9).epsilon(1e-6));
}

}  // namespace
}  // namespace paradnn::runner_tests
