// The backend interface: a backend instantiates a case's layer graph and
// returns a Runner that executes one step per call.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/profile.h"
#include "generators/fusion.h"
#include "generators/spec.h"

namespace paradnn {

class Communicator;

struct RunOptions {
  int threads = 1;
  uint64_t seed = 1;
  int warmup = 1;  // steps run by Prepare before returning
  // Data-parallel training: the ranks' communicator, which every training
  // step averages the gradients through before the update; nullptr alone.
  Communicator* comm = nullptr;
  // The first example of this rank's inputs: rank x batch, so that ranks
  // see different examples and together the examples of one rank whose
  // batch is theirs together (generators/init.h).
  int64_t first_example = 0;
  // The L3 a core reads, in bytes: a cold step (Runner::Cool) leaves the
  // caches full of other data by writing twice as much (and at least 256
  // MB). The core sets it for bricks (L3Bytes); runners made elsewhere
  // take 32 MB.
  int64_t l3_bytes = int64_t{32} << 20;
  // Inference runs each fused group (generators/fusion.h) as one unit on
  // a backend that fuses (InferenceFusion); false runs every layer on its
  // own (--paradnn_fuse=false), for an A/B of the fusion itself.
  bool fuse = true;
};

// What a backend is asked to run: a layer graph, in a data type and mode.
struct Job {
  const Graph& graph;
  DType dtype = DType::kFp32;
  Mode mode = Mode::kTrain;
};

// Training's update on every backend: plain SGD, w -= kLearningRate * dw.
inline constexpr float kLearningRate = 0.01f;

class Runner {
 public:
  virtual ~Runner() = default;
  // One training or inference step; returns when its results are complete
  // (synchronized on asynchronous devices). Allocates nothing of its own.
  virtual void Step() = 0;
  // Mean softmax cross-entropy of the last step's logits.
  virtual double Loss() = 0;
  // Logits of the last step, as fp32.
  virtual std::vector<float> Output() = 0;
  // Current values of Graph::Params()[index], as fp32.
  virtual std::vector<float> Param(int index) = 0;
  // Runs `steps` steps under the backend's own profiler.
  virtual StepProfile Profile(int steps) = 0;
  // Between steps: drops the model's data from every cache level, then
  // reads its inputs back in, the state a layer finds inside a model larger
  // than the caches, its input just written by the layer before it (a
  // brick's flushed steps, docs/bricks.md). Which data a layer there finds
  // in memory follows the backend's memory management. Nothing where no
  // CPU cache holds them (a device's memory).
  virtual void Cool() {}
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Why this backend cannot run the job here, or "" when it can.
  virtual std::string Unsupported(const Job& job) const = 0;
  // Builds the model, initializes weights and inputs from the seed and warms
  // up. Throws std::exception with the reason on failure.
  virtual std::unique_ptr<Runner> Prepare(const Job& job,
                                          const RunOptions& opt) const = 0;
  // One line describing the library and its settings, for the run context.
  virtual std::string Describe() const = 0;
  // The device it runs on: "cpu" or "gpu"; peaks are per device.
  virtual std::string Device() const { return "cpu"; }
  // Whether a step makes its tensors in blocks the same step freed
  // (LibTorch's: in inference an activation freed after its last reader, in
  // training the gradients and temporaries backward frees as it goes, and
  // in both a reorder's temporary after its call) rather than in buffers of
  // their own (oneDNN's). A layer repeated inside such a model then finds
  // the tensors that go through those blocks in the caches, where the layer
  // before it of the same shapes left them (the bricks' estimates,
  // docs/bricks.md).
  virtual bool RecyclesWithinStep() const { return false; }
  // Whether an activation (ReLU, GELU) costs more right after the layer
  // that wrote its input than in a brick of its own, by more than the
  // bricks' noise: its brick is then that layer's, the two timed together.
  // LibTorch's at 2 threads (a ReLU of 64x128 between two dense layers
  // about 17 us of a training step, 7 on its own: docs/bricks.md at 23ff8d0,
  // "An activation after its producer").
  virtual bool ActivationsJoinProducer() const { return false; }
  // What its inference runs fused (with RunOptions::fuse): the groups of
  // PlanFusion(graph, mode, InferenceFusion()), whose bytes the cost model
  // then counts as the fused units move them.
  virtual Fusion InferenceFusion() const { return Fusion::kNone; }
  // FLOP/s of the library's own matrix product (m x k by k x n) in `dtype`
  // with `threads` threads, the best of a few runs: the roof this backend's
  // models run under (paradnn calibrate). `tf32`: fp32 operands multiplied
  // at TF32's 10-bit mantissa (NVIDIA tensor cores since Ampere), the math
  // PyTorch lets fp32 products and convolutions choose. 0 when it has none.
  virtual double GemmFlops(int64_t /*m*/, int64_t /*n*/, int64_t /*k*/,
                           DType /*dtype*/, int /*threads*/,
                           bool /*tf32*/) const {
    return 0;
  }
  // Bytes/s of a STREAM triad (a = b + s * c) in the device's own memory,
  // the best of a few runs; 0 where the device is the host's (calibrate
  // measures the host's itself).
  virtual double MemoryBandwidth() const { return 0; }
  // Bytes of the device's memory free now; 0 where the case runs in the
  // host's memory or the device does not say.
  virtual int64_t DeviceMemoryFree() const { return 0; }
  // The device's name and size ("NVIDIA H200, 139.8 GiB"); "" for the
  // host's CPU.
  virtual std::string DeviceName() const { return ""; }
};

// The shortest of up to `runs` runs of `run` (one untimed first), stopping
// after about `budget_s` seconds once three were timed: GemmFlops' timing.
// A small product runs hundreds of times, so that one of them lands in a
// quiet moment of a shared machine.
template <typename Run>
double BestSeconds(Run run, int runs = 500, double budget_s = 1) {
  using Clock = std::chrono::steady_clock;
  run();
  double best = 1e300;
  const auto start = Clock::now();
  for (int i = 0; i < runs; ++i) {
    const auto t0 = Clock::now();
    run();
    const auto t1 = Clock::now();
    best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
    if (i >= 2 &&
        std::chrono::duration<double>(t1 - start).count() > budget_s) {
      break;
    }
  }
  return best;
}

// Adds a backend next to the built-in ones; returns why not ("" when
// added): a duplicate name.
std::string RegisterBackend(std::unique_ptr<Backend> backend);
// The backend of that name, its module loaded on first use; nullptr (and
// the reason in *error) when there is none or it cannot be loaded.
const Backend* FindBackend(const std::string& name,
                           std::string* error = nullptr);
// The backend's ActivationsJoinProducer() without loading a built-in's
// module (false where there is no such backend).
bool ActivationsJoinProducer(const std::string& name);
// The backend's InferenceFusion() without loading a built-in's module.
Fusion InferenceFusion(const std::string& name);
// Built-in, registered and PARADNN_BACKEND_PATH backends, none loaded.
std::vector<std::string> BackendNames();

// A backend module is a shared object named libparadnn_backend_<module>.so
// that exports this function: the backend of that name, or nullptr. The
// version in the symbol changes with this interface.
using BackendModuleEntry = Backend* (*)(const char* name);
constexpr char kBackendModuleSymbol[] = "paradnn_backend_v3";

}  // namespace paradnn

#define PARADNN_BACKEND_MODULE(function)                              \
  extern "C" __attribute__((visibility("default"))) paradnn::Backend* \
  paradnn_backend_v3(const char* name) {                              \
    return function(name);                                            \
  }
