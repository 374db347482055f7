// A sweep end to end: its cases, names, filters, flags, skips, modules and
// threads.
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
#include "backends/backend.h"
#include "bricks/bricks.h"
#include "generators/cost.h"
#include "generators/spec.h"
#include "machine/caches.h"
#include "records/results.h"
#include "records/rounds.h"
#include "tests/backends/clock_costs.h"
#include "tests/catch.h"
#include "tests/cpu_isa.h"
#include "tests/runner/runner.h"
#include "tests/scratch.h"

namespace paradnn::runner_tests {
namespace {

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
    // Bytes as the backend's inference runs the graph: LibTorch's batch
    // norms folded into their convolutions, oneDNN's groups fused.
    const FusionPlan plan = PlanFusion(g, c.mode, InferenceFusion(c.backend));
    Cost cost = ComputeCost(g, c.mode, c.dtype, &plan);
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
  // Without AVX-512, oneDNN (2.6 and 3.x) has no jit kernel for softmax's
  // backward: its reference one is the only one there.
  const bool avx512 = test::HasAvx512Core();
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
      const bool softmax_backward = f[3].rfind("softmax", 0) == 0 &&
                                    line.find("diff_dst") != std::string::npos;
      if (f[3].rfind(kind, 0) == 0 && f[4].rfind("ref", 0) == 0 &&
          (avx512 || !softmax_backward)) {
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

}  // namespace
}  // namespace paradnn::runner_tests
