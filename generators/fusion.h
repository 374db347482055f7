// Inference as engines run it: which layers of a graph are applied to a
// product's output as it is written, instead of each reading and writing
// the whole tensor again (docs/architecture.md, "Fused inference"). The
// plan is the graph's; a backend that fuses builds one unit per group
// (oneDNN: a primitive with the group's post-ops), and the cost model
// counts the bytes such a unit moves.
#pragma once

#include <vector>

#include "generators/graph.h"

namespace paradnn {

// A convolution or dense layer (or a batch norm no convolution precedes)
// and the layers that follow it on its output alone: a batch norm folded
// into a convolution's weights and bias, activations, then a residual add
// (the other operand summed into the output), then activations again.
struct FusedGroup {
  int anchor = -1;              // the layer whose primitive runs the group
  int batch_norm = -1;          // folded into the anchor (a convolution), or -1
  std::vector<int> before_sum;  // activations applied before the sum
  int add = -1;                 // the residual add, or -1
  int shortcut = -1;            // the add's other operand
  std::vector<int> after_sum;   // activations applied after the sum

  // The layers it runs besides the anchor, in graph order.
  std::vector<int> Members() const;
  // The last layer: the group's output is this layer's.
  int Output() const;
};

struct FusionPlan {
  std::vector<FusedGroup> groups;
  std::vector<int> group_of;  // per layer: its group, or -1

  // The group layer i is the anchor of, or nullptr.
  const FusedGroup* AnchoredAt(int i) const;
  // Whether layer i runs inside another layer's group.
  bool Absorbed(int i) const;
  // The layer whose unit runs layer i: its group's anchor, else i.
  int UnitOf(int i) const;
  // Whether layer i's output is never written: a group's layer but its
  // last.
  bool Hidden(int i) const;

 private:
  // The group layer i is in, or nullptr.
  const FusedGroup* GroupOf(int i) const;
};

// What a backend's inference runs fused: nothing; batch norms folded into
// the convolutions before them (LibTorch, as PyTorch's guidance folds
// them); or whole groups (oneDNN's post-ops).
enum class Fusion { kNone, kFoldBatchNorm, kFull };

// The activations a product applies to its output as it writes it:
// ReLU, ReLU6, SiLU, hard-swish, hard sigmoid, sigmoid and GELU.
bool FusibleActivation(Op op);

// The groups of an inference graph. A layer joins the group before it
// when it reads only the group's output, which no other layer reads and
// which is not the graph's output; a batch norm folds into a convolution
// only (its scale per output channel is the convolution's), and a batch
// norm that no convolution writes takes a ReLU after it (oneDNN's
// normalization with ReLU). Training fuses nothing: backward reads the
// intermediates. Groups of one layer are left out. kFoldBatchNorm: the
// groups of a convolution and its batch norm only; kNone: no group.
FusionPlan PlanFusion(const Graph& g, Mode mode, Fusion fusion = Fusion::kFull);

}  // namespace paradnn
