// The layer graph: the single description of a model that generators write
// and the cost model and backends read.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace paradnn {

// fp16 runs where a backend has it (GPUs); bf16 where the CPU has it.
enum class DType { kFp32, kBf16, kFp16 };
enum class Mode { kTrain, kInfer };

const char* ToString(DType d);
const char* ToString(Mode m);
int ElementSize(DType d);

enum class Op {
  kInput,   // float data fed to the model
  kTokens,  // integer ids in [0, vocab), shape [length, batch]
  kDense,   // y = x W^T (+ b) over the last dimension
  // NCHW, a kernel of kernel x kernel_w, its taps `dilation` apart, padded
  // by pad and pad_w on each side of each axis; `groups` groups of
  // channels, each convolved with its own filters (depthwise: one group per
  // channel); a bias or none.
  kConv2d,
  // NCDHW (video): a kernel of kernel_d x kernel x kernel_w, strides
  // stride_d and stride, padded by pad_d, pad and pad_w on each side of
  // each axis; one group; a bias or none.
  kConv3d,
  kBatchNorm,  // per channel of dimension 1; scale and shift are trainable
  kReLU,
  kMaxPool,        // square window
  kAdd,            // inputs[0] + inputs[1] (residual connection)
  kGlobalAvgPool,  // [N, C, H, W] or [N, C, D, H, W] -> [N, C]
  kEmbedding,      // [length, batch] ids -> [length, batch, units]
  kRecurrent,      // one layer of rnn/lstm/gru cells over [length, batch, in]
  // Over the last dimension, or over the channels of [N, C, H, W] maps
  // (`axis` 1: ConvNeXt's); scale and shift are trainable.
  kLayerNorm,
  kGelu,        // x * Phi(x), the exact (erf) form
  kPositional,  // + a trainable [length, units] table, the same per batch
  // Multi-head scaled dot-product attention of q, k, v ([length, batch,
  // units] each, `heads` heads of units / heads), causal or not.
  kAttention,
  // Mean over the logits' rows, a row the classes along `axis` (the last;
  // 1 of [N, C, H, W]: a class per pixel, as segmentation's); training only.
  kSoftmaxCrossEntropy,
  kMeanLoss,  // mean of all values: the loss of a layer run on its own
  // Decoder (LLM) layers, inference only:
  kRmsNorm,  // x / sqrt(mean(x^2) + eps) * scale, over the last dimension
  // Rotary position embedding of [length, batch, heads x dh] (dh even):
  // positions `position`.. of each head's pairs (i, i + dh/2) rotated.
  kRope,
  kSwiGlu,  // silu(inputs[0]) * inputs[1]
  // Grouped-query attention over a key/value cache of `context` positions
  // per sequence: q [length, batch, heads x dh], k and v [length, batch,
  // kv_heads x dh]; k and v go into the cache's last `length` positions,
  // and the query at position p (context - length + t) attends to the
  // cache's positions up to p. Query head h reads key/value head
  // h / (heads / kv_heads).
  kCachedAttention,
  kLastPosition,  // [length, batch, units] -> [1, batch, units], the last
  // Recommendation layers (DLRM):
  // [hotness, batch] ids -> [batch, units]: each example's rows of a
  // [vocab, units] table summed. Training updates only the rows looked up
  // (a sparse gradient).
  kEmbeddingBag,
  kConcat,  // the inputs joined along dimension `axis`
  // DCNv2's cross layer over [batch, units]: x0 * (W x + b) + x, with
  // inputs (x0, x); W is U V (U [units, rank], V [rank, units]) when rank
  // > 0, else a full [units, units] matrix.
  kCross,
  // The layers of mobile and densely connected CNNs:
  // Square window; the padding is counted in the mean where count_pad.
  kAvgPool,
  kFlatten,      // [N, d1, d2, ...] -> [N, d1 x d2 x ...]
  kSigmoid,      // 1 / (1 + exp(-x))
  kSilu,         // x * sigmoid(x)
  kRelu6,        // min(max(x, 0), 6)
  kHardSwish,    // x * relu6(x + 3) / 6
  kHardSigmoid,  // relu6(x + 3) / 6
  kChannelMul,   // inputs[0] [N, C, H, W] x inputs[1] [N, C], per channel
  // [N, C, H, W]: channels as `groups` rows of C / groups, transposed
  // (ShuffleNet's): output channel i x groups + j is input channel
  // j x C / groups + i.
  kChannelShuffle,
  // Indices [begin, begin + units) of inputs[0] along `axis`, the rest
  // whole (a `chunk` or `split` of the channels: ShuffleNet's).
  kSlice,
  // Vision transformers' layers:
  kSequence,    // [N, C, H, W] -> [H x W, N, C]: each position a token
  kClassToken,  // [L, N, E] -> [1 + L, N, E]: a trainable [E] token first
  kFirstToken,  // [L, N, E] -> [N, E]: the first position (the class token)
  // [N, C, H, W] times a trainable factor per channel (ConvNeXt's layer
  // scale).
  kLayerScale,
  // Segmentation's: [N, C, H, W] maps resized to [N, C, H', W'] bilinearly,
  // pixels' centres at half-pixel offsets (PyTorch's align_corners=False;
  // a source coordinate before the first centre reads the first pixel).
  // [N, C] (a global pool's, ONNX's [N, C, 1, 1]) is 1x1 maps: each
  // channel's value spread over the output.
  kResize,
  // Speech's: [N, C, H, W] normalized per example and channel over its
  // positions, then a trainable scale and shift per channel (PyTorch's
  // GroupNorm with a group per channel: Wav2Vec2's first convolution's).
  kInstanceNorm,
  // [H x W, N, C] -> [N, C, H, W] (kSequence's inverse): a sequence read by
  // a convolution again (Wav2Vec2's positional convolution).
  kMaps,
};

const char* ToString(Op op);

// Batch and layer normalization's epsilon unless a layer says otherwise
// (LibTorch's default; an ONNX file gives its own, MobileNetV3's 1e-3).
constexpr double kNormEpsilon = 1e-5;

// Llama 3's RMSNorm epsilon and rotary base: the decoder layers' constants,
// the same on every backend.
constexpr double kRmsNormEpsilon = 1e-5;
constexpr double kRopeBase = 500000;

enum class Cell { kRnn, kLstm, kGru };
const char* ToString(Cell c);
// Gate count: the number of hidden-sized blocks in a cell's weight matrices.
int Gates(Cell c);

using Shape = std::vector<int64_t>;
int64_t Elements(const Shape& s);
// "[2, 3, 224, 224]", as messages show a shape.
std::string ToString(const Shape& s);

// A size along feature maps' height and width: a window's, or the padding
// on both sides of each. One value is the same for both: a square window,
// as most are (so it converts from one, implicitly).
struct Hw {
  Hw(int64_t both) : h(both), w(both) {}  // NOLINT(runtime/explicit)
  Hw(int64_t height, int64_t width) : h(height), w(width) {}
  int64_t h, w;
};

struct Layer {
  Op op = Op::kInput;
  std::vector<int> inputs;  // indices of earlier layers
  Shape shape;              // output shape
  // Attributes; each op reads the ones it needs.
  int64_t units = 0;   // dense/embedding outputs, conv channels, hidden size
  int64_t kernel = 0;  // a window's height
  int64_t stride = 1;
  int64_t pad = 0;  // before and after each axis: the height's
  // A window's width and its padding (convolution, pooling): kernel and
  // pad where it is square.
  int64_t kernel_w = 0;
  int64_t pad_w = 0;
  int64_t dilation = 1;  // convolution: the distance between its taps
  // A 2-D convolution's weights as PyTorch's weight_norm makes them:
  // v / |v| x g, |v| over every axis of [out, in, h, w] but this one, g
  // a trainable magnitude per index of it (-1: plain weights).
  int64_t weight_norm = -1;
  // A 3-D convolution's window along the depth (frames): its size, stride
  // and padding on each side; 1, 1 and 0 for every other layer.
  int64_t kernel_d = 1;
  int64_t stride_d = 1;
  int64_t pad_d = 0;
  int64_t vocab = 0;  // token range, embedding rows, loss classes
  bool bias = false;
  Cell cell = Cell::kRnn;
  int64_t heads = 0;     // attention
  bool causal = false;   // attention: position t sees positions <= t only
  int64_t kv_heads = 0;  // cached attention: key/value heads
  int64_t context = 0;   // cached attention: positions in the cache
  int64_t position = 0;  // rotary embedding: the first position
  int64_t rank = 0;      // cross layer: W's rank (0: full)
  int64_t groups = 1;    // convolution, channel shuffle: groups of channels
  // concat: the dimension joined; slice: cut; layer norm: normalized;
  // loss: the classes'
  int64_t axis = 0;
  int64_t begin = 0;              // slice: its first index along axis
  bool ceil = false;              // max pool: ceil mode (Graph::MaxPool)
  bool count_pad = false;         // average pool: padding counted as 0s
  double epsilon = kNormEpsilon;  // batch and layer norm: added to variance
  // An input that backward must produce a gradient for, as a layer's input
  // does inside its model (bricks).
  bool requires_grad = false;
  // Initial values a file gives (an ONNX file's weights), in the order of
  // the layer's tensors: its parameters as Params() lists them, then batch
  // norm's running mean and variance. Empty: parameters made from the seed,
  // running statistics those of a fresh model (0 and 1).
  std::vector<std::shared_ptr<const std::vector<float>>> values;
};

// A rotary layer's angles, [length, dh / 2] row-major: cos and sin of
// position (l.position + t) x kRopeBase^(-j / (dh / 2)), in double, rounded
// once: every backend turns its pairs by the same numbers.
void RotaryTables(const Layer& l, std::vector<float>* cos,
                  std::vector<float>* sin);

// A trainable tensor, in the layout LibTorch's modules use. Its position in
// Graph::Params() is its tensor index for deterministic initialization.
struct ParamTensor {
  int layer = 0;
  std::string role;  // weight, bias, weight_ih, weight_hh, bias_ih, bias_hh
  Shape shape;
  // Initial values are uniform in [-bound, bound] when bound > 0, else
  // constant fill.
  double bound = 0;
  double fill = 0;
  // Its values where a file gives them (Layer::values), else none.
  std::shared_ptr<const std::vector<float>> values;
};

// Thrown by a builder for inputs that do not fit its layer (an add of
// unequal shapes, a convolution of a matrix): what and why.
class GraphError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class Graph {
 public:
  // Builders append a layer, infer its shape and return its index.
  // Its dimension `batch_dim` counts examples (0: [batch, ...]).
  int Input(Shape shape, bool requires_grad = false, int batch_dim = 0);
  int Tokens(int64_t length, int64_t batch, int64_t vocab);
  int Dense(int x, int64_t units, bool bias = true);
  // dilation: the taps that far apart (a dilated, or atrous, convolution:
  // DeepLab's), its window spanning dilation x (kernel - 1) + 1.
  int Conv2d(int x, int64_t channels, Hw kernel, int64_t stride, Hw pad,
             int64_t groups = 1, bool bias = false, int64_t dilation = 1);
  // Over [N, C, D, H, W]: kernel, stride and pad as depth, height and
  // width, the stride the same across height and width.
  int Conv3d(int x, int64_t channels, const std::array<int64_t, 3>& kernel,
             const std::array<int64_t, 3>& stride,
             const std::array<int64_t, 3>& pad, bool bias = false);
  int BatchNorm(int x, double epsilon = kNormEpsilon);
  int ReLU(int x);
  // ceil: PyTorch's ceil_mode, a last window that starts inside the input
  // (or its padding before it) even where it hangs past the input's end.
  int MaxPool(int x, int64_t kernel, int64_t stride, int64_t pad,
              bool ceil = false);
  // a is the tensor just written (the main path), b one from further back
  // (a residual's shortcut): a brick of the add finds only a in the caches.
  int Add(int a, int b);
  int GlobalAvgPool(int x);
  int Embedding(int tokens, int64_t units);
  int Recurrent(int x, Cell cell, int64_t hidden);
  // Over dimension `axis` (-1: the last; 1 of [N, C, H, W]: the channels).
  int LayerNorm(int x, double epsilon = kNormEpsilon, int64_t axis = -1);
  int Gelu(int x);
  int Positional(int x);
  int Attention(int q, int k, int v, int64_t heads, bool causal);
  // The classes along `axis`: the last, or the channels (1) of [N, C, H, W]
  // maps (a class per pixel).
  int SoftmaxCrossEntropy(int logits, int64_t axis = -1);
  int MeanLoss(int x);
  int RmsNorm(int x);
  int Rope(int x, int64_t heads, int64_t position);
  int SwiGlu(int gate, int up);
  int CachedAttention(int q, int k, int v, int64_t heads, int64_t kv_heads,
                      int64_t context);
  int LastPosition(int x);
  int EmbeddingBag(int tokens, int64_t units);
  // Along `axis` (-1: the last); the other dimensions equal.
  int Concat(const std::vector<int>& xs, int64_t axis = -1);
  int Cross(int x0, int x, int64_t rank);
  // count_pad: PyTorch's count_include_pad, the padding's zeros in every
  // window's mean (a window's count is kernel x kernel everywhere).
  int AvgPool(int x, int64_t kernel, int64_t stride, int64_t pad,
              bool count_pad = false);
  int Flatten(int x);
  int Sigmoid(int x);
  int Silu(int x);
  int Relu6(int x);
  int HardSwish(int x);
  int HardSigmoid(int x);
  // x [N, C, H, W] scaled per example and channel by s [N, C].
  int ChannelMul(int x, int s);
  int ChannelShuffle(int x, int64_t groups);
  // x's indices [begin, begin + size) along `axis`.
  int Slice(int x, int64_t axis, int64_t begin, int64_t size);
  int Sequence(int x);
  int ClassToken(int x);
  int FirstToken(int x);
  int LayerScale(int x);
  int Resize(int x, int64_t height, int64_t width);
  int InstanceNorm(int x, double epsilon = kNormEpsilon);
  int Maps(int x, int64_t height);
  // Convolution `conv`'s weights reparameterized by weight_norm over
  // `axis` (Layer::weight_norm); returns conv.
  int WeightNorm(int conv, int64_t axis);

  // Gives layer i the initial values a file holds (Layer::values).
  void SetValues(
      int i, std::vector<std::shared_ptr<const std::vector<float>>> values) {
    layers_.at(i).values = std::move(values);
  }

  // Room for n layers, so that a generator that knows its model's size
  // appends without moving the layers (listing builds thousands of graphs).
  void Reserve(int n) { layers_.reserve(n); }

  const std::vector<Layer>& layers() const { return layers_; }
  const Layer& layer(int i) const { return layers_.at(i); }
  int size() const { return static_cast<int>(layers_.size()); }
  // Whether a layer of this kind is in the graph.
  bool Has(Op op) const;
  // The examples per step (batch size of the data input).
  int64_t batch() const { return batch_; }
  // The layer whose output is the model's prediction (input to the loss;
  // the last layer of an inference graph).
  int logits() const { return logits_ >= 0 ? logits_ : size() - 1; }
  // The logits' dimension along which the classes lie (SoftmaxCrossEntropy;
  // the last where the graph has no loss).
  int64_t class_axis() const;

  // Trainable tensors in a fixed order.
  std::vector<ParamTensor> Params() const;

  // Convolution i's weights as LibTorch lays them out: [out, in / groups,
  // h, w], a 3-D one's [out, in, d, h, w] (a weight norm's v).
  Shape ConvWeights(int i) const;
  // Convolution i's weight norm magnitudes g: one per index of its axis,
  // the weights' other axes of one element.
  Shape WeightNormMagnitudes(int i) const;
  // True when the layer's output depends on a trainable tensor, so backward
  // must produce its gradient.
  std::vector<bool> NeedsGrad() const;
  // True for the data inputs that the layers reading them would find in the
  // caches inside a model, as the layer before them just wrote them: every
  // one but an add's second (see Add). A brick's cold steps read these back
  // in after flushing everything.
  std::vector<bool> InputsJustWritten() const;

 private:
  int Append(Layer l);
  // A layer reading x whose output has x's shape.
  int SameShape(Op op, int x);
  int Windowed(Op op, int x, int64_t channels, Hw kernel, int64_t stride,
               Hw pad, int64_t dilation = 1);
  std::vector<Layer> layers_;
  int64_t batch_ = 0;
  int logits_ = -1;
  int64_t class_axis_ = -1;
};

}  // namespace paradnn
