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

  // Drops the blocks in use from every cache level: between steps, the
  // tensors that live across them (weights, gradients, inputs, the last
  // output), which a layer inside a model larger than the caches finds in
  // memory. Not the cached free blocks: LibTorch frees each activation once
  // read, and the next allocation of its size takes its block at once,
  // still in the caches, inside a model as in a brick.
  void FlushInUse(int threads) const;

 private:
  c10::Allocator* replaced_;
};

}  // namespace paradnn
