// The paradnn runner end to end, as a user runs it.
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
#include "machine/caches.h"
#include "bricks/bricks.h"
#include "generators/cost.h"
#include "generators/spec.h"
#include "records/results.h"
#include "records/rounds.h"
#include "tests/backends/clock_costs.h"
#include "tests/catch.h"
#include "tests/scratch.h"

namespace paradnn {
namespace {

using Catch::Matchers::ContainsSubstring;
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
             ContainsSubstring("LibTorch"));
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
      // bottom MLP 5-16-12-8, three tables of 30 x 8, a join of 32, two
      // cross layers of rank 6 (V, U, b), top MLP 32-24-16-16-8, 2 logits
      {"DLRM/tables:3/rows:30/dim:8/hotness:4/dense:5/bottom:16-12-8/"
       "top:24-16-16-8/cross:2/rank:6/batch:10/torch/fp32/infer",
       {(5 * 16 + 16) + (16 * 12 + 12) + (12 * 8 + 8) + 3 * 30 * 8 +
            2 * (6 * 32 + 32 * 6 + 32) + (32 * 24 + 24) + (24 * 16 + 16) +
            (16 * 16 + 16) + (16 * 8 + 8) + (8 * 2 + 2),
        2 * 10 * (5 * 16 + 16 * 12 + 12 * 8) + 2 * (2 * 10 * 2 * 32 * 6) +
            2 * 10 * (32 * 24 + 24 * 16 + 16 * 16 + 16 * 8 + 8 * 2)}},
  };
  int counted = 0;
  std::set<std::string> families;
  REQUIRE(j["benchmarks"].size() == 18);
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
    // Rates are over step_ms, paradnn's mean timed step, which Google
    // Benchmark's real_time wraps in its loop: no longer than it.
    const double seconds = b["step_ms"].get<double>() / 1e3;
    CHECK(b["time_unit"] == "ms");
    CHECK(seconds > 0);
    CHECK(b["step_ms"].get<double>() <=
          b["real_time"].get<double>() * (1 + 1e-9));
    CHECK(b["FLOPS"].get<double>() ==
          Approx(cost.flops / seconds).epsilon(1e-9));
    CHECK(b["examples_per_second"].get<double>() ==
          Approx(g.batch() / seconds).epsilon(1e-9));
  }
  CHECK(counted == 6);
  CHECK(families ==
        std::set<std::string>{"FC", "CNN", "RNN", "TRANSFORMER", "DLRM"});
  CHECK_THAT(r.err,
             ContainsSubstring("paradnn: 18 passed, 0 skipped, 0 failed"));
  CHECK_THAT(r.err, ContainsSubstring("paradnn: [18/18] DLRM/"));
}

TEST_CASE(
    "a family file's cases run on both backends by name, its sweeps by "
    "config, with the counts by hand",
    "[runner][declared]") {
  const std::string file = std::string(PARADNN_SOURCE_DIR) +
                           "/tests/data/families/patch_encoder.yaml";
  const std::string model =
      "PATCH_ENCODER/layers:2/d_model:32/heads:4/mlp_ratio:4/patch:4/"
      "patches:16/classes:10/batch:2";
  const std::string out = Scratch("declared/results.json");
  Result r =
      RunRunner("--paradnn_families=" + file + " --paradnn_case=" + model +
                "/torch/fp32/train --paradnn_case=" + model +
                "/onednn/fp32/infer --benchmark_format=json "
                "--benchmark_out_format=json --benchmark_out=" +
                out + kFast);
  INFO(r.err);
  REQUIRE(r.status == 0);
  json j = json::parse(r.out);
  REQUIRE(j["benchmarks"].size() == 2);
  for (const json& b : j["benchmarks"]) {
    INFO(b["name"]);
    CHECK_FALSE(b.contains("error_occurred"));
    CHECK(CaseName(b).rfind(model + "/", 0) == 0);
    // tests/generators/declared_test.cpp counts them.
    CHECK(b["params"] == 27882);
    CHECK(b["flop_per_step"] == (CaseName(b).find("/train") != std::string::npos
                                     ? 3 * 1822720 - 98304
                                     : 1822720));
  }
  // The results name the family file: a report in another process reads
  // the cases.
  CHECK(j["context"]["paradnn_families"] == file);
  r = RunRunner("report " + out + " --no-plots -o " +
                Scratch("declared/report"));
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(Slurp(Scratch("declared/report/roofline.csv")),
             ContainsSubstring("," + model + "/onednn/fp32/infer,"));
  // A config names its family files relative to itself.
  const std::string config = Scratch("declared/sweep.yaml");
  std::filesystem::copy_file(file, Scratch("declared/patch_encoder.yaml"),
                             std::filesystem::copy_options::overwrite_existing);
  std::ofstream(config) << "families: [patch_encoder.yaml]\n"
                           "sweeps:\n  - {family: PATCH_ENCODER, layers: 1, "
                           "d_model: [16, 32], patch: 2, patches: 4, classes: "
                           "3, batch: 2}\n";
  r = RunRunner("--paradnn_config=" + config + " --benchmark_list_tests");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out ==
        "PATCH_ENCODER/layers:1/d_model:16/heads:4/mlp_ratio:4/patch:2/"
        "patches:4/classes:3/batch:2/torch/fp32/train/real_time\n"
        "PATCH_ENCODER/layers:1/d_model:32/heads:4/mlp_ratio:4/patch:2/"
        "patches:4/classes:3/batch:2/torch/fp32/train/real_time\n");
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
  CHECK_THAT(r.err,
             ContainsSubstring(bad + ":3:13: error: '0' is not a valid "
                                     "layers: expected a positive integer"));

  r = RunRunner("--paradnn_config=missing.yaml");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, ContainsSubstring("missing.yaml: error: cannot open"));

  r = RunRunner("--paradnn_case=FC/layers:4 --benchmark_list_tests");
  CHECK(r.status == 2);
  CHECK_THAT(r.err,
             ContainsSubstring("is not a case name: expected FC/layers:"));

  r = RunRunner(Config("smoke.yaml") + " --paradnn_backends=tensorflow");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, ContainsSubstring("'tensorflow' is not a backend"));
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
  CHECK_THAT(
      j["benchmarks"][1]["error_message"].get<std::string>(),
      ContainsSubstring("over the 0.0 GiB limit (--paradnn_max_memory)"));
  CHECK_THAT(r.err,
             ContainsSubstring("paradnn: 1 passed, 1 skipped, 0 failed"));
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
  CHECK_THAT(named.err, !ContainsSubstring("OpenBLAS does not know"));
  if (std::getenv("OPENBLAS_CORETYPE") == nullptr &&
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    const Result chosen = RunRunner(tiny);
    INFO(chosen.err);
    REQUIRE(chosen.status == 0);
    CHECK_THAT(torch(chosen), ContainsSubstring("OpenBLAS core "));
    CHECK_THAT(torch(chosen), !ContainsSubstring("OpenBLAS core Prescott"));
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
             ContainsSubstring("over the 0.005 s of --paradnn_case_timeout"));
  CHECK_FALSE(j["benchmarks"][1].contains("error_occurred"));
  CHECK_THAT(r.err,
             ContainsSubstring("paradnn: 1 passed, 1 skipped, 0 failed"));
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
  CHECK(j["benchmarks"].size() == 7);
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
  CHECK_THAT(unknown.err, ContainsSubstring("'null' is not a backend"));

  const std::string broken = Scratch("modules/libparadnn_backend_broken.so");
  std::ofstream(broken) << "not a shared object\n";
  const std::string path = std::string(PARADNN_THIRD_PARTY_BACKENDS) + ":" +
                           test::Scratch("modules").string();
  setenv("PARADNN_BACKEND_PATH", path.c_str(), 1);
  Result r = RunRunner(cases + kFast + " --benchmark_format=json");
  unsetenv("PARADNN_BACKEND_PATH");
  INFO(r.err);
  CHECK(r.status == 0);  // skipped cases are not failures
  CHECK_THAT(r.err,
             ContainsSubstring("paradnn: 1 passed, 2 skipped, 0 failed"));
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
  CHECK_THAT(why,
             ContainsSubstring("backend 'broken' cannot be loaded: " + broken));
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
  CHECK_THAT(none, ContainsSubstring("libparadnn.so"));
  CHECK_THAT(none, !ContainsSubstring("libparadnn_backend_"));
  CHECK_THAT(none, !ContainsSubstring("libtorch"));
  CHECK_THAT(none, !ContainsSubstring("libdnnl"));
  const std::string torch = Loaded(
      "--paradnn_case=FC/layers:1/nodes:8/input:8/output:2/batch:2/torch/"
      "fp32/infer" +
      std::string(kFast));
  CHECK_THAT(torch, ContainsSubstring("libparadnn_backend_torch.so"));
  CHECK_THAT(torch,
             ContainsSubstring("libtorch"));  // which brings its own oneDNN
  CHECK_THAT(torch, !ContainsSubstring("libparadnn_backend_onednn.so"));
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

TEST_CASE(
    "oneDNN runs no reference kernel for products, pooling, norms, "
    "activations or softmax, and no generic reorder for an add",
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
         "length: 6, vocab: 32, causal: [false, true], batch: 3}\n"
         "  - {family: LLM, layers: 2, d_model: 64, heads: 8, kv_heads: "
         "[8, 2], ffn: 176, vocab: 97, context: 19, batch: 3, phase: "
         "[prefill, decode]}\n"
         "  - {family: DLRM, tables: 3, rows: 30, dim: 16, hotness: 4, "
         "dense: 5, bottom: 32-32-16, top: 32-32-32-16, cross: 2, rank: 16, "
         "batch: 10}\n";
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
    // oneDNN 2: onednn_verbose,exec,cpu,<primitive>,<implementation>,...;
    // oneDNN 3 puts "v1,primitive," before exec.
    std::string_view rest = line;
    for (std::string_view prefix : {"onednn_verbose,", "v1,primitive,"}) {
      if (rest.substr(0, prefix.size()) == prefix)
        rest.remove_prefix(prefix.size());
    }
    if (rest.rfind("exec,cpu,", 0) != 0) continue;
    const std::vector<std::string> f =
        Split("onednn_verbose," + std::string(rest), ',');
    REQUIRE(f.size() > 7);
    ++executed;
    for (const char* kind :
         {"convolution", "inner_product", "matmul", "pooling",
          "batch_normalization", "layer_normalization", "eltwise", "binary",
          "softmax"}) {
      // softmax_v2 is oneDNN 2.6's softmax.
      if (f[3].rfind(kind, 0) == 0 && f[4].rfind("ref", 0) == 0) {
        reference += line + "\n";
      }
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
      CHECK_THAT(r.out, ContainsSubstring(std::string("\n  ") + command + " "));
    }
    CHECK_THAT(r.out, ContainsSubstring("--paradnn_config"));
    CHECK_THAT(r.out, ContainsSubstring("--paradnn_isolate"));
    CHECK_THAT(r.out, ContainsSubstring("paradnn --benchmark_help"));
  }
  Result gb = RunRunner("--benchmark_help");
  CHECK(gb.status == 0);
  CHECK_THAT(gb.out, ContainsSubstring("--benchmark_filter="));
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
    CHECK_THAT(wrong.err,
               ContainsSubstring(std::string("usage: paradnn ") + command));
  }
}

TEST_CASE("an unknown command names the known ones", "[runner][cli]") {
  Result r = RunRunner("mreg a.json");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, ContainsSubstring(
                        "no command 'mreg'; commands: calibrate, report, "
                        "compare, merge, mlperf-summary, mlperf-report, help"));
  Result help = RunRunner("help mreg");
  CHECK(help.status == 2);
  CHECK_THAT(help.err, ContainsSubstring("no command 'mreg'"));
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
}  // namespace paradnn

namespace paradnn {
namespace {

// A bricks run's output (--paradnn_bricks_out) and its bricks by name.
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

// The median of a brick's steps, by sorting.
double MedianOf(std::vector<double> v) {
  REQUIRE(!v.empty());
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

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

// The clock backend's cases (tests/backends/clock_module.cpp): steps of a
// known time.
std::string ClockPath() {
  return std::string("PARADNN_BACKEND_PATH=") + PARADNN_THIRD_PARTY_BACKENDS +
         " ";
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
    const std::string platform = Scratch("platform.json");
    std::ofstream(platform) << "{\"peak_flops\": {\"fp32\": " << peak
                            << "}, \"memory_bandwidth\": 1e10}";
    Result r = RunRunner("--paradnn_case=" + name +
                             " --paradnn_steps=10 --paradnn_threads=1"
                             " --paradnn_platform=" +
                             platform + " --benchmark_format=json",
                         ClockPath());
    INFO(r.err);
    REQUIRE(r.status == 0);
    const json b = json::parse(r.out)["benchmarks"][0];
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

// Twenty small FC models for the clock backends' rounds, widths 8 to 160.
std::vector<std::string> ClockModels() {
  std::vector<std::string> models;
  for (int nodes = 8; models.size() < 20; nodes += 8) {
    models.push_back("FC/layers:2/nodes:" + std::to_string(nodes) +
                     "/input:128/output:10/batch:16");
  }
  return models;
}

TEST_CASE(
    "rounds: the median of rounds recovers a known step time when one "
    "process in three is twice as slow, and every case's interval is its "
    "group's",
    "[runner][rounds][serial]") {
  // [serial]: the truth is wall-clock spins. Every third process of each
  // model steps twice as slowly (tests/backends/clock_module.cpp): of 9
  // rounds, exactly 3 per case.
  const std::vector<std::string> models = ClockModels();
  std::string cases;
  for (const std::string& m : models) {
    cases += " --paradnn_case=" + m + "/clock/fp32/train";
  }
  Scratch("clock_counter/x");  // the folder
  const std::string out = Scratch("rounds.json");
  const std::string env =
      ClockPath() + "PARADNN_CLOCK_SLOW_EVERY=3 PARADNN_CLOCK_COUNTER=" +
      Scratch("clock_counter") + " XDG_CACHE_HOME=" + Scratch("cache") + " ";
  Result r = RunRunner(cases +
                           " --paradnn_rounds=9 --paradnn_steps=5 "
                           "--paradnn_threads=1 --benchmark_out_format=json "
                           "--benchmark_out=" +
                           out,
                       env);
  INFO(r.err);
  REQUIRE(r.status == 0);
  const Results results = ReadResults(out);
  REQUIRE(results.cases.size() == 20);
  // A spin takes its time and more where another virtual machine takes the
  // core away for a while: a case is near its truth within 5% (the slow
  // processes are 100% off), and one whose fast rounds the machine
  // stretched further is let off, one in ten at most.
  int near = 0;
  const CaseResult& first = results.cases.front();
  for (const CaseResult& c : results.cases) {
    INFO(c.name);
    const double truth =
        test::ClockStepUs(c.c.model.BuildGraph(), c.c.mode) / 1e3;
    REQUIRE(c.rounds_ms.size() == 9);
    int slow = 0;
    for (double ms : c.rounds_ms) slow += ms > 1.9 * truth;
    CHECK(slow >= 3);
    CHECK(c.step_ms >= truth * 0.99);
    near += c.step_ms <= truth * 1.05;
    // Every case varies as its group does: none is unstable, and each
    // takes the group's spread, the same share of its median, which is
    // wide where a third of the processes are twice as slow (a re-run
    // drawing five slow ones of nine would move the median 2x). Not its
    // own range widened: that reaches 2x at the top.
    CHECK_FALSE(c.unstable);
    CHECK(c.step_ms_high / c.step_ms ==
          Approx(first.step_ms_high / first.step_ms).epsilon(1e-9));
    CHECK(c.step_ms_high > c.step_ms * 1.2);
    CHECK(c.step_ms_low < c.step_ms / 1.2);
  }
  CHECK(near >= 18);
  // The display: one row a case, and a summary.
  CHECK_THAT(r.out, ContainsSubstring(models[0] + "/clock/fp32/train "));
  CHECK_THAT(r.out, ContainsSubstring("median of 9 rounds"));
  CHECK_THAT(r.out, !ContainsSubstring("_median"));
  CHECK_THAT(r.err, ContainsSubstring("20 cases in 9 rounds: intervals "));
  CHECK_THAT(r.err, ContainsSubstring(", 0 unstable; the machine: "));
  // A run of one round says its figures may move, and by how much the
  // rounds above moved (remembered in the cache folder).
  const Result one = RunRunner("--paradnn_case=" + models[0] +
                                   "/clock/fp32/train --paradnn_rounds=1 "
                                   "--paradnn_steps=5",
                               env);
  REQUIRE(one.status == 0);
  CHECK_THAT(one.err,
             ContainsSubstring("one round: every figure is one process's, and "
                               "a re-run in another process may move it; on "
                               "this CPU ("));
  CHECK_THAT(one.err,
             ContainsSubstring("20 cases, 9 rounds) rounds spread by "));
}

TEST_CASE(
    "rounds: a 10% difference is decided slower and measured as 10%, equal "
    "backends equivalent, in compare's table too",
    "[runner][rounds][serial]") {
  // 20 models on clock and its twin (equal), 10 of them on clockslow too
  // (1.1 times as long); 5 rounds.
  const std::vector<std::string> models = ClockModels();
  std::string cases;
  for (size_t i = 0; i < models.size(); ++i) {
    for (const char* backend : {"clock", "clocktwin", "clockslow"}) {
      if (std::string(backend) == "clockslow" && i >= 10) continue;
      cases += " --paradnn_case=" + models[i] + "/" + backend + "/fp32/train";
    }
  }
  const std::string out = Scratch("decide.json");
  Result r =
      RunRunner(cases +
                    " --paradnn_rounds=5 --paradnn_steps=5 "
                    "--paradnn_threads=1 --benchmark_out_format=json "
                    "--benchmark_out=" +
                    out,
                ClockPath() + "XDG_CACHE_HOME=" + Scratch("cache") + " ");
  INFO(r.err);
  REQUIRE(r.status == 0);
  const auto rounds = ReadRounds(out);
  int slower = 0, slower_near = 0, equivalent = 0, twin_called = 0;
  for (const ComparedCase& c : Pair(rounds, "/clock/", rounds, "/clockslow/")) {
    const Ratio ratio = CompareRounds(c.a, c.b);
    slower += Decide(ratio, kDefaultMargin) == Verdict::kSlower;
    slower_near += std::abs(ratio.value / 1.1 - 1) < 0.02;
  }
  for (const ComparedCase& c : Pair(rounds, "/clock/", rounds, "/clocktwin/")) {
    const Verdict v = Decide(CompareRounds(c.a, c.b), kDefaultMargin);
    equivalent += v == Verdict::kEquivalent;
    twin_called += v == Verdict::kFaster || v == Verdict::kSlower;
  }
  // A spin is its time to a few percent: a machine that stretched one
  // case's rounds may leave it undecided, one in ten.
  CHECK(slower >= 9);
  CHECK(slower_near >= 9);
  CHECK(equivalent >= 18);
  CHECK(twin_called <= 1);
  // The command that prints it: a case's line, by its key, ends with its
  // verdict.
  auto line = [](const std::string& text, const std::string& model) {
    const size_t at = text.find("\n" + model + "/fp32/train ");
    REQUIRE(at != std::string::npos);
    return text.substr(at + 1, text.find('\n', at + 1) - at - 1);
  };
  const Result slow =
      RunRunner("compare " + out + " --a /clock/ --b /clockslow/");
  REQUIRE(slow.status == 0);
  int slow_lines = 0;
  for (size_t i = 0; i < 10; ++i) {
    const std::string l = line(slow.out, models[i]);
    slow_lines += l.compare(l.size() - 6, 6, "slower") == 0;
  }
  CHECK(slow_lines == slower);
  CHECK_THAT(slow.out, ContainsSubstring("5+5"));
  const Result twin =
      RunRunner("compare " + out + " --a /clock/ --b /clocktwin/");
  REQUIRE(twin.status == 0);
  int twin_lines = 0;
  for (const std::string& model : models) {
    const std::string l = line(twin.out, model);
    twin_lines +=
        l.size() >= 10 && l.compare(l.size() - 10, 10, "equivalent") == 0;
  }
  CHECK(twin_lines == equivalent);
}

TEST_CASE(
    "compare --run-a/--run-b: the sides take turns, and a stretch of 1.25 "
    "on LibTorch and oneDNN is decided slower and measured",
    "[runner][rounds][serial]") {
  // Four real cases, both backends, train and infer; B's steps stretched
  // by PARADNN_TEST_STRETCH. Each command notes its side and round first.
  const std::string model = "FC/layers:2/nodes:64/input:256/output:10/batch:32";
  std::string cases;
  for (const char* backend : {"torch", "onednn"}) {
    for (const char* mode : {"train", "infer"}) {
      cases += " --paradnn_case=" + model + "/" + backend + "/fp32/" + mode;
    }
  }
  const std::string order = Scratch("order.txt");
  const std::string run = std::string(PARADNN_RUNNER) + cases +
                          " --paradnn_threads=1 --benchmark_min_time=0.2";
  const std::string out = Scratch("turns");
  const Result r =
      RunRunner("compare -o " + out +
                " --rounds 3 --max-rounds 6 --budget 120 --run-a "
                "'echo A$COMPARE_ROUND >>" +
                order + "; " + run +
                "' --run-b "
                "'echo B$COMPARE_ROUND >>" +
                order + "; PARADNN_TEST_STRETCH=1.25 " + run + "'");
  INFO(r.err);
  INFO(r.out);
  REQUIRE(r.status == 0);
  // A B, B A, A B, ... and as many rounds of each side.
  const std::string turns = Slurp(order);
  CHECK(turns.rfind("A1\nB1\nB2\nA2\nA3\nB3\n", 0) == 0);
  CHECK(std::count(turns.begin(), turns.end(), 'A') ==
        std::count(turns.begin(), turns.end(), 'B'));
  // Every case slower, its ratio near 1.25 (each side's noise is the
  // machine's; the stretch multiplies B's steps exactly).
  const auto pairs =
      Pair(ReadRounds(out + "/a.json"), "", ReadRounds(out + "/b.json"), "");
  REQUIRE(pairs.size() == 4);
  double log_sum = 0;
  for (const ComparedCase& c : pairs) {
    INFO(c.key);
    const Ratio ratio = CompareRounds(c.a, c.b);
    CHECK(Decide(ratio, kDefaultMargin) == Verdict::kSlower);
    log_sum += std::log(ratio.value);
    // At least the first rounds, never beyond --max-rounds.
    CHECK(c.a.rounds >= 3);
    CHECK(c.a.rounds <= 6);
    CHECK(c.a.rounds == c.b.rounds);
  }
  // Within a tenth: three rounds of steps of tens of microseconds, and a
  // stretched side has measured up to 6% beyond its stretch here (its
  // cause unexplained; docs/running.md); no stretch (1) or a doubled one
  // (1.5) are far outside.
  CHECK(std::exp(log_sum / 4) == Approx(1.25).epsilon(0.10));
  CHECK_THAT(Slurp(out + "/compare.txt"), ContainsSubstring("slower"));
  CHECK(std::filesystem::exists(out + "/a.round1.json"));
  CHECK(std::filesystem::exists(out + "/b.round3.log"));
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
  CHECK_THROWS_WITH(
      MergeResults(files),
      ContainsSubstring("context field 'paradnn_config' differs"));
  // The runner's subcommand reports duplicates and refuses mismatches too.
  Result r = RunRunner("merge " + files[0] + " " + files[0] + " -o " +
                       Scratch("dup.json"));
  CHECK(r.status == 0);
  CHECK_THAT(r.err, ContainsSubstring("duplicate"));
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
  REQUIRE(before < 18);  // killed midway
  Result r = RunRunner(args);
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.err, ContainsSubstring("resuming: " + std::to_string(before) +
                                      " cases already done"));
  std::map<std::string, int> count;
  std::ifstream in(journal);
  std::string line;
  while (std::getline(in, line)) count[json::parse(line)["name"]]++;
  CHECK(count.size() == 18);
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
        "vocab:1000/causal:true/batch:16",
        "LLM/layers:4/d_model:512/heads:8/kv_heads:2/ffn:1408/vocab:32000/"
        "context:2048/batch:4/phase:prefill",
        "LLM/layers:4/d_model:512/heads:8/kv_heads:2/ffn:1408/vocab:32000/"
        "context:8192/batch:16/phase:decode",
        // Tables of 410 MB in all, of which a step reads 8,000 rows of each.
        "DLRM/tables:8/rows:200000/dim:64/hotness:16/dense:13/"
        "bottom:256-128-64/top:512-256-128-64/cross:2/rank:128/batch:512"}) {
    for (const std::string suffix :
         {"/torch/fp32/train", "/torch/fp32/infer", "/onednn/fp32/train",
          "/onednn/fp32/infer"}) {
      const std::string name = model + suffix;
      // The LLM family serves requests: inference only.
      if (name.rfind("LLM/", 0) == 0 && name.find("/train") != name.npos) {
        continue;
      }
      const Case c = ParseCaseName(name);
      // LibTorch frees each activation after its last reader (its
      // Backend::RecyclesWithinStep); oneDNN keeps a buffer for each.
      const Cost cost = ComputeCost(c.model.BuildGraph(), c.mode, c.dtype);
      const double estimate = static_cast<double>(
          c.backend == "torch" ? cost.streaming_memory : cost.memory);
      const double measured = PeakRss(name) - baseline.at(c.backend);
      INFO(name << ": estimate " << estimate / 1048576 << " MiB, measured "
                << measured / 1048576 << " MiB above the baseline, "
                << measured / estimate << " times");
      // Measured over estimated here: 0.45 (LibTorch training) to 1.54
      // (allocator slack and backend temporaries); LibTorch's inference,
      // against what is alive between its layers, 1.0-2.3 (two runs): its
      // convolutions copy inputs and outputs to blocked layouts and its
      // attention transposes, temporaries the layer graph does not show.
      // An estimate that misses low lets a case run the machine out of
      // memory.
      const bool streaming = c.backend == "torch" && c.mode == Mode::kInfer;
      if (name.find("/phase:decode/") != name.npos) {
        // A decode step's memory is its key/value cache (537 MB here) and
        // weights (176 MB), both exact, and little else: 0.99 (oneDNN) and
        // 1.15 (LibTorch, which holds a layer's cache in fp32 on the host
        // while it copies it). A cache counted twice, or left out, misses.
        CHECK(measured > 0.8 * estimate);
        CHECK(measured < 1.3 * estimate);
        continue;
      }
      CHECK(measured < (streaming ? 3 : 1.75) * estimate);
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
}  // namespace paradnn
