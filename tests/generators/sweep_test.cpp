#include "generators/sweep.h"

#include <algorithm>
#include <map>
#include <set>

#include "tests/catch.h"

namespace paradnn {
namespace {

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;

const std::vector<std::string> kBackends = {"torch", "onednn"};

Sweep Parse(const std::string& text) {
  return ParseSweep(text, "test.yaml", kBackends);
}

std::string Config(const std::string& path) {
  return std::string(PARADNN_SOURCE_DIR) + "/configs/" + path;
}

std::map<std::string, int> CountByPrefix(const Sweep& s) {
  std::map<std::string, int> n;
  for (const Case& c : s.cases) {
    std::string name = c.Name();
    n[name.substr(0, name.find('/', name.find('/') + 1))]++;
  }
  return n;
}

TEST_CASE("the paper's grids have the paper's sizes", "[sweep]") {
  Sweep fc = LoadSweep(Config("paper_fc.yaml"), kBackends);
  CHECK(fc.cases.size() == 9720);
  std::map<std::string, int> cnn =
      CountByPrefix(LoadSweep(Config("paper_cnn.yaml"), kBackends));
  CHECK(cnn["CNN/block:residual"] == 1080);
  CHECK(cnn["CNN/block:bottleneck"] == 1080);
  std::map<std::string, int> rnn =
      CountByPrefix(LoadSweep(Config("paper_rnn.yaml"), kBackends));
  CHECK(rnn["RNN/cell:rnn"] == 720);
  CHECK(rnn["RNN/cell:lstm"] == 720);
  CHECK(rnn["RNN/cell:gru"] == 720);
  CHECK(LoadSweep(Config("paper_transformer.yaml"), kBackends).cases.size() ==
        6 * 4 * 3 * 4 * 4 * 2 * 3);
  // 48 DLRMs on two backends, trained and inferred.
  CHECK(LoadSweep(Config("dlrm.yaml"), kBackends).cases.size() ==
        2 * 2 * 3 * 2 * 2 * 2 * 2);
  for (const Case& c : fc.cases) {
    CHECK(c.backend == "torch");
    CHECK(c.dtype == DType::kFp32);
    CHECK(c.mode == Mode::kTrain);
  }
}

TEST_CASE("quickstart covers every family, smoke every one that trains",
          "[sweep]") {
  // The families by name, not from the registry the sweeps are made with:
  // one that a sweep dropped, or the registry lost, fails. LLM serves
  // (inference only), so the smoke sweep of training and inference has it
  // not.
  const std::map<std::string, std::set<std::string>> expected = {
      {"smoke.yaml", {"FC", "CNN", "RNN", "TRANSFORMER", "DLRM"}},
      {"quickstart.yaml", {"FC", "CNN", "RNN", "TRANSFORMER", "LLM", "DLRM"}}};
  for (const auto& [file, families] : expected) {
    INFO(file);
    std::set<std::string> covered;
    for (const Case& c : LoadSweep(Config(file), kBackends).cases) {
      covered.insert(c.model.family);
    }
    CHECK(covered == families);
  }
}

TEST_CASE("grid points that are no model are skipped with where and why",
          "[sweep]") {
  Sweep s = Parse(R"(
sweeps:
  - family: TRANSFORMER
    layers: 1
    d_model: [100, 128]
    heads: [4, 8]
    ffn: 64
    length: 8
    vocab: 10
    causal: true
    batch: 2
)");
  // 100 is not a multiple of 8; the other three points run.
  CHECK(s.cases.size() == 3);
  REQUIRE(s.invalid.size() == 1);
  CHECK_THAT(s.invalid[0], Catch::Matchers::ContainsSubstring(
                               "test.yaml:3:5: skipped TRANSFORMER/") &&
                               Catch::Matchers::ContainsSubstring(
                                   "heads:8 does not divide d_model:100"));
}

TEST_CASE("values, lists and ranges expand as a Cartesian product", "[sweep]") {
  Sweep s = Parse(R"(
seed: 3
threads: 2
mlperf_org: acme
backends: [torch, onednn]
modes: [train, infer]
sweeps:
  - family: FC
    layers: {from: 4, to: 20, times: 2}
    nodes: [32, 64]
    input: {from: 2000, to: 7000, step: 2000}
    output: 10
    batch: 8
    dtypes: bf16
)");
  CHECK(s.seed == 3);
  CHECK(s.threads == 2);
  CHECK(s.mlperf_org == "acme");
  CHECK(s.mlperf_status.empty());
  // layers 4, 8, 16 x nodes 2 x input 2000, 4000, 6000 x 2 backends x 2 modes
  REQUIRE(s.cases.size() == 3 * 2 * 3 * 2 * 2);
  CHECK(s.cases.front().Name() ==
        "FC/layers:4/nodes:32/input:2000/output:10/batch:8/torch/bf16/train");
  CHECK(s.cases.back().Name() ==
        "FC/layers:16/nodes:64/input:6000/output:10/batch:8/onednn/bf16/infer");
}

TEST_CASE("overlapping grids give each case once", "[sweep]") {
  Sweep s = Parse(R"(
sweeps:
  - {family: FC, layers: [1, 2], nodes: 8, input: 8, output: 2, batch: 1}
  - {family: FC, layers: [2, 3], nodes: 8, input: 8, output: 2, batch: 1}
)");
  CHECK(s.cases.size() == 3);
}

void CheckError(const std::string& text, const std::string& where,
                const std::string& what) {
  try {
    Parse(text);
    FAIL("no error for:\n" << text);
  } catch (const ConfigError& e) {
    CHECK_THAT(e.what(), StartsWith("test.yaml:" + where + ": error: "));
    CHECK_THAT(e.what(), ContainsSubstring(what));
  }
}

const char kGrid[] = "sweeps:\n  - family: FC\n    layers: 2\n";
const char kRest[] = "    input: 8\n    output: 2\n    batch: 1\n";

TEST_CASE("bad configs name the file, line, column, value and expectation",
          "[sweep]") {
  CheckError(std::string(kGrid) + "    nodes: 8\n    colour: red\n" + kRest,
             "5:5",
             "unknown key 'colour' for FC: expected layers, nodes, input, "
             "output, batch, backends, dtypes or modes");
  CheckError(std::string(kGrid) + "    nodes: many\n" + kRest, "4:12",
             "'many' is not a valid nodes: expected a positive integer");
  CheckError(std::string(kGrid) + "    nodes: 0\n" + kRest, "4:12",
             "'0' is not a valid nodes: expected a positive integer");
  CheckError(std::string(kGrid) + "    nodes: [8, -16]\n" + kRest, "4:16",
             "'-16' is not a valid nodes: expected a positive integer");
  CheckError(
      std::string(kGrid) + "    nodes: {from: 64, to: 8, times: 2}\n" + kRest,
      "4:12", "is an empty range of nodes: expected 'from' at most 'to'");
  CheckError(std::string(kGrid) + "    nodes: {from: 8, to: 64}\n" + kRest,
             "4:12", "expected {from: A, to: B, times: K}");
  CheckError(std::string(kGrid) + "    nodes: []\n" + kRest, "4:12",
             "expected a value or a non-empty list");
  CheckError(std::string(kGrid) + kRest, "2:5", "FC grid without 'nodes'");
  CheckError("sweeps:\n  - family: MLP\n    layers: 2\n", "2:13",
             "'MLP' is not a model family: expected one of FC, CNN, RNN");
  CheckError("backends: [torch, tensorflow]\nsweeps: []\n", "1:19",
             "'tensorflow' is not a backend: expected one of torch, onednn");
  CheckError("dtypes: fp8\nsweeps: []\n", "1:9",
             "'fp8' is not a data type: expected fp32, bf16 or fp16");
  CheckError("modes: [train, eval]\nsweeps: []\n", "1:16",
             "'eval' is not a mode: expected train or infer");
  CheckError("threads: 0\nsweeps: []\n", "1:10",
             "'0' is not a valid threads: expected an integer of at least 1");
  CheckError("sweep:\n  - family: FC\n", "1:1", "unknown key 'sweep'");
  CheckError("mlperf_org: [a, b]\nsweeps: []\n", "1:13",
             "is not a valid mlperf_org: expected a non-empty name");
  CheckError("sweeps: [\n", "2:1", "invalid YAML");
  CheckError("sweeps: []\n", "1:9", "'sweeps' should be a non-empty list");
  CheckError(std::string(kGrid) +
                 "    nodes: {from: 1, to: 100000000, step: 1}\n" + kRest,
             "4:12", "expands to more than 1000000 values of nodes");
  CheckError(std::string(kGrid) +
                 "    nodes: {from: 1, to: 2000, step: 1}\n    input: "
                 "{from: 1, to: 2000, step: 1}\n    output: 2\n    batch: 1\n",
             "2:5", "FC grid of 4000000 cases: expected at most 1000000");
}

TEST_CASE("a missing file is named", "[sweep]") {
  CHECK_THROWS_WITH(LoadSweep("no/such.yaml", kBackends),
                    "no/such.yaml: error: cannot open the config file: No "
                    "such file or directory");
}

}  // namespace
}  // namespace paradnn
