// A backend whose step takes a known time: libparadnn_backend_clock.so,
// found on PARADNN_BACKEND_PATH. Its step spins for a fixed cost and, per
// layer, a cost of the layer's output (kClockLayerUs), and in training an
// add for each further reader of a tensor that takes a gradient (backward
// sums their gradients), so that a model's true step time is known and a
// bricks estimate of it can be checked against it. Its profile records each
// part as an operation (matrix products as gemm, the rest elementwise), in
// the thread's CPU time, so the shares of step time are known too.
//
// Built four times: "clock", "clocktwin" (the same steps) and "clockslow"
// (every step 1.1 times as long), so that comparisons have a known answer,
// and "clockgpu", the same steps said to run on a "gpu" device with
// kClockDeviceFreeBytes free, for the core's handling of device cases.
// With PARADNN_CLOCK_SLOW_EVERY=N and PARADNN_CLOCK_COUNTER=DIR, every Nth
// process that prepares a given model of this backend (counted in a file
// of DIR per backend and model) steps twice as slowly, as a machine moves a
// case between processes.
#include <fcntl.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
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

#ifndef PARADNN_CLOCK_NAME
#define PARADNN_CLOCK_NAME "clock"
#define PARADNN_CLOCK_SCALE 1.0
#define PARADNN_CLOCK_DEVICE "cpu"
#endif

// 2 when this process is one of the slow ones (PARADNN_CLOCK_SLOW_EVERY),
// else 1: the count of this backend's processes so far, under a lock.
double ProcessSlowdown(double step_us) {
  const char* every = std::getenv("PARADNN_CLOCK_SLOW_EVERY");
  const char* dir = std::getenv("PARADNN_CLOCK_COUNTER");
  if (every == nullptr || dir == nullptr) return 1;
  // The model, by its step's known time (distinct for the tests' models).
  const std::string path = std::string(dir) + "/" + PARADNN_CLOCK_NAME + "." +
                           std::to_string(static_cast<int64_t>(step_us));
  const int fd = open(path.c_str(), O_RDWR | O_CREAT, 0644);
  if (fd < 0) return 1;
  flock(fd, LOCK_EX);
  char buf[32] = {0};
  const ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
  const long count = (n > 0 ? std::atol(buf) : 0) + 1;
  const std::string text = std::to_string(count) + "\n";
  if (ftruncate(fd, 0) != 0 || pwrite(fd, text.data(), text.size(), 0) !=
                                   static_cast<ssize_t>(text.size())) {
    close(fd);
    return 1;
  }
  flock(fd, LOCK_UN);
  close(fd);
  return count % std::atol(every) == 0 ? 2 : 1;
}

class ClockRunner : public paradnn::Runner {
 public:
  ClockRunner(std::vector<paradnn::test::ClockPart> parts, double scale)
      : parts_(std::move(parts)), scale_(scale) {}
  void Step() override {
    for (const auto& p : parts_) Spin(scale_ * p.us);
    Spin(scale_ * paradnn::test::kClockStepUs);
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
            p.gemm ? "product" : "elementwise", CpuSeconds() - t, p.layer,
            p.backward ? paradnn::Pass::kBackward : paradnn::Pass::kForward);
      }
      SpinCpu(paradnn::test::kClockStepUs);
    }
    profile.SetWall(CpuSeconds() - start, steps);
    return profile;
  }

 private:
  std::vector<paradnn::test::ClockPart> parts_;
  double scale_;
};

class ClockBackend : public paradnn::Backend {
 public:
  std::string name() const override { return PARADNN_CLOCK_NAME; }
  std::string Unsupported(const paradnn::Job&) const override { return ""; }
  std::unique_ptr<paradnn::Runner> Prepare(
      const paradnn::Job& job, const paradnn::RunOptions&) const override {
    return std::make_unique<ClockRunner>(
        paradnn::test::ClockParts(job.graph, job.mode),
        PARADNN_CLOCK_SCALE *
            ProcessSlowdown(paradnn::test::ClockStepUs(job.graph, job.mode)));
  }
  std::string Describe() const override {
    return "clock backend, steps of known time";
  }
  std::string Device() const override { return PARADNN_CLOCK_DEVICE; }
  int64_t DeviceMemoryFree() const override {
    return Device() == "cpu" ? 0 : paradnn::test::kClockDeviceFreeBytes;
  }
};

paradnn::Backend* Make(const char* name) {
  return std::strcmp(name, PARADNN_CLOCK_NAME) == 0 ? new ClockBackend()
                                                    : nullptr;
}

}  // namespace

PARADNN_BACKEND_MODULE(Make)
