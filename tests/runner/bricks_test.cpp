// Layer bricks end to end: timed once each, estimates, cold steps, the
// database.
#include "bricks/bricks.h"

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

TEST_CASE(
    "bricks: a sweep's unique layers timed once each, before its models, "
    "which then run plainly",
    "[runner][bricks]") {
  const std::string out = Scratch("bricks.json");
  Result r = RunRunner(
      "--paradnn_case=FC/layers:3/nodes:32/input:64/output:10/batch:8/torch/"
      "fp32/train --paradnn_case=FC/layers:5/nodes:32/input:64/output:10/"
      "batch:8/torch/fp32/train --paradnn_bricks_out=" +
      out + " --paradnn_steps=5 --paradnn_threads=1 --benchmark_format=json");
  INFO(r.err);
  REQUIRE(r.status == 0);
  json j = json::parse(Slurp(out));
  // 8 and 12 layers in training; 5 distinct ones between them, in 4
  // bricks: LibTorch's ReLUs are timed with the dense layers before them.
  CHECK(j["total_layers"] == 20);
  CHECK(j["unique_layers"] == 5);
  CHECK(j["unique_bricks"] == 4);
  // And the two that measure a step's fixed cost.
  CHECK(j["bricks"].size() == 6);
  CHECK(j["bricks_benchmark_s"].get<double>() > 0);
  // The bricks of each model in order, written out by hand: the first
  // dense layer's input needs no gradient, the others' do; each ReLU is in
  // the brick of the dense layer it reads.
  const std::string in = "BRICK/dense/in:8x64/units:32/bias:1/+relu/grad:0";
  const std::string hidden = "BRICK/dense/in:8x32/units:32/bias:1/+relu/grad:1";
  const std::string output = "BRICK/dense/in:8x32/units:10/bias:1/grad:1";
  const std::string loss = "BRICK/softmax_xent/in:8x10/grad:1";
  const std::vector<std::vector<std::string>> layers = {
      {in, hidden, hidden, output, loss},
      {in, hidden, hidden, hidden, hidden, output, loss}};
  const std::string suffix = "/torch/fp32/train";
  // Google Benchmark ran every brick, then the models, 5 steps each.
  const json results = ParseBenchmarkJson(r.out);
  std::vector<std::string> order;
  std::map<std::string, double> reported_ms;
  for (const json& b : results["benchmarks"]) {
    CHECK(b["iterations"] == 5);
    order.push_back(CaseNameOf(b["name"]));
    reported_ms[order.back()] = b["real_time"];
  }
  REQUIRE(order.size() == 8);
  for (size_t i = 0; i < order.size(); ++i) {
    CHECK((order[i].rfind("BRICK/", 0) == 0) == (i < 6));
  }
  for (const json& b : j["bricks"]) {
    INFO(b["name"]);
    // Five warm steps; models of a few KB need no cold ones.
    const auto steps = b["step_times_ms"].get<std::vector<double>>();
    REQUIRE(steps.size() == 5);
    CHECK(b["cold_step_times_ms"].empty());
    CHECK(b["step_ms"].get<double>() == Approx(MedianOf(steps)));
    // The median's standard error: 1.2533 sigma / sqrt(5), sigma 1.4826
    // times the steps' median absolute deviation.
    std::vector<double> deviations;
    for (double ms : steps) {
      deviations.push_back(std::abs(ms - MedianOf(steps)));
    }
    CHECK(b["step_spread_ms"].get<double>() ==
          Approx(1.2533 * 1.4826 * MedianOf(deviations) / std::sqrt(5.0)));
  }
  REQUIRE(j["models"].size() == 2);
  for (size_t k = 0; k < 2; ++k) {
    const json& m = j["models"][k];
    std::vector<std::string> names;
    for (const std::string& layer : layers[k]) names.push_back(layer + suffix);
    CHECK(m["layers"].get<std::vector<std::string>>() == names);
    CHECK(m["cold"] == false);
    // Its plain time is its steps' mean: what Google Benchmark reported
    // for it, whose loop times the steps and a little more between them.
    const double plain = m["plain_ms"];
    CHECK(plain <= 1.0001 * reported_ms.at(m["name"]));
    CHECK(plain > 0.5 * reported_ms.at(m["name"]));
    CHECK(m["estimate_over_plain"].get<double>() ==
          Approx(m["estimated_ms"].get<double>() / plain));
    // Too few models for a calibration: the estimates stay as summed.
    CHECK(m["calibration"]["scope"] == "none");
    CHECK(m["calibration"]["models"] == 2);
    CHECK(m["estimated_ms"] == m["uncalibrated_ms"]);
    CHECK(m["estimated_spread"].get<double>() > 0);
  }
  CHECK(j["checked_models"] == 2);
  CHECK(j["error"]["per_family"]["FC"]["models"] == 2);
  CHECK_THAT(r.err, ContainsSubstring(
                        "against 2 plain runs, uncalibrated (calibrating "
                        "did not help them): FC mean error"));
}

TEST_CASE(
    "bricks estimate a backend's known step times: each layer once, the "
    "step's fixed cost once, gradient sums, recurrent stacks",
    "[runner][bricks][serial]") {
  // [serial]: run alone (CTest's RUN_SERIAL): its truth is wall-clock
  // spins, which another test's threads on the same cores stretch.
  const std::vector<std::string> models = {
      "FC/layers:4/nodes:64/input:128/output:10/batch:16",
      "CNN/block:residual/blocks:2/filters:4/image:16/output:10/batch:2",
      "CNN/block:bottleneck/blocks:1/filters:4/image:16/output:10/batch:2",
      "RNN/cell:lstm/layers:5/embed:16/vocab:32/length:4/batch:2"};
  std::string cases;
  for (const std::string& m : models) {
    for (const std::string mode : {"train", "infer"}) {
      cases += " --paradnn_case=" + m + "/clock/fp32/" + mode;
    }
  }
  const std::string out = Scratch("clock_bricks.json");
  Result r = RunRunner(cases + " --paradnn_steps=15 --paradnn_threads=1" +
                           " --paradnn_bricks_out=" + out,
                       ClockPath());
  INFO(r.err);
  REQUIRE(r.status == 0);
  const json j = json::parse(Slurp(out));
  REQUIRE(j["models"].size() == 8);
  for (const json& m : j["models"]) {
    INFO(m["name"]);
    const Case c = ParseCaseName(m["name"].get<std::string>());
    const double truth_ms =
        test::ClockStepUs(c.model.BuildGraph(), c.mode) / 1e3;
    // Each brick's median step is its time to a few microseconds. The
    // model's plain steps spin as long, and longer where the machine
    // stretches one: their mean is no less.
    CHECK(m["uncalibrated_ms"].get<double>() == Approx(truth_ms).epsilon(0.03));
    CHECK(m["plain_ms"].get<double>() >= truth_ms);
  }
  CHECK(j["step_cost_ms"]["clock/fp32/train"].get<double>() ==
        Approx(test::kClockStepUs / 1e3).epsilon(0.05));
}

TEST_CASE(
    "a bricks check of N models runs N plainly, chosen by the seed, "
    "and estimates the others only",
    "[runner][bricks]") {
  std::string cases;
  for (int layers : {1, 2, 3, 4, 5, 6}) {
    for (int batch : {4, 8}) {
      cases += " --paradnn_case=FC/layers:" + std::to_string(layers) +
               "/nodes:32/input:64/output:10/batch:" + std::to_string(batch) +
               "/clock/fp32/train";
    }
  }
  auto checked = [&](const std::string& seed, const std::string& file) {
    const std::string out = Scratch(file);
    Result r = RunRunner(cases + " --paradnn_bricks_check=5 --paradnn_steps=5" +
                             " --paradnn_threads=1 --benchmark_format=json" +
                             " --paradnn_bricks_out=" + out + seed,
                         ClockPath());
    INFO(r.err);
    REQUIRE(r.status == 0);
    std::set<std::string> ran;
    const json results = json::parse(r.out);
    for (const json& b : results["benchmarks"]) {
      const std::string name = CaseNameOf(b["name"]);
      if (name.rfind("FC/", 0) == 0) ran.insert(name);
    }
    const json j = json::parse(Slurp(out));
    CHECK(j["checked_models"] == 5);
    std::set<std::string> with_plain;
    for (const json& m : j["models"]) {
      CHECK(m["estimated_ms"].is_number());
      if (m.contains("plain_ms")) with_plain.insert(m["name"]);
      // Each of the 12 is calibrated on the checked ones but itself, 4 or
      // 5 of them, where that brought the checked ones nearer their plain
      // times; else none is, and the 5 give the spread.
      const int on = m["calibration"]["models"];
      if (j["calibration"]["applied"]) {
        CHECK(on == (m.contains("plain_ms") ? 4 : 5));
        CHECK(m["calibration"]["scope"] == "FC/clock/fp32/train");
      } else {
        CHECK(on == 5);
        CHECK(m["calibration"]["scope"] == "none");
        CHECK(m["estimated_ms"] == m["uncalibrated_ms"]);
      }
    }
    CHECK(with_plain == ran);
    CHECK(j["models"].size() == 12);
    CHECK(j["projected_plain_benchmark_s"].get<double>() >
          j["checked_benchmark_s"].get<double>());
    CHECK_THAT(r.err, ContainsSubstring("against 5 plain runs, "));
    CHECK_THAT(r.err, ContainsSubstring(": FC mean error"));
    return ran;
  };
  const std::set<std::string> a = checked("", "check_a.json");
  CHECK(a.size() == 5);
  CHECK(checked("", "check_b.json") == a);
  CHECK(checked(" --paradnn_seed=2", "check_c.json") != a);
  Result bad = RunRunner("--paradnn_bricks_check=0" + std::string(kFast));
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, ContainsSubstring("--paradnn_bricks_check=0: expected a "
                                        "positive number of models"));
}

TEST_CASE(
    "listing a bricks sweep counts its layers and bricks and estimates "
    "nothing",
    "[runner][bricks]") {
  const std::string fc =
      "--paradnn_case=FC/layers:3/nodes:32/input:64/output:10/batch:8/torch/"
      "fp32/train --benchmark_list_tests";
  Result listed = RunRunner(fc + " --paradnn_bricks");
  INFO(listed.err);
  REQUIRE(listed.status == 0);
  // The 4 bricks of its 5 distinct layers (each ReLU with the dense layer
  // it reads), the step's fixed cost's 2, then the model.
  CHECK(std::count(listed.out.begin(), listed.out.end(), '\n') == 7);
  CHECK(listed.out.rfind("FC/") == listed.out.find("FC/"));
  CHECK(listed.out.find("FC/") > listed.out.rfind("BRICK/"));
  CHECK_THAT(
      listed.err,
      ContainsSubstring("paradnn: bricks: 5 unique of 8 layers (62%); 4 unique "
                        "bricks of up to 2 layers\n"));
  CHECK(listed.err.find("benchmarked") == std::string::npos);
  const std::string out = Scratch("listed_bricks.json");
  Result written = RunRunner(fc + " --paradnn_bricks_out=" + out);
  REQUIRE(written.status == 0);
  const json j = json::parse(Slurp(out));
  CHECK(j["total_layers"] == 8);
  CHECK_FALSE(j.contains("models"));
}

TEST_CASE(
    "a bricks run takes the L3 it is given, else the kernel's, else "
    "measures it",
    "[runner][bricks]") {
  const std::string model =
      "--paradnn_case=FC/layers:1/nodes:16/input:32/output:4/batch:8/torch/"
      "fp32/infer --paradnn_steps=2";
  const json given =
      RunBricksOut(model + " --paradnn_l3_bytes=3M", "l3_given.json").first;
  CHECK(given["l3_bytes"] == 3 << 20);
  CHECK(given["l3_source"] == "--paradnn_l3_bytes");
  const json found = RunBricksOut(model, "l3_found.json").first;
  const int64_t l3 = found["l3_bytes"];
  if (KernelCacheBytes(3) > 0) {
    CHECK(found["l3_source"] == "kernel");
    CHECK(l3 == static_cast<int64_t>(KernelCacheBytes(3)));
  } else {
    // At least two L2s, at most CPUID's figure where it says one (on AMD
    // all of the package's L3s) and 256 MB.
    CHECK(found["l3_source"] == "measured");
    CHECK(l3 >= 2 * found["l2_bytes"].get<int64_t>());
    const int64_t cpuid = CpuidCacheBytes(3);
    CHECK(l3 <= std::min(cpuid > 0 ? cpuid : INT64_MAX, int64_t{256} << 20));
  }
  Result bad = RunRunner(model + " --paradnn_bricks --paradnn_l3_bytes=lots");
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err,
             ContainsSubstring("'lots' is not a memory size: expected a "
                               "positive number with an optional K, M or G "
                               "suffix"));
}

TEST_CASE(
    "a brick of a model beyond the caches takes cold steps, outside Google "
    "Benchmark's time",
    "[runner][bricks]") {
  // A 1 MB L3: the model's 4 MB of weights outgrow it and a core's L2.
  const auto [j, bricks] = RunBricksOut(
      "--paradnn_case=FC/layers:2/nodes:1024/input:1024/output:10/batch:4/"
      "onednn/fp32/infer --paradnn_steps=4 --paradnn_l3_bytes=1M",
      "cold_bricks.json");
  REQUIRE(j["models"].size() == 1);
  CHECK(j["models"][0]["cold"] == true);
  for (const auto& [name, b] : bricks) {
    INFO(name);
    CHECK(b["step_times_ms"].size() == 4);
    if (b["step_cost"]) {
      CHECK(b["cold_step_times_ms"].empty());
      continue;
    }
    const auto cold = b["cold_step_times_ms"].get<std::vector<double>>();
    REQUIRE(cold.size() == 3);
    CHECK(b["cold_step_ms"].get<double>() == Approx(MedianOf(cold)));
  }
}

TEST_CASE(
    "bricks database: known bricks are not run again, nor reused "
    "elsewhere, and keep their times and spreads",
    "[runner][bricks]") {
  const std::string db = Scratch("bricks_db.json");
  const std::string fc = "FC/layers:3/nodes:32/input:64/output:10/batch:8/";
  const std::string flags = " --paradnn_steps=3 --paradnn_bricks_db=" + db;
  const std::string first_out = Scratch("bricks_db_first.json");
  Result first =
      RunRunner("--paradnn_case=" + fc + "torch/fp32/train" + flags +
                " --paradnn_threads=1 --paradnn_bricks_out=" + first_out);
  INFO(first.err);
  REQUIRE(first.status == 0);
  const json known = json::parse(Slurp(db));
  const json first_bricks = json::parse(Slurp(first_out));
  // The 4 bricks of its 5 layers and the 2 of a step's fixed cost.
  REQUIRE(known["bricks"].size() == 6);
  std::map<std::string, json> known_bricks;
  for (const json& b : known["bricks"]) {
    CHECK(b["context"]["threads"] == 1);
    CHECK(b["steps"] == 3);
    for (const json& timed : first_bricks["bricks"]) {
      if (timed["name"] != b["name"]) continue;
      CHECK(b["step_ms"] == timed["step_ms"]);
      CHECK(b["step_spread_ms"] == timed["step_spread_ms"]);
    }
    known_bricks[b["name"]] = b;
  }
  // Another model, of 16 nodes: three of its bricks are new, its loss and
  // the step's fixed cost are known. Models estimated only.
  const std::string out = Scratch("bricks_db_out.json");
  const std::string other = "FC/layers:2/nodes:16/input:64/output:10/batch:8/";
  Result second = RunRunner(
      "--paradnn_case=" + other + "torch/fp32/train --paradnn_case=" + fc +
      "torch/fp32/train" + flags +
      " --paradnn_threads=1 --paradnn_bricks_estimate_only "
      "--benchmark_format=json --paradnn_bricks_out=" +
      out);
  INFO(second.err);
  REQUIRE(second.status == 0);
  // Only the new bricks ran.
  std::set<std::string> ran;
  const json results = json::parse(second.out);
  for (const json& b : results["benchmarks"]) ran.insert(b["run_name"]);
  CHECK(ran == std::set<std::string>{
                   "BRICK/dense/in:8x64/units:16/bias:1/+relu/grad:0/torch/"
                   "fp32/train/iterations:3/real_time",
                   "BRICK/dense/in:8x16/units:16/bias:1/+relu/grad:1/torch/"
                   "fp32/train/iterations:3/real_time",
                   "BRICK/dense/in:8x16/units:10/bias:1/grad:1/torch/fp32/"
                   "train/iterations:3/real_time"});
  const json estimates = json::parse(Slurp(out));
  CHECK(estimates["bricks_from_db"] == 6);
  for (const json& b : estimates["bricks"]) {
    CHECK(b["from_db"] == (known_bricks.count(b["name"]) == 1));
    if (!b["from_db"]) continue;
    CHECK(b["step_ms"] == known_bricks.at(b["name"])["step_ms"]);
    CHECK(b["step_spread_ms"] == known_bricks.at(b["name"])["step_spread_ms"]);
  }
  // The first model's bricks all from the database: the same estimate.
  REQUIRE(estimates["models"].size() == 2);
  for (const json& m : estimates["models"]) {
    CHECK_FALSE(m.contains("plain_ms"));
    if (m["name"] != fc + "torch/fp32/train") continue;
    CHECK(m["uncalibrated_ms"].get<double>() ==
          Approx(first_bricks["models"][0]["uncalibrated_ms"].get<double>()));
  }
  CHECK(json::parse(Slurp(db))["bricks"].size() == 9);
  // Another thread count is another context: timed again, and said so.
  Result third = RunRunner("--paradnn_case=" + fc + "torch/fp32/train" + flags +
                           " --paradnn_threads=2 " + "--benchmark_list_tests");
  REQUIRE(third.status == 0);
  CHECK_THAT(third.err,
             ContainsSubstring("6 of this sweep's bricks were measured in "
                               "another context"));
  CHECK_THAT(third.out,
             ContainsSubstring(
                 "BRICK/dense/in:8x32/units:32/bias:1/+relu/grad:1/torch/"
                 "fp32/train"));
  // The L3 is of the context too. Where the kernel does not say it, the
  // second run took the one the database's bricks were measured with.
  const int64_t l3 = known["bricks"][0]["context"]["l3_bytes"];
  CHECK(estimates["l3_bytes"] == l3);
  CHECK(estimates["l3_source"] ==
        (KernelCacheBytes(3) > 0 ? "kernel" : "bricks database"));
  Result fourth =
      RunRunner("--paradnn_case=" + fc + "torch/fp32/train" + flags +
                " --paradnn_threads=1 --paradnn_l3_bytes=" +
                std::to_string(l3 + (1 << 20)) + " --benchmark_list_tests");
  REQUIRE(fourth.status == 0);
  CHECK_THAT(fourth.err,
             ContainsSubstring("6 of this sweep's bricks were measured in "
                               "another context (CPU, threads, L3,"));
  // Bad content is refused with the file's name.
  std::ofstream(db) << "{\"bricks\": [{\"name\": 3}]}";
  Result bad = RunRunner("--paradnn_case=" + fc + "torch/fp32/train" + flags);
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err,
             ContainsSubstring(db + ": entry {\"name\":3}: expected name, "
                                    "step_ms and context"));
}

TEST_CASE("a brick's name reproduces the brick, in this process or isolated",
          "[runner][bricks]") {
  // The names a bricks run of a small CNN prints.
  Result listed = RunRunner(
      "--paradnn_case=CNN/block:residual/blocks:1/filters:4/image:32/"
      "output:10/batch:2/torch/fp32/train --paradnn_bricks "
      "--benchmark_list_tests --benchmark_filter=BRICK/");
  REQUIRE(listed.status == 0);
  std::vector<std::string> names;
  std::istringstream lines(listed.out);
  for (std::string line; std::getline(lines, line);) names.push_back(line);
  REQUIRE(names.size() >= 5);  // conv, batch norm, ReLU, pool, add, ...
  for (const std::string& isolate : {"", " --paradnn_isolate"}) {
    // Isolated, three of them: each child process loads LibTorch.
    if (!isolate.empty()) names.resize(3);
    std::string args;
    for (const std::string& n : names) args += " --paradnn_case=" + n;
    const std::string out = Scratch("isolated_bricks.json");
    // Three steps a call, however long a step takes (with a minimum time,
    // a slow first step was the call's only one).
    Result r =
        RunRunner(args + " --paradnn_steps=3 --paradnn_threads=1" + isolate +
                  " --benchmark_format=json --paradnn_bricks_out=" + out);
    INFO(isolate << "\n" << r.err);
    REQUIRE(r.status == 0);
    // Each brick's three steps, also from an isolated process.
    const json bricks_out = json::parse(Slurp(out));
    const json& bricks = bricks_out["bricks"];
    REQUIRE(bricks.size() == names.size());
    for (const json& b : bricks) {
      INFO(b.dump());
      const auto times = b["step_times_ms"].get<std::vector<double>>();
      REQUIRE(times.size() == 3);
      CHECK(b["step_ms"].get<double>() == Approx(MedianOf(times)));
    }
    CHECK_THAT(r.err,
               ContainsSubstring("paradnn: " + std::to_string(names.size()) +
                                 " passed, 0 skipped, 0 failed"));
    json j = json::parse(r.out);
    REQUIRE(j["benchmarks"].size() == names.size());
    for (size_t i = 0; i < names.size(); ++i) {
      const std::string name = j["benchmarks"][i]["name"];
      // Listed and run under the same name (real or manual time suffix).
      CHECK(CaseNameOf(name) == CaseNameOf(names[i]));
      CHECK(j["benchmarks"][i]["flop_per_step"].get<double>() >= 0);
    }
  }
}

TEST_CASE("bricks of two layers: fewer cases, the same layers covered",
          "[runner][bricks]") {
  const std::string out = Scratch("bricks2.json");
  Result r = RunRunner(
      "--paradnn_case=FC/layers:3/nodes:32/input:64/output:10/batch:8/torch/"
      "fp32/train --paradnn_case=FC/layers:5/nodes:32/input:64/output:10/"
      "batch:8/torch/fp32/train --paradnn_bricks_granularity=2 "
      "--paradnn_bricks_out=" +
      out + kFast);
  INFO(r.err);
  REQUIRE(r.status == 0);
  json j = json::parse(Slurp(out));
  // (dense, relu) pairs and (dense, loss): 4 + 6 bricks, 3 distinct.
  CHECK(j["granularity"] == 2);
  CHECK(j["total_layers"] == 20);
  CHECK(j["unique_layers"] == 5);
  CHECK(j["total_bricks"] == 10);
  CHECK(j["unique_bricks"] == 3);
  std::set<std::string> names;
  for (const json& b : j["bricks"]) names.insert(b["name"]);
  CHECK(names.count("BRICK/dense/in:8x32/units:32/bias:1/+relu/grad:1/torch/"
                    "fp32/train") == 1);
  CHECK(names.count("BRICK/dense/in:8x32/units:10/bias:1/+softmax_xent/"
                    "grad:1/torch/fp32/train") == 1);
  CHECK_THAT(r.err, ContainsSubstring("3 unique bricks of up to 2 layers"));
  CHECK_THAT(
      RunRunner("--paradnn_bricks_granularity=0" + std::string(kFast)).err,
      ContainsSubstring("--paradnn_bricks_granularity=0: expected a positive "
                        "number of layers"));
}

}  // namespace
}  // namespace paradnn::runner_tests
