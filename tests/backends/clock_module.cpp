// A backend whose step takes a known time: libparadnn_backend_clock.so,
// found on PARADNN_BACKEND_PATH. Its step spins for a fixed cost and, per
// layer, a cost of the layer's output (kClockLayerUs), and in training an
// add for each further reader of a tensor that takes a gradient (backward
// sums their gradients), so that a model's true step time is known and a
// bricks estimate of it can be checked against it. Its profile records each
// part as an operation (matrix products as gemm, the rest elementwise), in
// the thread's CPU time, so the shares of step time are known too.
#include <time.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "tests/backends/clock_costs.h"

namespace {

using paradnn::Graph;
using paradnn::Mode;

void Spin(double us) {
  using Clock = std::chrono::steady_clock;
  const auto end =
      Clock::now() + std::chrono::nanoseconds(static_cast<int64_t>(us * 1e3));
  while (Clock::now() < end) {
  }
}

double CpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + t.tv_nsec / 1e9;
}

void SpinCpu(double us) {
  const double end = CpuSeconds() + us / 1e6;
  while (CpuSeconds() < end) {
  }
}

class ClockRunner : public paradnn::Runner {
 public:
  explicit ClockRunner(std::vector<paradnn::test::ClockPart> parts)
      : parts_(std::move(parts)) {}
  void Step() override {
    for (const auto& p : parts_) Spin(p.us);
    Spin(paradnn::test::kClockStepUs);
  }
  double Loss() override { return std::log(10.0); }
  std::vector<float> Output() override { return {}; }
  std::vector<float> Param(int) override { return {}; }
  // In the thread's CPU time: each part spins that long on the CPU and is
  // recorded as such, and so is the profiled steps' total, so the shares
  // are the known ones even where the machine takes time slices away.
  paradnn::StepProfile Profile(int steps) override {
    paradnn::StepProfile profile;
    const double start = CpuSeconds();
    for (int s = 0; s < steps; ++s) {
      for (const auto& p : parts_) {
        const double t = CpuSeconds();
        SpinCpu(p.us);
        profile.Add(
            p.gemm ? paradnn::OpClass::kGemm : paradnn::OpClass::kElementwise,
            p.gemm ? "product" : "elementwise", CpuSeconds() - t);
      }
      SpinCpu(paradnn::test::kClockStepUs);
    }
    profile.SetWall(CpuSeconds() - start, steps);
    return profile;
  }

 private:
  std::vector<paradnn::test::ClockPart> parts_;
};

class ClockBackend : public paradnn::Backend {
 public:
  std::string name() const override { return "clock"; }
  std::string Unsupported(const paradnn::Job&) const override { return ""; }
  std::unique_ptr<paradnn::Runner> Prepare(
      const paradnn::Job& job, const paradnn::RunOptions&) const override {
    return std::make_unique<ClockRunner>(
        paradnn::test::ClockParts(job.graph, job.mode));
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
