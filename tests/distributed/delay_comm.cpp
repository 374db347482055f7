// A communicator whose every gradient all-reduce takes a known time and
// averages nothing: libparadnn_comm_c10d.so in a folder of its own, put on
// PARADNN_BACKEND_PATH ahead of the real one, so that the share of a step
// the runner reports for the all-reduce can be checked against a delay
// known before the run. It joins no other rank: each agrees with itself.
#include "tests/distributed/delay_comm.h"

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "distributed/world.h"

namespace {

using Clock = std::chrono::steady_clock;

class DelayCommunicator : public paradnn::Communicator {
 public:
  explicit DelayCommunicator(const paradnn::World& world) : world_(world) {}
  const paradnn::World& world() const override { return world_; }
  void AverageGradients(
      const std::vector<paradnn::GradBuffer>& buffers) override {
    const auto start = Clock::now();
    std::this_thread::sleep_for(
        std::chrono::microseconds(paradnn::test::kAllReduceDelayUs));
    seconds_ += std::chrono::duration<double>(Clock::now() - start).count();
    for (const paradnn::GradBuffer& b : buffers) {
      bytes_ += b.elements * (b.dtype == paradnn::DType::kFp32 ? 4 : 2);
    }
  }
  std::vector<int64_t> Max(const std::vector<int64_t>& values) override {
    return values;
  }
  double gradient_seconds() const override { return seconds_; }
  int64_t gradient_bytes() const override { return bytes_; }
  std::string Describe() const override {
    return "test communicator: every all-reduce sleeps a known time";
  }

 private:
  paradnn::World world_;
  double seconds_ = 0;
  int64_t bytes_ = 0;
};

}  // namespace

extern "C" __attribute__((visibility("default"))) paradnn::Communicator*
paradnn_communicator_v1(const paradnn::World& world, double /*timeout_s*/,
                        std::string* /*error*/) {
  return new DelayCommunicator(world);
}
