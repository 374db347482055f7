// LibTorch's CPU allocations during a runner's life, kept for reuse: a
// training step frees and allocates the same sizes every step (activations,
// gradients), and glibc returns those large blocks to the system on free
// (munmap, or trimming the heap's top), so every step faulted its pages in
// again, about 2,000 4-KiB page faults per step of a mid-sized FC model
// (5-10% of its step). PyTorch's CUDA allocator keeps freed blocks for the
// same reason.
#pragma once

#include <c10/core/Allocator.h>

namespace paradnn {

// Installs the caching allocator as LibTorch's CPU allocator for its
// lifetime; the one it replaced comes back after, and the blocks it cached
// go back to the system. One at a time: runners do not overlap.
class StepAllocatorScope {
 public:
  StepAllocatorScope();
  ~StepAllocatorScope();
  StepAllocatorScope(const StepAllocatorScope&) = delete;
  StepAllocatorScope& operator=(const StepAllocatorScope&) = delete;

 private:
  c10::Allocator* replaced_;
};

}  // namespace paradnn
