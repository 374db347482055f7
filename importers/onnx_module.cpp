// The module libparadnn_import_onnx.so: ONNX files read with the ONNX
// library and mapped onto the layer graph (importers/onnx.h).
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>

#include "importers/onnx.h"

namespace paradnn {
namespace {

// The first line of a library's message: ONNX's checker appends its
// context over many lines.
std::string FirstLine(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

// A node's attributes by name.
class Attributes {
 public:
  explicit Attributes(const onnx::NodeProto& node) {
    for (const onnx::AttributeProto& a : node.attribute())
      by_name_[a.name()] = &a;
  }
  int64_t Int(const std::string& name, int64_t otherwise) const {
    const auto it = by_name_.find(name);
    return it == by_name_.end() ? otherwise : it->second->i();
  }
  float Float(const std::string& name, float otherwise) const {
    const auto it = by_name_.find(name);
    return it == by_name_.end() ? otherwise : it->second->f();
  }
  std::string String(const std::string& name) const {
    const auto it = by_name_.find(name);
    return it == by_name_.end() ? "" : it->second->s();
  }
  std::vector<int64_t> Ints(const std::string& name) const {
    const auto it = by_name_.find(name);
    if (it == by_name_.end()) return {};
    return {it->second->ints().begin(), it->second->ints().end()};
  }

 private:
  std::map<std::string, const onnx::AttributeProto*> by_name_;
};

// A float attribute as the exporter wrote it (1e-5f is 1e-5, not
// 9.99999975e-6): the shortest decimal that reads back as the float, so
// that a file's default epsilon is the graph's.
double AsWritten(float f) {
  char text[32];
  const auto end = std::to_chars(text, text + sizeof(text), f).ptr;
  return std::strtod(std::string(text, end).c_str(), nullptr);
}

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

// The tensors whose values the mapping reads (a clip's bounds, a pad's
// widths) are this small; the values of larger ones are let go.
constexpr int64_t kValuesKept = 64;

// A tensor's values as numbers, where the file holds them (an empty list
// for a tensor whose values were let go or of another type).
std::vector<double> Values(const onnx::TensorProto& t) {
  std::vector<double> out;
  const std::string& raw = t.raw_data();
  auto from_raw = [&](auto zero) {
    using T = decltype(zero);
    for (size_t at = 0; at + sizeof(T) <= raw.size(); at += sizeof(T)) {
      T v;
      std::memcpy(&v, raw.data() + at, sizeof(T));
      out.push_back(static_cast<double>(v));
    }
  };
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      from_raw(0.f);
      for (float v : t.float_data()) out.push_back(v);
      break;
    case onnx::TensorProto::DOUBLE:
      from_raw(0.0);
      for (double v : t.double_data()) out.push_back(v);
      break;
    case onnx::TensorProto::INT64:
      from_raw(int64_t{0});
      for (int64_t v : t.int64_data()) out.push_back(static_cast<double>(v));
      break;
    case onnx::TensorProto::INT32:
      from_raw(int32_t{0});
      for (int32_t v : t.int32_data()) out.push_back(v);
      break;
    default:
      break;
  }
  return out;
}

// Maps a file's nodes, in order, onto a graph.
// A tensor's values, shared by the layers that start from them.
using Tensor = std::shared_ptr<const std::vector<float>>;
using Tensors = std::map<std::string, Tensor>;

class Mapper {
 public:
  // With `weights` (the file's float tensors by name), each layer gets its
  // values; without, none.
  Mapper(const onnx::GraphProto& g, int64_t batch, const Tensors* weights)
      : g_(g), given_(weights != nullptr) {
    if (weights != nullptr) weights_ = *weights;
    for (const onnx::TensorProto& t : g.initializer()) {
      initializers_[t.name()] = {t.dims().begin(), t.dims().end()};
      values_[t.name()] = Values(t);
    }
    for (const onnx::NodeProto& n : g.node()) {
      for (const std::string& in : n.input()) ++readers_[in];
      // A Constant node's tensor is a weight like an initializer's.
      if (n.op_type() == "Constant" && n.output_size() == 1) {
        for (const onnx::AttributeProto& a : n.attribute()) {
          if (a.name() == "value") {
            initializers_[n.output(0)] = {a.t().dims().begin(),
                                          a.t().dims().end()};
            values_[n.output(0)] = Values(a.t());
          }
        }
      }
      // An inference export shares equal constants (zero biases) through
      // Identity nodes: each reader uses the tensor as its own.
      if (n.op_type() == "Identity" && n.input_size() == 1 &&
          initializers_.count(n.input(0))) {
        initializers_[n.output(0)] = initializers_.at(n.input(0));
        values_[n.output(0)] = values_.at(n.input(0));
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

  // Maps one node; returns why it cannot be ("" where it maps). Past the
  // first node that cannot, nodes are checked by their operator alone:
  // the shapes they would read are unknown.
  std::string Map(int index) {
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

  // The graph with its loss over the file's first output, or why not.
  std::optional<Graph> Finish(std::string* why) {
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
    return std::move(graph_);
  }

  int64_t params() const { return params_; }

 private:
  void Fail(const std::string& why) {
    if (!failed_) why_ = why;
    failed_ = true;
  }

  void Bind(const std::string& value, int layer) { layer_of_[value] = layer; }

  bool IsInitializer(const std::string& name) const {
    return initializers_.count(name) > 0;
  }

  const std::vector<int64_t>& InitializerDims(const std::string& name) const {
    return initializers_.at(name);
  }

  int64_t Count(const std::string& initializer) const {
    return Elements(InitializerDims(initializer));
  }

  // The node's data input, made by an earlier layer; -1 where none is.
  int DataInput(const onnx::NodeProto& n, int i = 0) const {
    if (i >= n.input_size()) return -1;
    const auto it = layer_of_.find(n.input(i));
    return it == layer_of_.end() ? -1 : it->second;
  }

  const Shape& ShapeOf(int layer) const { return graph_.layer(layer).shape; }

  // The file's values of tensor `name`; with `transpose`, those of a
  // [rows, columns] matrix as [columns, rows].
  Tensor Weight(const std::string& name, bool transpose = false) const {
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

  // Layer i starts from the file's tensors `names` (transposing those
  // marked), where the file's weights are asked for.
  void Give(int i, const std::vector<std::pair<std::string, bool>>& names) {
    if (!given_) return;
    std::vector<Tensor> values;
    for (const auto& [name, transpose] : names) {
      values.push_back(Weight(name, transpose));
    }
    graph_.SetValues(i, std::move(values));
  }

  std::string Where(const onnx::NodeProto& n) const {
    return n.op_type() + (n.name().empty() ? "" : " " + n.name());
  }

  // A following Add that adds an initializer of `units` values to the
  // output of node `index` and nothing else reads it: a bias, folded into
  // the dense layer.
  int BiasAdd(int index, int64_t units) const {
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

  // A convolution's weights and its bias, if any.
  static std::vector<std::pair<std::string, bool>> ConvTensors(
      const onnx::NodeProto& n, bool bias) {
    std::vector<std::pair<std::string, bool>> out = {{n.input(1), false}};
    if (bias) out.push_back({n.input(2), false});
    return out;
  }

  // A window's attributes the graph cannot express (a convolution's or a
  // pool's), or "".
  std::string Window(const onnx::NodeProto& n, int64_t kernel) const {
    const Attributes a(n);
    const std::string where = Where(n);
    if (kernel < 0 || Uniform(a.Ints("strides"), 1) < 0 ||
        Uniform(a.Ints("pads"), 0) < 0) {
      return where + ": window " + ToString(a.Ints("kernel_shape")) +
             ", strides " + ToString(a.Ints("strides")) + ", pads " +
             ToString(a.Ints("pads")) +
             ": the graph's windows are square, the same on every side";
    }
    if (a.Int("ceil_mode", 0) != 0) return where + ": ceil_mode";
    if (!AllEqual(a.Ints("dilations"), 1)) {
      return where + ": dilations " + ToString(a.Ints("dilations"));
    }
    const std::string pad = a.String("auto_pad");
    if (!pad.empty() && pad != "NOTSET") return where + ": auto_pad " + pad;
    return "";
  }

  // A Clip's bound `i` (1: min, 2: max) from its input, or from its
  // attribute before opset 11; nullopt where none is given.
  std::optional<double> ClipBound(const onnx::NodeProto& n, int i) const {
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

  std::string Unsupported(const onnx::NodeProto& n) const {
    const Attributes a(n);
    const std::string op = n.op_type();
    const std::string where = Where(n);
    if (!n.domain().empty() && n.domain() != "ai.onnx") {
      return where + ": operator of domain " + n.domain();
    }
    if (op == "Conv") {
      if (!IsInitializer(n.input(1)) ||
          InitializerDims(n.input(1)).size() != 4) {
        return where + ": weights not a 2-D kernel in the file";
      }
      const std::vector<int64_t>& w = InitializerDims(n.input(1));
      if (n.input_size() > 2 && !n.input(2).empty() &&
          (!IsInitializer(n.input(2)) || Count(n.input(2)) != w[0])) {
        return where + ": a bias not of one value per output channel in "
                       "the file";
      }
      return Window(n, w[2] == w[3] ? w[2] : -1);
    }
    if (op == "MaxPool" || op == "AveragePool") {
      const std::string why = Window(n, Uniform(a.Ints("kernel_shape"), -1));
      if (!why.empty()) return why;
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
      if (!IsInitializer(n.input(1)) ||
          InitializerDims(n.input(1)).size() != 2) {
        return where + ": B is not a matrix in the file";
      }
      return "";
    }
    if (op == "MatMul") {
      if (!IsInitializer(n.input(1)) ||
          InitializerDims(n.input(1)).size() != 2) {
        return where +
               ": a product of two activations (the graph's dense "
               "layer multiplies by weights)";
      }
      return "";
    }
    if (op == "Add" || op == "Mul") {
      if (IsInitializer(n.input(0)) || IsInitializer(n.input(1))) {
        return where + ": a constant " +
               (op == "Add" ? "added (not a dense layer's bias)"
                            : "factor (the graph multiplies by weights in "
                              "its layers only)");
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
      const auto it = n.input_size() > 1 ? values_.find(n.input(1))
                                         : values_.end();
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
    static const std::set<std::string> kShapes = {"Flatten", "Reshape",
                                                  "Concat"};
    if (kShapes.count(op)) return "";
    if (op == "HardSigmoid") {
      // PyTorch's: relu6(x + 3) / 6 (ONNX's default alpha is 0.2).
      const float alpha = a.Float("alpha", 0.2f), beta = a.Float("beta", 0.5f);
      return std::abs(alpha - 1.f / 6.f) < 1e-6f && beta == 0.5f
                 ? ""
                 : where + ": alpha " + std::to_string(alpha) + ", beta " +
                       std::to_string(beta) +
                       ": the graph's hard sigmoid is PyTorch's (1/6, 1/2)";
    }
    static const std::set<std::string> kSame = {
        "Relu",    "GlobalAveragePool", "Identity", "Dropout",
        "Sigmoid", "HardSwish"};
    if (kSame.count(op)) return "";
    return where + ": no operation of the layer graph expresses ONNX's " + op;
  }

  // The node after `index` that multiplies the node's input by its output,
  // the only reader of that output: sigmoid(x) * x, a SiLU; or -1.
  int SiluMul(int index) const {
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

  // A Reshape to [batch, the rest]: its target shape is in the file, two
  // values, the second -1 or the rest's size.
  bool ReshapeFlattens(const onnx::NodeProto& n, const Shape& in) const {
    const auto it = values_.find(n.input(1));
    if (it == values_.end() || it->second.size() != 2) return false;
    const double rest = it->second[1];
    return rest == -1 || rest == static_cast<double>(Elements(in) / in[0]);
  }

  void Apply(int index, const onnx::NodeProto& n) {
    const std::string op = n.op_type();
    const Attributes a(n);
    if (op == "Constant") return;  // read as a weight by its readers
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
                           std::to_string(w[3]) +
                           " convolution of a 1x1 image");
        }
        const int dense = graph_.Dense(x, w[0], bias);
        Give(dense, ConvTensors(n, bias));
        Bind(n.output(0), dense);
        return;
      }
      const int conv =
          graph_.Conv2d(x, w[0], w[2], Uniform(a.Ints("strides"), 1),
                        Uniform(a.Ints("pads"), 0), groups, bias);
      Give(conv, ConvTensors(n, bias));
      Bind(n.output(0), conv);
    } else if (op == "MaxPool" || op == "AveragePool") {
      const int64_t k = a.Ints("kernel_shape")[0];
      const int64_t stride = Uniform(a.Ints("strides"), 1);
      const int64_t pad = Uniform(a.Ints("pads"), 0);
      Bind(n.output(0), op == "MaxPool" ? graph_.MaxPool(x, k, stride, pad)
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
      Bind(n.output(0), x_maps ? graph_.ChannelMul(x, y)
                               : graph_.ChannelMul(y, x));
    } else if (op == "BatchNormalization") {
      params_ += Count(n.input(1)) + Count(n.input(2));  // scale and shift
      const int norm =
          graph_.BatchNorm(x, AsWritten(a.Float("epsilon", 1e-5f)));
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
      const bool flattens = op == "Flatten" ? a.Int("axis", 1) == 1
                                            : ReshapeFlattens(n, in);
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

  const onnx::GraphProto& g_;
  const bool given_;  // the layers get the file's values
  Tensors weights_;
  Graph graph_;
  std::map<std::string, std::vector<int64_t>> initializers_;
  std::map<std::string, std::vector<double>> values_;  // the small ones
  std::map<std::string, int> readers_;   // value -> nodes reading it
  std::map<std::string, int> layer_of_;  // value -> the layer making it
  std::set<int> fused_;  // nodes folded into an earlier one's layer
  bool failed_ = false;
  std::string why_;
  int64_t params_ = 0;
};

// A file's model, its weights' values let go.
class ProtoFile : public OnnxFile {
 public:
  // `weights`: the file's float tensors, where its cases start from them.
  ProtoFile(std::string path, onnx::ModelProto model,
            std::optional<Tensors> weights)
      : path_(std::move(path)),
        model_(std::move(model)),
        weights_(std::move(weights)) {}

  OnnxModel Map(int64_t batch) const override {
    const onnx::ModelProto& m = model_;
    OnnxModel out;
    out.path = path_;
    out.producer =
        m.producer_name() +
        (m.producer_version().empty() ? "" : " " + m.producer_version());
    for (const onnx::OperatorSetIdProto& o : m.opset_import()) {
      if (o.domain().empty() || o.domain() == "ai.onnx") {
        out.opset = o.version();
      }
    }
    Mapper mapper(m.graph(), batch, weights_ ? &*weights_ : nullptr);
    for (int i = 0; i < m.graph().node_size(); ++i) {
      const onnx::NodeProto& n = m.graph().node(i);
      out.nodes.push_back({n.name(), n.op_type(), mapper.Map(i)});
    }
    out.graph = mapper.Finish(&out.why_no_graph);
    out.initializer_params = mapper.params();
    return out;
  }

 private:
  std::string path_;
  onnx::ModelProto model_;
  std::optional<Tensors> weights_;
};

// The float values of a tensor, as the file holds them.
Tensor FloatValues(const onnx::TensorProto& t) {
  auto out = std::make_shared<std::vector<float>>();
  if (t.data_type() != onnx::TensorProto::FLOAT) return out;
  const std::string& raw = t.raw_data();
  out->resize(raw.size() / sizeof(float));
  if (!raw.empty()) std::memcpy(out->data(), raw.data(), raw.size());
  out->insert(out->end(), t.float_data().begin(), t.float_data().end());
  return out;
}

// The file's float tensors by name: its initializers' and its Constant
// nodes'.
Tensors FloatTensors(const onnx::GraphProto& g) {
  Tensors out;
  auto keep = [&](const std::string& name, const onnx::TensorProto& t) {
    if (t.data_type() == onnx::TensorProto::FLOAT) out[name] = FloatValues(t);
  };
  for (const onnx::TensorProto& t : g.initializer()) keep(t.name(), t);
  for (const onnx::NodeProto& n : g.node()) {
    if (n.op_type() != "Constant" || n.output_size() != 1) continue;
    for (const onnx::AttributeProto& a : n.attribute()) {
      if (a.name() == "value") keep(n.output(0), a.t());
    }
  }
  return out;
}

std::shared_ptr<const OnnxFile> ReadFile(const std::string& path,
                                         bool weights) {
  onnx::ModelProto m;
  {
    // Parsed from the file's pages as they are: a stream would copy every
    // weight once more on the way (VGG-16's 553 MB took 1.3 s so, and as
    // much memory again).
    const int fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) throw std::runtime_error(path + ": cannot open the ONNX file");
    struct stat st;
    const size_t size = fstat(fd, &st) == 0 ? st.st_size : 0;
    void* data = size > 0 ? mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0)
                          : MAP_FAILED;
    close(fd);
    const bool parsed =
        data != MAP_FAILED && size <= static_cast<size_t>(INT_MAX) &&
        m.ParseFromArray(data, static_cast<int>(size));
    if (data != MAP_FAILED) munmap(data, size);
    if (!parsed) {
      throw std::runtime_error(path +
                               ": not an ONNX model (no protobuf "
                               "ModelProto could be read from it)");
    }
  }
  try {
    onnx::checker::check_model(m);
    onnx::shape_inference::InferShapes(m);
  } catch (const std::exception& e) {
    throw std::runtime_error(
        path + ": not a valid ONNX model: " + FirstLine(e.what()));
  }
  // Where asked for, the weights' values as the layers will read them.
  std::optional<Tensors> tensors;
  if (weights) tensors = FloatTensors(m.graph());
  // The mapping reads the weights' shapes only: their values (most of a
  // file) are let go, but for the few small tensors it reads.
  for (onnx::TensorProto& t : *m.mutable_graph()->mutable_initializer()) {
    int64_t n = 1;
    for (int64_t d : t.dims()) n *= d;
    if (n <= kValuesKept) continue;
    t.clear_raw_data();
    t.clear_float_data();
  }
  return std::make_shared<ProtoFile>(path, std::move(m), std::move(tensors));
}

}  // namespace
}  // namespace paradnn

extern "C" __attribute__((visibility("default"))) paradnn::OnnxReader
paradnn_onnx_reader_v2() {
  return paradnn::ReadFile;
}
