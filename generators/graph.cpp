#include "generators/graph.h"

#include <algorithm>
#include <cmath>

#include "generators/check.h"

namespace paradnn {

namespace {

// A layer whose inputs do not fit it: bad input where a family is declared
// in a file (generators/declared.h), which names the file and line.
void Require(bool cond, const std::string& what) {
  if (!cond) throw GraphError(what);
}

}  // namespace

const char* ToString(DType d) {
  switch (d) {
    case DType::kFp32:
      return "fp32";
    case DType::kBf16:
      return "bf16";
    case DType::kFp16:
      return "fp16";
  }
  return "?";
}
const char* ToString(Mode m) { return m == Mode::kTrain ? "train" : "infer"; }
int ElementSize(DType d) { return d == DType::kFp32 ? 4 : 2; }

const char* ToString(Op op) {
  switch (op) {
    case Op::kInput:
      return "input";
    case Op::kTokens:
      return "tokens";
    case Op::kDense:
      return "dense";
    case Op::kConv2d:
      return "conv2d";
    case Op::kConv3d:
      return "conv3d";
    case Op::kBatchNorm:
      return "batchnorm";
    case Op::kReLU:
      return "relu";
    case Op::kMaxPool:
      return "maxpool";
    case Op::kAdd:
      return "add";
    case Op::kGlobalAvgPool:
      return "avgpool";
    case Op::kEmbedding:
      return "embedding";
    case Op::kRecurrent:
      return "recurrent";
    case Op::kLayerNorm:
      return "layernorm";
    case Op::kGelu:
      return "gelu";
    case Op::kPositional:
      return "positional";
    case Op::kAttention:
      return "attention";
    case Op::kSoftmaxCrossEntropy:
      return "softmax_xent";
    case Op::kMeanLoss:
      return "mean_loss";
    case Op::kRmsNorm:
      return "rmsnorm";
    case Op::kRope:
      return "rope";
    case Op::kSwiGlu:
      return "swiglu";
    case Op::kCachedAttention:
      return "cached_attention";
    case Op::kLastPosition:
      return "last_position";
    case Op::kEmbeddingBag:
      return "embedding_bag";
    case Op::kConcat:
      return "concat";
    case Op::kCross:
      return "cross";
    case Op::kAvgPool:
      return "avgpool2d";
    case Op::kFlatten:
      return "flatten";
    case Op::kSigmoid:
      return "sigmoid";
    case Op::kSilu:
      return "silu";
    case Op::kRelu6:
      return "relu6";
    case Op::kHardSwish:
      return "hardswish";
    case Op::kChannelMul:
      return "channel_mul";
    case Op::kChannelShuffle:
      return "channel_shuffle";
    case Op::kSlice:
      return "slice";
    case Op::kHardSigmoid:
      return "hardsigmoid";
    case Op::kSequence:
      return "sequence";
    case Op::kClassToken:
      return "class_token";
    case Op::kFirstToken:
      return "first_token";
    case Op::kLayerScale:
      return "layer_scale";
    case Op::kResize:
      return "resize";
    case Op::kInstanceNorm:
      return "instance_norm";
    case Op::kMaps:
      return "maps";
  }
  return "?";
}

const char* ToString(Cell c) {
  switch (c) {
    case Cell::kRnn:
      return "rnn";
    case Cell::kLstm:
      return "lstm";
    case Cell::kGru:
      return "gru";
  }
  return "?";
}

int Gates(Cell c) {
  switch (c) {
    case Cell::kRnn:
      return 1;
    case Cell::kLstm:
      return 4;
    case Cell::kGru:
      return 3;
  }
  return 0;
}

int64_t Elements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string ToString(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(s[i]);
  }
  return out + "]";
}

int Graph::Append(Layer l) {
  for (int in : l.inputs) {
    PARADNN_CHECK(in >= 0 && in < size(), "layer input out of range");
  }
  for (int64_t d : l.shape) {
    Require(d > 0, std::string(ToString(l.op)) + ": an output dimension of " +
                       std::to_string(d) + ", expected a positive one");
  }
  layers_.push_back(std::move(l));
  return size() - 1;
}

int Graph::Input(Shape shape, bool requires_grad, int batch_dim) {
  Require(batch_dim >= 0 && batch_dim < static_cast<int>(shape.size()),
          "input: batch_dim " + std::to_string(batch_dim) + " of a shape of " +
              std::to_string(shape.size()) + " dimensions");
  if (batch_ == 0) batch_ = shape[batch_dim];
  Layer l;
  l.op = Op::kInput;
  l.shape = std::move(shape);
  l.requires_grad = requires_grad;
  return Append(std::move(l));
}

int Graph::Tokens(int64_t length, int64_t batch, int64_t vocab) {
  batch_ = batch;
  Layer l;
  l.op = Op::kTokens;
  l.shape = {length, batch};
  l.vocab = vocab;
  return Append(std::move(l));
}

int Graph::Dense(int x, int64_t units, bool bias) {
  Layer l;
  l.op = Op::kDense;
  l.inputs = {x};
  l.shape = layer(x).shape;
  l.shape.back() = units;
  l.units = units;
  l.bias = bias;
  return Append(std::move(l));
}

namespace {
int64_t Window(int64_t in, int64_t kernel, int64_t stride, int64_t pad,
               int64_t dilation = 1) {
  return (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
}
}  // namespace

// Convolution and pooling: a window over H and W of NCHW.
int Graph::Windowed(Op op, int x, int64_t channels, Hw kernel, int64_t stride,
                    Hw pad, int64_t dilation) {
  const Shape& in = layer(x).shape;
  Require(in.size() == 4, "windowed layer needs NCHW input");
  Require(dilation >= 1, "a dilation of " + std::to_string(dilation));
  Layer l;
  l.op = op;
  l.inputs = {x};
  l.shape = {in[0], channels, Window(in[2], kernel.h, stride, pad.h, dilation),
             Window(in[3], kernel.w, stride, pad.w, dilation)};
  l.dilation = dilation;
  l.kernel = kernel.h;
  l.kernel_w = kernel.w;
  l.stride = stride;
  l.pad = pad.h;
  l.pad_w = pad.w;
  return Append(std::move(l));
}

int Graph::Conv2d(int x, int64_t channels, Hw kernel, int64_t stride, Hw pad,
                  int64_t groups, bool bias, int64_t dilation) {
  int i = Windowed(Op::kConv2d, x, channels, kernel, stride, pad, dilation);
  const int64_t in = layer(x).shape[1];
  Require(groups >= 1 && in % groups == 0 && channels % groups == 0,
          "a convolution of " + std::to_string(groups) + " groups of " +
              std::to_string(in) + " channels in and " +
              std::to_string(channels) + " out: the groups must divide both");
  layers_[i].units = channels;
  layers_[i].groups = groups;
  layers_[i].bias = bias;
  return i;
}

int Graph::Conv3d(int x, int64_t channels, const std::array<int64_t, 3>& kernel,
                  const std::array<int64_t, 3>& stride,
                  const std::array<int64_t, 3>& pad, bool bias) {
  const Shape& in = layer(x).shape;
  Require(in.size() == 5, "a 3-D convolution of " + ToString(in) +
                              ": expected [N, C, D, H, W]");
  Require(stride[1] == stride[2],
          "a 3-D convolution's strides " + std::to_string(stride[1]) + " and " +
              std::to_string(stride[2]) +
              " across height and width: expected one for both");
  Layer l;
  l.op = Op::kConv3d;
  l.inputs = {x};
  l.shape = {in[0], channels, Window(in[2], kernel[0], stride[0], pad[0], 1),
             Window(in[3], kernel[1], stride[1], pad[1], 1),
             Window(in[4], kernel[2], stride[2], pad[2], 1)};
  l.units = channels;
  l.kernel_d = kernel[0];
  l.kernel = kernel[1];
  l.kernel_w = kernel[2];
  l.stride_d = stride[0];
  l.stride = stride[1];
  l.pad_d = pad[0];
  l.pad = pad[1];
  l.pad_w = pad[2];
  l.bias = bias;
  return Append(std::move(l));
}

int Graph::AvgPool(int x, int64_t kernel, int64_t stride, int64_t pad,
                   bool count_pad) {
  Require(pad < kernel,
          "an average pool's padding must be less than its "
          "window, or a window covers padding only");
  const int i =
      Windowed(Op::kAvgPool, x, layer(x).shape.at(1), kernel, stride, pad);
  layers_[i].count_pad = count_pad;
  return i;
}

int Graph::Flatten(int x) {
  const Shape& in = layer(x).shape;
  Require(in.size() >= 2, "a flatten of " + ToString(in));
  Layer l;
  l.op = Op::kFlatten;
  l.inputs = {x};
  l.shape = {in[0], Elements(in) / in[0]};
  return Append(std::move(l));
}

int Graph::Sigmoid(int x) { return SameShape(Op::kSigmoid, x); }
int Graph::Silu(int x) { return SameShape(Op::kSilu, x); }
int Graph::Relu6(int x) { return SameShape(Op::kRelu6, x); }
int Graph::HardSwish(int x) { return SameShape(Op::kHardSwish, x); }
int Graph::HardSigmoid(int x) { return SameShape(Op::kHardSigmoid, x); }

int Graph::ChannelMul(int x, int s) {
  const Shape& in = layer(x).shape;
  Require(in.size() == 4 && layer(s).shape == Shape({in[0], in[1]}),
          "a per-channel product of " + ToString(in) + " by " +
              ToString(layer(s).shape) + ": expected [N, C, H, W] by [N, C]");
  const int i = SameShape(Op::kChannelMul, x);
  layers_[i].inputs.push_back(s);
  return i;
}

int Graph::ChannelShuffle(int x, int64_t groups) {
  const Shape& in = layer(x).shape;
  Require(in.size() == 4 && groups > 1 && in[1] % groups == 0,
          "a channel shuffle of " + ToString(in) + " in " +
              std::to_string(groups) +
              " groups: expected [N, C, H, W] with C a multiple of them");
  const int i = SameShape(Op::kChannelShuffle, x);
  layers_[i].groups = groups;
  return i;
}

int Graph::Slice(int x, int64_t axis, int64_t begin, int64_t size) {
  Shape shape = layer(x).shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  Require(axis >= 1 && axis < rank && begin >= 0 && size >= 1 &&
              begin + size <= shape[axis],
          "a slice [" + std::to_string(begin) + ", " +
              std::to_string(begin + size) + ") along dimension " +
              std::to_string(axis) + " of " + ToString(shape) +
              ": expected a dimension after the batch and indices inside it");
  shape[axis] = size;
  Layer l;
  l.op = Op::kSlice;
  l.inputs = {x};
  l.shape = std::move(shape);
  l.axis = axis;
  l.begin = begin;
  l.units = size;
  return Append(std::move(l));
}

int Graph::Sequence(int x) {
  const Shape& in = layer(x).shape;
  Require(in.size() == 4, "a sequence of " + ToString(in) +
                              ": expected feature maps [N, C, H, W]");
  Layer l;
  l.op = Op::kSequence;
  l.inputs = {x};
  l.shape = {in[2] * in[3], in[0], in[1]};
  return Append(std::move(l));
}

int Graph::ClassToken(int x) {
  const Shape& in = layer(x).shape;
  Require(in.size() == 3, "a class token before " + ToString(in) +
                              ": expected [length, batch, units]");
  Layer l;
  l.op = Op::kClassToken;
  l.inputs = {x};
  l.shape = {in[0] + 1, in[1], in[2]};
  l.units = in[2];
  return Append(std::move(l));
}

int Graph::FirstToken(int x) {
  const Shape& in = layer(x).shape;
  Require(in.size() == 3, "the first token of " + ToString(in) +
                              ": expected [length, batch, units]");
  Layer l;
  l.op = Op::kFirstToken;
  l.inputs = {x};
  l.shape = {in[1], in[2]};
  return Append(std::move(l));
}

int Graph::Resize(int x, int64_t height, int64_t width) {
  const Shape& in = layer(x).shape;
  Require(in.size() == 4 || in.size() == 2,
          "a resize of " + ToString(in) +
              ": expected [N, C, H, W] maps, or [N, C] as 1x1 maps");
  Layer l;
  l.op = Op::kResize;
  l.inputs = {x};
  l.shape = {in[0], in[1], height, width};
  return Append(std::move(l));
}

int Graph::InstanceNorm(int x, double epsilon) {
  const Shape& in = layer(x).shape;
  Require(in.size() == 4, "an instance norm of " + ToString(in) +
                              ": expected [N, C, H, W] maps");
  Require(epsilon > 0, "a normalization's epsilon must be positive");
  const int i = SameShape(Op::kInstanceNorm, x);
  layers_[i].units = layers_[i].shape[1];
  layers_[i].epsilon = epsilon;
  return i;
}

int Graph::Maps(int x, int64_t height) {
  const Shape& in = layer(x).shape;
  Require(in.size() == 3 && height >= 1 && in[0] % height == 0,
          "maps of height " + std::to_string(height) + " from " + ToString(in) +
              ": expected [length, batch, channels], the length a multiple "
              "of the height");
  Layer l;
  l.op = Op::kMaps;
  l.inputs = {x};
  l.shape = {in[1], in[2], height, in[0] / height};
  return Append(std::move(l));
}

int Graph::WeightNorm(int conv, int64_t axis) {
  Require(conv >= 0 && conv < size() && layers_[conv].op == Op::kConv2d &&
              axis >= 0 && axis < 4,
          "a weight norm over axis " + std::to_string(axis) +
              ": expected a 2-D convolution's, of its [out, in, h, w] "
              "weights");
  layers_[conv].weight_norm = axis;
  return conv;
}

int Graph::LayerScale(int x) {
  const Shape& in = layer(x).shape;
  Require(in.size() == 4,
          "a layer scale of " + ToString(in) + ": expected [N, C, H, W] maps");
  const int i = SameShape(Op::kLayerScale, x);
  // Its own shape: appending may have moved x's.
  layers_[i].units = layers_[i].shape[1];
  return i;
}

int Graph::SameShape(Op op, int x) {
  Layer l;
  l.op = op;
  l.inputs = {x};
  l.shape = layer(x).shape;
  return Append(std::move(l));
}

int Graph::BatchNorm(int x, double epsilon) {
  Require(epsilon > 0, "a normalization's epsilon must be positive");
  const int i = SameShape(Op::kBatchNorm, x);
  layers_[i].units = layers_[i].shape.at(1);
  layers_[i].epsilon = epsilon;
  return i;
}

int Graph::ReLU(int x) { return SameShape(Op::kReLU, x); }

int Graph::MaxPool(int x, int64_t kernel, int64_t stride, int64_t pad,
                   bool ceil) {
  const int i =
      Windowed(Op::kMaxPool, x, layer(x).shape.at(1), kernel, stride, pad);
  if (!ceil) return i;
  // PyTorch's: ceil((in + 2 pad - kernel) / stride) + 1 windows, less the
  // last where it would start past the input and the padding before it.
  Layer& l = layers_[i];
  l.ceil = true;
  for (int d = 2; d < 4; ++d) {
    const int64_t in = layer(x).shape[d];
    int64_t out = (in + 2 * pad - kernel + stride - 1) / stride + 1;
    if ((out - 1) * stride >= in + pad) --out;
    l.shape[d] = out;
  }
  return i;
}

int Graph::Add(int a, int b) {
  Require(layer(a).shape == layer(b).shape, "add of unequal shapes");
  Layer l;
  l.op = Op::kAdd;
  l.inputs = {a, b};
  l.shape = layer(a).shape;
  return Append(std::move(l));
}

int Graph::GlobalAvgPool(int x) {
  const Shape& in = layer(x).shape;
  Require(in.size() == 4 || in.size() == 5,
          "global average pool needs NCHW or NCDHW input");
  Layer l;
  l.op = Op::kGlobalAvgPool;
  l.inputs = {x};
  l.shape = {in[0], in[1]};
  return Append(std::move(l));
}

int Graph::Embedding(int tokens, int64_t units) {
  const Layer& t = layer(tokens);
  Require(t.op == Op::kTokens, "embedding reads token ids");
  Layer l;
  l.op = Op::kEmbedding;
  l.inputs = {tokens};
  l.shape = {t.shape[0], t.shape[1], units};
  l.units = units;
  l.vocab = t.vocab;
  return Append(std::move(l));
}

int Graph::Recurrent(int x, Cell cell, int64_t hidden) {
  const Shape& in = layer(x).shape;
  Require(in.size() == 3, "recurrent layer needs [length, batch, in]");
  Layer l;
  l.op = Op::kRecurrent;
  l.inputs = {x};
  l.shape = {in[0], in[1], hidden};
  l.units = hidden;
  l.cell = cell;
  l.bias = true;
  return Append(std::move(l));
}

int Graph::LayerNorm(int x, double epsilon, int64_t axis) {
  Require(epsilon > 0, "a normalization's epsilon must be positive");
  const int64_t rank = static_cast<int64_t>(layer(x).shape.size());
  if (axis < 0) axis += rank;
  Require(axis == rank - 1 || (rank == 4 && axis == 1),
          "a layer normalization is over the last dimension, or over the "
          "channels (dimension 1) of [N, C, H, W] maps");
  const int i = SameShape(Op::kLayerNorm, x);
  layers_[i].axis = axis;
  layers_[i].units = layers_[i].shape[axis];
  layers_[i].epsilon = epsilon;
  return i;
}

int Graph::Gelu(int x) { return SameShape(Op::kGelu, x); }

int Graph::Positional(int x) {
  const Shape& in = layer(x).shape;
  Require(in.size() == 3, "positional table needs [length, batch, units]");
  Layer l;
  l.op = Op::kPositional;
  l.inputs = {x};
  l.shape = in;
  l.units = in[2];
  return Append(std::move(l));
}

int Graph::Attention(int q, int k, int v, int64_t heads, bool causal) {
  const Shape& in = layer(q).shape;
  Require(in.size() == 3, "attention needs [length, batch, units]");
  Require(layer(k).shape == in && layer(v).shape == in,
          "attention of unequal shapes");
  Require(heads > 0 && in[2] % heads == 0,
          "attention heads must divide the units");
  Layer l;
  l.op = Op::kAttention;
  l.inputs = {q, k, v};
  l.shape = in;
  l.units = in[2];
  l.heads = heads;
  l.causal = causal;
  return Append(std::move(l));
}

int Graph::RmsNorm(int x) {
  const int i = SameShape(Op::kRmsNorm, x);
  layers_[i].units = layers_[i].shape.back();
  return i;
}

int Graph::Rope(int x, int64_t heads, int64_t position) {
  const Shape& in = layer(x).shape;
  Require(in.size() == 3, "rotary embedding needs [length, batch, units]");
  Require(heads > 0 && in[2] % heads == 0 && (in[2] / heads) % 2 == 0,
          "rotary embedding needs heads of an even size");
  const int i = SameShape(Op::kRope, x);
  layers_[i].units = in[2];
  layers_[i].heads = heads;
  layers_[i].position = position;
  return i;
}

void RotaryTables(const Layer& l, std::vector<float>* cos,
                  std::vector<float>* sin) {
  const int64_t length = l.shape[0], half = l.units / l.heads / 2;
  cos->resize(length * half);
  sin->resize(length * half);
  for (int64_t t = 0; t < length; ++t) {
    for (int64_t j = 0; j < half; ++j) {
      const double angle = static_cast<double>(l.position + t) *
                           std::pow(kRopeBase, -static_cast<double>(j) /
                                                   static_cast<double>(half));
      (*cos)[t * half + j] = static_cast<float>(std::cos(angle));
      (*sin)[t * half + j] = static_cast<float>(std::sin(angle));
    }
  }
}

int Graph::SwiGlu(int gate, int up) {
  Require(layer(gate).shape == layer(up).shape, "SwiGLU of unequal shapes");
  Layer l;
  l.op = Op::kSwiGlu;
  l.inputs = {gate, up};
  l.shape = layer(gate).shape;
  return Append(std::move(l));
}

int Graph::CachedAttention(int q, int k, int v, int64_t heads, int64_t kv_heads,
                           int64_t context) {
  const Shape& in = layer(q).shape;
  Require(in.size() == 3, "attention needs [length, batch, units]");
  Require(
      heads > 0 && kv_heads > 0 && heads % kv_heads == 0 && in[2] % heads == 0,
      "attention needs kv_heads dividing heads dividing the units");
  const Shape kv = {in[0], in[1], in[2] / heads * kv_heads};
  Require(layer(k).shape == kv && layer(v).shape == kv,
          "attention's keys and values of the wrong shape");
  Require(context >= in[0], "a cache shorter than its new positions");
  Layer l;
  l.op = Op::kCachedAttention;
  l.inputs = {q, k, v};
  l.shape = in;
  l.units = in[2];
  l.heads = heads;
  l.kv_heads = kv_heads;
  l.context = context;
  l.causal = true;
  return Append(std::move(l));
}

int Graph::LastPosition(int x) {
  const Shape& in = layer(x).shape;
  Require(in.size() == 3, "last position of [length, batch, units]");
  Layer l;
  l.op = Op::kLastPosition;
  l.inputs = {x};
  l.shape = {1, in[1], in[2]};
  l.units = in[2];
  return Append(std::move(l));
}

int Graph::EmbeddingBag(int tokens, int64_t units) {
  const Layer& t = layer(tokens);
  Require(t.op == Op::kTokens, "an embedding bag reads token ids");
  Layer l;
  l.op = Op::kEmbeddingBag;
  l.inputs = {tokens};
  l.shape = {t.shape[1], units};
  l.units = units;
  l.vocab = t.vocab;
  return Append(std::move(l));
}

int Graph::Concat(const std::vector<int>& xs, int64_t axis) {
  Require(xs.size() >= 2, "concat of fewer than two inputs");
  Shape shape = layer(xs[0]).shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (axis < 0) axis += rank;
  Require(axis >= 0 && axis < rank, "concat along a dimension the inputs of " +
                                        ToString(shape) + " do not have");
  shape[axis] = 0;
  const Shape others = shape;  // the dimensions every input shares
  for (int x : xs) {
    Shape s = layer(x).shape;
    Require(static_cast<int64_t>(s.size()) == rank,
            "concat of shapes of different ranks");
    const int64_t width = s[axis];
    s[axis] = 0;
    Require(s == others,
            "concat of shapes that differ in a dimension other "
            "than the one joined");
    shape[axis] += width;
  }
  Layer l;
  l.op = Op::kConcat;
  l.inputs = xs;
  l.shape = std::move(shape);
  l.axis = axis;
  l.units = l.shape[axis];
  return Append(std::move(l));
}

int Graph::Cross(int x0, int x, int64_t rank) {
  const Shape& in = layer(x).shape;
  Require(in.size() == 2, "a cross layer needs [batch, units]");
  Require(layer(x0).shape == in, "a cross layer of unequal shapes");
  Require(rank >= 0, "a cross layer of negative rank");
  Layer l;
  l.op = Op::kCross;
  l.inputs = {x0, x};
  l.shape = in;
  l.units = in[1];
  l.rank = rank;
  l.bias = true;
  return Append(std::move(l));
}

int Graph::SoftmaxCrossEntropy(int logits, int64_t axis) {
  const Shape& in = layer(logits).shape;
  const int64_t rank = static_cast<int64_t>(in.size());
  if (axis < 0) axis += rank;
  Require(axis == rank - 1 || (rank == 4 && axis == 1),
          "a loss's classes lie along the last dimension, or along the "
          "channels (dimension 1) of [N, C, H, W] maps");
  Layer l;
  l.op = Op::kSoftmaxCrossEntropy;
  l.inputs = {logits};
  l.shape = {1};
  l.axis = axis;
  l.vocab = in[axis];
  logits_ = logits;
  class_axis_ = axis;
  return Append(std::move(l));
}

int64_t Graph::class_axis() const {
  return class_axis_ >= 0
             ? class_axis_
             : static_cast<int64_t>(layer(logits()).shape.size()) - 1;
}

int Graph::MeanLoss(int x) {
  Layer l;
  l.op = Op::kMeanLoss;
  l.inputs = {x};
  l.shape = {1};
  logits_ = x;
  return Append(std::move(l));
}

bool Graph::Has(Op op) const {
  return std::any_of(layers_.begin(), layers_.end(),
                     [op](const Layer& l) { return l.op == op; });
}

std::vector<ParamTensor> Graph::Params() const {
  std::vector<ParamTensor> params;
  params.reserve(size());
  size_t first = 0;  // the index of the layer's first tensor
  auto add = [&](int i, const char* role, Shape shape, int64_t fan_in) {
    ParamTensor p;
    p.layer = i;
    p.role = role;
    p.shape = std::move(shape);
    p.bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    const std::vector<std::shared_ptr<const std::vector<float>>>& given =
        layers_[i].values;
    const size_t k = params.size() - first;
    if (k < given.size()) {
      PARADNN_CHECK(
          given[k] != nullptr &&
              static_cast<int64_t>(given[k]->size()) == Elements(p.shape),
          "a layer's given values do not fit its tensor");
      p.values = given[k];
    }
    params.push_back(std::move(p));
  };
  for (int i = 0; i < size(); ++i) {
    first = params.size();
    const Layer& l = layers_[i];
    switch (l.op) {
      case Op::kDense: {
        int64_t in = layer(l.inputs[0]).shape.back();
        add(i, "weight", {l.units, in}, in);
        if (l.bias) add(i, "bias", {l.units}, in);
        break;
      }
      case Op::kConv2d:
      case Op::kConv3d: {
        const Shape w = ConvWeights(i);
        // A filter reads its group's channels only.
        const int64_t fan_in = Elements(w) / l.units;
        if (l.weight_norm < 0) {
          add(i, "weight", w, fan_in);
        } else {
          // Unit magnitudes unless a file gives them (PyTorch starts g at
          // |v|, which a seed-drawn v has no reason to keep).
          add(i, "weight_v", w, fan_in);
          add(i, "weight_g", WeightNormMagnitudes(i), fan_in);
          params.back().bound = 0;
          params.back().fill = 1;
        }
        if (l.bias) add(i, "bias", {l.units}, fan_in);
        break;
      }
      case Op::kBatchNorm:
      case Op::kLayerNorm:
      case Op::kInstanceNorm:
        add(i, "weight", {l.units}, 1);
        params.back().bound = 0;
        params.back().fill = 1;
        add(i, "bias", {l.units}, 1);
        params.back().bound = 0;
        params.back().fill = 0;
        break;
      case Op::kPositional:
        add(i, "weight", {layer(l.inputs[0]).shape[0], l.units}, l.units);
        break;
      case Op::kClassToken:
        add(i, "weight", {l.units}, l.units);
        break;
      case Op::kRmsNorm:
      case Op::kLayerScale:
        add(i, "weight", {l.units}, 1);
        params.back().bound = 0;
        params.back().fill = 1;
        break;
      case Op::kEmbedding:
      case Op::kEmbeddingBag:
        // fan-in 1: one row is selected per token, so rows are uniform in
        // [-1, 1].
        add(i, "weight", {l.vocab, l.units}, 1);
        break;
      case Op::kCross:
        // As two dense layers without and with a bias: V, then U and b.
        if (l.rank > 0) {
          add(i, "weight_v", {l.rank, l.units}, l.units);
          add(i, "weight_u", {l.units, l.rank}, l.rank);
          add(i, "bias", {l.units}, l.rank);
        } else {
          add(i, "weight", {l.units, l.units}, l.units);
          add(i, "bias", {l.units}, l.units);
        }
        break;
      case Op::kRecurrent: {
        int64_t in = layer(l.inputs[0]).shape.back();
        int64_t rows = Gates(l.cell) * l.units;
        add(i, "weight_ih", {rows, in}, in);
        add(i, "weight_hh", {rows, l.units}, l.units);
        add(i, "bias_ih", {rows}, l.units);
        add(i, "bias_hh", {rows}, l.units);
        break;
      }
      default:
        break;
    }
  }
  return params;
}

Shape Graph::ConvWeights(int i) const {
  const Layer& l = layer(i);
  const int64_t in = layer(l.inputs[0]).shape[1] / l.groups;
  return l.op == Op::kConv3d
             ? Shape{l.units, in, l.kernel_d, l.kernel, l.kernel_w}
             : Shape{l.units, in, l.kernel, l.kernel_w};
}

Shape Graph::WeightNormMagnitudes(int i) const {
  const Shape w = ConvWeights(i);
  Shape g(w.size(), 1);
  g[layer(i).weight_norm] = w[layer(i).weight_norm];
  return g;
}

std::vector<bool> Graph::NeedsGrad() const {
  std::vector<bool> needs(size(), false);
  for (int i = 0; i < size(); ++i) {
    const Layer& l = layers_[i];
    bool trainable = l.op == Op::kDense || l.op == Op::kConv2d ||
                     l.op == Op::kConv3d || l.op == Op::kBatchNorm ||
                     l.op == Op::kEmbedding || l.op == Op::kRecurrent ||
                     l.op == Op::kLayerNorm || l.op == Op::kPositional ||
                     l.op == Op::kRmsNorm || l.op == Op::kEmbeddingBag ||
                     l.op == Op::kCross || l.op == Op::kClassToken ||
                     l.op == Op::kLayerScale || l.op == Op::kInstanceNorm;
    needs[i] = trainable || l.requires_grad;
    for (int in : l.inputs) needs[i] = needs[i] || needs[in];
  }
  return needs;
}

std::vector<bool> Graph::InputsJustWritten() const {
  std::vector<bool> written(size(), false);
  for (int i = 0; i < size(); ++i) {
    const Op op = layers_[i].op;
    written[i] = op == Op::kInput || op == Op::kTokens;
  }
  for (const Layer& l : layers_) {
    if (l.op == Op::kAdd && l.inputs[1] != l.inputs[0]) {
      written[l.inputs[1]] = false;
    }
  }
  return written;
}

}  // namespace paradnn
