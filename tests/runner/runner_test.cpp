// The paradnn runner end to end, as a user runs it.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "adapters/mlperf/reader.h"
#include "analysis/results.h"
#include "backends/caches.h"
#include "generators/bricks.h"
#include "generators/cost.h"
#include "generators/spec.h"
#include "tests/scratch.h"

namespace paradnn {
namespace {

using Catch::Matchers::Contains;
using nlohmann::json;

struct Result {
  int status = -1;
  std::string out, err;
  double seconds = 0;  // the process's, as it ran
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Scratch(const std::string& name) {
  return test::Scratch(name).string();
}

// The runner with `args`, started through `prefix` (e.g. "taskset -c 0 ").
Result RunRunner(const std::string& args, const std::string& prefix = "") {
  const std::string out = Scratch("out"), err = Scratch("err");
  const std::string cmd =
      prefix + PARADNN_RUNNER + " " + args + " >" + out + " 2>" + err;
  Result r;
  const auto start = std::chrono::steady_clock::now();
  const int raw = std::system(cmd.c_str());
  r.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = Slurp(out);
  r.err = Slurp(err);
  return r;
}

std::string Config(const std::string& name) {
  return std::string("--paradnn_config=") + PARADNN_SOURCE_DIR + "/configs/" +
         name;
}

// Google Benchmark appends "/real_time": paradnn times the wall clock.
std::string CaseName(const json& b) {
  std::string name = b.at("name");
  const std::string suffix = "/real_time";
  REQUIRE(name.size() > suffix.size());
  CHECK(name.substr(name.size() - suffix.size()) == suffix);
  return name.substr(0, name.size() - suffix.size());
}

const char kFast[] = " --benchmark_min_time=0.01 --paradnn_threads=1";

TEST_CASE("the smoke sweep runs every family with the cost model's counters",
          "[runner]") {
  Result r =
      RunRunner(Config("smoke.yaml") + kFast + " --benchmark_format=json");
  INFO(r.err);
  REQUIRE(r.status == 0);
  json j = json::parse(r.out);
  CHECK(j["context"]["paradnn_threads"] == "1");
  CHECK(j["context"]["paradnn_seed"] == "7");
  CHECK_THAT(j["context"]["paradnn_backend_torch"].get<std::string>(),
             Contains("LibTorch"));
  // Counted by hand (tests/generators/cost_test.cpp shows the sums): what
  // the counters must say, whatever the cost model computes.
  const std::map<std::string, std::pair<double, double>> by_hand = {
      // params, FLOPs per step
      {"FC/layers:2/nodes:32/input:64/output:10/batch:8/torch/fp32/infer",
       {2080 + 1056 + 330, 2 * 8 * (64 * 32 + 32 * 32 + 32 * 10)}},
      {"FC/layers:2/nodes:32/input:64/output:10/batch:8/torch/fp32/train",
       {3466, 3 * 54272 - 2 * 8 * 64 * 32}},
      {"RNN/cell:rnn/layers:2/embed:16/vocab:32/length:5/batch:4/torch/fp32/"
       "infer",
       {512 + 2 * 544 + 544, 2 * 20480 + 20480}},
      // dense 3 x 20480; per layer forward and weight gradient 2 x 20480,
      // input gradient 10240, through time from step 1 on 8192
      {"RNN/cell:rnn/layers:2/embed:16/vocab:32/length:5/batch:4/torch/fp32/"
       "train",
       {2144, 3 * 20480 + 2 * (2 * 20480 + 10240 + 8192)}},
      {"CNN/block:bottleneck/blocks:1/filters:4/image:32/output:10/batch:2/"
       "torch/fp32/infer",
       {34286, -1}},
  };
  int counted = 0;
  std::set<std::string> families;
  REQUIRE(j["benchmarks"].size() == 16);
  for (const json& b : j["benchmarks"]) {
    const auto hand = by_hand.find(CaseName(b));
    if (hand != by_hand.end()) {
      INFO(hand->first);
      CHECK(b["params"] == hand->second.first);
      if (hand->second.second >= 0) {
        CHECK(b["flop_per_step"] == hand->second.second);
      }
      ++counted;
    }
    Case c = ParseCaseName(CaseName(b));
    families.insert(c.model.family);
    INFO(c.Name());
    CHECK_FALSE(b.contains("error_occurred"));
    Graph g = c.model.BuildGraph();
    Cost cost = ComputeCost(g, c.mode, c.dtype);
    CHECK(b["flop_per_step"] == Approx(cost.flops));
    CHECK(b["params"] == Approx(cost.params));
    CHECK(b["bytes_per_step"] == Approx(cost.bytes));
    CHECK(b["intensity"] == Approx(cost.intensity));
    // Rates are per second of wall-clock time.
    const double seconds = b["real_time"].get<double>() / 1e3;
    CHECK(b["time_unit"] == "ms");
    CHECK(b["FLOPS"].get<double>() ==
          Approx(cost.flops / seconds).epsilon(1e-3));
    CHECK(b["examples_per_second"].get<double>() ==
          Approx(g.batch() / seconds).epsilon(1e-3));
  }
  CHECK(counted == 5);
  CHECK(families == std::set<std::string>{"FC", "CNN", "RNN", "TRANSFORMER"});
  CHECK_THAT(r.err, Contains("paradnn: 16 passed, 0 skipped, 0 failed"));
  CHECK_THAT(r.err, Contains("paradnn: [16/16] TRANSFORMER/"));
}

TEST_CASE("Google Benchmark's filter CNN/ selects exactly the CNN cases",
          "[runner]") {
  Result r = RunRunner(Config("quickstart.yaml") +
                       " --benchmark_filter=CNN/ --benchmark_list_tests");
  REQUIRE(r.status == 0);
  std::istringstream lines(r.out);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    CHECK(line.rfind("CNN/", 0) == 0);
    ++n;
  }
  // fp32: 2 blocks x 2 filters x 2 batches x 2 modes x 2 backends; bf16:
  // 2 blocks x 2 modes x 2 backends.
  CHECK(n == 40);
}

TEST_CASE("listing the paper's sweeps gives the paper's grid sizes",
          "[runner]") {
  const std::pair<const char*, int> grids[] = {{"paper_fc.yaml", 9720},
                                               {"paper_cnn.yaml", 2160},
                                               {"paper_rnn.yaml", 2160}};
  for (const auto& [file, size] : grids) {
    Result r = RunRunner(Config(file) + " --benchmark_list_tests");
    REQUIRE(r.status == 0);
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == size);
  }
}

TEST_CASE("a fixed number of timed steps (paradnn_steps)", "[runner]") {
  Result r = RunRunner(
      "--paradnn_case=FC/layers:1/nodes:8/input:8/output:2/batch:2/torch/"
      "fp32/infer --paradnn_steps=7 --benchmark_format=json");
  REQUIRE(r.status == 0);
  json j = json::parse(r.out);
  REQUIRE(j["benchmarks"].size() == 1);
  CHECK(j["benchmarks"][0]["iterations"] == 7);
}

TEST_CASE("a case name alone reproduces that case", "[runner]") {
  const std::string name =
      "RNN/cell:gru/layers:1/embed:8/vocab:16/length:3/batch:2/torch/fp32/"
      "infer";
  // Names copied from results carry Google Benchmark's suffix; both work.
  for (const std::string& arg : {name, name + "/real_time"}) {
    Result r =
        RunRunner("--paradnn_case=" + arg + kFast + " --benchmark_format=json");
    INFO(r.err);
    REQUIRE(r.status == 0);
    json j = json::parse(r.out);
    REQUIRE(j["benchmarks"].size() == 1);
    CHECK(CaseName(j["benchmarks"][0]) == name);
  }
}

TEST_CASE("a name of any length reproduces its case", "[runner]") {
  // A chain of 4,000 ReLUs: 24 KB of name. Google Benchmark matches every
  // name against its filter with std::regex, whose ".*" recursed once per
  // character and overflowed the stack on names this long.
  std::string name = "BRICK/relu/in:1";
  for (int i = 1; i < 4000; ++i) name += "/+relu";
  name += "/grad:1/torch/fp32/train";
  REQUIRE(name.size() > 24000);
  Result r =
      RunRunner("--paradnn_case=" + name + kFast + " --benchmark_format=json");
  INFO(r.err);
  REQUIRE(r.status == 0);
  const json j = json::parse(r.out);
  REQUIRE(j["benchmarks"].size() == 1);
  CHECK(CaseName(j["benchmarks"][0]) == name);
}

TEST_CASE("bad input stops the run before anything is registered", "[runner]") {
  const std::string bad = Scratch("bad.yaml");
  std::ofstream(bad) << "sweeps:\n  - family: FC\n    layers: 0\n";
  Result r = RunRunner("--paradnn_config=" + bad + " --benchmark_format=json");
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Contains(bad + ":3:13: error: '0' is not a valid "
                                   "layers: expected a positive integer"));

  r = RunRunner("--paradnn_config=missing.yaml");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Contains("missing.yaml: error: cannot open"));

  r = RunRunner("--paradnn_case=FC/layers:4 --benchmark_list_tests");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Contains("is not a case name: expected FC/layers:"));

  r = RunRunner(Config("smoke.yaml") + " --paradnn_backends=tensorflow");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Contains("'tensorflow' is not a backend"));
}

TEST_CASE("a case that cannot run is skipped and the sweep goes on",
          "[runner]") {
  // 1 MiB holds the FC case but not the CNN; torch_cuda has no GPU here.
  Result r = RunRunner(
      "--paradnn_case=FC/layers:1/nodes:8/input:8/output:2/batch:2/torch/"
      "fp32/infer --paradnn_case=CNN/block:residual/blocks:1/filters:64/"
      "image:224/output:1000/batch:64/torch/fp32/train "
      "--paradnn_max_memory=1M --benchmark_format=json" +
      std::string(kFast));
  INFO(r.err);
  REQUIRE(r.status == 0);
  json j = json::parse(r.out);
  REQUIRE(j["benchmarks"].size() == 2);
  CHECK_FALSE(j["benchmarks"][0].contains("error_occurred"));
  CHECK(j["benchmarks"][1]["error_occurred"] == true);
  CHECK_THAT(j["benchmarks"][1]["error_message"].get<std::string>(),
             Contains("over the 0.0 GiB limit (--paradnn_max_memory)"));
  CHECK_THAT(r.err, Contains("paradnn: 1 passed, 1 skipped, 0 failed"));
}

TEST_CASE(
    "LibTorch's BLAS runs the kernels the user names, else none generic "
    "where the CPU has AVX2",
    "[runner]") {
  const std::string tiny =
      "--paradnn_case=FC/layers:1/nodes:8/input:8/output:2/batch:2/torch/"
      "fp32/infer --benchmark_format=json" +
      std::string(kFast);
  auto torch = [](const Result& r) {
    return json::parse(r.out)["context"]["paradnn_backend_torch"]
        .get<std::string>();
  };
  const Result named = RunRunner(tiny, "OPENBLAS_CORETYPE=Prescott ");
  INFO(named.err);
  REQUIRE(named.status == 0);
  // scripts/setup.sh makes libblas.so.3 OpenBLAS.
  CHECK_THAT(torch(named),
             Catch::Matchers::EndsWith(", OpenBLAS core Prescott, CPU"));
  CHECK_THAT(named.err, !Contains("OpenBLAS does not know"));
  if (std::getenv("OPENBLAS_CORETYPE") == nullptr &&
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    const Result chosen = RunRunner(tiny);
    INFO(chosen.err);
    REQUIRE(chosen.status == 0);
    CHECK_THAT(torch(chosen), Contains("OpenBLAS core "));
    CHECK_THAT(torch(chosen), !Contains("OpenBLAS core Prescott"));
  }
}

TEST_CASE("a case whose warm-up exceeds the time limit is skipped",
          "[runner]") {
  Result r = RunRunner(
      "--paradnn_case=CNN/block:residual/blocks:1/filters:16/image:200/"
      "output:1000/batch:8/torch/fp32/train --paradnn_case=FC/layers:1/"
      "nodes:8/input:8/output:2/batch:2/torch/fp32/infer "
      "--paradnn_case_timeout=0.005 --benchmark_format=json" +
      std::string(kFast));
  INFO(r.err);
  REQUIRE(r.status == 0);
  json j = json::parse(r.out);
  REQUIRE(j["benchmarks"].size() == 2);
  CHECK(j["benchmarks"][0]["error_occurred"] == true);
  CHECK_THAT(j["benchmarks"][0]["error_message"].get<std::string>(),
             Contains("over the 0.005 s of --paradnn_case_timeout"));
  CHECK_FALSE(j["benchmarks"][1].contains("error_occurred"));
  CHECK_THAT(r.err, Contains("paradnn: 1 passed, 1 skipped, 0 failed"));
}

TEST_CASE("Google Benchmark's own flags keep working", "[runner]") {
  const std::string args =
      "--paradnn_case=FC/layers:1/nodes:8/input:8/output:2/batch:2/torch/"
      "fp32/infer --benchmark_repetitions=3 --benchmark_out=" +
      Scratch("gb.json") + " --benchmark_out_format=json" + kFast;
  Result r = RunRunner(args);
  REQUIRE(r.status == 0);
  json j = json::parse(Slurp(Scratch("gb.json")));
  // Three repetitions plus mean, median, stddev and cv.
  CHECK(j["benchmarks"].size() >= 6);
  CHECK(j["benchmarks"][0]["repetitions"] == 3);
}

TEST_CASE("backend modules: a third party's on PARADNN_BACKEND_PATH",
          "[runner][modules]") {
  const std::string model = "FC/layers:1/nodes:8/input:8/output:2/batch:2/";
  const std::string cases = " --paradnn_case=" + model + "null/fp32/infer" +
                            " --paradnn_case=" + model + "null/fp32/train" +
                            " --paradnn_case=" + model + "broken/fp32/infer";
  // Not a backend at all without the path.
  Result unknown = RunRunner(cases);
  CHECK(unknown.status == 2);
  CHECK_THAT(unknown.err, Contains("'null' is not a backend"));

  const std::string broken = Scratch("modules/libparadnn_backend_broken.so");
  std::ofstream(broken) << "not a shared object\n";
  const std::string path = std::string(PARADNN_THIRD_PARTY_BACKENDS) + ":" +
                           test::Scratch("modules").string();
  setenv("PARADNN_BACKEND_PATH", path.c_str(), 1);
  Result r = RunRunner(cases + kFast + " --benchmark_format=json");
  unsetenv("PARADNN_BACKEND_PATH");
  INFO(r.err);
  CHECK(r.status == 0);  // skipped cases are not failures
  CHECK_THAT(r.err, Contains("paradnn: 1 passed, 2 skipped, 0 failed"));
  json j = json::parse(r.out);
  CHECK(j["context"]["paradnn_backend_null"] == "null backend, does nothing");
  std::map<std::string, json> by_name;
  for (const json& b : j["benchmarks"]) by_name[CaseName(b)] = b;
  REQUIRE(by_name.size() == 3);
  const json& infer = by_name[model + "null/fp32/infer"];
  CHECK_FALSE(infer.contains("error_occurred"));
  CHECK(infer["flop_per_step"] == 2 * 2 * (8 * 8 + 8 * 2));
  CHECK(by_name[model + "null/fp32/train"]["error_message"] ==
        "the null backend only infers");
  const std::string why = by_name[model + "broken/fp32/infer"]["error_message"];
  CHECK_THAT(why, Contains("backend 'broken' cannot be loaded: " + broken));
}

// The shared objects a run of the runner loads (the loader's own account).
std::string Loaded(const std::string& args) {
  const std::string log = Scratch("loaded.txt");
  const std::string cmd = std::string("LD_DEBUG=files ") + PARADNN_RUNNER +
                          " " + args + " 2> " + log + " > /dev/null";
  REQUIRE(std::system(cmd.c_str()) == 0);
  return Slurp(log);
}

TEST_CASE("a run loads the backends of the cases it runs, no others",
          "[runner][modules]") {
  const std::string none =
      Loaded(Config("smoke.yaml") + " --benchmark_filter=NONE");
  CHECK_THAT(none, Contains("libparadnn.so"));
  CHECK_THAT(none, !Contains("libparadnn_backend_"));
  CHECK_THAT(none, !Contains("libtorch"));
  CHECK_THAT(none, !Contains("libdnnl"));
  const std::string torch = Loaded(
      "--paradnn_case=FC/layers:1/nodes:8/input:8/output:2/batch:2/torch/"
      "fp32/infer" +
      std::string(kFast));
  CHECK_THAT(torch, Contains("libparadnn_backend_torch.so"));
  CHECK_THAT(torch, Contains("libtorch"));  // which brings its own oneDNN
  CHECK_THAT(torch, !Contains("libparadnn_backend_onednn.so"));
}

TEST_CASE("the default thread count is the CPUs the process may use",
          "[runner][threads]") {
  // One CPU by affinity, as taskset or a Slurm binding gives it.
  Result r = RunRunner(
      "--paradnn_case=FC/layers:1/nodes:8/input:8/output:2/batch:2/torch/"
      "fp32/infer --benchmark_min_time=0.01 --benchmark_format=json",
      "taskset -c 0 ");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(json::parse(r.out)["context"]["paradnn_threads"] == "1");
}

TEST_CASE("flops_util is a plain fraction of the device's peak, never over 1",
          "[runner][platform]") {
  // The share comes from paradnn's own mean step, which the profile's output
  // also reports. Google Benchmark's time is no reference: on a busy machine
  // it sometimes takes in a stall of milliseconds as its timer starts, before
  // the first step (measured 5-57% of a 15 ms run).
  const std::string name =
      "FC/layers:2/nodes:256/input:512/output:10/batch:64/torch/fp32/infer";
  auto run = [&](double peak) {
    const std::string platform = Scratch("platform.json");
    const std::string profile = Scratch("profile.json");
    std::ofstream(platform) << "{\"peak_flops\": {\"fp32\": " << peak
                            << "}, \"memory_bandwidth\": 1e10}";
    Result r = RunRunner("--paradnn_case=" + name +
                         " --paradnn_steps=5 --paradnn_threads=1"
                         " --paradnn_profile_out=" +
                         profile + " --paradnn_platform=" + platform +
                         " --benchmark_format=json");
    INFO(r.err);
    REQUIRE(r.status == 0);
    json b = json::parse(r.out)["benchmarks"][0];
    const double step_s =
        json::parse(Slurp(profile))["cases"][0]["timed_step_ms"].get<double>() /
        1e3;
    REQUIRE(step_s > 0);
    // 2 x 64 x (512 x 256 + 256 x 256 + 256 x 10) multiply-adds.
    CHECK(b["flop_per_step"].get<double>() == 25493504);
    b["expected_share"] = 25493504 / step_s / peak;
    return b;
  };
  const json under = run(1e15);
  REQUIRE(under.contains("flops_util"));
  CHECK_FALSE(under.contains("flops_over_peak"));
  CHECK(under["flops_util"].get<double>() ==
        Approx(under["expected_share"].get<double>()).epsilon(1e-9));
  CHECK(under["flops_util"].get<double>() < 1);
  const json over = run(1e3);  // a peak no case stays under
  CHECK_FALSE(over.contains("flops_util"));
  REQUIRE(over.contains("flops_over_peak"));
  CHECK(over["flops_over_peak"].get<double>() ==
        Approx(over["expected_share"].get<double>()).epsilon(1e-9));
}

TEST_CASE(
    "oneDNN runs no reference kernel for products, pooling or norms, and no "
    "generic reorder for an add",
    "[runner][onednn]") {
  // Every family, both data types, both modes: the smoke sweep's models,
  // with CNN filters at 16 (fewer channels than a vector has lanes only
  // have oneDNN's reference kernels, and no real model has them).
  const std::string config = Scratch("kernels.yaml");
  std::ofstream(config)
      << "backends: [onednn]\ndtypes: [fp32, bf16]\nmodes: [train, infer]\n"
         "sweeps:\n"
         "  - {family: FC, layers: 2, nodes: 32, input: 64, output: 10, "
         "batch: 8}\n"
         "  - {family: CNN, block: [residual, bottleneck], blocks: 1, "
         "filters: 16, image: 32, output: 10, batch: 2}\n"
         "  - {family: RNN, cell: [rnn, lstm, gru], layers: 2, embed: 16, "
         "vocab: 32, length: 5, batch: 4}\n"
         "  - {family: TRANSFORMER, layers: 2, d_model: 16, heads: 2, ffn: 32, "
         "length: 6, vocab: 32, causal: [false, true], batch: 3}\n";
  setenv("ONEDNN_VERBOSE", "1", 1);
  Result r = RunRunner("--paradnn_config=" + config +
                       " --paradnn_steps=2 --paradnn_threads=2");
  unsetenv("ONEDNN_VERBOSE");
  INFO(r.err);
  REQUIRE(r.status == 0);
  int executed = 0;
  std::string reference, generic_add;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    // onednn_verbose,exec,cpu,<primitive>,<implementation>,...
    if (line.rfind("onednn_verbose,exec,cpu,", 0) != 0) continue;
    const std::vector<std::string> f = Split(line, ',');
    REQUIRE(f.size() > 7);
    ++executed;
    for (const char* kind :
         {"convolution", "inner_product", "matmul", "pooling",
          "batch_normalization", "layer_normalization"}) {
      if (f[3] == kind && f[4].rfind("ref", 0) == 0) reference += line + "\n";
    }
    // An SGD update or a gradient sum (a reorder that adds to its
    // destination) in oneDNN's generic code, several times slower than
    // the binary add the runner makes of it.
    if (f[3] == "reorder" && f[4].rfind("simple", 0) == 0 &&
        f[7].find("post-ops:sum") != std::string::npos) {
      generic_add += line + "\n";
    }
  }
  CHECK(executed > 100);
  CHECK(reference.empty());
  CHECK(generic_add.empty());
}

const char* const kCommandNames[] = {"calibrate", "report", "merge",
                                     "mlperf-summary", "mlperf-report"};

TEST_CASE("--help lists the commands and flags, on stdout", "[runner][cli]") {
  for (const char* flag : {"--help", "-h", "help"}) {
    INFO(flag);
    Result r = RunRunner(flag);
    CHECK(r.status == 0);
    CHECK(r.err.empty());
    for (const char* command : kCommandNames) {
      CHECK_THAT(r.out, Contains(std::string("\n  ") + command + " "));
    }
    CHECK_THAT(r.out, Contains("--paradnn_config"));
    CHECK_THAT(r.out, Contains("--paradnn_isolate"));
    CHECK_THAT(r.out, Contains("paradnn --benchmark_help"));
  }
  Result gb = RunRunner("--benchmark_help");
  CHECK(gb.status == 0);
  CHECK_THAT(gb.out, Contains("--benchmark_filter="));
}

TEST_CASE("every command explains itself with --help", "[runner][cli]") {
  for (const char* command : kCommandNames) {
    INFO(command);
    for (const std::string& args :
         {std::string(command) + " --help", std::string(command) + " -h",
          std::string("help ") + command}) {
      Result r = RunRunner(args);
      CHECK(r.status == 0);
      CHECK(r.err.empty());
      CHECK(r.out.rfind(std::string("usage: paradnn ") + command + " ", 0) ==
            0);
    }
    // Used wrongly, the same usage goes to stderr with status 2.
    Result wrong = RunRunner(std::string(command) + " --no-such-option x");
    CHECK(wrong.status == 2);
    CHECK(wrong.out.empty());
    CHECK_THAT(wrong.err, Contains(std::string("usage: paradnn ") + command));
  }
}

TEST_CASE("an unknown command names the known ones", "[runner][cli]") {
  Result r = RunRunner("mreg a.json");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Contains("no command 'mreg'; commands: calibrate, report, "
                             "merge, mlperf-summary, mlperf-report, help"));
  Result help = RunRunner("help mreg");
  CHECK(help.status == 2);
  CHECK_THAT(help.err, Contains("no command 'mreg'"));
}

}  // namespace
}  // namespace paradnn

namespace paradnn {
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
  CHECK_THAT(system["framework"].get<std::string>(), Contains("LibTorch"));

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
  CHECK_THAT(r.err, Contains("no/such/folder: not a folder"));
}

}  // namespace
}  // namespace paradnn

namespace paradnn {
namespace {

// The factor of the machine's moment a step started in for a series of
// that sensitivity, as a bricks run's output gives them ("moments": the
// factor times e to the sensitivity times the contrast), 1 where none was
// fit.
double MomentFactor(const json& bricks_out, double at_s, double sensitivity) {
  const double bin_s = bricks_out["moment_s"];
  const double from = std::floor(at_s / bin_s) * bin_s;
  for (const json& m : bricks_out["moments"]) {
    if (std::abs(m["from_s"].get<double>() - from) < 1e-9) {
      return m["factor"].get<double>() *
             std::exp(sensitivity * m["contrast"].get<double>());
    }
  }
  return 1;
}

// A case's quiet time from its steps: each divided by its moment's factor,
// then the 20th percentile, interpolated between the two nearest steps.
double QuietOf(const json& bricks_out, const std::vector<double>& ms,
               const std::vector<double>& at_s, double sensitivity) {
  REQUIRE(ms.size() == at_s.size());
  REQUIRE(!ms.empty());
  std::vector<double> v;
  for (size_t i = 0; i < ms.size(); ++i) {
    v.push_back(ms[i] / MomentFactor(bricks_out, at_s[i], sensitivity));
  }
  std::sort(v.begin(), v.end());
  const double x = (v.size() - 1) / 5.0;
  const size_t below = static_cast<size_t>(x);
  if (below + 1 == v.size()) return v[below];
  return v[below] + (x - below) * (v[below + 1] - v[below]);
}

// A case's time from its steps taken `way` ("quiet", "least" or "midway"):
// its quiet time, its least step as measured, or their geometric mean.
double TimeOf(const json& bricks_out, const std::string& way,
              const std::vector<double>& ms, const std::vector<double>& at_s,
              double sensitivity) {
  const double least = *std::min_element(ms.begin(), ms.end());
  if (way == "least") return least;
  const double quiet = QuietOf(bricks_out, ms, at_s, sensitivity);
  if (way == "quiet") return quiet;
  REQUIRE(way == "midway");
  return std::sqrt(least * quiet);
}

// The same, taken the way the run chose (its "case_time").
double TimeOf(const json& bricks_out, const std::vector<double>& ms,
              const std::vector<double>& at_s, double sensitivity) {
  return TimeOf(bricks_out, bricks_out["case_time"], ms, at_s, sensitivity);
}

// How far apart a case's time taken `way` is between its two calls of
// `per_call` warm steps each (at the start of "step_times_ms").
double HalvesOf(const json& bricks_out, const std::string& way, const json& c,
                size_t per_call) {
  const auto ms = c["step_times_ms"].get<std::vector<double>>();
  const auto at = c["step_at_s"].get<std::vector<double>>();
  REQUIRE(ms.size() == 2 * per_call);
  auto half = [&](size_t h) {
    const auto from = static_cast<std::ptrdiff_t>(h * per_call);
    const auto to = from + static_cast<std::ptrdiff_t>(per_call);
    return TimeOf(bricks_out, way, {ms.begin() + from, ms.begin() + to},
                  {at.begin() + from, at.begin() + to}, c["step_sensitivity"]);
  };
  return std::abs(half(0) / half(1) - 1);
}

// A brick's time in caches of a kind from its steps ("cold_" or "") taken
// `way`: the least time of that kind and the colder one, which did more
// work.
double BrickTimeOf(const json& bricks_out, const json& brick,
                   const std::string& kind, const std::string& way) {
  double time = 1e300;
  for (const std::string k : {"cold_", ""}) {
    const auto ms = brick[k + "step_times_ms"].get<std::vector<double>>();
    if (!ms.empty()) {
      time = std::min(time,
                      TimeOf(bricks_out, way, ms,
                             brick[k + "step_at_s"].get<std::vector<double>>(),
                             brick[k + "step_sensitivity"]));
    }
    if (k == kind) break;
  }
  return time;
}

// The same, taken the way the run chose.
double BrickTimeOf(const json& bricks_out, const json& brick,
                   const std::string& kind) {
  return BrickTimeOf(bricks_out, brick, kind, bricks_out["case_time"]);
}

// A brick of a bricks run's output with the steps of one of its two calls
// alone (`call` 0 or 1, `per_call` steps of each kind in each), its times
// taken again from them.
json BrickCallOf(const json& bricks_out, json brick, size_t call,
                 size_t per_call) {
  for (const std::string kind : {"", "cold_"}) {
    for (const std::string field : {"step_times_ms", "step_at_s"}) {
      const auto v = brick[kind + field].get<std::vector<double>>();
      REQUIRE(v.size() == 2 * per_call);
      const auto from =
          v.begin() + static_cast<std::ptrdiff_t>(call * per_call);
      brick[kind + field] = std::vector<double>(
          from, from + static_cast<std::ptrdiff_t>(per_call));
    }
  }
  for (const std::string kind : {"", "cold_"}) {
    brick[kind + "step_ms"] = BrickTimeOf(bricks_out, brick, kind);
  }
  return brick;
}

// The fixed cost of a step from the step times of its two bricks: twice a
// one-element ReLU's step less that of two in a chain, none below zero and
// none above the one ReLU's step.
double FixedCostMs(double one, double two) {
  return std::clamp(2 * one - two, 0.0, one);
}

// The fixed cost of a step in a context ("/torch/fp32/train") from a
// bricks run's output, computed here from its step-cost bricks' quiet
// steps (FixedCostMs); the output says the same.
double StepCostMs(const json& bricks_out, const std::string& context) {
  double one = 0, two = 0;
  for (const json& b : bricks_out["bricks"]) {
    const std::string name = b["name"];
    if (name == "BRICK/relu/in:1/grad:1" + context) one = b["step_ms"];
    if (name == "BRICK/relu/in:1/+relu/grad:1" + context) two = b["step_ms"];
    CHECK(b["step_cost"] == (name.rfind("BRICK/relu/in:1/", 0) == 0));
  }
  REQUIRE(one > 0);
  REQUIRE(two > 0);
  const double cost = FixedCostMs(one, two);
  CHECK(bricks_out["step_cost_ms"][context.substr(1)].get<double>() ==
        Approx(cost));
  return cost;
}

// A layer's share of its model's estimate: what its brick's warm step took
// beyond a step's fixed cost, none below zero.
double BeyondStepCost(double brick_ms, double step_cost) {
  return std::max(0.0, brick_ms - step_cost);
}

// How much of its brick's extra cold time a model's layer takes, from the
// cost model: the model's bytes per step D over D and what reaches past
// the caches (the output's `l2_bytes` and `l3_bytes`): where half the L3
// is past 8 times its threads' L2s, D / (D + R), R the geometric mean of
// the two; else D^2 / (D^2 + R^2), R the larger of those L2s and the L3.
double ColdShareOf(const json& bricks_out, const json& m, int threads) {
  const Case c = ParseCaseName(m["name"].get<std::string>());
  const Cost cost = ComputeCost(c.model.BuildGraph(), c.mode, c.dtype);
  const double l2s = 8.0 * threads * bricks_out["l2_bytes"].get<double>();
  const double l3 = bricks_out["l3_bytes"].get<double>();
  const double d = static_cast<double>(cost.bytes);
  if (l3 / 2 > l2s) return d / (d + std::sqrt(l2s * l3 / 2));
  const double reach = std::max(l2s, l3);
  return d * d / (d * d + reach * reach);
}

// A brick's time in caches of a kind ("warm" or "cold"), as the output
// gives it.
double StepMs(const json& brick, const std::string& caches) {
  return brick[caches == "warm" ? "step_ms" : caches + "_step_ms"]
      .get<double>();
}

// A layer's time inside a model: its brick's warm time beyond a step's
// fixed cost, and `part` of the brick's extra cold time in the model's
// `share`.
double LayerMs(const json& brick, double part, double share, double step_cost) {
  const double warm = StepMs(brick, "warm");
  return BeyondStepCost(warm, step_cost) +
         part * share * (StepMs(brick, "cold") - warm);
}

// The part of its brick's extra cold time a layer takes inside a model
// where an earlier layer ran the same brick and the step recycles the
// blocks it frees: the brick's bytes, by the cost model, that do not go
// through such blocks (in training all but the layer outputs' gradients,
// in inference the weights) over all of them.
double RecycledColdPart(const std::string& brick) {
  const BrickCase b = ParseBrickName(brick);
  const Cost c = ComputeCost(b.brick.BuildGraph(b.mode), b.mode, b.dtype);
  const int64_t kept = b.mode == Mode::kTrain ? c.bytes - c.gradient_bytes
                                              : c.params * ElementSize(b.dtype);
  return static_cast<double>(kept) / c.bytes;
}

// Each of a model's layers, what it takes of its brick's extra cold time,
// and which caches that says it finds: all of it, cold, except, where the
// backend's step recycles what it frees (LibTorch's), a layer whose brick
// ran earlier in the model: RecycledColdPart, recycled.
struct ExpectedInside {
  std::vector<double> parts;
  std::vector<std::string> caches;
};

ExpectedInside ExpectedCaches(const std::vector<std::string>& layers,
                              bool recycles) {
  ExpectedInside o;
  std::set<std::string> ran;
  for (const std::string& layer : layers) {
    const bool recycled = recycles && !ran.insert(layer).second;
    o.parts.push_back(recycled ? RecycledColdPart(layer) : 1);
    o.caches.push_back(recycled ? "recycled" : "cold");
  }
  return o;
}

// Whether a model's layer_cold_parts are `parts`.
bool SameParts(const json& m, const std::vector<double>& parts) {
  const auto got = m["layer_cold_parts"].get<std::vector<double>>();
  if (got.size() != parts.size()) return false;
  for (size_t k = 0; k < parts.size(); ++k) {
    if (got[k] != Approx(parts[k])) return false;
  }
  return true;
}

TEST_CASE("bricks: unique layers timed, model times constructed from them",
          "[runner][bricks]") {
  const std::string out = Scratch("bricks.json");
  Result r = RunRunner(
      "--paradnn_case=FC/layers:3/nodes:32/input:64/output:10/batch:8/torch/"
      "fp32/train --paradnn_case=FC/layers:5/nodes:32/input:64/output:10/"
      "batch:8/torch/fp32/train --paradnn_bricks_out=" +
      out +
      " --paradnn_steps=5 --benchmark_repetitions=2 "
      "--benchmark_enable_random_interleaving=true --paradnn_threads=1 "
      "--benchmark_format=json");
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
  CHECK(j["end_to_end_benchmark_s"].get<double>() > 0);
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
  // Each brick's step time, and Google Benchmark's own report of it: two
  // repetitions of 5 steps each (the cv of a ReLU's zero FLOP/s is NaN).
  json results = ParseBenchmarkJson(r.out);
  std::map<std::string, double> least_ms;
  std::map<std::string, json> bricks;
  for (const json& b : j["bricks"]) {
    INFO(b["name"]);
    bricks[b["name"]] = b;
    // Steps take turns at warm and cold caches, 5 rounded up to 6 per
    // repetition, three of each kind: 12 steps, timed apart. Each kind's
    // time is the quiet time of that kind or a colder one, which did more
    // work.
    double least = 1e300;
    for (const std::string kind : {"cold_", ""}) {
      INFO(kind);
      const auto times = b[kind + "step_times_ms"].get<std::vector<double>>();
      REQUIRE(times.size() == 6);
      least = std::min(least, *std::min_element(times.begin(), times.end()));
      CHECK(b[kind + "step_ms"].get<double>() ==
            Approx(BrickTimeOf(j, b, kind)));
      // When each started, in seconds of the run: within the run, and one
      // step after another within a call (three of each kind per call).
      const auto at = b[kind + "step_at_s"].get<std::vector<double>>();
      REQUIRE(at.size() == 6);
      for (double s : at) CHECK((s > 0 && s < r.seconds));
      CHECK(std::is_sorted(at.begin(), at.begin() + 3));
      CHECK(std::is_sorted(at.begin() + 3, at.end()));
    }
    least_ms[b["name"]] = least;
  }
  for (const std::string& brick : {in, hidden, output, loss})
    CHECK(bricks.count(brick + suffix) == 1);
  // By hand: what of a recycled brick's traffic is not gradients. The
  // hidden brick's weights (32 x 32 + 32) and their gradients, its input,
  // the dense layer's and the ReLU's outputs and the loss (3 x 256 + 1)
  // against those and their gradients, 4 bytes each; a dense layer's
  // alone (one output fewer); a ReLU's half.
  CHECK(RecycledColdPart(hidden + suffix) == Approx(2881.0 / 3650));
  CHECK(RecycledColdPart("BRICK/dense/in:8x32/units:32/bias:1/grad:1" +
                         suffix) == Approx(2625.0 / 3138));
  CHECK(RecycledColdPart("BRICK/relu/in:8x32/grad:1" + suffix) == Approx(0.5));
  const double step_cost = StepCostMs(j, suffix);
  std::map<std::string, std::vector<double>> repetition_ms;
  for (const json& b : results["benchmarks"]) {
    const std::string name = b["run_name"];
    if (name.rfind("BRICK/", 0) != 0 || b["run_type"] != "iteration") continue;
    CHECK(b["time_unit"] == "ms");
    CHECK(b["iterations"] == 6);
    repetition_ms[name.substr(0, name.find(suffix) + suffix.size())].push_back(
        b["real_time"]);
  }
  REQUIRE(repetition_ms.size() == 6);
  for (const auto& [brick, ms] : repetition_ms) {
    INFO(brick);
    // Google Benchmark reports each repetition's mean step, of all kinds
    // together: none is less than the least step of all.
    REQUIRE(ms.size() == 2);
    CHECK(least_ms.at(brick) > 0);
    CHECK(least_ms.at(brick) <= 1.0001 * std::min(ms[0], ms[1]));
  }
  // The bricks as each of their two calls alone timed them.
  std::map<std::string, json> call_bricks[2];
  for (size_t call : {0, 1}) {
    for (const auto& [name, b] : bricks) {
      call_bricks[call][name] = BrickCallOf(j, b, call, 3);
    }
  }
  REQUIRE(j["models"].size() == 2);
  std::vector<double> ratios, halves, estimate_halves;
  for (size_t k = 0; k < 2; ++k) {
    const json& m = j["models"][k];
    // Models of a few KB, far inside one thread's L2: under 1% of their
    // layers' extra cold time.
    const double share = ColdShareOf(j, m, 1);
    CHECK(m["cold_share"].get<double>() == Approx(share));
    CHECK(share > 0);
    CHECK(share < 0.01);
    std::vector<std::string> names;
    for (const std::string& layer : layers[k]) names.push_back(layer + suffix);
    CHECK(m["layers"].get<std::vector<std::string>>() == names);
    // LibTorch models: repeated layers recycled.
    const ExpectedInside inside = ExpectedCaches(names, true);
    CHECK(m["layer_caches"] == inside.caches);
    CHECK(SameParts(m, inside.parts));
    // Each brick's step paid the fixed cost of one; the model's pays it
    // once.
    double sum = step_cost;
    for (size_t l = 0; l < names.size(); ++l) {
      sum += LayerMs(bricks.at(names[l]), inside.parts[l], share, step_cost);
    }
    CHECK(m["step_cost_ms"].get<double>() == Approx(step_cost));
    CHECK(m["estimated_ms"].get<double>() == Approx(sum));
    // The same from each call of the bricks alone, the fixed cost too: how
    // far the estimate moves with the moments its bricks met.
    double call_sum[2];
    for (size_t call : {0, 1}) {
      const double one =
          call_bricks[call].at("BRICK/relu/in:1/grad:1" + suffix)["step_ms"];
      const double two = call_bricks[call].at("BRICK/relu/in:1/+relu/grad:1" +
                                              suffix)["step_ms"];
      const double cost = FixedCostMs(one, two);
      call_sum[call] = cost;
      for (size_t l = 0; l < names.size(); ++l) {
        call_sum[call] += LayerMs(call_bricks[call].at(names[l]),
                                  inside.parts[l], share, cost);
      }
    }
    estimate_halves.push_back(std::abs(call_sum[0] / call_sum[1] - 1));
    CHECK(m["estimated_halves_difference"].get<double>() ==
          Approx(estimate_halves.back()));
    // Its quiet time over both repetitions.
    const auto steps = m["step_times_ms"].get<std::vector<double>>();
    const auto at = m["step_at_s"].get<std::vector<double>>();
    REQUIRE(steps.size() == 10);
    REQUIRE(at.size() == 10);
    const double sensitivity = m["step_sensitivity"];
    CHECK(m["measured_ms"].get<double>() ==
          Approx(TimeOf(j, steps, at, sensitivity)));
    // How far the two calls' times are apart: the measurement's own noise.
    halves.push_back(HalvesOf(j, j["case_time"], m, 5));
    CHECK(m["measured_halves_difference"].get<double>() ==
          Approx(halves.back()));
    CHECK(std::is_sorted(at.begin(), at.begin() + 5));
    CHECK(std::is_sorted(at.begin() + 5, at.end()));
    CHECK(m["estimate_over_measured"].get<double>() ==
          Approx(sum / m["measured_ms"].get<double>()));
    ratios.push_back(m["estimate_over_measured"]);
  }
  const json& all = j["estimate_over_measured"]["all"];
  CHECK(all["models"] == 2);
  CHECK(all["geomean"].get<double>() ==
        Approx(std::sqrt(ratios[0] * ratios[1])));
  CHECK(all["mean_abs_error"].get<double>() ==
        Approx((std::abs(ratios[0] - 1) + std::abs(ratios[1] - 1)) / 2));
  CHECK(all["max_abs_error"].get<double>() ==
        Approx(std::max(std::abs(ratios[0] - 1), std::abs(ratios[1] - 1))));
  CHECK(all["measured_halves_mean_difference"].get<double>() ==
        Approx((halves[0] + halves[1]) / 2));
  CHECK(all["measured_halves_max_difference"].get<double>() ==
        Approx(std::max(halves[0], halves[1])));
  CHECK(all["estimated_halves_mean_difference"].get<double>() ==
        Approx((estimate_halves[0] + estimate_halves[1]) / 2));
  CHECK(all["estimated_halves_max_difference"].get<double>() ==
        Approx(std::max(estimate_halves[0], estimate_halves[1])));
  CHECK(j["estimate_over_measured"]["per_family"].contains("FC"));
  // Each way of taking a case's time, its halves' mean difference over all
  // eight cases (a brick's calls of 3 warm steps each); the run took the
  // way of the smallest.
  std::string best;
  std::map<std::string, double> way_halves;
  for (const std::string way : {"quiet", "least", "midway"}) {
    double sum = 0;
    for (const json& m : j["models"]) sum += HalvesOf(j, way, m, 5);
    for (const json& b : j["bricks"]) sum += HalvesOf(j, way, b, 3);
    way_halves[way] = sum / 8;
    CHECK(j["case_time_halves"][way].get<double>() == Approx(way_halves[way]));
    if (best.empty() || way_halves[way] < way_halves[best]) best = way;
  }
  CHECK(j["case_time"] == best);
  // The brick cases are Google Benchmark cases like any other: 8 cases,
  // each with 2 repetitions and their mean, median, stddev and cv.
  CHECK(results["benchmarks"].size() == 8 * 6);
  CHECK_THAT(r.err, Contains("paradnn: bricks: 5 unique of 20 layers"));
}

namespace {

// The --paradnn_bricks_out file of a run of `args` on one thread, and its
// bricks by name.
std::pair<json, std::map<std::string, json>> RunBricksOut(
    const std::string& args, const std::string& file) {
  const std::string out = Scratch(file);
  Result r = RunRunner(args + " --paradnn_bricks_out=" + out +
                       " --paradnn_threads=1 --benchmark_format=json");
  INFO(r.err);
  REQUIRE(r.status == 0);
  std::pair<json, std::map<std::string, json>> o{json::parse(Slurp(out)), {}};
  for (const json& b : o.first["bricks"]) o.second[b["name"]] = b;
  return o;
}

// The L3 the cold tests' runs are given (--paradnn_l3_bytes): their
// estimates by hand then hold on any machine.
constexpr int64_t kColdTestL3 = int64_t{32} << 20;

// Nodes of the hidden layers of a four-layer FC model whose last three
// layers' training bricks move more than twice kColdTestL3 per step, so
// that its layers take more than 80% of their extra cold time: 4096 (64
// MB of weights each).
int ColdFcNodes() {
  const BrickCase b = ParseBrickName(
      "BRICK/dense/in:8x4096/units:4096/bias:1/grad:1/onednn/fp32/train");
  REQUIRE(3 * ComputeCost(b.brick.BuildGraph(b.mode), b.mode, b.dtype).bytes >
          2 * kColdTestL3);
  return 4096;
}

// A bricks run of one FC model on both backends in `mode`, `steps` steps:
// its hidden layers' weights of 64 MB or more each are far past 8 times
// one thread's L2 (a cold model).
std::pair<json, std::map<std::string, json>> RunColdFcModels(
    const std::string& mode, int steps, const std::string& file) {
  const std::string model =
      "FC/layers:4/nodes:" + std::to_string(ColdFcNodes()) +
      "/input:2000/output:10/batch:8/";
  auto o =
      RunBricksOut("--paradnn_case=" + model + "torch/fp32/" + mode +
                       " --paradnn_case=" + model + "onednn/fp32/" + mode +
                       " --paradnn_steps=" + std::to_string(steps) +
                       " --paradnn_l3_bytes=" + std::to_string(kColdTestL3),
                   file);
  REQUIRE(o.first["models"].size() == 2);
  return o;
}

// A model's bricks and which time of each it took.
struct ModelLayers {
  std::vector<std::string> layers, caches;
};

ModelLayers LayersOf(const json& m, size_t layers) {
  ModelLayers o{m["layers"], m["layer_caches"]};
  REQUIRE(o.layers.size() == layers);
  REQUIRE(o.caches.size() == layers);
  return o;
}

// Checks every model of a RunColdFcModels run: a layer takes its brick's
// cold time in the model's share, except, inside LibTorch's models, whose
// step recycles the blocks it frees in either mode, a brick that ran
// earlier in the model: the hidden dense layer and its ReLU (one brick in
// LibTorch) twice after their first take the part of it RecycledColdPart
// says: the dense layer's weights (64 MB) are most of its bytes in either
// mode (a ReLU's alone, half of them in training, none in inference).
void CheckColdFcEstimates(const json& j,
                          const std::map<std::string, json>& bricks,
                          const std::string& mode) {
  for (const json& m : j["models"]) {
    INFO(m["name"]);
    // 4 dense, 4 ReLUs (in LibTorch in the dense layers' bricks), output,
    // and in training the loss.
    const bool torch =
        m["name"].get<std::string>().find("/torch/") != std::string::npos;
    const auto [layers, caches] =
        LayersOf(m, (mode == "train" ? 10 : 9) - (torch ? 4 : 0));
    const double share = ColdShareOf(j, m, 1);
    CHECK(m["cold_share"].get<double>() == Approx(share));
    // More than twice the L3 per step: over 0.8 by either rule.
    CHECK(share > 0.8);
    CHECK(share < 1);
    const double step_cost =
        StepCostMs(j, (torch ? "/torch/fp32/" : "/onednn/fp32/") + mode);
    const ExpectedInside inside = ExpectedCaches(layers, torch);
    CHECK(caches == inside.caches);
    CHECK(SameParts(m, inside.parts));
    CHECK(std::count(caches.begin(), caches.end(), "recycled") ==
          (torch ? 2 : 0));
    if (torch) {
      const std::string hidden = "BRICK/dense/in:8x4096/units:4096/bias:1/";
      CHECK(RecycledColdPart(hidden + "+relu/grad:1/torch/fp32/" + mode) >
            0.99);
      const std::string relu = "BRICK/relu/in:8x4096/grad:1/torch/fp32/";
      CHECK(RecycledColdPart(relu + mode) ==
            Approx(mode == "train" ? 0.5 : 0.0));
    }
    double estimate = step_cost;
    for (size_t k = 0; k < layers.size(); ++k) {
      estimate +=
          LayerMs(bricks.at(layers[k]), inside.parts[k], share, step_cost);
    }
    CHECK(m["estimated_ms"].get<double>() == Approx(estimate));
  }
}

}  // namespace

TEST_CASE(
    "a layer of a model beyond the caches takes its bricks' cold times in "
    "the share the L3 misses, a repeated one inside LibTorch's its warm time",
    "[runner][bricks]") {
  // Three hidden layers' bricks moving more than twice the L3 per step.
  const auto [j, bricks] = RunColdFcModels("train", 3, "cold_bricks.json");
  // The run took the L3 it was given, and the L2 the kernel or CPUID
  // says.
  CHECK(j["l3_bytes"] == kColdTestL3);
  CHECK(j["l3_source"] == "--paradnn_l3_bytes");
  const int64_t l2 =
      KernelCacheBytes(2) > 0 ? KernelCacheBytes(2) : CpuidCacheBytes(2);
  REQUIRE(l2 > 0);
  CHECK(j["l2_bytes"] == l2);
  CheckColdFcEstimates(j, bricks, "train");
  // Three steps rounded up to four: two of each kind.
  for (const auto& [name, b] : bricks) {
    INFO(name);
    for (const std::string kind : {"", "cold_"}) {
      CHECK(b[kind + "step_times_ms"].size() == 2);
    }
    CHECK_FALSE(b.contains("cold_backward_step_ms"));
  }
}

TEST_CASE(
    "inside a LibTorch inference model beyond the caches a repeated layer "
    "takes its brick's warm time, inside oneDNN's its cold one",
    "[runner][bricks]") {
  const auto [j, bricks] = RunColdFcModels("infer", 2, "recycled_bricks.json");
  CheckColdFcEstimates(j, bricks, "infer");
}

TEST_CASE(
    "listing a bricks sweep counts its layers and bricks and estimates "
    "nothing, unless asked for the bricks output",
    "[runner][bricks]") {
  const std::string fc =
      "--paradnn_case=FC/layers:3/nodes:32/input:64/output:10/batch:8/torch/"
      "fp32/train --benchmark_list_tests";
  Result listed = RunRunner(fc + " --paradnn_bricks");
  INFO(listed.err);
  REQUIRE(listed.status == 0);
  // The model, the 4 bricks of its 5 distinct layers (each ReLU with the
  // dense layer it reads) and the step's fixed cost's 2.
  CHECK(std::count(listed.out.begin(), listed.out.end(), '\n') == 7);
  CHECK_THAT(listed.err,
             Contains("paradnn: bricks: 5 unique of 8 layers (62%); 4 unique "
                      "bricks of up to 2 layers\n"));
  CHECK(listed.err.find("benchmarked") == std::string::npos);
  // With the output asked for: every model's bricks, none timed.
  const std::string out = Scratch("listed_bricks.json");
  Result written = RunRunner(fc + " --paradnn_bricks_out=" + out);
  REQUIRE(written.status == 0);
  const json j = json::parse(Slurp(out));
  REQUIRE(j["models"].size() == 1);
  CHECK(j["models"][0]["layers"].size() == 5);
  CHECK(j["models"][0]["estimated_ms"].is_null());
  CHECK(j["bricks"].size() == 6);
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
    // Three steps a call, rounded up to one warm and one cold twice,
    // however long a step takes (with a minimum time, a slow first step
    // was the call's only one).
    Result r =
        RunRunner(args + " --paradnn_steps=3 --paradnn_threads=1" + isolate +
                  " --benchmark_format=json --paradnn_bricks_out=" + out);
    INFO(isolate << "\n" << r.err);
    REQUIRE(r.status == 0);
    // Warm and cold steps take turns (an isolated call starts warm),
    // pooled apart, also from an isolated process: the time of each
    // kind and the colder one.
    const json bricks_out = json::parse(Slurp(out));
    const json& bricks = bricks_out["bricks"];
    REQUIRE(bricks.size() == names.size());
    for (const json& b : bricks) {
      INFO(b.dump());
      size_t after = 0;
      for (const std::string kind : {"cold_", ""}) {
        const auto times = b[kind + "step_times_ms"].get<std::vector<double>>();
        REQUIRE(!times.empty());
        CHECK(times.size() >= after);
        after = times.size();
        CHECK(b[kind + "step_ms"].get<double>() ==
              Approx(BrickTimeOf(bricks_out, b, kind)));
      }
    }
    CHECK_THAT(r.err, Contains("paradnn: " + std::to_string(names.size()) +
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

TEST_CASE(
    "a model's layers take their cold extra in D / (D + R) where half the L3 "
    "is past 8 L2s, else in D^2 / (D^2 + R^2) reaching the larger of 8 L2s "
    "and the L3",
    "[runner][bricks]") {
  // One thread: 8 L2s are 8 of its L2. Two models, one far within them
  // and one of 33 MB of weights past them on any L2 of up to 2 MB, take
  // the same reach: only their bytes part their shares.
  const std::string cases =
      "--paradnn_case=FC/layers:1/nodes:16/input:32/output:4/batch:8/onednn/"
      "fp32/infer --paradnn_case=FC/layers:1/nodes:4096/input:2000/output:10/"
      "batch:8/onednn/fp32/infer --paradnn_steps=2";
  constexpr double kMb = 1 << 20;
  const auto run = [&](double l3) {
    const json j = RunBricksOut(cases + " --paradnn_l3_bytes=" +
                                    std::to_string(static_cast<int64_t>(l3)),
                                "shares.json")
                       .first;
    REQUIRE(j["l3_bytes"].get<double>() == l3);
    REQUIRE(j["models"].size() == 2);
    return j;
  };
  const json large = run(256 * kMb);
  const double l2s = 8 * large["l2_bytes"].get<double>();
  REQUIRE(l2s <= 16 * kMb);
  const auto shares = [&](const json& j, auto share) {
    INFO(j["l3_bytes"].get<double>() / kMb << " MB of L3");
    for (const json& m : j["models"]) {
      INFO(m["name"]);
      const Case c = ParseCaseName(m["name"].get<std::string>());
      const double d = static_cast<double>(
          ComputeCost(c.model.BuildGraph(), c.mode, c.dtype).bytes);
      CHECK(m["cold_share"].get<double>() == Approx(share(d)));
    }
  };
  // Half of 256 MB is past 8 L2s of up to 16 MB: the geometric mean.
  shares(large, [&](double d) { return d / (d + std::sqrt(l2s * 128 * kMb)); });
  // An L3 of half the L2s, and one of one and a half: half of either is
  // within them, and the reach is the L2s, then the L3.
  for (const double l3 : {l2s / 2, 1.5 * l2s}) {
    const double reach = std::max(l2s, l3);
    shares(run(l3), [&](double d) { return d * d / (d * d + reach * reach); });
  }
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
  CHECK_THAT(bad.err, Contains("'lots' is not a memory size: expected a "
                               "positive number with an optional K, M or G "
                               "suffix"));
}

TEST_CASE(
    "bricks database: known bricks are not run again, nor reused "
    "elsewhere",
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
    // 3 steps rounded up to two of each kind.
    CHECK(b["steps"] == 4);
    // Each way of taking its time, from the steps the run's output has.
    for (const json& timed : first_bricks["bricks"]) {
      if (timed["name"] != b["name"]) continue;
      for (const std::string w : {"quiet", "least", "midway"}) {
        const std::string prefix = w == "quiet" ? "" : w + "_";
        INFO(b["name"] << " " << w);
        CHECK(b[prefix + "step_ms"].get<double>() ==
              Approx(BrickTimeOf(first_bricks, timed, "", w)));
        CHECK(b[prefix + "cold_step_ms"].get<double>() ==
              Approx(BrickTimeOf(first_bricks, timed, "cold_", w)));
      }
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
                   "fp32/train/iterations:4/real_time",
                   "BRICK/dense/in:8x16/units:16/bias:1/+relu/grad:1/torch/"
                   "fp32/train/iterations:4/real_time",
                   "BRICK/dense/in:8x16/units:10/bias:1/grad:1/torch/fp32/"
                   "train/iterations:4/real_time"});
  const json estimates = json::parse(Slurp(out));
  CHECK(estimates["bricks_from_db"] == 6);
  // The database's bricks take the time of the way this run chose.
  if (estimates["case_time"] != "quiet") {
    const std::string prefix = estimates["case_time"].get<std::string>() + "_";
    for (auto& [name, b] : known_bricks) {
      b["step_ms"] = b[prefix + "step_ms"];
      b["cold_step_ms"] = b[prefix + "cold_step_ms"];
    }
  }
  // Each brick's times: the database's where it had them.
  std::map<std::string, json> bricks = known_bricks;
  for (const json& b : estimates["bricks"]) {
    CHECK(b["from_db"] == (known_bricks.count(b["name"]) == 1));
    if (!b["from_db"]) bricks[b["name"]] = b;
  }
  REQUIRE(estimates["models"].size() == 2);
  const double step_cost = StepCostMs(estimates, "/torch/fp32/train");
  for (const json& m : estimates["models"]) {
    const double share = ColdShareOf(estimates, m, 1);
    const auto layers = m["layers"].get<std::vector<std::string>>();
    const std::vector<double> parts = ExpectedCaches(layers, true).parts;
    double sum = step_cost;
    for (size_t k = 0; k < layers.size(); ++k) {
      sum += LayerMs(bricks.at(layers[k]), parts[k], share, step_cost);
    }
    CHECK(m["estimated_ms"].get<double>() == Approx(sum));
    CHECK(m["measured_ms"].is_null());
  }
  CHECK(json::parse(Slurp(db))["bricks"].size() == 9);
  // Another thread count is another context: timed again, and said so.
  Result third = RunRunner("--paradnn_case=" + fc + "torch/fp32/train" + flags +
                           " --paradnn_threads=2 " + "--benchmark_list_tests");
  REQUIRE(third.status == 0);
  CHECK_THAT(third.err, Contains("6 of this sweep's bricks were measured in "
                                 "another context"));
  CHECK_THAT(third.out,
             Contains("BRICK/dense/in:8x32/units:32/bias:1/+relu/grad:1/torch/"
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
  CHECK_THAT(fourth.err, Contains("6 of this sweep's bricks were measured in "
                                  "another context (CPU, threads, L3,"));
  // Bad content is refused with the file's name.
  std::ofstream(db) << "{\"bricks\": [{\"name\": 3}]}";
  Result bad = RunRunner("--paradnn_case=" + fc + "torch/fp32/train" + flags);
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Contains(db + ": entry {\"name\":3}: expected name, "
                                    "step_ms and context"));
}

TEST_CASE(
    "a step's fixed cost the machine's noise put out of reach is kept "
    "between none and the one-ReLU step, and no layer costs less than none",
    "[runner][bricks]") {
  const std::string db = Scratch("noisy_step_cost_db.json");
  const std::string fc =
      "--paradnn_case=FC/layers:3/nodes:32/input:64/output:10/batch:8/torch/"
      "fp32/train --paradnn_steps=3 --paradnn_threads=1 --paradnn_bricks_db=" +
      db;
  Result first = RunRunner(fc);
  INFO(first.err);
  REQUIRE(first.status == 0);
  json known = json::parse(Slurp(db));
  REQUIRE(known["bricks"].size() == 6);
  // Every layer's brick 10 µs, warm or cold; the model has 5 of them (its
  // 8 layers, each ReLU with its dense layer). The one-ReLU and two-ReLU
  // bricks' steps, and the estimate, by hand.
  struct Noise {
    double one, two, step_cost, estimate;
  };
  for (const Noise& n : {
           // 2 * 30 - 20 = 40 µs, more than the one-ReLU step: 30 µs, and
           // every layer's 10 µs is within it.
           Noise{0.030, 0.020, 0.030, 0.030},
           // 2 * 5 - 20 < 0: none, the bricks' sum.
           Noise{0.005, 0.020, 0, 0.050},
           // 2 * 4 - 6 = 2 µs, taken out of every brick, paid once.
           Noise{0.004, 0.006, 0.002, 0.002 + 5 * 0.008},
       }) {
    INFO(n.one << " " << n.two);
    for (json& b : known["bricks"]) {
      const std::string name = b["name"];
      const double ms = name.rfind("BRICK/relu/in:1/grad:1/", 0) == 0 ? n.one
                        : name.rfind("BRICK/relu/in:1/+relu/grad:1/", 0) == 0
                            ? n.two
                            : 0.010;
      for (const char* field : {"step_ms", "cold_step_ms"}) b[field] = ms;
    }
    std::ofstream(db) << known.dump();
    const std::string out = Scratch("noisy_step_cost.json");
    Result r = RunRunner(fc +
                         " --paradnn_bricks_estimate_only "
                         "--paradnn_bricks_out=" +
                         out);
    INFO(r.err);
    REQUIRE(r.status == 0);
    const json j = json::parse(Slurp(out));
    CHECK(j["bricks_from_db"] == 6);
    CHECK(StepCostMs(j, "/torch/fp32/train") == Approx(n.step_cost));
    REQUIRE(j["models"].size() == 1);
    CHECK(j["models"][0]["estimated_ms"].get<double>() == Approx(n.estimate));
  }
}

TEST_CASE(
    "a bricks run of N steps, repetitions unsaid, runs each model in N "
    "interleaved calls of 1 step and each brick in N/2 (rounded up) of 2 "
    "steps, one warm and one cold",
    "[runner][bricks]") {
  const std::string model =
      "--paradnn_case=FC/layers:2/nodes:16/input:32/output:10/batch:8/torch/"
      "fp32/";
  for (const std::string mode : {"infer", "train"}) {
    // Bricks take turns at warm and cold steps, in training too.
    const size_t kinds = 2;
    for (const std::string& repetitions : {"", " --benchmark_repetitions=1"}) {
      const std::string out = Scratch("interleaved_bricks.json");
      Result r = RunRunner(
          model + mode + " --paradnn_threads=1 --benchmark_format=json" +
          repetitions + " --paradnn_steps=5 --paradnn_bricks_out=" + out);
      INFO(mode << repetitions << "\n" << r.err);
      REQUIRE(r.status == 0);
      const bool split = repetitions.empty();
      CHECK((r.err.find("bricks: --paradnn_steps=5 runs as interleaved calls, "
                        "each model's 5 of 1 step, each brick's 3 of 2 "
                        "steps") != std::string::npos) == split);
      const size_t model_steps = split ? 1 : 5;
      const size_t brick_steps = split ? kinds : 6;
      const size_t model_calls = split ? 5 : 1;
      const size_t brick_calls = split ? 3 : 1;
      size_t runs = 0, bricks = 0;
      const json results = ParseBenchmarkJson(r.out);
      for (const json& b : results["benchmarks"]) {
        if (b["run_type"] != "iteration") continue;
        INFO(b["name"]);
        ++runs;
        const bool brick = b["name"].get<std::string>().rfind("BRICK/", 0) == 0;
        bricks += brick;
        CHECK(b["iterations"] == (brick ? brick_steps : model_steps));
        CHECK(b["repetitions"] == (brick ? brick_calls : model_calls));
      }
      const json j = json::parse(Slurp(out));
      CHECK(bricks == j["bricks"].size() * brick_calls);
      CHECK(runs - bricks == model_calls);
      CHECK(j["models"][0]["step_times_ms"].size() ==
            model_steps * model_calls);
      // Either side's halves need two calls: of one call, neither has any.
      CHECK(j["models"][0]["measured_halves_difference"].is_number() == split);
      CHECK(j["models"][0]["estimated_halves_difference"].is_number() == split);
      for (const json& b : j["bricks"]) {
        INFO(b.dump());
        for (const std::string kind : {"", "cold_"}) {
          CHECK(b[kind + "step_times_ms"].size() ==
                brick_steps * brick_calls / kinds);
        }
        CHECK_FALSE(b.contains("cold_backward_step_times_ms"));
      }
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
  CHECK_THAT(r.err, Contains("3 unique bricks of up to 2 layers"));
  CHECK_THAT(
      RunRunner("--paradnn_bricks_granularity=0" + std::string(kFast)).err,
      Contains("--paradnn_bricks_granularity=0: expected a positive "
               "number of layers"));
}

TEST_CASE(
    "a recurrent stack in training takes its chain's time, of its own length "
    "up to 3 layers, and beyond, what each layer after the first added in it",
    "[runner][bricks]") {
  const std::string suffix = "/torch/fp32/train";
  const std::string model =
      "RNN/cell:gru/layers:%/embed:16/vocab:32/length:5/batch:4" + suffix;
  auto of = [&](int layers) {
    std::string m = model;
    m.replace(m.find('%'), 1, std::to_string(layers));
    return m;
  };
  // Embedding, GRU (every one reads a tensor that takes a gradient: the
  // embedding trains), output dense, loss; the GRUs' chains of 2 (for the
  // model of 2) and 3 (for those of 3 and 5).
  const std::string embedding =
      "BRICK/embedding/in:5x4/vocab:32/units:16/grad:0";
  const std::string gru = "BRICK/recurrent/in:5x4x16/cell:gru/units:16/grad:1";
  const std::string output = "BRICK/dense/in:5x4x16/units:32/bias:1/grad:1";
  const std::string loss = "BRICK/softmax_xent/in:5x4x32/grad:1";
  const std::string next = "/+recurrent/cell:gru/units:16";
  const std::string two =
      "BRICK/recurrent/in:5x4x16/cell:gru/units:16" + next + "/grad:1";
  const std::string three =
      "BRICK/recurrent/in:5x4x16/cell:gru/units:16" + next + next + "/grad:1";
  const auto [j, bricks] =
      RunBricksOut("--paradnn_case=" + of(1) + " --paradnn_case=" + of(2) +
                       " --paradnn_case=" + of(3) + " --paradnn_case=" + of(5) +
                       " --paradnn_steps=3 --benchmark_repetitions=2"
                       " --benchmark_enable_random_interleaving=true",
                   "recurrent_bricks.json");
  CHECK(j["unique_layers"] == 4);
  CHECK(j["unique_bricks"] == 6);
  // And the step's fixed cost's two.
  REQUIRE(bricks.size() == 8);
  for (const std::string& b : {embedding, gru, output, loss, two, three}) {
    CHECK(bricks.count(b + suffix) == 1);
  }
  const double step_cost = StepCostMs(j, suffix);
  // A brick's time of a kind beyond the step's fixed cost.
  auto own = [&](const std::string& brick, const std::string& kind) {
    return StepMs(bricks.at(brick + suffix), kind) - step_cost;
  };
  REQUIRE(j["models"].size() == 4);
  for (int k = 0; k < 4; ++k) {
    const json& m = j["models"][k];
    const int layers = k < 3 ? k + 1 : 5;
    INFO(m["name"]);
    CHECK(m["name"] == of(layers));
    const double share = ColdShareOf(j, m, 1);
    CHECK(m["cold_share"].get<double>() == Approx(share));
    // A lone GRU is its brick, cold; a stack's take their chain's cold
    // times whole.
    std::vector<std::string> caches(layers + 3, "cold");
    if (layers > 1) std::fill_n(caches.begin() + 1, layers, "stack");
    CHECK(m["layer_caches"] == caches);
    CHECK(SameParts(m, std::vector<double>(layers + 3, 1)));
    // The stack's time of a kind, written out for each length.
    auto stack = [&](const std::string& kind) {
      switch (layers) {
        case 1:
          return own(gru, kind);
        case 2:
          return own(two, kind);
        case 3:
          return own(three, kind);
        default:  // 5: the chain of 3 and twice what its second and third
          // layers added, on average, or its time per layer if more
          return own(three, kind) +
                 2 * std::max((own(three, kind) - own(gru, kind)) / 2,
                              own(three, kind) / 3);
      }
    };
    const json& stacks = m["layer_stacks"];
    if (layers == 1) {
      CHECK(stacks.empty());
    } else {
      REQUIRE(stacks.size() == 1);
      CHECK(stacks[0]["first"] == 1);
      CHECK(stacks[0]["layers"] == layers);
      CHECK(stacks[0]["chain"] == (layers == 2 ? two : three) + suffix);
    }
    const double warm = stack("warm");
    const double estimate =
        step_cost +
        LayerMs(bricks.at(embedding + suffix), 1, share, step_cost) +
        std::max(0.0, warm) + share * (stack("cold") - warm) +
        LayerMs(bricks.at(output + suffix), 1, share, step_cost) +
        LayerMs(bricks.at(loss + suffix), 1, share, step_cost);
    CHECK(m["estimated_ms"].get<double>() == Approx(estimate));
  }
}

}  // namespace
}  // namespace paradnn

#include <signal.h>

#include "analysis/merge.h"

namespace paradnn {
namespace {

std::set<std::string> Listed(const std::string& args) {
  Result r = RunRunner(Config("quickstart.yaml") + " " + args +
                       " --benchmark_list_tests");
  REQUIRE(r.status == 0);
  std::set<std::string> names;
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line)) names.insert(line);
  return names;
}

TEST_CASE("three shards list exactly the unsharded cases", "[runner][shard]") {
  const std::set<std::string> all = Listed("");
  std::set<std::string> joined;
  size_t total = 0;
  for (int i = 0; i < 3; ++i) {
    const std::set<std::string> part =
        Listed("--paradnn_shard=" + std::to_string(i) + "/3");
    CHECK_FALSE(part.empty());
    total += part.size();
    joined.insert(part.begin(), part.end());
  }
  CHECK(total == all.size());  // nothing repeated
  CHECK(joined == all);        // nothing lost
}

TEST_CASE("merging shard results gives the unsharded cases, contexts checked",
          "[runner][shard]") {
  std::vector<std::string> files;
  for (int i = 0; i < 3; ++i) {
    files.push_back(Scratch("shard" + std::to_string(i) + ".json"));
    Result r = RunRunner(Config("smoke.yaml") +
                         " --paradnn_shard=" + std::to_string(i) +
                         "/3 --paradnn_steps=1 "
                         "--benchmark_out_format=json --benchmark_out=" +
                         files.back());
    REQUIRE(r.status == 0);
  }
  const std::string config =
      std::string(PARADNN_SOURCE_DIR) + "/configs/smoke.yaml";
  Merged m = MergeResults(files, config);
  CHECK(m.duplicates.empty());
  CHECK(m.missing.empty());
  std::set<std::string> merged;
  for (const json& b : m.results["benchmarks"]) {
    merged.insert(CaseNameOf(b["name"]));
    CHECK(b.contains("host_name"));
  }
  std::set<std::string> expected;
  Result list = RunRunner(Config("smoke.yaml") + " --benchmark_list_tests");
  std::istringstream lines(list.out);
  std::string line;
  while (std::getline(lines, line)) expected.insert(CaseNameOf(line));
  CHECK(merged == expected);
  // A shard of another config is refused.
  json other = json::parse(Slurp(files[1]));
  other["context"]["paradnn_config"] = "configs/other.yaml";
  std::ofstream(files[1]) << other.dump();
  CHECK_THROWS_WITH(MergeResults(files),
                    Contains("context field 'paradnn_config' differs"));
  // The runner's subcommand reports duplicates and refuses mismatches too.
  Result r = RunRunner("merge " + files[0] + " " + files[0] + " -o " +
                       Scratch("dup.json"));
  CHECK(r.status == 0);
  CHECK_THAT(r.err, Contains("duplicate"));
  r = RunRunner("merge " + files[0] + " " + files[1] + " -o " +
                Scratch("bad.json"));
  CHECK(r.status == 2);
}

TEST_CASE("a sweep killed midway and resumed runs every case exactly once",
          "[runner][shard]") {
  const std::string journal = Scratch("journal.jsonl");
  std::remove(journal.c_str());
  const std::string args = Config("smoke.yaml") +
                           " --paradnn_resume=" + journal +
                           " --paradnn_steps=300";
  const std::string cmd =
      std::string(PARADNN_RUNNER) + " " + args + " > /dev/null 2>&1";
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", ("exec " + cmd).c_str(), nullptr);
    _exit(127);
  }
  // Kill it once a few cases are in the journal.
  auto lines = [&] {
    std::ifstream in(journal);
    return static_cast<int>(std::count(std::istreambuf_iterator<char>(in),
                                       std::istreambuf_iterator<char>(), '\n'));
  };
  for (int i = 0; i < 600 && lines() < 3; ++i) usleep(50000);
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  REQUIRE(WIFSIGNALED(status));
  const int before = lines();
  REQUIRE(before >= 3);
  REQUIRE(before < 16);  // killed midway
  Result r = RunRunner(args);
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.err, Contains("resuming: " + std::to_string(before) +
                             " cases already done"));
  std::map<std::string, int> count;
  std::ifstream in(journal);
  std::string line;
  while (std::getline(in, line)) count[json::parse(line)["name"]]++;
  CHECK(count.size() == 16);
  for (const auto& [name, n] : count) CHECK(n == 1);
}

}  // namespace
}  // namespace paradnn

#include <fcntl.h>
#include <sys/resource.h>

namespace paradnn {
namespace {

// Peak RSS in bytes of the runner on one case (a child process of its own).
double PeakRss(const std::string& name) {
  const pid_t pid = fork();
  if (pid == 0) {
    // The results go nowhere; only the child's footprint counts.
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    const std::string arg = "--paradnn_case=" + name;
    execl(PARADNN_RUNNER, PARADNN_RUNNER, arg.c_str(), "--paradnn_steps=2",
          "--paradnn_progress=false", "--benchmark_format=json",
          "--benchmark_out=/dev/null", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  INFO(name);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  return usage.ru_maxrss * 1024.0;
}

TEST_CASE("memory estimates against the measured peak RSS",
          "[runner][memory]") {
  // The runner's own footprint with a backend (its libraries, a tiny model)
  // is the baseline.
  std::map<std::string, double> baseline;
  for (const std::string backend : {"torch", "onednn"})
    baseline[backend] =
        PeakRss("FC/layers:1/nodes:8/input:8/output:2/batch:2/" + backend +
                "/fp32/infer");
  for (const std::string model :
       {"FC/layers:4/nodes:2048/input:2000/output:1000/batch:512",
        "CNN/block:residual/blocks:1/filters:32/image:200/output:1000/batch:32",
        "CNN/block:bottleneck/blocks:2/filters:32/image:128/output:1000/"
        "batch:16",
        "RNN/cell:lstm/layers:3/embed:512/vocab:1024/length:50/batch:64",
        "RNN/cell:gru/layers:2/embed:512/vocab:1024/length:50/batch:64",
        "TRANSFORMER/layers:2/d_model:256/heads:8/ffn:1024/length:256/"
        "vocab:1000/causal:true/batch:16"}) {
    for (const std::string suffix :
         {"/torch/fp32/train", "/torch/fp32/infer", "/onednn/fp32/train",
          "/onednn/fp32/infer"}) {
      const std::string name = model + suffix;
      const Case c = ParseCaseName(name);
      const double estimate = static_cast<double>(
          ComputeCost(c.model.BuildGraph(), c.mode, c.dtype).memory);
      const double measured = PeakRss(name) - baseline.at(c.backend);
      INFO(name << ": estimate " << estimate / 1048576 << " MiB, measured "
                << measured / 1048576 << " MiB above the baseline");
      // Measured over estimated here: 0.33-0.44 (LibTorch inference frees
      // activations as it goes, and how much its allocator keeps varies)
      // to 1.54 (allocator slack and backend temporaries). An estimate
      // that misses low lets a case run the machine out of memory.
      CHECK(measured < 1.75 * estimate);
      CHECK(measured > estimate / 4);
    }
  }
}

}  // namespace
}  // namespace paradnn

namespace paradnn {
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
  CHECK_THAT(j["benchmarks"][0]["error_message"].get<std::string>(),
             Contains("crashed in its isolated process: Segmentation fault"));
  const json& ok = j["benchmarks"][1];
  CHECK_FALSE(ok.contains("error_occurred"));
  CHECK(CaseNameOf(ok["name"]) == model + "torch/fp32/infer");
  CHECK(ok["real_time"].get<double>() > 0);
  CHECK_THAT(Slurp(Scratch("iso.err")),
             Contains("paradnn: 1 passed, 0 skipped, 1 failed"));
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
  CHECK_THAT(r.err, Contains("paradnn: 0 passed, 1 skipped, 0 failed"));
  const json b = json::parse(r.out)["benchmarks"][0];
  CHECK_THAT(b["error_message"].get<std::string>(),
             Contains("over the 1e-06 s of --paradnn_case_timeout"));
}

}  // namespace
}  // namespace paradnn
