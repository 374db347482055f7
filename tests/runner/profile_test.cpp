// Profiles end to end: shares of step time per operation class.
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

TEST_CASE("profile shares are the known shares of a backend's step",
          "[runner][profile]") {
  // The clock backend's step spins a known time per layer (its profile
  // says gemm for the products, elementwise for the rest) and a fixed
  // cost no operation covers (other); its profile counts the thread's CPU
  // time, which a busy machine's time slices do not move. A residual
  // block's step: two convolutions and a dense layer (gemm, 0.26 of it),
  // norms, activations, pooling, the join and the loss (elementwise,
  // 0.61), the fixed cost (0.13). Each share is more than twice the
  // margin from the others: a profile that swapped two classes, or
  // dropped the time no operation covers, would miss.
  const std::string name =
      "CNN/block:residual/blocks:1/filters:4/image:16/output:10/batch:2/"
      "clock/fp32/train";
  Result r = RunRunner("--paradnn_case=" + name +
                           " --paradnn_steps=15 --paradnn_threads=1"
                           " --paradnn_profile --benchmark_format=json",
                       ClockPath());
  INFO(r.err);
  REQUIRE(r.status == 0);
  const json b = json::parse(r.out)["benchmarks"][0];
  const Case c = ParseCaseName(name);
  double gemm = 0, elementwise = 0;
  for (const test::ClockPart& p :
       test::ClockParts(c.model.BuildGraph(), c.mode)) {
    (p.gemm ? gemm : elementwise) += p.us;
  }
  const double step = gemm + elementwise + test::kClockStepUs;
  // Fourteen products of 40 us and one per 100 outputs: the stem's
  // convolution (2 x 4 x 8 x 8 outputs), three per stage (its block's two
  // and the shortcut's projection; 2 x 4 x 4 x 4, 2 x 8 x 2 x 2,
  // 2 x 16 x 1 x 1, 2 x 32 x 1 x 1 outputs) and the output layer's (2 x 10).
  CHECK(gemm ==
        Approx(14 * 40 + (512 + 3 * (128 + 64 + 32 + 64) + 20) / 100.0));
  REQUIRE(test::kClockStepUs / step > 0.1);
  REQUIRE(elementwise / step - test::kClockStepUs / step > 0.06);
  REQUIRE(gemm / step - test::kClockStepUs / step > 0.06);
  CHECK(b["time_gemm_frac"].get<double>() == Approx(gemm / step).margin(0.03));
  CHECK(b["time_elementwise_frac"].get<double>() ==
        Approx(elementwise / step).margin(0.03));
  CHECK(b["time_other_frac"].get<double>() ==
        Approx(test::kClockStepUs / step).margin(0.03));
  CHECK(b["time_optimizer_frac"].get<double>() == 0);
  CHECK(b["time_movement_frac"].get<double>() == 0);
}

TEST_CASE("a case is profiled once, whatever Google Benchmark repeats",
          "[runner][profile]") {
  Result r = RunRunner(
      "--paradnn_case=FC/layers:2/nodes:64/input:64/output:10/batch:8/torch/"
      "fp32/train --paradnn_profile --benchmark_repetitions=3 "
      "--benchmark_min_time=0.05 --paradnn_threads=1 --benchmark_format=json");
  INFO(r.err);
  REQUIRE(r.status == 0);
  const json j = json::parse(r.out);
  std::set<double> gemm;
  for (const json& b : j["benchmarks"]) {
    if (b["run_type"] == "iteration")
      gemm.insert(b["time_gemm_frac"].get<double>());
  }
  CHECK(gemm.size() == 1);  // one profile, reported by every repetition
}

TEST_CASE("profiles: shares of step time per operation class",
          "[runner][profile]") {
  const std::string out = Scratch("profile.json");
  // A large FC case is matrix products, on either backend; a large batch
  // keeps the update (per parameter, not per example) a small share even
  // when another test shares the machine.
  const std::string fc =
      "FC/layers:4/nodes:2048/input:2000/output:1000/batch:1024/";
  Result r = RunRunner(
      "--paradnn_case=" + fc + "torch/fp32/train --paradnn_case=" + fc +
      "onednn/fp32/train --paradnn_case=TRANSFORMER/layers:1/d_model:32/"
      "heads:4/ffn:64/length:16/vocab:50/causal:true/batch:2/torch/fp32/infer "
      "--paradnn_steps=3 --paradnn_threads=2 --benchmark_format=json "
      "--paradnn_profile_out=" +
      out);
  INFO(r.err);
  REQUIRE(r.status == 0);
  const char* classes[] = {"gemm", "elementwise", "movement", "optimizer",
                           "other"};
  json results = json::parse(r.out);
  REQUIRE(results["benchmarks"].size() == 3);
  for (const json& b : results["benchmarks"]) {
    INFO(b["name"]);
    double sum = 0;
    for (const char* c : classes) {
      const double share = b.at(std::string("time_") + c + "_frac");
      CHECK(share >= 0);
      CHECK(share <= 1);
      sum += share;
    }
    CHECK(sum == Approx(1).epsilon(1e-9));
    if (b["name"].get<std::string>().rfind("FC/", 0) == 0) {
      CHECK(b["time_gemm_frac"].get<double>() > 0.8);
      CHECK(b["time_optimizer_frac"].get<double>() > 0);
    } else {
      CHECK(b["time_optimizer_frac"].get<double>() == 0);  // inference
    }
  }
  json j = json::parse(Slurp(out));
  REQUIRE(j["cases"].size() == 3);
  for (const json& c : j["cases"]) {
    INFO(c["name"]);
    CHECK(c["profiled_steps"] == 3);
    CHECK(c["profiled_step_ms"].get<double>() > 0);
    REQUIRE(c["ops"].size() > 0);
    // Slowest first, each with its class.
    const json& top = c["ops"][0];
    for (const json& op : c["ops"]) {
      CHECK(op["ms_per_step"].get<double>() <=
            top["ms_per_step"].get<double>());
    }
    if (c["name"].get<std::string>().rfind("FC/", 0) == 0) {
      CHECK(top["class"] == "gemm");
    }
  }
  // The LibTorch case names ATen's operations; oneDNN its primitives.
  CHECK(j["cases"][0]["ops"].dump().find("aten::") != std::string::npos);
  CHECK(j["cases"][1]["ops"].dump().find("inner_product") != std::string::npos);
  // An isolated case brings its child's shares back.
  Result isolated = RunRunner(
      "--paradnn_case=FC/layers:1/nodes:64/input:32/output:4/batch:8/torch/"
      "fp32/train --paradnn_isolate --paradnn_profile --paradnn_steps=2 "
      "--benchmark_format=json");
  INFO(isolated.err);
  REQUIRE(isolated.status == 0);
  const json b = json::parse(isolated.out)["benchmarks"][0];
  CHECK(b.contains("time_gemm_frac"));
  CHECK(b.contains("time_other_frac"));
}

}  // namespace
}  // namespace paradnn::runner_tests
