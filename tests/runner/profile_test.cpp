// Profiles end to end: shares of step time per operation class.
#include <linux/perf_event.h>
#include <sys/syscall.h>
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

// Whether the kernel lets a process count its own cycles, asked directly.
bool CyclesCountable() {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_HARDWARE;
  attr.config = PERF_COUNT_HW_CPU_CYCLES;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  const long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
  if (fd < 0) return false;
  close(static_cast<int>(fd));
  return true;
}

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

TEST_CASE(
    "a profile's layers: each layer's known time, its work against its roof, "
    "its brick",
    "[runner][profile][serial]") {
  // The clock backend spins a known time per layer in the thread's CPU
  // time and profiles it as that layer's: the profile's layers must be
  // those times (each spin overshoots by the reads of the clock and what
  // the kernel charges the thread: up to ten microseconds here), and the
  // step's fixed cost outside every layer. The profile times each layer on
  // the wall clock, which a test beside it on the same cores stretches (by
  // up to a fifth, measured): it runs alone.
  const std::string name =
      "FC/layers:1/nodes:256/input:128/output:10/batch:32/clock/fp32/train";
  const std::string out = Scratch("layers.json");
  const std::string platform = Scratch("layers_platform.json");
  // A cache of 300,000 bytes, its triad at 1e11 bytes/s, reads at 2e11,
  // writes at 5e10: the first dense layer's passes (below) do not fit, its
  // ReLU's do.
  std::ofstream(platform)
      << "{\"peak_flops\": {\"fp32\": 1e12}, \"memory_bandwidth\": 1e10, "
         "\"memory_read_bandwidth\": 2e10, \"memory_write_bandwidth\": 5e9, "
         "\"cache_bandwidth\": {\"300000\": {\"read\": 2e11, \"triad\": 1e11, "
         "\"write\": 5e10}}}";
  const Case c = ParseCaseName(name);
  std::map<int, std::pair<double, double>> truth_us;  // forward, backward
  double parts_us = 0;
  const std::vector<test::ClockPart> parts =
      test::ClockParts(c.model.BuildGraph(), c.mode);
  for (const test::ClockPart& p : parts) {
    (p.backward ? truth_us[p.layer].second : truth_us[p.layer].first) += p.us;
    parts_us += p.us;
  }
  // Each spin overshoots by up to ten microseconds (above), so the sum by
  // up to ten a part: a 2-vCPU EPYC measured 17-20 us over 327 in about
  // half its runs, 6% over. A process the host preempts inside a spin
  // overshoots by its time slice (50 us, once in CI): the process is the
  // unit of variance, so a profile off its known times is taken again, up
  // to three processes. An attribution that is wrong is wrong in every one.
  const auto near = [](double measured_us, double truth_us, double margin_us,
                       double fraction) {
    return std::abs(measured_us - truth_us) <=
           std::max(margin_us, fraction * truth_us);
  };
  const auto close_to_parts = [&](const json& layers) {
    bool close = near(layers["layers_ms"].get<double>() * 1e3, parts_us,
                      10.0 * parts.size(), 0.05);
    for (const json& l : layers["list"]) {
      const auto truth = truth_us.find(l["layer"].get<int>());
      if (truth == truth_us.end()) return false;  // the checks below say so
      const auto& [forward, backward] = truth->second;
      close = close &&
              near(l["forward_ms"].get<double>() * 1e3, forward, 10, 0.1) &&
              near(l["backward_ms"].get<double>() * 1e3, backward, 10, 0.1);
    }
    return close;
  };
  json j;
  for (int process = 0; process < 3; ++process) {
    Result r = RunRunner("--paradnn_case=" + name +
                             " --paradnn_steps=5 --paradnn_threads=1"
                             " --paradnn_platform=" +
                             platform + " --paradnn_profile_out=" + out,
                         ClockPath());
    INFO(r.err);
    REQUIRE(r.status == 0);
    j = json::parse(Slurp(out))["cases"][0];
    if (close_to_parts(j["layers"])) break;
  }
  const json& layers = j["layers"];
  CHECK(layers["layers_ms"].get<double>() ==
        Approx(parts_us / 1e3).epsilon(0.05).margin(10e-3 * parts.size()));
  CHECK(layers["unattributed_ms"].get<double>() ==
        Approx(test::kClockStepUs / 1e3).epsilon(0.2));
  REQUIRE(layers["list"].size() == truth_us.size());
  double last_util = 0;
  for (const json& l : layers["list"]) {
    const int i = l["layer"];
    INFO("layer " << i << " " << l["op"]);
    CHECK(l["forward_ms"].get<double>() * 1e3 ==
          Approx(truth_us.at(i).first).epsilon(0.1).margin(10));
    CHECK(l["backward_ms"].get<double>() * 1e3 ==
          Approx(truth_us.at(i).second).epsilon(0.1).margin(10));
    CHECK(l["brick"].get<std::string>().rfind(
              "BRICK/" + l["op"].get<std::string>() + "/", 0) == 0);
    // Furthest below its roof first.
    CHECK(l["roof_util"].get<double>() >= last_util);
    last_util = l["roof_util"];
  }
  // The first dense layer (layer 1), by hand: 2 x 32 x 128 x 256 FLOPs forward
  // and as many for its weights' gradient (its input, the data, takes none);
  // forward reads the input (32 x 128) and weights (256 x 128 + 256) and
  // writes the output (32 x 256); backward reads the output's gradient,
  // the input and the weights and writes the weights' gradient; the update
  // reads the weights and their gradient and writes the weights; 4 bytes
  // each. 4.7 FLOPs a byte, below the ridge (1e12 / 1e10 = 100): memory
  // bound, its roof the bandwidth. Reads are 148,480 of its 222,720 values:
  // two thirds, the triad's mix.
  const json first =
      *std::find_if(layers["list"].begin(), layers["list"].end(),
                    [](const json& l) { return l["layer"] == 1; });
  const double flops = 2.0 * 2 * 32 * 128 * 256;
  const double bytes = 4.0 * (32 * 128 + 33024 + 32 * 256 + 32 * 256 +
                              32 * 128 + 2 * 33024 + 3 * 33024);
  CHECK(first["flops"].get<double>() == flops);
  CHECK(first["bytes"].get<double>() == bytes);
  CHECK(first["bound"] == "memory");
  CHECK(first["read_bytes"].get<double>() == 4.0 * 148480);
  // Its update moves 396,288 bytes: more than the cache holds.
  CHECK(first["bandwidth_roof"].get<double>() == Approx(1e10));
  // The ReLU's passes move 2 x 32 x 256 x 4 bytes (its input and output;
  // backward: the output's gradient, the input, the input's gradient, 3
  // x): the cache's roof. It reads 3 of the 5 (0.6): a tenth of the way
  // from the triad's mix (2/3) to writes only, so a tenth of the way from
  // the triad's time per byte to the writes'.
  const json relu =
      *std::find_if(layers["list"].begin(), layers["list"].end(),
                    [](const json& l) { return l["op"] == "relu"; });
  CHECK(relu["bytes"].get<double>() == 5.0 * 32 * 256 * 4);
  CHECK(relu["read_bytes"].get<double>() == 3.0 * 32 * 256 * 4);
  CHECK(relu["bandwidth_roof"].get<double>() ==
        Approx(1 / (0.9 / 1e11 + 0.1 / 5e10)));
  const double layer_s = truth_us.at(first["layer"]).first / 1e6;
  CHECK(first["roof_util"].get<double>() ==
        Approx(bytes / layer_s / 1e10).epsilon(0.15));
  CHECK(first["flops_util"].get<double>() ==
        Approx(flops / layer_s / 1e12).epsilon(0.15));
}

TEST_CASE(
    "perf counts per step: the step's CPU time, in the case's process "
    "or its isolated child",
    "[runner][profile]") {
  // The clock backend's step busy-waits a known time on one thread: its
  // CPU time, unless the machine took the core away for part of it.
  const std::string name =
      "FC/layers:1/nodes:64/input:32/output:4/batch:8/clock/fp32/train";
  const Case c = ParseCaseName(name);
  const double known_ms = test::ClockStepUs(c.model.BuildGraph(), c.mode) / 1e3;
  const bool hardware = CyclesCountable();
  for (const char* isolate : {"", " --paradnn_isolate"}) {
    Result r = RunRunner("--paradnn_case=" + name +
                             " --paradnn_steps=5 --paradnn_threads=1"
                             " --paradnn_counters --benchmark_format=json" +
                             isolate,
                         ClockPath());
    INFO(r.err);
    REQUIRE(r.status == 0);
    const json b = json::parse(r.out)["benchmarks"][0];
    REQUIRE(b.contains("cpu_ms_per_step"));
    CHECK(b["cpu_ms_per_step"].get<double>() <= known_ms * 1.2);
    CHECK(b["cpu_ms_per_step"].get<double>() >= known_ms * 0.3);
    // Hardware counts where the machine has them, else said, by the
    // process the user watches whichever process counted.
    CHECK((r.err.find("exposes no hardware counters") == std::string::npos) ==
          hardware);
    if (!hardware) {
      CHECK(!b.contains("ipc"));
    } else {
      CHECK(b["ipc"].get<double>() > 0);
      CHECK(b["instructions_per_step"].get<double>() > 0);
    }
  }
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
  // Each dense layer of the FC cases has its forward and backward time and
  // its kernels: LibTorch's ATen operations and autograd nodes, oneDNN's
  // primitives with the implementation it chose.
  for (int k : {0, 1}) {
    const json& c = j["cases"][k];
    INFO(c["name"]);
    REQUIRE(c.contains("layers"));
    int dense = 0;
    for (const json& l : c["layers"]["list"]) {
      if (l["op"] != "dense") continue;
      ++dense;
      CHECK(l["forward_ms"].get<double>() > 0);
      CHECK(l["backward_ms"].get<double>() > 0);
      // Its weights' update, the optimizer's add on each.
      CHECK(l["update_ms"].get<double>() > 0);
      REQUIRE(l["kernels"].size() > 0);
      const std::string kernels = l["kernels"].dump();
      if (k == 0) {
        CHECK(kernels.find("aten::") != std::string::npos);
        CHECK(kernels.find("Backward") != std::string::npos);
        CHECK(kernels.find("aten::add_") != std::string::npos);
      } else {
        CHECK(kernels.find("inner_product forward (") != std::string::npos);
        CHECK(kernels.find("inner_product backward (") != std::string::npos);
        CHECK(kernels.find(" update (") != std::string::npos);
      }
    }
    CHECK(dense == 5);
  }
  // An isolated case brings its child's shares back, and its layers.
  const std::string child_out = Scratch("isolated_profile.json");
  Result isolated = RunRunner(
      "--paradnn_case=FC/layers:1/nodes:64/input:32/output:4/batch:8/torch/"
      "fp32/train --paradnn_isolate --paradnn_profile_out=" +
      child_out + " --paradnn_steps=2 --benchmark_format=json");
  INFO(isolated.err);
  REQUIRE(isolated.status == 0);
  const json b = json::parse(isolated.out)["benchmarks"][0];
  CHECK(b.contains("time_gemm_frac"));
  CHECK(b.contains("time_other_frac"));
  const json child = json::parse(Slurp(child_out))["cases"][0];
  REQUIRE(child.contains("layers"));
  int dense = 0;
  for (const json& l : child["layers"]["list"]) {
    if (l["op"] == "dense" && l["backward_ms"].get<double>() > 0) ++dense;
  }
  CHECK(dense == 2);
}

TEST_CASE("fused inference: one row a group, its bytes, and switched off",
          "[runner][profile][fusion]") {
  // A residual CNN on oneDNN: its convolutions with their batch norms,
  // ReLUs and residual adds as one unit each, unless --paradnn_fuse=false.
  const std::string name =
      "CNN/block:residual/blocks:1/filters:8/image:32/output:10/batch:2/"
      "onednn/fp32/infer";
  auto run = [&](bool fuse) {
    const std::string out = Scratch(fuse ? "fused.json" : "unfused.json");
    Result r =
        RunRunner("--paradnn_case=" + name +
                  " --paradnn_steps=2 --benchmark_format=json "
                  "--paradnn_fuse=" +
                  (fuse ? "true" : "false") + " --paradnn_profile_out=" + out);
    INFO(r.err);
    REQUIRE(r.status == 0);
    return std::make_pair(json::parse(r.out), json::parse(Slurp(out)));
  };
  const auto [fused, fused_profile] = run(true);
  const auto [plain, plain_profile] = run(false);
  CHECK(fused["context"]["paradnn_fuse"].get<std::string>().rfind("infer", 0) ==
        0);
  CHECK(plain["context"]["paradnn_fuse"].get<std::string>().rfind("no", 0) ==
        0);
  const json& a = fused["benchmarks"][0];
  const json& b = plain["benchmarks"][0];
  CHECK(a["flop_per_step"] == b["flop_per_step"]);
  CHECK(a["params"] == b["params"]);
  // A batch norm's and a ReLU's output of each fused convolution are
  // never written: less than the unfused step by more than the stem's
  // two (2 x 8 x 16 x 16 values each).
  CHECK(b["bytes_per_step"].get<double>() - a["bytes_per_step"].get<double>() >
        2 * 4 * 2 * 8 * 16 * 16);
  std::map<std::string, int> fused_ops, plain_ops;
  int groups = 0;
  for (const json& l : fused_profile["cases"][0]["layers"]["list"]) {
    ++fused_ops[l["op"]];
    if (!l.contains("fused")) continue;
    ++groups;
    CHECK(l["op"] == "conv2d");
    CHECK(l["brick"] == "");
    CHECK(l["fused"][0]["op"] == "batchnorm");
  }
  for (const json& l : plain_profile["cases"][0]["layers"]["list"]) {
    ++plain_ops[l["op"]];
    CHECK_FALSE(l.contains("fused"));
  }
  CHECK(groups == fused_ops["conv2d"]);
  CHECK(groups > 0);
  CHECK(fused_ops["relu"] == 0);
  CHECK(fused_ops["add"] == 0);
  CHECK(plain_ops["batchnorm"] == plain_ops["conv2d"]);
  CHECK(plain_ops["relu"] > 0);
}

}  // namespace
}  // namespace paradnn::runner_tests
