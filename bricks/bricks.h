// Layer bricks (DLBricks): each layer of a model on its own, with its input
// shapes and attributes, so that a sweep's unique layers can be timed once
// and models' step times constructed from them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "generators/spec.h"

namespace paradnn {

struct Brick {
  Op op = Op::kDense;
  std::vector<Shape> inputs;
  int64_t units = 0, kernel = 0, stride = 0, pad = 0, vocab = 0;
  // A convolution's kernel width and padding across (its key's "kernel:1x7"
  // and "pad:0x3"; one value, as square ones have, for both).
  int64_t kernel_w = 0, pad_w = 0;
  int64_t dilation = 1;  // a convolution's
  // A 3-D convolution's depth: its key's "kernel:3x7x7", "stride:1x2x2",
  // "pad:1x3x3" (one value where all three are equal).
  int64_t kernel_d = 1, stride_d = 1, pad_d = 0;
  int64_t height = 0, width = 0;  // a resize's output size ("size:28x28"),
                                  // maps' height ("height:1")
  int64_t weight_norm = -1;       // a convolution's (Layer::weight_norm)
  bool bias = false;
  Cell cell = Cell::kRnn;
  int64_t heads = 0;
  bool causal = false;
  int64_t groups = 1;             // a convolution's
  int64_t axis = 0;               // a concat's, a slice's
  int64_t begin = 0;              // a slice's
  bool ceil = false;              // a max pool's ceil mode
  bool count_pad = false;         // an average pool's count_include_pad
  double epsilon = kNormEpsilon;  // a normalization's
  // Whether backward computes the gradient of the input, as it does inside
  // the model unless the input is the model's data.
  bool input_grad = false;
  // Above granularity one: the layers after this one in a chain, each
  // reading only the one before it (their `inputs` and `input_grad` unused).
  std::vector<Brick> then;

  int layers() const { return 1 + static_cast<int>(then.size()); }
  // "dense/in:256x2000/units:1024/bias:1/grad:0";
  // "conv2d/in:8x16x50x50/units:16/kernel:3/stride:1/pad:1/+batchnorm/+relu/grad:1"
  std::string Key() const;
  // The layer with inputs of its shapes; in training followed by a mean
  // loss, unless the layer is the model's loss itself.
  Graph BuildGraph(Mode mode) const;
  bool operator==(const Brick& o) const { return Key() == o.Key(); }
};

struct BrickCase {
  Brick brick;
  std::string backend;
  DType dtype = DType::kFp32;
  Mode mode = Mode::kTrain;
  // "BRICK/dense/in:256x2000/units:1024/bias:1/grad:0/torch/fp32/train"
  std::string Name() const;
};

// Parses a brick case name (SpecError on bad input).
BrickCase ParseBrickName(std::string_view name);

// The kinds of g's layers that bricks do not cover (a decoder's, a
// recommendation model's), in graph order, each once; empty: none.
std::vector<Op> UncoveredLayers(const Graph& g);

// The bricks of a model's graph in order, covering each layer once (the
// data inputs are not layers; the loss is one in training only). With a
// granularity G above one, a brick is a chain of up to G consecutive
// layers, each after the first reading only the layer before it, which no
// other layer reads (DLBricks' benchmark granularity). With
// `activations_join`, an activation (ReLU, GELU) that reads only the layer
// before it, which no other layer reads, is also timed in that layer's
// brick, whatever the granularity: for backends where an activation costs
// more after the layer that wrote its input than on its own
// (Backend::ActivationsJoinProducer, docs/bricks.md).
std::vector<Brick> BricksOf(const Graph& g, Mode mode, int granularity = 1,
                            bool activations_join = false);

// A run of a model's bricks (BricksOf at granularity 1) that is one
// recurrent layer repeated in training, each reading only the one before
// it: its layers cost more inside the run than alone. A recurrent layer's
// training step records every time step's operations and the tensors they
// save, and beside other such layers' records (LibTorch's autograd graph
// and heap; oneDNN's workspaces) a layer takes longer: in a LibTorch stack
// of GRUs of 100 units, the second layer took 10-14% more than the first,
// and each from the sixth to the ninth 25-26% more (docs/bricks.md at
// 23ff8d0, "Stacks of recurrent layers"). So a run is also timed as a chain of
// its layer, of its own length up to kStackChainLayers, and a longer run takes
// the chain and, for each layer past it, what each layer after the first
// added in the chain, on average (at least the chain's time per layer).
struct BrickStack {
  size_t first = 0;  // the run's first brick, in BricksOf's order
  int layers = 0;
  Brick chain;
};

// The longest chain a run of recurrent layers is timed as: longer ones
// would follow the rise of the layers further in more closely, at the
// price of timing each of their layers again (docs/bricks.md).
constexpr int kStackChainLayers = 3;

// A run's time from its layer's brick's and its chain's, each beyond a
// step's fixed cost (BrickStack): the chain's, and for each layer past the
// chain what each layer after the first added in it, on average, but no
// less than the chain's time per layer: each layer further in adds more
// than the one before (docs/bricks.md, "What a brick is"), and
// a lone brick slowed by a busy moment its chain missed would otherwise
// take its excess from every layer past the chain.
double StackMs(double brick_ms, double chain_ms, int layers);

// The runs of a model's bricks to time as chains, with the bricks BricksOf
// gives at granularity 1 and the same `activations_join`. None in
// inference.
std::vector<BrickStack> StacksOf(const Graph& g, Mode mode,
                                 bool activations_join = false);

// Work of a training step that belongs to no layer: where k layers read one
// tensor, backward adds their k gradients of it, which no layer's brick
// does. Each of the k - 1 sums is timed as the brick of an add of two
// tensors of that shape whose inputs take no gradient
// ("add/in:8x16x50x50,8x16x50x50/grad:0"): its training step is the
// forward add alone, the same reads and write as the sum. None in
// inference.
std::vector<Brick> GradientSumsOf(const Graph& g, Mode mode);

// Every brick's step pays once what a model's step pays once for all its
// layers (the step call, backward's start, the optimizer's loop). Two
// bricks measure it: a ReLU of one element, and two of them in a chain.
// Their layers cost next to nothing but their dispatch, the same for each:
// twice the first's step less the second's leaves the fixed cost of one
// step (docs/bricks.md, "What a brick is").
std::vector<Brick> StepCostBricks();

}  // namespace paradnn
