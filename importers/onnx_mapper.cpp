// The Mapper (importers/onnx_mapper.h): its graph built node by node, the
// layers each operator maps onto, and why a node maps onto none.

#include "importers/onnx_mapper.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace paradnn {

namespace {

bool AllEqual(const std::vector<int64_t>& v, int64_t value) {
  for (int64_t x : v) {
    if (x != value) return false;
  }
  return true;
}

// The one value of a list whose values are all equal (a square window, a
// symmetric padding), or -1.
int64_t Uniform(const std::vector<int64_t>& v, int64_t otherwise) {
  if (v.empty()) return otherwise;
  return AllEqual(v, v[0]) ? v[0] : -1;
}

}  // namespace

double AsWritten(float f) {
  char text[32];
  const auto end = std::to_chars(text, text + sizeof(text), f).ptr;
  return std::strtod(std::string(text, end).c_str(), nullptr);
}

const std::set<std::string> kViewsOnly = {"Shape",
                                          "Gather",
                                          "Slice",
                                          "Transpose",
                                          "Squeeze",
                                          "Unsqueeze",
                                          "Expand",
                                          "Cast",
                                          "Sqrt",
                                          "Sub",
                                          "Div",
                                          "Pow",
                                          "Erf",
                                          "Mod",
                                          "Equal",
                                          "Where",
                                          "ConstantOfShape",
                                          "Softmax",
                                          "LayerNormalization",
                                          "Neg"};

Mapper::Mapper(const onnx::GraphProto& g, int64_t batch, const Tensors* weights)
    : g_(g), given_(weights != nullptr) {
  if (weights != nullptr) weights_ = *weights;
  for (const onnx::TensorProto& t : g.initializer()) {
    initializers_[t.name()] = {t.dims().begin(), t.dims().end()};
    values_[t.name()] = TensorValues<double>(t);
    Know(t.name(), t);
  }
  for (int k = 0; k < g.node_size(); ++k) {
    const onnx::NodeProto& n = g.node(k);
    for (const std::string& in : n.input()) {
      ++readers_[in];
      reader_nodes_[in].push_back(k);
    }
    // A Constant node's tensor is a weight like an initializer's.
    if (n.op_type() == "Constant" && n.output_size() == 1) {
      for (const onnx::AttributeProto& a : n.attribute()) {
        if (a.name() == "value") {
          initializers_[n.output(0)] = {a.t().dims().begin(),
                                        a.t().dims().end()};
          values_[n.output(0)] = TensorValues<double>(a.t());
          Know(n.output(0), a.t());
        }
      }
    }
    // An inference export shares equal constants (zero biases) through
    // Identity nodes: each reader uses the tensor as its own.
    if (n.op_type() == "Identity" && n.input_size() == 1 &&
        initializers_.count(n.input(0))) {
      initializers_[n.output(0)] = initializers_.at(n.input(0));
      values_[n.output(0)] = values_.at(n.input(0));
      const auto known = known_.find(n.input(0));
      if (known != known_.end()) known_[n.output(0)] = known->second;
      const auto w = weights_.find(n.input(0));
      if (w != weights_.end()) weights_[n.output(0)] = w->second;
    }
  }
  for (const onnx::ValueInfoProto& v : g.input()) {
    if (initializers_.count(v.name())) continue;
    std::vector<int64_t> dims;
    for (const auto& d : v.type().tensor_type().shape().dim()) {
      dims.push_back(d.has_dim_value() ? d.dim_value() : 0);
    }
    if (dims.empty()) {
      Fail("input " + v.name() + " has no shape");
      break;
    }
    file_batch_ = dims[0];
    batch_ = batch;
    dims[0] = batch;
    for (int64_t d : dims) {
      if (d <= 0) {
        Fail("input " + v.name() + " has a dimension of unknown size");
      }
    }
    if (!failed_) Bind(v.name(), graph_.Input(dims));
    break;  // one data input
  }
}

std::string Mapper::Map(int index) {
  const onnx::NodeProto& n = g_.node(index);
  if (fused_.count(index)) return "";
  std::string why = Unsupported(n);
  if (!why.empty()) {
    Fail(why);
    return why;
  }
  if (failed_) return "";
  try {
    Apply(index, n);
  } catch (const GraphError& e) {
    why = Where(n) + ": " + e.what();
    Fail(why);
  }
  return why;
}

std::optional<Graph> Mapper::Finish(std::string* why,
                                    std::vector<OnnxParamSource>* sources) {
  if (!failed_ && g_.output_size() > 0) {
    const auto view = views_.find(g_.output(0).name());
    if (view != views_.end()) {
      try {
        Bind(view->first, AsLayer(view->second));
      } catch (const GraphError& e) {
        Fail("the output: " + std::string(e.what()));
      }
    }
  }
  if (!failed_ && g_.output_size() > 0) {
    const auto it = layer_of_.find(g_.output(0).name());
    if (it == layer_of_.end()) {
      Fail("the output " + g_.output(0).name() + " is made by no layer");
    } else if (graph_.layer(it->second).shape.size() != 2) {
      Fail("the output is " + ToString(graph_.layer(it->second).shape) +
           ", not [batch, classes]");
    } else {
      graph_.SoftmaxCrossEntropy(it->second);
    }
  }
  *why = why_;
  if (failed_) return std::nullopt;
  std::map<int, size_t> taken;  // layer -> its parameters listed so far
  for (const ParamTensor& p : graph_.Params()) {
    const auto it = sources_.find(p.layer);
    const size_t k = taken[p.layer]++;
    sources->push_back(it != sources_.end() && k < it->second.size()
                           ? it->second[k]
                           : OnnxParamSource{});
  }
  return std::move(graph_);
}

void Mapper::Fail(const std::string& why) {
  if (!failed_) why_ = why;
  failed_ = true;
}

bool Mapper::IsInitializer(const std::string& name) const {
  return initializers_.count(name) > 0;
}

const std::vector<int64_t>& Mapper::InitializerDims(
    const std::string& name) const {
  return initializers_.at(name);
}

int64_t Mapper::Count(const std::string& initializer) const {
  return Elements(InitializerDims(initializer));
}

int Mapper::DataInput(const onnx::NodeProto& n, int i) {
  if (i >= n.input_size()) return -1;
  const auto view = views_.find(n.input(i));
  if (view != views_.end()) {
    const int layer = AsLayer(view->second);
    Bind(n.input(i), layer);
    views_.erase(view);
    return layer;
  }
  const auto it = layer_of_.find(n.input(i));
  return it == layer_of_.end() ? -1 : it->second;
}

Tensor Mapper::Weight(const std::string& name, bool transpose) const {
  const auto it = weights_.find(name);
  if (it == weights_.end()) {
    throw GraphError("the file holds no float values for " + name);
  }
  if (!transpose) return it->second;
  const std::vector<int64_t>& dims = InitializerDims(name);
  const int64_t rows = dims.at(0), columns = dims.at(1);
  auto t = std::make_shared<std::vector<float>>(it->second->size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < columns; ++c) {
      (*t)[c * rows + r] = (*it->second)[r * columns + c];
    }
  }
  return t;
}

void Mapper::Give(int i,
                  const std::vector<std::pair<std::string, bool>>& names) {
  for (const auto& [name, transpose] : names) {
    sources_[i].push_back({name, transpose, 0, 0});
  }
  if (!given_) return;
  std::vector<Tensor> values;
  for (const auto& [name, transpose] : names) {
    values.push_back(Weight(name, transpose));
  }
  graph_.SetValues(i, std::move(values));
}

std::string Mapper::Where(const onnx::NodeProto& n) const {
  return n.op_type() + (n.name().empty() ? "" : " " + n.name());
}

int Mapper::BiasAdd(int index, int64_t units) const {
  const std::string& out = g_.node(index).output(0);
  if (readers_.count(out) == 0 || readers_.at(out) != 1) return -1;
  for (int k = index + 1; k < g_.node_size(); ++k) {
    const onnx::NodeProto& a = g_.node(k);
    if (a.op_type() != "Add" || a.input_size() != 2) continue;
    for (int side = 0; side < 2; ++side) {
      if (a.input(side) == out && IsInitializer(a.input(1 - side)) &&
          Count(a.input(1 - side)) == units) {
        return k;
      }
    }
  }
  return -1;
}

std::vector<std::pair<std::string, bool>> Mapper::ConvTensors(
    const onnx::NodeProto& n, bool bias) {
  std::vector<std::pair<std::string, bool>> out = {{n.input(1), false}};
  if (bias) out.push_back({n.input(2), false});
  return out;
}

std::string Mapper::Window(const onnx::NodeProto& n, int64_t kernel) const {
  const Attributes a(n);
  const std::string where = Where(n);
  if (kernel < 0 || Uniform(a.Ints("strides"), 1) < 0 ||
      Uniform(a.Ints("pads"), 0) < 0) {
    return where + ": window " + ToString(a.Ints("kernel_shape")) +
           ", strides " + ToString(a.Ints("strides")) + ", pads " +
           ToString(a.Ints("pads")) +
           ": the graph's windows are square, the same on every side";
  }
  if (!AllEqual(a.Ints("dilations"), 1)) {
    return where + ": dilations " + ToString(a.Ints("dilations"));
  }
  const std::string pad = a.String("auto_pad");
  if (!pad.empty() && pad != "NOTSET") return where + ": auto_pad " + pad;
  return "";
}

std::optional<double> Mapper::ClipBound(const onnx::NodeProto& n, int i) const {
  if (n.input_size() > i && !n.input(i).empty()) {
    const auto it = values_.find(n.input(i));
    if (it == values_.end() || it->second.size() != 1) return std::nan("");
    return it->second[0];
  }
  const Attributes a(n);
  const float none = std::numeric_limits<float>::quiet_NaN();
  const float v = a.Float(i == 1 ? "min" : "max", none);
  if (std::isnan(v)) return std::nullopt;
  return v;
}

std::string Mapper::Unsupported(const onnx::NodeProto& n) const {
  const Attributes a(n);
  const std::string op = n.op_type();
  const std::string where = Where(n);
  if (!n.domain().empty() && n.domain() != "ai.onnx") {
    return where + ": operator of domain " + n.domain();
  }
  if (op == "Conv") {
    if (!IsInitializer(n.input(1)) || InitializerDims(n.input(1)).size() != 4) {
      return where + ": weights not a 2-D kernel in the file";
    }
    const std::vector<int64_t>& w = InitializerDims(n.input(1));
    if (n.input_size() > 2 && !n.input(2).empty() &&
        (!IsInitializer(n.input(2)) || Count(n.input(2)) != w[0])) {
      return where +
             ": a bias not of one value per output channel in "
             "the file";
    }
    return Window(n, w[2] == w[3] ? w[2] : -1);
  }
  if (op == "MaxPool" || op == "AveragePool") {
    const std::string why = Window(n, Uniform(a.Ints("kernel_shape"), -1));
    if (!why.empty()) return why;
    if (op == "AveragePool" && a.Int("ceil_mode", 0) != 0) {
      return where + ": ceil_mode on an average";
    }
    if (op == "AveragePool" && a.Int("count_include_pad", 0) != 0 &&
        !AllEqual(a.Ints("pads"), 0)) {
      return where +
             ": count_include_pad: the graph's average leaves the "
             "padding out";
    }
    return "";
  }
  if (op == "Gemm") {
    if (a.Float("alpha", 1) != 1 || a.Float("beta", 1) != 1 ||
        a.Int("transA", 0) != 0) {
      return where + ": alpha, beta or transA other than the product's";
    }
    if (!IsInitializer(n.input(1)) || InitializerDims(n.input(1)).size() != 2) {
      return where + ": B is not a matrix in the file";
    }
    return "";
  }
  if (op == "Mul") {
    for (const std::string& in : n.input()) {
      if (IsInitializer(in) && Count(in) > 1 && !PerChannel(in)) {
        return where + ": a constant factor " + ToString(InitializerDims(in)) +
               " (the graph's are per channel of [N, C, H, W] maps, "
               "[C, 1, 1]: a layer scale)";
      }
    }
    return "";
  }
  if (op == "Clip") {
    const std::optional<double> lo = ClipBound(n, 1), hi = ClipBound(n, 2);
    if (lo != 0.0 || hi != 6.0) {
      auto text = [](const std::optional<double>& v) {
        return v ? std::to_string(*v) : std::string("none");
      };
      return where + ": a clip to [" + text(lo) + ", " + text(hi) +
             "]: the graph's is ReLU6's [0, 6]";
    }
    return "";
  }
  if (op == "ReduceMean") {
    // Over the feature maps' height and width: a global average pool.
    // Over the last axis: a layer normalization's mean.
    if (a.Ints("axes") == std::vector<int64_t>{-1}) return "";
    std::vector<int64_t> axes = a.Ints("axes");
    for (int64_t& x : axes) x = x < 0 ? x + 4 : x;
    std::sort(axes.begin(), axes.end());
    return axes == std::vector<int64_t>{2, 3}
               ? ""
               : where + ": a mean over axes " + ToString(a.Ints("axes")) +
                     " (the graph's is a global pool's, over height and "
                     "width)";
  }
  if (op == "Pad") {
    const auto it =
        n.input_size() > 1 ? values_.find(n.input(1)) : values_.end();
    const bool none = it != values_.end() && !it->second.empty() &&
                      std::all_of(it->second.begin(), it->second.end(),
                                  [](double v) { return v == 0; });
    return none ? ""
                : where +
                      ": a padding of its own (the graph pads inside "
                      "convolutions and pools only)";
  }
  if (op == "BatchNormalization") {
    // A training export's running statistics (its outputs after the
    // first) are the layer's own state where nothing reads them.
    for (int k = 1; k < n.output_size(); ++k) {
      if (!n.output(k).empty() && readers_.count(n.output(k)) > 0) {
        return where + ": its running statistics are read by other nodes";
      }
    }
    return "";
  }
  if (op == "Constant") {
    return n.output_size() == 1 && IsInitializer(n.output(0))
               ? ""
               : where + ": a constant other than a tensor";
  }
  // Checked on shapes.
  static const std::set<std::string> kShapes = {"Flatten", "Reshape", "Concat",
                                                "MatMul", "Add"};
  if (kShapes.count(op) || kViewsOnly.count(op)) return "";
  if (op == "HardSigmoid") {
    // PyTorch's: relu6(x + 3) / 6 (ONNX's default alpha is 0.2).
    const float alpha = a.Float("alpha", 0.2f), beta = a.Float("beta", 0.5f);
    return std::abs(alpha - 1.f / 6.f) < 1e-6f && beta == 0.5f
               ? ""
               : where + ": alpha " + std::to_string(alpha) + ", beta " +
                     std::to_string(beta) +
                     ": the graph's hard sigmoid is PyTorch's (1/6, 1/2)";
  }
  static const std::set<std::string> kSame = {"Relu",     "GlobalAveragePool",
                                              "Identity", "Dropout",
                                              "Sigmoid",  "HardSwish"};
  if (kSame.count(op)) return "";
  return where + ": no operation of the layer graph expresses ONNX's " + op;
}

bool Mapper::PerChannel(const std::string& initializer) const {
  const std::vector<int64_t>& dims = InitializerDims(initializer);
  const size_t r = dims.size();
  return (r == 3 || (r == 4 && dims[0] == 1)) && dims[r - 1] == 1 &&
         dims[r - 2] == 1;
}

bool Mapper::ApplyLayerScale(const onnx::NodeProto& n) {
  for (int side = 0; side < 2; ++side) {
    const std::string& t = n.input(side);
    if (!IsInitializer(t) || Count(t) == 1) continue;
    const int x = DataInput(n, 1 - side);
    if (x < 0) {
      throw GraphError("its input " + n.input(1 - side) +
                       " is made by no layer");
    }
    const Shape& maps = ShapeOf(x);
    if (maps.size() != 4 || Count(t) != maps[1]) {
      throw GraphError("a product of " + ToString(maps) + " by a constant " +
                       ToString(InitializerDims(t)) +
                       ": the graph's is per channel of [N, C, H, W] maps");
    }
    params_ += Count(t);
    const int scale = graph_.LayerScale(x);
    Give(scale, {{t, false}});
    Bind(n.output(0), scale);
    return true;
  }
  return false;
}

int Mapper::SiluMul(int index) const {
  const onnx::NodeProto& n = g_.node(index);
  const std::string &x = n.input(0), &y = n.output(0);
  if (readers_.count(y) == 0 || readers_.at(y) != 1) return -1;
  for (int k = index + 1; k < g_.node_size(); ++k) {
    const onnx::NodeProto& m = g_.node(k);
    if (m.op_type() != "Mul" || m.input_size() != 2) continue;
    if ((m.input(0) == x && m.input(1) == y) ||
        (m.input(0) == y && m.input(1) == x)) {
      return k;
    }
  }
  return -1;
}

bool Mapper::ReshapeFlattens(const onnx::NodeProto& n, const Shape& in) const {
  const Known* target = KnownOf(n.input(1));
  if (target == nullptr || target->v.size() != 2) return false;
  const double rest = target->v[1];
  return rest == -1 || rest == static_cast<double>(Elements(in) / in[0]);
}

void Mapper::Apply(int index, const onnx::NodeProto& n) {
  const std::string op = n.op_type();
  const Attributes a(n);
  if (op == "Constant") return;  // read as a weight by its readers
  if (ApplyViews(index, n)) return;
  if (op == "Mul" && ApplyLayerScale(n)) return;
  const int x = DataInput(n);
  if (x < 0 && op != "Identity") {
    throw GraphError("its input " + n.input(0) + " is made by no layer");
  }
  auto second = [&] {
    const int y = DataInput(n, 1);
    if (y < 0) {
      throw GraphError("its input " + n.input(1) + " is made by no layer");
    }
    return y;
  };
  if (op == "Conv") {
    const std::vector<int64_t>& w = InitializerDims(n.input(1));
    const bool bias = n.input_size() > 2 && !n.input(2).empty();
    const int64_t groups = a.Int("group", 1);
    params_ += Count(n.input(1)) + (bias ? w[0] : 0);
    if (ShapeOf(x).size() == 2) {
      // After a global pool the graph's [batch, channels] is ONNX's
      // [batch, channels, 1, 1] (squeeze-and-excitation): a 1x1
      // convolution of it is a dense layer.
      if (w[2] != 1 || groups != 1 || Uniform(a.Ints("pads"), 0) != 0) {
        throw GraphError("a " + std::to_string(w[2]) + "x" +
                         std::to_string(w[3]) + " convolution of a 1x1 image");
      }
      const int dense = graph_.Dense(x, w[0], bias);
      Give(dense, ConvTensors(n, bias));
      Bind(n.output(0), dense);
      return;
    }
    const int conv = graph_.Conv2d(x, w[0], w[2], Uniform(a.Ints("strides"), 1),
                                   Uniform(a.Ints("pads"), 0), groups, bias);
    Give(conv, ConvTensors(n, bias));
    Bind(n.output(0), conv);
  } else if (op == "MaxPool" || op == "AveragePool") {
    const int64_t k = a.Ints("kernel_shape")[0];
    const int64_t stride = Uniform(a.Ints("strides"), 1);
    const int64_t pad = Uniform(a.Ints("pads"), 0);
    Bind(n.output(0),
         op == "MaxPool"
             ? graph_.MaxPool(x, k, stride, pad, a.Int("ceil_mode", 0) != 0)
             : graph_.AvgPool(x, k, stride, pad));
  } else if (op == "Relu") {
    Bind(n.output(0), graph_.ReLU(x));
  } else if (op == "Sigmoid") {
    const int mul = SiluMul(index);
    if (mul < 0) {
      Bind(n.output(0), graph_.Sigmoid(x));
    } else {
      fused_.insert(mul);
      Bind(g_.node(mul).output(0), graph_.Silu(x));
    }
  } else if (op == "Clip") {
    Bind(n.output(0), graph_.Relu6(x));
  } else if (op == "HardSwish") {
    Bind(n.output(0), graph_.HardSwish(x));
  } else if (op == "HardSigmoid") {
    Bind(n.output(0), graph_.HardSigmoid(x));
  } else if (op == "Mul") {
    const int y = second();
    const bool x_maps = ShapeOf(x).size() == 4;
    Bind(n.output(0),
         x_maps ? graph_.ChannelMul(x, y) : graph_.ChannelMul(y, x));
  } else if (op == "BatchNormalization") {
    params_ += Count(n.input(1)) + Count(n.input(2));  // scale and shift
    const int norm = graph_.BatchNorm(x, AsWritten(a.Float("epsilon", 1e-5f)));
    // Scale, shift, running mean and variance.
    Give(norm, {{n.input(1), false},
                {n.input(2), false},
                {n.input(3), false},
                {n.input(4), false}});
    Bind(n.output(0), norm);
  } else if (op == "GlobalAveragePool" || op == "ReduceMean") {
    Bind(n.output(0), graph_.GlobalAvgPool(x));
  } else if (op == "Identity" || op == "Dropout" || op == "Pad") {
    if (x >= 0) Bind(n.output(0), x);
  } else if (op == "Flatten" || op == "Reshape") {
    // The graph's layers after a global pooling are already [batch,
    // units]: a flatten of those changes nothing.
    const Shape& in = ShapeOf(x);
    const bool flattens =
        op == "Flatten" ? a.Int("axis", 1) == 1 : ReshapeFlattens(n, in);
    if (!flattens) {
      throw GraphError("a reshape of " + ToString(in) +
                       " other than to [batch, the rest]");
    }
    Bind(n.output(0), in.size() == 2 ? x : graph_.Flatten(x));
  } else if (op == "Concat") {
    std::vector<int> xs;
    for (int k = 0; k < n.input_size(); ++k) {
      const int y = DataInput(n, k);
      if (y < 0) {
        throw GraphError("its input " + n.input(k) + " is made by no layer");
      }
      xs.push_back(y);
    }
    // A concat of one input (a dense block's first layer) is that input.
    Bind(n.output(0),
         xs.size() == 1 ? xs[0] : graph_.Concat(xs, a.Int("axis", 0)));
  } else if (op == "Add") {
    Bind(n.output(0), graph_.Add(x, second()));
  } else if (op == "Gemm" || op == "MatMul") {
    const std::vector<int64_t>& w = InitializerDims(n.input(1));
    const bool transposed = op == "Gemm" && a.Int("transB", 0) != 0;
    const int64_t units = transposed ? w[0] : w[1];
    const int64_t in = transposed ? w[1] : w[0];
    if (ShapeOf(x).size() != 2 || ShapeOf(x)[1] != in) {
      throw GraphError("a product of " + ToString(ShapeOf(x)) + " by " +
                       ToString(w) +
                       ": the graph's dense layer reads [batch, " +
                       std::to_string(in) + "]");
    }
    params_ += Count(n.input(1));
    bool bias = op == "Gemm" && n.input_size() > 2 && !n.input(2).empty();
    int bias_add = -1;
    if (op == "MatMul") {
      bias_add = BiasAdd(index, units);
      bias = bias_add >= 0;
    }
    if (bias) params_ += units;
    const int dense = graph_.Dense(x, units, bias);
    // The dense layer's weights are [units, in]: Gemm's B is that where
    // transposed, MatMul's is [in, units].
    std::vector<std::pair<std::string, bool>> tensors = {
        {n.input(1), !transposed}};
    if (bias_add >= 0) {
      const onnx::NodeProto& add = g_.node(bias_add);
      tensors.push_back(
          {add.input(add.input(0) == n.output(0) ? 1 : 0), false});
    } else if (bias) {
      tensors.push_back({n.input(2), false});
    }
    Give(dense, tensors);
    Bind(n.output(0), dense);
    if (bias_add >= 0) {
      fused_.insert(bias_add);
      Bind(g_.node(bias_add).output(0), dense);
    }
  }
}

}  // namespace paradnn
