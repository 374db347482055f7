#include "backends/torch/step_allocator.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/alignment.h>
#include <torch/version.h>

#include <cstdlib>
#include <limits>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "machine/caches.h"

namespace paradnn {
namespace {

// Free blocks by exact size: a step's sizes repeat from step to step, so
// after the first step every allocation finds a block, and what is cached
// never exceeds one step's own high-water mark. Blocks are plain
// posix_memalign() ones, as c10's default allocator makes, and data and
// context are one (raw_allocate(), which LibTorch's oneDNN calls use, needs
// that): LibTorch's oneDNN path frees through whichever allocator is
// current, so a block may come here that the default allocator made, or go
// to it from here; either is then simply freed.
class StepAllocator final : public c10::Allocator {
 public:
  static StepAllocator& Instance() {
    // Never destroyed: a tensor may be freed after the runner, even at exit,
    // and its deleter still comes here.
    static StepAllocator* const instance = new StepAllocator;
    return *instance;
  }

  // LibTorch 2.3 made allocate() non-const and copy_data() (for clone())
  // pure virtual.
#if TORCH_VERSION_MAJOR > 2 || \
    (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
  c10::DataPtr allocate(size_t n) override { return Allocate(n); }
  void copy_data(void* dest, const void* src, size_t n) const override {
    default_copy_data(dest, src, n);
  }
#else
  c10::DataPtr allocate(size_t n) const override { return Allocate(n); }
#endif

  c10::DeleterFnPtr raw_deleter() const override { return &Free; }

  void Activate() {
    std::lock_guard<std::mutex> lock(mutex_);
    active_ = true;
  }

  // Every block out of every cache level (see the header).
  void FlushAll(int threads) const {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [block, size] : in_use_) {
      FlushFromCaches(block, size, threads);
    }
    for (const auto& [size, blocks] : free_) {
      for (void* block : blocks) FlushFromCaches(block, size, threads);
    }
  }

  // Returns the cached blocks to the system and forgets those in use: they
  // are freed to it directly when their tensors go.
  void Release() {
    std::lock_guard<std::mutex> lock(mutex_);
    active_ = false;
    for (auto& [size, blocks] : free_) {
      for (void* block : blocks) std::free(block);
    }
    free_.clear();
    in_use_.clear();
  }

 private:
  c10::DataPtr Allocate(size_t n) const {
    void* data = n == 0 ? nullptr : Take(n);
    return {data, data, &Free, c10::Device(c10::DeviceType::CPU)};
  }

  static void Free(void* data) { Instance().Give(data); }

  void* Take(size_t n) const {
    std::lock_guard<std::mutex> lock(mutex_);
    void* block = nullptr;
    auto it = free_.find(n);
    if (it != free_.end() && !it->second.empty()) {
      block = it->second.back();
      it->second.pop_back();
    } else {
      TORCH_CHECK(posix_memalign(&block, c10::gAlignment, n) == 0,
                  "paradnn: out of memory allocating ", n, " bytes");
    }
    if (active_) in_use_[block] = n;
    return block;
  }

  void Give(void* block) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = in_use_.find(block);
    if (it == in_use_.end()) {
      std::free(block);
      return;
    }
    free_[it->second].push_back(block);
    in_use_.erase(it);
  }

  mutable std::mutex mutex_;
  mutable std::unordered_map<size_t, std::vector<void*>> free_;
  mutable std::unordered_map<void*, size_t> in_use_;
  bool active_ = false;
};

// c10 keeps an allocator only against one of lower or equal priority; the
// highest, so that the one replaced comes back too.
constexpr uint8_t kPriority = std::numeric_limits<uint8_t>::max();

}  // namespace

StepAllocatorScope::StepAllocatorScope() : replaced_(c10::GetCPUAllocator()) {
  StepAllocator::Instance().Activate();
  c10::SetCPUAllocator(&StepAllocator::Instance(), kPriority);
}

void StepAllocatorScope::FlushAll(int threads) const {
  StepAllocator::Instance().FlushAll(threads);
}

StepAllocatorScope::~StepAllocatorScope() {
  c10::SetCPUAllocator(replaced_, kPriority);
  StepAllocator::Instance().Release();
}

}  // namespace paradnn
