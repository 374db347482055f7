// MLPerf logs and a results package written by a run.
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

TEST_CASE("MLPerf logs and a results package from a run, summarized",
          "[runner][mlperf]") {
  const std::string logs = Scratch("mllog"), package = Scratch("package");
  Result r = RunRunner(
      "--paradnn_case=FC/layers:1/nodes:8/input:8/output:2/batch:4/torch/"
      "fp32/train --paradnn_mllog=" +
      logs + " --paradnn_mlperf_package=" + package +
      " --paradnn_mlperf_org=acme --paradnn_mlperf_system=box1 "
      "--benchmark_repetitions=5" +
      std::string(kFast));
  INFO(r.err);
  REQUIRE(r.status == 0);
  const std::string folder =
      "FC_layers-1_nodes-8_input-8_output-2_batch-4_torch_fp32_train";
  // Each repetition its own measured interval, one after the other.
  int64_t previous_stop = 0;
  for (int i = 0; i < 5; ++i) {
    const std::string name = "/result_" + std::to_string(i) + ".txt";
    CHECK(
        std::ifstream(package + "/acme/results/box1/" + folder + name).good());
    const MlperfRun run = ReadMlperfLog(logs + "/" + folder + name);
    CHECK(run.problems.empty());
    std::map<std::string, int64_t> at;
    std::istringstream lines(Slurp(logs + "/" + folder + name));
    for (std::string line; std::getline(lines, line);) {
      const json event = json::parse(line.substr(line.find('{')));
      at[event["key"]] = event["time_ms"];
    }
    INFO("repetition " << i);
    CHECK(at["run_start"] >= at["init_stop"]);
    CHECK(at["run_stop"] >= at["run_start"]);
    CHECK(at["run_start"] >= previous_stop);
    previous_stop = at["run_stop"];
  }
  json system = json::parse(Slurp(package + "/acme/systems/box1.json"));
  CHECK(system["submitter"] == "acme");
  CHECK(system["system_name"] == "box1");
  CHECK(system["division"] == "open");
  CHECK_THAT(system["framework"].get<std::string>(),
             ContainsSubstring("LibTorch"));

  r = RunRunner("mlperf-summary " + package);
  REQUIRE(r.status == 0);
  json summary = json::parse(r.out);
  REQUIRE(summary.size() == 1);
  CHECK(summary[0]["benchmark"] == "paradnn_fc");
  CHECK(summary[0]["system_name"] == "box1");
  CHECK(summary[0]["runs"].size() == 5);
  CHECK(summary[0]["score_min"].is_number());
  for (const json& run : summary[0]["runs"]) {
    CHECK(run["status"] == "success");
    CHECK(run["global_batch_size"] == 4);
    CHECK(run["samples_per_second"].get<double>() > 0);
  }
  r = RunRunner("mlperf-summary " + package + " --format=csv");
  CHECK(r.status == 0);
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 6);
  r = RunRunner("mlperf-summary no/such/folder");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, ContainsSubstring("no/such/folder: not a folder"));
}

}  // namespace
}  // namespace paradnn::runner_tests
