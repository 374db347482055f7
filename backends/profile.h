// Where a step's time goes (--paradnn_profile): the self time of every
// operation the backend's own profiler saw, grouped into classes, against
// the wall time of the profiled steps.
#pragma once

#include <array>
#include <map>
#include <string>

namespace paradnn {

enum class OpClass {
  kGemm,         // matrix products: GEMM, convolution, recurrent, attention
  kElementwise,  // elementwise, normalization, pooling, losses
  kMovement,     // copies, reorders, gathers, layout changes
  kOptimizer,    // the parameter update and clearing gradients
  kOther,        // framework overhead: time no operation covers
  // Collectives of a data-parallel step (gradients averaged over ranks);
  // last, so that results from before it was added read the same.
  kCommunication,
};
inline constexpr int kOpClasses = 6;

// "gemm", "elementwise", "movement", "optimizer", "other", "communication"
const char* ToString(OpClass c);

// The counter reporting class c's share of step time: "time_gemm_frac", ...
std::string ShareCounter(OpClass c);

// The part of a step an operation ran in: a layer's forward, its
// backward, or the update of its parameters.
enum class Pass { kForward, kBackward, kUpdate };

// A layer's part of the profiled steps: the self times of the operations
// (kernels) it ran, in each pass.
struct LayerProfile {
  double forward_s = 0, backward_s = 0, update_s = 0;
  std::map<std::string, double> kernels;  // name -> seconds, all passes
  double total_s() const { return forward_s + backward_s + update_s; }
};

class StepProfile {
 public:
  // Self time of one call of operation `op`; where it is known, the graph
  // layer that ran it (-1: none) and in which pass.
  void Add(OpClass c, const std::string& op, double seconds, int layer = -1,
           Pass pass = Pass::kForward);
  // The wall time of the profiled steps, and how many there were.
  void SetWall(double seconds, int steps);

  // Per class, its share of the wall time; the part of the wall time no
  // operation covers is other. Each share is in [0, 1] and they sum to 1
  // (operations on several threads that cover more than the wall time are
  // scaled down together).
  std::array<double, kOpClasses> Shares() const;
  double step_s() const { return steps_ ? wall_s_ / steps_ : 0; }
  int steps() const { return steps_; }

  struct Op {
    OpClass cls = OpClass::kOther;
    double seconds = 0;
    int64_t calls = 0;
  };
  const std::map<std::string, Op>& ops() const { return ops_; }
  // The layers' parts, by layer index.
  const std::map<int, LayerProfile>& layers() const { return layers_; }

  // A profile from its parts, as another process measured them.
  static StepProfile FromParts(std::map<std::string, Op> ops,
                               std::map<int, LayerProfile> layers,
                               double wall_s, int steps);

 private:
  std::map<std::string, Op> ops_;
  std::map<int, LayerProfile> layers_;
  double wall_s_ = 0;
  int steps_ = 0;
};

}  // namespace paradnn
