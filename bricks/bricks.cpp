#include "bricks/bricks.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <tuple>
#include <utility>

#include "generators/check.h"

namespace paradnn {
namespace {

// The attributes each op's key prints, after its input shapes. One ending
// in '?' is printed only where it is not its default (a convolution's
// groups other than 1, its bias), so that the keys of the layers that had
// no such attribute before it came stay as they were.
const std::map<Op, std::vector<std::string>>& Attributes() {
  static const std::map<Op, std::vector<std::string>> attributes = {
      {Op::kDense, {"units", "bias"}},
      {Op::kConv2d,
       {"units", "kernel", "stride", "pad", "dilation?", "groups?", "bias?",
        "weight_norm?"}},
      {Op::kConv3d, {"units", "kernel", "stride", "pad", "bias?"}},
      {Op::kBatchNorm, {"eps?"}},
      {Op::kReLU, {}},
      {Op::kMaxPool, {"kernel", "stride", "pad", "ceil?"}},
      {Op::kAdd, {}},
      {Op::kGlobalAvgPool, {}},
      {Op::kEmbedding, {"vocab", "units"}},
      {Op::kRecurrent, {"cell", "units"}},
      {Op::kLayerNorm, {"eps?", "axis?"}},
      {Op::kGelu, {}},
      {Op::kPositional, {}},
      {Op::kAttention, {"heads", "causal"}},
      {Op::kSoftmaxCrossEntropy, {"axis?"}},
      {Op::kAvgPool, {"kernel", "stride", "pad", "count_pad?"}},
      {Op::kFlatten, {}},
      {Op::kSigmoid, {}},
      {Op::kSilu, {}},
      {Op::kRelu6, {}},
      {Op::kHardSwish, {}},
      {Op::kHardSigmoid, {}},
      {Op::kChannelMul, {}},
      {Op::kChannelShuffle, {"groups"}},
      {Op::kSlice, {"axis", "begin", "units"}},
      {Op::kConcat, {"axis"}},
      {Op::kSequence, {}},
      {Op::kClassToken, {}},
      {Op::kFirstToken, {}},
      {Op::kLayerScale, {}},
      {Op::kResize, {"size"}},
      {Op::kInstanceNorm, {"eps?"}},
      {Op::kMaps, {"height"}},
  };
  return attributes;
}

// An attribute's name, and whether it is optional (see Attributes).
std::pair<std::string, bool> AttributeName(const std::string& a) {
  const bool optional = !a.empty() && a.back() == '?';
  return {optional ? a.substr(0, a.size() - 1) : a, optional};
}

// Whether b's attribute `a` has its default value.
bool IsDefault(const Brick& b, const std::string& a) {
  if (a == "groups") return b.groups == 1;
  if (a == "dilation") return b.dilation == 1;
  if (a == "bias") return !b.bias;
  if (a == "ceil") return !b.ceil;
  if (a == "count_pad") return !b.count_pad;
  if (a == "eps") return b.epsilon == kNormEpsilon;
  if (a == "weight_norm") return b.weight_norm < 0;
  // A layer norm's or a loss's: the last dimension (BricksOf).
  if (a == "axis") return b.axis == 0;
  return false;
}

std::string ShapeText(const Shape& s) {
  std::string out;
  for (int64_t d : s) out += (out.empty() ? "" : "x") + std::to_string(d);
  return out;
}

int64_t PositiveInt(const std::string& key, const std::string& v,
                    int64_t min = 1) {
  try {
    size_t end = 0;
    const int64_t n = std::stoll(v, &end);
    if (end == v.size() && n >= min) return n;
  } catch (const std::exception&) {
  }
  throw SpecError("'" + v + "' is not a valid " + key +
                  ": expected an integer of at least " + std::to_string(min));
}

double PositiveReal(const std::string& key, const std::string& v) {
  try {
    size_t end = 0;
    const double x = std::stod(v, &end);
    if (end == v.size() && x > 0) return x;
  } catch (const std::exception&) {
  }
  throw SpecError("'" + v + "' is not a valid " + key +
                  ": expected a positive number");
}

// "7", or "1x7" where the width differs from the height.
std::string HwText(int64_t h, int64_t w) {
  return std::to_string(h) + (w == h ? "" : "x" + std::to_string(w));
}

// HwText's text read back: (h, w).
std::pair<int64_t, int64_t> ParseHw(const std::string& key,
                                    const std::string& v, int64_t min) {
  const size_t x = v.find('x');
  if (x == std::string::npos) {
    const int64_t n = PositiveInt(key, v, min);
    return {n, n};
  }
  return {PositiveInt(key, v.substr(0, x), min),
          PositiveInt(key, v.substr(x + 1), min)};
}

// "3" where depth, height and width are equal, else "3x7x7".
std::string DhwText(int64_t d, int64_t h, int64_t w) {
  return d == h && h == w ? std::to_string(d)
                          : std::to_string(d) + "x" + std::to_string(h) + "x" +
                                std::to_string(w);
}

// DhwText's text read back: (d, h, w).
std::tuple<int64_t, int64_t, int64_t> ParseDhw(const std::string& key,
                                               const std::string& v,
                                               int64_t min) {
  const size_t x = v.find('x');
  if (x == std::string::npos) {
    const int64_t n = PositiveInt(key, v, min);
    return {n, n, n};
  }
  const auto [h, w] = ParseHw(key, v.substr(x + 1), min);
  if (v.find('x', x + 1) == std::string::npos) {
    throw SpecError("'" + v + "' is not a valid " + key +
                    ": expected one value or depth x height x width");
  }
  return std::make_tuple(PositiveInt(key, v.substr(0, x), min), h, w);
}

Shape ParseShape(const std::string& text) {
  Shape s;
  std::stringstream in(text);
  std::string d;
  while (std::getline(in, d, 'x')) s.push_back(PositiveInt("dimension", d));
  if (s.empty()) throw SpecError("empty shape in 'in:'");
  return s;
}

}  // namespace

namespace {

// "/units:16/kernel:3/stride:1/pad:1": the attributes of b's type.
std::string AttributeText(const Brick& b) {
  std::string text;
  for (const std::string& spec : Attributes().at(b.op)) {
    const auto [a, optional] = AttributeName(spec);
    if (optional && IsDefault(b, a)) continue;
    text += "/" + a + ":";
    if (a == "units") text += std::to_string(b.units);
    const bool video = b.op == Op::kConv3d;
    if (a == "kernel") {
      text += video ? DhwText(b.kernel_d, b.kernel, b.kernel_w)
                    : HwText(b.kernel, b.kernel_w);
    }
    if (a == "stride") {
      text += video ? DhwText(b.stride_d, b.stride, b.stride)
                    : std::to_string(b.stride);
    }
    if (a == "pad") {
      text += video ? DhwText(b.pad_d, b.pad, b.pad_w) : HwText(b.pad, b.pad_w);
    }
    if (a == "vocab") text += std::to_string(b.vocab);
    if (a == "bias") text += b.bias ? "1" : "0";
    if (a == "ceil") text += b.ceil ? "1" : "0";
    if (a == "count_pad") text += b.count_pad ? "1" : "0";
    if (a == "cell") text += ToString(b.cell);
    if (a == "heads") text += std::to_string(b.heads);
    if (a == "causal") text += b.causal ? "1" : "0";
    if (a == "groups") text += std::to_string(b.groups);
    if (a == "dilation") text += std::to_string(b.dilation);
    if (a == "size") text += HwText(b.height, b.width);
    if (a == "height") text += std::to_string(b.height);
    if (a == "weight_norm") text += std::to_string(b.weight_norm);
    if (a == "axis") text += std::to_string(b.axis);
    if (a == "begin") text += std::to_string(b.begin);
    if (a == "eps") {
      std::ostringstream eps;
      eps << b.epsilon;
      text += eps.str();
    }
  }
  return text;
}

Op ParseOp(const std::string& text) {
  for (const auto& [op, attrs] : Attributes()) {
    if (text == ToString(op)) return op;
  }
  throw SpecError("'" + text + "' is not a layer type");
}

// Reads the attributes of b's type from parts[*k...], advancing *k.
void ParseAttributes(const std::vector<std::string>& parts, size_t* k,
                     Brick* b) {
  for (const std::string& spec : Attributes().at(b->op)) {
    const auto [a, optional] = AttributeName(spec);
    const std::string p = *k < parts.size() ? parts[*k] : "";
    if (optional && p.rfind(a + ":", 0) != 0) continue;
    if (p.rfind(a + ":", 0) != 0) {
      throw SpecError("segment '" + p + "' should be " + a + ":<value> (" +
                      ToString(b->op) + " takes" +
                      [&] {
                        std::string all;
                        for (const std::string& x : Attributes().at(b->op)) {
                          all += " " + AttributeName(x).first;
                        }
                        return all;
                      }() +
                      ")");
    }
    const std::string v = p.substr(a.size() + 1);
    if (a == "units") b->units = PositiveInt(a, v);
    const bool video = b->op == Op::kConv3d;
    if (a == "kernel" && video) {
      std::tie(b->kernel_d, b->kernel, b->kernel_w) = ParseDhw(a, v, 1);
    } else if (a == "kernel") {
      std::tie(b->kernel, b->kernel_w) = ParseHw(a, v, 1);
    }
    if (a == "stride" && video) {
      int64_t across = 0;
      std::tie(b->stride_d, b->stride, across) = ParseDhw(a, v, 1);
      if (across != b->stride) {
        throw SpecError("'" + v +
                        "' is not a valid stride: expected one for height "
                        "and width");
      }
    } else if (a == "stride") {
      b->stride = PositiveInt(a, v);
    }
    if (a == "pad" && video) {
      std::tie(b->pad_d, b->pad, b->pad_w) = ParseDhw(a, v, 0);
    } else if (a == "pad") {
      std::tie(b->pad, b->pad_w) = ParseHw(a, v, 0);
    }
    if (a == "vocab") b->vocab = PositiveInt(a, v);
    if (a == "bias") b->bias = PositiveInt(a, v, 0) != 0;
    if (a == "ceil") b->ceil = PositiveInt(a, v, 0) != 0;
    if (a == "count_pad") b->count_pad = PositiveInt(a, v, 0) != 0;
    if (a == "heads") b->heads = PositiveInt(a, v);
    if (a == "causal") b->causal = PositiveInt(a, v, 0) != 0;
    if (a == "groups") b->groups = PositiveInt(a, v);
    if (a == "dilation") b->dilation = PositiveInt(a, v);
    if (a == "size") std::tie(b->height, b->width) = ParseHw(a, v, 1);
    if (a == "height") b->height = PositiveInt(a, v);
    if (a == "weight_norm") b->weight_norm = PositiveInt(a, v, 0);
    if (a == "axis") b->axis = PositiveInt(a, v, 0);
    if (a == "begin") b->begin = PositiveInt(a, v, 0);
    if (a == "eps") b->epsilon = PositiveReal(a, v);
    if (a == "cell") {
      if (v == "rnn")
        b->cell = Cell::kRnn;
      else if (v == "lstm")
        b->cell = Cell::kLstm;
      else if (v == "gru")
        b->cell = Cell::kGru;
      else
        throw SpecError("'" + v + "' is not a cell: expected rnn, lstm or gru");
    }
    ++*k;
  }
}

// The elementwise functions of one tensor (activations).
bool IsActivation(Op op) {
  return op == Op::kReLU || op == Op::kGelu || op == Op::kSigmoid ||
         op == Op::kSilu || op == Op::kRelu6 || op == Op::kHardSwish ||
         op == Op::kHardSigmoid;
}

// How many layers read each layer's output.
std::vector<int> Readers(const Graph& g) {
  std::vector<int> readers(g.size(), 0);
  for (int i = 0; i < g.size(); ++i) {
    for (int in : g.layer(i).inputs) ++readers[in];
  }
  return readers;
}

// Adds b's layer to g on inputs `in`; its output, or -1 for a loss.
int Apply(Graph& g, const Brick& b, const std::vector<int>& in) {
  switch (b.op) {
    case Op::kDense:
      return g.Dense(in[0], b.units, b.bias);
    case Op::kConv2d: {
      const int conv =
          g.Conv2d(in[0], b.units, {b.kernel, b.kernel_w}, b.stride,
                   {b.pad, b.pad_w}, b.groups, b.bias, b.dilation);
      return b.weight_norm < 0 ? conv : g.WeightNorm(conv, b.weight_norm);
    }
    case Op::kConv3d:
      return g.Conv3d(in[0], b.units, {b.kernel_d, b.kernel, b.kernel_w},
                      {b.stride_d, b.stride, b.stride},
                      {b.pad_d, b.pad, b.pad_w}, b.bias);
    case Op::kBatchNorm:
      return g.BatchNorm(in[0], b.epsilon);
    case Op::kReLU:
      return g.ReLU(in[0]);
    case Op::kMaxPool:
      return g.MaxPool(in[0], b.kernel, b.stride, b.pad, b.ceil);
    case Op::kAdd:
      return g.Add(in[0], in[1]);
    case Op::kGlobalAvgPool:
      return g.GlobalAvgPool(in[0]);
    case Op::kEmbedding:
      return g.Embedding(in[0], b.units);
    case Op::kRecurrent:
      return g.Recurrent(in[0], b.cell, b.units);
    case Op::kLayerNorm:
      // A key without an axis (0: the batch's, never normalized) is over
      // the last dimension.
      return g.LayerNorm(in[0], b.epsilon, b.axis > 0 ? b.axis : -1);
    case Op::kGelu:
      return g.Gelu(in[0]);
    case Op::kPositional:
      return g.Positional(in[0]);
    case Op::kAttention:
      if (b.inputs[0].size() != 3 || b.inputs[0][2] % b.heads != 0 ||
          b.inputs[1] != b.inputs[0] || b.inputs[2] != b.inputs[0]) {
        throw SpecError(
            "attention needs three equal [length, batch, units] "
            "inputs with units a multiple of heads");
      }
      return g.Attention(in[0], in[1], in[2], b.heads, b.causal);
    case Op::kSoftmaxCrossEntropy:
      g.SoftmaxCrossEntropy(in[0], b.axis > 0 ? b.axis : -1);
      return -1;
    case Op::kAvgPool:
      return g.AvgPool(in[0], b.kernel, b.stride, b.pad, b.count_pad);
    case Op::kFlatten:
      return g.Flatten(in[0]);
    case Op::kSigmoid:
      return g.Sigmoid(in[0]);
    case Op::kSilu:
      return g.Silu(in[0]);
    case Op::kRelu6:
      return g.Relu6(in[0]);
    case Op::kHardSwish:
      return g.HardSwish(in[0]);
    case Op::kHardSigmoid:
      return g.HardSigmoid(in[0]);
    case Op::kChannelMul:
      return g.ChannelMul(in[0], in[1]);
    case Op::kChannelShuffle:
      return g.ChannelShuffle(in[0], b.groups);
    case Op::kSlice:
      return g.Slice(in[0], b.axis, b.begin, b.units);
    case Op::kConcat:
      return g.Concat(in, b.axis);
    case Op::kSequence:
      return g.Sequence(in[0]);
    case Op::kClassToken:
      return g.ClassToken(in[0]);
    case Op::kFirstToken:
      return g.FirstToken(in[0]);
    case Op::kLayerScale:
      return g.LayerScale(in[0]);
    case Op::kResize:
      return g.Resize(in[0], b.height, b.width);
    case Op::kInstanceNorm:
      return g.InstanceNorm(in[0], b.epsilon);
    case Op::kMaps:
      return g.Maps(in[0], b.height);
    default:
      throw SpecError(std::string("'") + ToString(b.op) +
                      "' is not a brick layer");
  }
}

}  // namespace

std::string Brick::Key() const {
  std::string key = ToString(op);
  key += "/in:";
  for (size_t i = 0; i < inputs.size(); ++i) {
    key += (i ? "," : "") + ShapeText(inputs[i]);
  }
  key += AttributeText(*this);
  for (const Brick& next : then) {
    key += "/+" + std::string(ToString(next.op)) + AttributeText(next);
  }
  return key + "/grad:" + (input_grad ? "1" : "0");
}

std::string BrickCase::Name() const {
  return "BRICK/" + brick.Key() + "/" + ContextName(backend, dtype, mode);
}

BrickCase ParseBrickName(std::string_view name) {
  const std::string quoted = "'" + std::string(name) + "'";
  std::vector<std::string> parts = Split(name, '/');
  if (parts.size() < 7 || parts[0] != "BRICK") {
    throw SpecError(quoted +
                    " is not a brick name: expected BRICK/<layer>/"
                    "in:<shape>/.../grad:<0|1>/<backend>/<dtype>/"
                    "<mode>");
  }
  try {
    BrickCase c;
    Brick& b = c.brick;
    b.op = ParseOp(parts[1]);
    if (parts[2].rfind("in:", 0) != 0) {
      throw SpecError("segment '" + parts[2] + "' should start with 'in:'");
    }
    for (const std::string& s : Split(parts[2].substr(3), ',')) {
      b.inputs.push_back(ParseShape(s));
    }
    size_t k = 3;
    ParseAttributes(parts, &k, &b);
    while (k < parts.size() && parts[k].rfind("+", 0) == 0) {
      Brick next;
      next.op = ParseOp(parts[k].substr(1));
      if (next.op == Op::kAdd || next.op == Op::kEmbedding ||
          next.op == Op::kAttention || next.op == Op::kChannelMul ||
          next.op == Op::kConcat) {
        throw SpecError("'" + parts[k] + "' cannot follow in a chain: " +
                        "it reads more than the layer before it");
      }
      ++k;
      ParseAttributes(parts, &k, &next);
      b.then.push_back(std::move(next));
    }
    if (k + 4 != parts.size() || parts[k].rfind("grad:", 0) != 0) {
      throw SpecError(
          "expected /grad:<0|1>/<backend>/<dtype>/<mode> after "
          "the layers, found '" +
          (k < parts.size() ? parts[k] : std::string()) + "'");
    }
    b.input_grad = PositiveInt("grad", parts[k].substr(5), 0) != 0;
    c.backend = parts[k + 1];
    c.dtype = ParseDType(parts[k + 2]);
    c.mode = ParseMode(parts[k + 3]);
    const size_t want = b.op == Op::kAdd || b.op == Op::kChannelMul ? 2
                        : b.op == Op::kAttention                    ? 3
                                                                    : 1;
    if (b.op == Op::kConcat && b.inputs.size() < 2) {
      throw SpecError(std::to_string(b.inputs.size()) +
                      " input shape, concat takes two or more");
    }
    if (b.op != Op::kConcat && b.inputs.size() != want) {
      throw SpecError(std::to_string(b.inputs.size()) + " input shapes, " +
                      parts[1] + " takes " + std::to_string(want));
    }
    for (size_t i = 0; i + 1 < b.then.size() + 1; ++i) {
      const Op op = i == 0 ? b.op : b.then[i - 1].op;
      if (op == Op::kSoftmaxCrossEntropy) {
        throw SpecError("the loss (softmax_xent) must be a chain's last layer");
      }
    }
    return c;
  } catch (const SpecError& e) {
    throw SpecError(quoted + ": " + e.what());
  }
}

Graph Brick::BuildGraph(Mode mode) const {
  const bool train = mode == Mode::kTrain;
  Graph g;
  std::vector<int> in;
  if (op == Op::kEmbedding) {
    in.push_back(g.Tokens(inputs[0][0], inputs[0][1], vocab));
  } else {
    for (const Shape& s : inputs) in.push_back(g.Input(s, train && input_grad));
  }
  int y = Apply(g, *this, in);
  for (const Brick& next : then) y = Apply(g, next, {y});
  if (train && y >= 0) g.MeanLoss(y);
  return g;
}

namespace {

// BricksOf's bricks, and for each whether it is a single layer reading only
// the last layer of the brick before it, which no other layer reads.
struct Walked {
  std::vector<Brick> bricks;
  std::vector<bool> follows;
};

Walked Walk(const Graph& g, Mode mode, int granularity, bool activations_join) {
  PARADNN_CHECK(granularity >= 1, "granularity must be at least 1");
  const bool train = mode == Mode::kTrain;
  const std::vector<bool> needs_grad = g.NeedsGrad();
  const std::vector<int> readers = Readers(g);
  Walked out;
  int previous = -1;  // the last layer added
  for (int i = 0; i < g.size(); ++i) {
    const Layer& l = g.layer(i);
    if (l.op == Op::kInput || l.op == Op::kTokens) continue;
    if (l.op == Op::kSoftmaxCrossEntropy && !train) continue;
    Brick b;
    b.op = l.op;
    b.units = l.units;
    b.kernel = l.kernel;
    b.kernel_w = l.kernel_w;
    b.kernel_d = l.kernel_d;
    b.stride_d = l.stride_d;
    b.pad_d = l.pad_d;
    b.stride = l.stride;
    b.pad = l.pad;
    b.pad_w = l.pad_w;
    b.dilation = l.dilation;
    if (l.op == Op::kResize || l.op == Op::kMaps) {
      b.height = l.shape[2];
      b.width = l.shape[3];
    }
    b.weight_norm = l.weight_norm;
    b.vocab = l.vocab;
    b.bias = l.bias;
    b.cell = l.cell;
    b.heads = l.heads;
    b.causal = l.causal;
    b.groups = l.groups;
    b.ceil = l.ceil;
    b.count_pad = l.count_pad;
    b.axis = l.axis;
    // A layer norm's or a loss's over the last dimension: 0, the default a
    // key leaves unnamed (a chain's later layers have no input shapes to
    // tell it from another axis by).
    const bool last =
        !l.inputs.empty() &&
        l.axis + 1 == static_cast<int64_t>(g.layer(l.inputs[0]).shape.size());
    if ((l.op == Op::kLayerNorm || l.op == Op::kSoftmaxCrossEntropy) && last) {
      b.axis = 0;
    }
    b.begin = l.begin;
    b.epsilon = l.epsilon;
    const bool reads_previous =
        previous >= 0 && l.inputs.size() == 1 && l.inputs[0] == previous &&
        readers[previous] == 1 && l.op != Op::kEmbedding;
    previous = i;
    const bool joins = activations_join && IsActivation(l.op);
    if (reads_previous && (joins || out.bricks.back().layers() < granularity)) {
      out.bricks.back().then.push_back(std::move(b));
      continue;
    }
    for (int in : l.inputs) b.inputs.push_back(g.layer(in).shape);
    b.input_grad = train && l.op != Op::kEmbedding && needs_grad[l.inputs[0]];
    out.follows.push_back(reads_previous && out.bricks.back().layers() == 1);
    out.bricks.push_back(std::move(b));
  }
  return out;
}

}  // namespace

std::vector<Op> UncoveredLayers(const Graph& g) {
  std::vector<Op> out;
  for (const Layer& l : g.layers()) {
    const bool data = l.op == Op::kInput || l.op == Op::kTokens;
    if (!data && Attributes().count(l.op) == 0 &&
        std::find(out.begin(), out.end(), l.op) == out.end()) {
      out.push_back(l.op);
    }
  }
  return out;
}

std::vector<Brick> BricksOf(const Graph& g, Mode mode, int granularity,
                            bool activations_join) {
  return Walk(g, mode, granularity, activations_join).bricks;
}

std::vector<BrickStack> StacksOf(const Graph& g, Mode mode,
                                 bool activations_join) {
  std::vector<BrickStack> stacks;
  // No second walk of a graph without a recurrent layer (most of a sweep's).
  if (mode != Mode::kTrain || !g.Has(Op::kRecurrent)) {
    return stacks;
  }
  const Walked w = Walk(g, mode, 1, activations_join);
  for (size_t k = 0; k < w.bricks.size();) {
    const Brick& b = w.bricks[k];
    size_t end = k + 1;
    if (b.op == Op::kRecurrent) {
      while (end < w.bricks.size() && w.follows[end] && w.bricks[end] == b) {
        ++end;
      }
    }
    const int layers = static_cast<int>(end - k);
    if (layers >= 2) {
      Brick next = b;
      next.inputs.clear();
      next.input_grad = false;
      BrickStack& s = stacks.emplace_back(BrickStack{k, layers, b});
      s.chain.then.assign(std::min(layers, kStackChainLayers) - 1, next);
    }
    k = end;
  }
  return stacks;
}

double StackMs(double brick_ms, double chain_ms, int layers) {
  const int chained = std::min(layers, kStackChainLayers);
  const double added =
      std::max((chain_ms - brick_ms) / (chained - 1), chain_ms / chained);
  return chain_ms + (layers - chained) * added;
}

std::vector<Brick> GradientSumsOf(const Graph& g, Mode mode) {
  std::vector<Brick> sums;
  if (mode != Mode::kTrain) return sums;
  const std::vector<bool> needs_grad = g.NeedsGrad();
  const std::vector<int> readers = Readers(g);
  for (int x = 0; x < g.size(); ++x) {
    if (!needs_grad[x]) continue;
    for (int k = 1; k < readers[x]; ++k) {
      Brick sum;
      sum.op = Op::kAdd;
      sum.inputs = {g.layer(x).shape, g.layer(x).shape};
      sums.push_back(std::move(sum));
    }
  }
  return sums;
}

std::vector<Brick> StepCostBricks() {
  Brick one;
  one.op = Op::kReLU;
  one.inputs = {{1}};
  one.input_grad = true;
  Brick two = one;
  two.then.emplace_back().op = Op::kReLU;
  return {one, two};
}

}  // namespace paradnn
