// Cases isolated in child processes.
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

TEST_CASE("isolated cases: a crash fails that case only", "[runner][isolate]") {
  const std::string model = "FC/layers:1/nodes:8/input:8/output:2/batch:2/";
  const std::string cmd = std::string(PARADNN_CRASH_HOST) +
                          " --paradnn_isolate --paradnn_case=" + model +
                          "crashing/fp32/train --paradnn_case=" + model +
                          "torch/fp32/infer --paradnn_threads=1 "
                          "--benchmark_format=json > " +
                          Scratch("iso.out") + " 2> " + Scratch("iso.err");
  const int raw = std::system(cmd.c_str());
  REQUIRE(WIFEXITED(raw));
  CHECK(WEXITSTATUS(raw) == 1);  // a case failed
  json j = json::parse(Slurp(Scratch("iso.out")));
  REQUIRE(j["benchmarks"].size() == 2);
  CHECK(j["benchmarks"][0]["error_occurred"] == true);
  CHECK_THAT(
      j["benchmarks"][0]["error_message"].get<std::string>(),
      ContainsSubstring("crashed in its isolated process: Segmentation fault"));
  const json& ok = j["benchmarks"][1];
  CHECK_FALSE(ok.contains("error_occurred"));
  CHECK(CaseNameOf(ok["name"]) == model + "torch/fp32/infer");
  CHECK(ok["real_time"].get<double>() > 0);
  CHECK_THAT(Slurp(Scratch("iso.err")),
             ContainsSubstring("paradnn: 1 passed, 0 skipped, 1 failed"));
}

TEST_CASE("isolated cases: every repetition is a measurement of its own",
          "[runner][isolate]") {
  const std::string name =
      "FC/layers:2/nodes:64/input:64/output:10/batch:8/torch/fp32/train";
  Result r = RunRunner("--paradnn_isolate --paradnn_case=" + name +
                       " --paradnn_threads=1 --benchmark_repetitions=3 "
                       "--benchmark_min_time=0.05 --benchmark_format=json");
  INFO(r.err);
  REQUIRE(r.status == 0);
  std::set<double> times;
  int64_t iterations = 0;
  const json j = json::parse(r.out);
  for (const json& b : j["benchmarks"]) {
    if (b["run_type"] == "iteration") {
      CHECK(CaseNameOf(b["name"]) == name);
      times.insert(b["real_time"].get<double>());
      iterations = b["iterations"];
    } else if (b["aggregate_name"] == "stddev") {
      CHECK(b["real_time"].get<double>() > 0);
    }
  }
  CHECK(times.size() == 3);  // three children, three different times
  CHECK(iterations > 1);     // as many steps as min_time asked for
}

TEST_CASE("isolated cases: a skip in the child stays a skip",
          "[runner][isolate]") {
  // Only the child prepares the model, and only it can find the warm-up
  // over the time limit.
  Result r = RunRunner(
      "--paradnn_isolate --paradnn_case_timeout=0.000001 --paradnn_case="
      "FC/layers:1/nodes:8/input:8/output:2/batch:2/torch/fp32/infer "
      "--benchmark_format=json");
  CHECK(r.status == 0);
  CHECK_THAT(r.err,
             ContainsSubstring("paradnn: 0 passed, 1 skipped, 0 failed"));
  const json b = json::parse(r.out)["benchmarks"][0];
  CHECK_THAT(b["error_message"].get<std::string>(),
             ContainsSubstring("over the 1e-06 s of --paradnn_case_timeout"));
}

}  // namespace
}  // namespace paradnn::runner_tests
