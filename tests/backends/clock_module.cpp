// A backend whose step takes a known time: libparadnn_backend_clock.so,
// found on PARADNN_BACKEND_PATH. Its step spins for a fixed cost and, per
// layer, a cost of the layer's output (kClockLayerUs), and in training an
// add for each further reader of a tensor that takes a gradient (backward
// sums their gradients), so that a model's true step time is known and a
// bricks estimate of it can be checked against it.
#include <chrono>
#include <cmath>
#include <cstring>
#include <vector>

#include "backends/backend.h"
#include "tests/backends/clock_costs.h"

namespace {

using paradnn::Graph;
using paradnn::Mode;

class ClockRunner : public paradnn::Runner {
 public:
  explicit ClockRunner(double step_us) : step_us_(step_us) {}
  void Step() override {
    using Clock = std::chrono::steady_clock;
    const auto end = Clock::now() + std::chrono::nanoseconds(
                                        static_cast<int64_t>(step_us_ * 1e3));
    while (Clock::now() < end) {
    }
  }
  double Loss() override { return std::log(10.0); }
  std::vector<float> Output() override { return {}; }
  std::vector<float> Param(int) override { return {}; }
  paradnn::StepProfile Profile(int) override { return {}; }

 private:
  double step_us_;
};

class ClockBackend : public paradnn::Backend {
 public:
  std::string name() const override { return "clock"; }
  std::string Unsupported(const paradnn::Job&) const override { return ""; }
  std::unique_ptr<paradnn::Runner> Prepare(
      const paradnn::Job& job, const paradnn::RunOptions&) const override {
    return std::make_unique<ClockRunner>(
        paradnn::test::ClockStepUs(job.graph, job.mode));
  }
  std::string Describe() const override {
    return "clock backend, steps of known time";
  }
};

paradnn::Backend* Make(const char* name) {
  return std::strcmp(name, "clock") == 0 ? new ClockBackend() : nullptr;
}

}  // namespace

PARADNN_BACKEND_MODULE(Make)
