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

  // Drops every block, in use or cached free, from every cache level. A
  // layer inside a model larger than the caches finds in memory not only
  // the tensors that live across steps (weights, gradients, inputs, the
  // last output) but also the blocks its step allocates: LibTorch's oneDNN
  // calls reorder weights and outputs into temporaries of sizes that layer
  // alone uses, reused once per step. Inside a model those reorders ran up
  // to 3 times longer than in a brick that found its temporaries cached
  // from its previous step (docs/bricks.md, "Timing").
  void FlushAll(int threads) const;

 private:
  c10::Allocator* replaced_;
};

}  // namespace paradnn
