// A benchmark binary with a backend that crashes (SIGSEGV) in its first
// step, for the --paradnn_isolate test.
#include <benchmark/benchmark.h>
#include <paradnn/paradnn.h>

#include <csignal>

#include "backends/backend.h"

namespace {

class CrashingRunner : public paradnn::Runner {
 public:
  void Step() override { std::raise(SIGSEGV); }
  double Loss() override { return 0; }
  std::vector<float> Output() override { return {}; }
  std::vector<float> Param(int) override { return {}; }
  paradnn::StepProfile Profile(int) override { std::abort(); }
};

class CrashingBackend : public paradnn::Backend {
 public:
  std::string name() const override { return "crashing"; }
  std::string Unsupported(const paradnn::Job&) const override { return ""; }
  std::unique_ptr<paradnn::Runner> Prepare(
      const paradnn::Job&, const paradnn::RunOptions&) const override {
    return std::make_unique<CrashingRunner>();
  }
  std::string Describe() const override { return "crashes"; }
};

}  // namespace

int main(int argc, char** argv) {
  paradnn::RegisterBackend(std::make_unique<CrashingBackend>());
  paradnn_register(&argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks(paradnn::DisplayReporter());
  return paradnn::Finish();
}
