// A backend that fails: the case fails with the reason, the sweep goes on,
// the summary counts it and the exit status says so.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "backends/backend.h"
#include "paradnn/paradnn.h"
#include "tests/catch.h"
#include "tests/scratch.h"

namespace paradnn {
namespace {

using Catch::Matchers::ContainsSubstring;

class FailingRunner : public Runner {
 public:
  void Step() override { throw std::runtime_error("injected failure"); }
  double Loss() override { return 0; }
  std::vector<float> Output() override { return {}; }
  std::vector<float> Param(int) override { return {}; }
  StepProfile Profile(int) override {
    throw std::runtime_error("injected failure");
  }
};

class FailingBackend : public Backend {
 public:
  std::string name() const override { return "failing"; }
  std::string Unsupported(const Job&) const override { return ""; }
  std::unique_ptr<Runner> Prepare(const Job&,
                                  const RunOptions&) const override {
    return std::make_unique<FailingRunner>();
  }
  std::string Describe() const override { return "fails every step"; }
};

// stderr of `f`, through a file.
template <typename F>
std::string Stderr(F f) {
  const std::string path = test::Scratch("stderr.txt").string();
  std::fflush(stderr);
  const int saved = dup(2);
  std::FILE* file = std::fopen(path.c_str(), "w");
  dup2(fileno(file), 2);
  f();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::fclose(file);
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_CASE("an injected backend failure fails one case, the sweep goes on",
          "[failure]") {
  CHECK(RegisterBackend(std::make_unique<FailingBackend>()).empty());
  CHECK(RegisterBackend(std::make_unique<FailingBackend>()) ==
        "a backend named 'failing' is already registered");
  const std::string model = "FC/layers:1/nodes:8/input:8/output:2/batch:2/";
  std::vector<std::string> args = {
      "failure_test",
      "--paradnn_case=" + model + "failing/fp32/train",
      "--paradnn_case=" + model + "torch/fp32/infer",
      "--paradnn_progress=false",
      "--benchmark_min_time=0.01",
      "--benchmark_format=json"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  int status = -1;
  const std::string err = Stderr([&] {
    paradnn_register(&argc, argv.data());
    benchmark::Initialize(&argc, argv.data());
    benchmark::RunSpecifiedBenchmarks(paradnn::DisplayReporter());
    status = paradnn::Finish();
  });
  CHECK(status == 1);
  CHECK_THAT(err, ContainsSubstring("paradnn: 1 passed, 0 skipped, 1 failed"));
}

}  // namespace
}  // namespace paradnn
