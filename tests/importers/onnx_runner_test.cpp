// ONNX files through the runner: paradnn onnx-check, and files as cases
// in sweeps and by name on both backends.
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>

#include "generators/spec.h"
#include "tests/catch.h"
#include "tests/importers/onnx_writer.h"
#include "tests/scratch.h"

namespace paradnn {
namespace {

using Catch::Matchers::ContainsSubstring;
using test::ResidualNet;

// `paradnn onnx-check ARGS`: its exit status and stdout.
std::pair<int, std::string> OnnxCheck(const std::string& args) {
  const std::string out = test::Scratch("onnx/check.out").string();
  const std::string cmd =
      std::string(PARADNN_RUNNER) + " onnx-check " + args + " > " + out;
  const int raw = std::system(cmd.c_str());
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, text.str()};
}

TEST_CASE("paradnn onnx-check: operators, unsupported nodes, the graph",
          "[onnx]") {
  const std::string good = ResidualNet(), bad = ResidualNet(true);
  auto [status, out] = OnnxCheck(good + " --batch=4");
  CHECK(status == 0);
  CHECK_THAT(out, ContainsSubstring(good + ": 9 nodes, opset 13, from "
                                           "paradnn-test"));
  CHECK_THAT(
      out, ContainsSubstring(
               "operators: Add 1 BatchNormalization 1 Conv 2 Flatten 1 Gemm 1 "
               "GlobalAveragePool 1 MaxPool 1 Relu 1"));
  CHECK_THAT(out, ContainsSubstring("graph: 10 layers, 898 parameters (the "
                                    "file's, as its layers read them: 898)"));
  std::tie(status, out) = OnnxCheck(good + " " + bad);
  CHECK(status == 1);
  CHECK_THAT(out,
             ContainsSubstring("unsupported: Conv conv1: dilations [2, 2]"));
  CHECK_THAT(out, ContainsSubstring("no graph: Conv conv1: dilations"));
  std::tie(status, out) = OnnxCheck(good + ".missing");
  CHECK(status == 2);
}

// The runner with `args`: its exit status, stdout and stderr.
struct Run {
  int status;
  std::string out, err;
};
Run Runner(const std::string& args) {
  const std::string out = test::Scratch("onnx/run.out").string();
  const std::string err = test::Scratch("onnx/run.err").string();
  const int raw = std::system(
      (std::string(PARADNN_RUNNER) + " " + args + " > " + out + " 2> " + err)
          .c_str());
  auto slurp = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, slurp(out), slurp(err)};
}

TEST_CASE("ONNX files as cases: a sweep's grids and names that round-trip",
          "[onnx]") {
  const std::string good = ResidualNet(), bad = ResidualNet(true);
  const std::string config = test::Scratch("onnx/sweep.yaml").string();
  std::ofstream(config) << "seed: 1\nthreads: 1\nbackends: [torch, onednn]\n"
                           "dtypes: [fp32]\nmodes: [train, infer]\n"
                           "sweeps:\n"
                           "  - onnx: residual.onnx\n    batch: [2, 4]\n"
                           "  - onnx: residual_dilated.onnx\n    batch: 2\n";
  const std::string out = test::Scratch("onnx/results.json").string();
  Run r =
      Runner("--paradnn_config=" + config +
             " --paradnn_rounds=1 --paradnn_steps=2 --benchmark_out=" + out +
             " --benchmark_out_format=json");
  INFO(r.err);
  REQUIRE(r.status == 0);
  // The file the checker could not map is a grid point skipped, with why.
  CHECK_THAT(r.err, ContainsSubstring("skipped residual_dilated.onnx/batch:2"));
  CHECK_THAT(r.err, ContainsSubstring("Conv conv1: dilations [2, 2]"));
  CHECK_THAT(r.err, ContainsSubstring("8 passed, 0 skipped, 0 failed"));
  std::ifstream in(out);
  const nlohmann::json results = nlohmann::json::parse(in);
  std::set<std::string> names;
  for (const nlohmann::json& b : results["benchmarks"]) {
    names.insert(CaseNameOf(b["name"].get<std::string>()));
    CHECK(b["params"].get<double>() == 898);
  }
  std::set<std::string> expected;
  for (const char* batch : {"2", "4"}) {
    for (const char* backend : {"torch", "onednn"}) {
      for (const char* mode : {"train", "infer"}) {
        expected.insert(std::string("residual.onnx/batch:") + batch + "/" +
                        backend + "/fp32/" + mode);
      }
    }
  }
  CHECK(names == expected);
  // A case by its name, the file named as a family file.
  r = Runner("--paradnn_families=" + good +
             " --paradnn_case=residual.onnx/batch:3/onednn/fp32/infer"
             " --paradnn_rounds=1 --paradnn_steps=2 --benchmark_format=json");
  INFO(r.err);
  REQUIRE(r.status == 0);
  const nlohmann::json one = nlohmann::json::parse(r.out);
  REQUIRE(one["benchmarks"].size() == 1);
  CHECK(CaseNameOf(one["benchmarks"][0]["name"].get<std::string>()) ==
        "residual.onnx/batch:3/onednn/fp32/infer");
  CHECK(one["benchmarks"][0]["params"].get<double>() == 898);
}

// MLPerf's ResNet-50 result (tests/data/mlperf: global batch 3,200 over 8
// accelerators) beside an ONNX file's model instead of the CNN family's
// twin: the page names the file and the twin it replaced, the twin is at
// the submission's batch per accelerator, and the file's training case in
// the results is "here".
TEST_CASE("mlperf-report: an ONNX file as a benchmark's twin", "[onnx]") {
  const std::string file = ResidualNet();
  const std::string results = test::Scratch("onnx/twin.json").string();
  Run r = Runner("--paradnn_families=" + file +
                 " --paradnn_case=residual.onnx/batch:2/onednn/fp32/train"
                 " --paradnn_rounds=1 --paradnn_steps=2 --benchmark_out=" +
                 results + " --benchmark_out_format=json");
  INFO(r.err);
  REQUIRE(r.status == 0);
  const std::string out = test::Scratch("onnx/mlperf").string();
  const std::string data = std::string(PARADNN_SOURCE_DIR) + "/tests/data/mlperf";
  r = Runner("mlperf-report --mlperf " + data + " --results " + results +
             " --twin resnet=" + file + " -o " + out);
  INFO(r.err);
  REQUIRE(r.status == 0);
  std::ifstream in(out + "/side_by_side.md");
  std::stringstream page;
  page << in.rdbuf();
  CHECK_THAT(page.str(), ContainsSubstring("Twin: `residual.onnx/batch:400`"));
  CHECK_THAT(page.str(),
             ContainsSubstring("the model of " + file +
                               ", its layers as the file has them, in place "
                               "of the built-in twin (`CNN/block:bottleneck/"));
  CHECK_THAT(page.str(),
             ContainsSubstring("| `residual.onnx/batch:2/onednn/fp32/train` | 2 |"));
  r = Runner("mlperf-report --mlperf " + data + " --results " + results +
             " --twin nosuch=" + file + " -o " + out);
  CHECK(r.status != 0);
  CHECK_THAT(r.err, ContainsSubstring("'nosuch' is no MLPerf benchmark paradnn "
                                      "knows: resnet, bert"));
}

}  // namespace
}  // namespace paradnn
