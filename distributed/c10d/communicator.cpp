// The communicator module: LibTorch's c10d, a TCPStore rendezvous served by
// rank 0 and a Gloo process group, so that data-parallel runs use the same
// collectives as PyTorch's DistributedDataParallel on CPUs. Built only
// with LibTorch, and loaded only by a run of more than one rank.
#include <ATen/ATen.h>
#include <torch/version.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "distributed/world.h"

namespace paradnn {
namespace {

using Clock = std::chrono::steady_clock;

// LibTorch 2.4 made TCPStore serve through libuv by default, which Debian's
// LibTorch is built without; the classic server serves a run's few ranks.
// Earlier versions have no such option.
template <typename Options>
auto WithoutLibuv(Options& o, int) -> decltype(o.useLibUV = false, void()) {
  o.useLibUV = false;
}
template <typename Options>
void WithoutLibuv(Options&, long) {}

// Gradients go in buckets of up to 25 MB, as DistributedDataParallel's: one
// all-reduce per bucket rather than per tensor, and copies no larger.
constexpr int64_t kBucketBytes = 25 << 20;

int64_t Width(DType d) { return d == DType::kFp32 ? 4 : 2; }

int64_t Bytes(const GradBuffer& b) { return b.elements * Width(b.dtype); }

at::ScalarType TypeOf(DType d) {
  return d == DType::kBf16   ? at::kBFloat16
         : d == DType::kFp16 ? at::kHalf
                             : at::kFloat;
}

bool Loopback(const std::string& addr) {
  return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1";
}

class C10dCommunicator : public Communicator {
 public:
  C10dCommunicator(const World& world, double timeout_s)
      : world_(world),
        timeout_(static_cast<int64_t>(timeout_s * 1000)),
        where_(world.addr + ":" + std::to_string(world.port)) {
    c10d::TCPStoreOptions options;
    options.port = static_cast<uint16_t>(world.port);
    options.isServer = world.rank == 0;
    options.numWorkers = world.size;
    options.waitWorkers = false;  // checked below, with a clearer message
    options.timeout = timeout_;
    WithoutLibuv(options, 0);
    try {
      store_ = c10::make_intrusive<c10d::TCPStore>(world.addr, options);
    } catch (const std::exception& ex) {
      throw std::runtime_error("rendezvous at " + where_ + " failed (" +
                               (world.rank == 0 ? "serving" : "reaching") +
                               " it): " + FirstLine(ex.what()));
    }
    CheckWorld();
    auto gloo = c10d::ProcessGroupGloo::Options::create(timeout_);
    if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME")) {
      gloo->devices.push_back(
          c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
    } else if (Loopback(world.addr)) {
      gloo->devices.push_back(
          c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    } else {
      gloo->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
    gloo->threads = 1;
    try {
      group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store_, world.rank,
                                                           world.size, gloo);
    } catch (const std::exception& ex) {
      throw std::runtime_error("connecting the Gloo process group of " +
                               std::to_string(world.size) +
                               " ranks failed: " + FirstLine(ex.what()));
    }
  }

  const World& world() const override { return world_; }

  void AverageGradients(const std::vector<GradBuffer>& buffers) override {
    const auto start = Clock::now();
    for (size_t i = 0; i < buffers.size();) {
      // The next bucket: buffers of one type, up to kBucketBytes (a larger
      // one alone, in place; CUDA memory, which Gloo reduces through the
      // host, in place too).
      size_t end = i + 1;
      int64_t bytes = Bytes(buffers[i]);
      while (!buffers[i].cuda && end < buffers.size() &&
             buffers[end].dtype == buffers[i].dtype && !buffers[end].cuda &&
             bytes + Bytes(buffers[end]) <= kBucketBytes) {
        bytes += Bytes(buffers[end++]);
      }
      const auto options =
          at::TensorOptions()
              .dtype(TypeOf(buffers[i].dtype))
              .device(buffers[i].cuda ? at::Device(at::kCUDA, 0) : at::kCPU);
      // A bucket of one is reduced where it is; more are packed first.
      const bool packed = end > i + 1;
      if (packed && bucket_.size() < static_cast<size_t>(bytes)) {
        bucket_.resize(bytes);
      }
      auto copy = [&](bool in) {
        char* at = bucket_.data();
        for (size_t k = i; k < end; ++k) {
          std::memcpy(in ? at : buffers[k].data, in ? buffers[k].data : at,
                      Bytes(buffers[k]));
          at += Bytes(buffers[k]);
        }
      };
      if (packed) copy(true);
      at::Tensor t = at::from_blob(packed ? bucket_.data() : buffers[i].data,
                                   {bytes / Width(buffers[i].dtype)}, options);
      AllReduce(t, c10d::ReduceOp::SUM, "gradient all-reduce");
      t.div_(world_.size);
      if (packed) copy(false);
      gradient_bytes_ += bytes;
      i = end;
    }
    gradient_seconds_ +=
        std::chrono::duration<double>(Clock::now() - start).count();
  }

  std::vector<int64_t> Max(const std::vector<int64_t>& values) override {
    at::Tensor t = at::tensor(values, at::kLong);
    AllReduce(t, c10d::ReduceOp::MAX, "agreement");
    const int64_t* p = t.data_ptr<int64_t>();
    return std::vector<int64_t>(p, p + values.size());
  }

  double gradient_seconds() const override { return gradient_seconds_; }
  int64_t gradient_bytes() const override { return gradient_bytes_; }

  std::string Describe() const override {
    return std::string("LibTorch ") + TORCH_VERSION +
           " c10d ProcessGroupGloo, rendezvous at " + where_ + " (" +
           world_.launcher + "), " + std::to_string(world_.size) +
           " ranks, gradient buckets of " + std::to_string(kBucketBytes >> 20) +
           " MB, timeout " + std::to_string(timeout_.count() / 1000.0) + " s";
  }

 private:
  static std::string FirstLine(const std::string& what) {
    return what.substr(0, what.find('\n'));
  }

  // Every rank writes the world size it was started with, then waits for
  // every other rank's: a missing rank or a different count is named.
  void CheckWorld() {
    const std::string prefix = "paradnn/world_size/";
    const std::string mine = std::to_string(world_.size);
    store_->set(prefix + std::to_string(world_.rank),
                std::vector<uint8_t>(mine.begin(), mine.end()));
    std::vector<std::string> keys;
    for (int r = 0; r < world_.size; ++r) {
      keys.push_back(prefix + std::to_string(r));
    }
    const std::string hint =
        ": were all ranks started, with the same world size?";
    try {
      store_->wait(keys, timeout_);
    } catch (const std::exception& ex) {
      std::string missing;
      try {
        for (int r = 0; r < world_.size; ++r) {
          if (!store_->check({keys[r]})) {
            missing += (missing.empty() ? "" : ", ") + std::to_string(r);
          }
        }
      } catch (const std::exception&) {
        throw std::runtime_error("rendezvous at " + where_ +
                                 ": rank 0's store went away while this "
                                 "rank waited for the others (" +
                                 FirstLine(ex.what()) + ")" + hint);
      }
      throw std::runtime_error(
          "rendezvous at " + where_ + ": rank(s) " + missing + " of " + mine +
          " did not join within " + std::to_string(timeout_.count() / 1000) +
          " s (--paradnn_dist_timeout)" + hint);
    }
    for (int r = 0; r < world_.size; ++r) {
      const std::vector<uint8_t> v = store_->get(keys[r]);
      const std::string theirs(v.begin(), v.end());
      if (theirs != mine) {
        throw std::runtime_error("rank " + std::to_string(r) +
                                 " was started with a world size of " + theirs +
                                 ", this rank (" + std::to_string(world_.rank) +
                                 ") with " + mine);
      }
    }
  }

  // One collective, waited for at most the timeout. A failure breaks the
  // group for good (peers are out of step): later calls fail at once.
  void AllReduce(at::Tensor& t, c10d::ReduceOp op, const char* what) {
    if (!broken_.empty()) {
      throw std::runtime_error("the process group broke earlier: " + broken_);
    }
    try {
      std::vector<at::Tensor> tensors{t};
      c10d::AllreduceOptions options;
      options.reduceOp = op;
      options.timeout = timeout_;
      group_->allreduce(tensors, options)->wait(timeout_);
    } catch (const std::exception& ex) {
      broken_ = std::string(what) + " over " + std::to_string(world_.size) +
                " ranks failed (a rank died, or ranks ran different cases): " +
                FirstLine(ex.what());
      throw std::runtime_error(broken_);
    }
  }

  const World world_;
  const std::chrono::milliseconds timeout_;
  const std::string where_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
  std::vector<char> bucket_;
  double gradient_seconds_ = 0;
  int64_t gradient_bytes_ = 0;
  std::string broken_;
};

}  // namespace
}  // namespace paradnn

extern "C" __attribute__((visibility("default"))) paradnn::Communicator*
paradnn_communicator_v1(const paradnn::World& world, double timeout_s,
                        std::string* error) {
  try {
    return new paradnn::C10dCommunicator(world, timeout_s);
  } catch (const std::exception& ex) {
    *error = ex.what();
    return nullptr;
  }
}
