// The module libparadnn_import_onnx.so: ONNX files read with the ONNX
// library and mapped onto the layer graph (importers/onnx.h).
#include <fcntl.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>

#include "importers/onnx.h"
#include "importers/onnx_views.h"

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

// Operators that map onto no layer of their own: shape arithmetic, views,
// and the nodes of the layers exporters write out (attention, layer
// normalization, GELU), checked on their values and shapes.
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
            values_[n.output(0)] = Values(a.t());
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

  // The node's data input, made by an earlier layer (a view of one as the
  // layer it is); -1 where none is.
  int DataInput(const onnx::NodeProto& n, int i = 0) {
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
        return where +
               ": a bias not of one value per output channel in "
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
    if (op == "Mul") {
      for (const std::string& in : n.input()) {
        if (IsInitializer(in) && Count(in) > 1) {
          return where +
                 ": a constant factor (the graph multiplies by weights in "
                 "its layers only)";
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
    static const std::set<std::string> kShapes = {"Flatten", "Reshape",
                                                  "Concat", "MatMul", "Add"};
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
    const Known* target = KnownOf(n.input(1));
    if (target == nullptr || target->v.size() != 2) return false;
    const double rest = target->v[1];
    return rest == -1 || rest == static_cast<double>(Elements(in) / in[0]);
  }

  // ---- Shape arithmetic and views: what exporters write around attention.

  // A small tensor the file computes from shapes and constants, known once
  // the batch is: a reshape's target, a slice's bounds, a scale.
  struct Known {
    std::vector<int64_t> dims;
    std::vector<double> v;
    bool integer = true;
  };

  void Know(const std::string& name, const onnx::TensorProto& t) {
    const int64_t n = Elements({t.dims().begin(), t.dims().end()});
    if (n > kValuesKept) return;
    Known k{{t.dims().begin(), t.dims().end()},
            Values(t),
            t.data_type() != onnx::TensorProto::FLOAT &&
                t.data_type() != onnx::TensorProto::DOUBLE &&
                t.data_type() != onnx::TensorProto::FLOAT16};
    if (static_cast<int64_t>(k.v.size()) == n) known_[name] = std::move(k);
  }

  const Known* KnownOf(const std::string& name) const {
    const auto it = known_.find(name);
    return it == known_.end() ? nullptr : &it->second;
  }

  // A known scalar (one value), or nullopt.
  std::optional<double> Scalar(const std::string& name) const {
    const Known* k = KnownOf(name);
    if (k == nullptr || k->v.size() != 1) return std::nullopt;
    return k->v[0];
  }

  // Attribute `name`'s ints, or from input `i` where the opset moved them
  // there (Unsqueeze's and Squeeze's axes since opset 13).
  std::vector<int64_t> IntsOf(const onnx::NodeProto& n, const char* name,
                              int i) const {
    if (n.input_size() > i && !n.input(i).empty()) {
      const Known* k = KnownOf(n.input(i));
      if (k == nullptr)
        throw GraphError("its " + std::string(name) +
                         " are not known from the file");
      return {k->v.begin(), k->v.end()};
    }
    return Attributes(n).Ints(name);
  }

  // A Slice's start or end on an axis of `size`: from the end where
  // negative, INT64_MAX (the exporter's "to the end") the size, clamped.
  static int64_t SliceBound(double x, int64_t size) {
    const int64_t i = x >= 9e18 ? size : static_cast<int64_t>(x);
    return std::clamp<int64_t>(i < 0 ? i + size : i, 0, size);
  }

  static int Axis(int64_t axis, size_t rank) {
    return static_cast<int>(axis < 0 ? axis + static_cast<int64_t>(rank)
                                     : axis);
  }

  // A product by a weight matrix, not yet a layer: the packed projection
  // of queries, keys and values is one, each of whose column blocks
  // becomes a dense layer of its own when read.
  struct Product {
    int x = 0;    // the layer multiplied
    Shape shape;  // the product's, in the graph's layout
    std::string weight;
    bool rows_are_units = false;  // the file's matrix is [units, in]
    std::string bias;
    std::map<std::pair<int64_t, int64_t>, int> made;  // columns -> layer
  };

  // Scores of queries by keys (q k^T) and, after a softmax, the weights of
  // the values.
  struct Scores {
    View q, k;
  };

  static int ProductId(size_t p) { return -static_cast<int>(p) - 1; }

  const Shape& LayerShape(int layer) const {
    return layer >= 0 ? graph_.layer(layer).shape
                      : products_.at(-layer - 1).shape;
  }

  // The dimension of a layer that counts examples: a sequence's is its
  // second ([length, batch, units]).
  int BatchAxis(int layer) const {
    const auto it = batch_axis_.find(layer);
    return it == batch_axis_.end() ? 0 : it->second;
  }

  int64_t BatchStride(int layer) const {
    return ContiguousStrides(LayerShape(layer))[BatchAxis(layer)];
  }

  std::optional<View> ViewOf(const std::string& name) const {
    const auto v = views_.find(name);
    if (v != views_.end()) return v->second;
    const auto l = layer_of_.find(name);
    if (l == layer_of_.end()) return std::nullopt;
    return Whole(l->second, ShapeOf(l->second));
  }

  void SetView(const std::string& name, const View& given) {
    const View v = Canonical(given);
    if (v.layer >= 0 && v.scale == 1 && IsWhole(v, LayerShape(v.layer))) {
      views_.erase(name);
      Bind(name, v.layer);
    } else {
      layer_of_.erase(name);
      views_[name] = v;
    }
  }

  // A layer made from `from`'s: of its kind of dimensions.
  int Derived(int layer, int from) {
    if (BatchAxis(from) != 0) batch_axis_[layer] = BatchAxis(from);
    return layer;
  }

  static std::string Describe(const View& v) {
    return ToString(v.shape) + " (strides " + ToString(v.strides) +
           (v.offset ? ", offset " + std::to_string(v.offset) : "") + ")";
  }

  // Columns [from, from + width) of product p as a dense layer.
  int ProductLayer(size_t p, int64_t from, int64_t width) {
    Product& prod = products_[p];
    const auto made = prod.made.find({from, width});
    if (made != prod.made.end()) return made->second;
    const bool bias = !prod.bias.empty();
    const int dense = Derived(graph_.Dense(prod.x, width, bias), prod.x);
    if (given_) {
      const int64_t units = prod.shape.back();
      const Tensor w = Weight(prod.weight);
      const int64_t in = static_cast<int64_t>(w->size()) / units;
      auto block = std::make_shared<std::vector<float>>(width * in);
      for (int64_t r = 0; r < width; ++r) {
        for (int64_t c = 0; c < in; ++c) {
          (*block)[r * in + c] = prod.rows_are_units
                                     ? (*w)[(from + r) * in + c]
                                     : (*w)[c * units + from + r];
        }
      }
      std::vector<Tensor> values = {block};
      if (bias) {
        const Tensor b = Weight(prod.bias);
        values.push_back(std::make_shared<std::vector<float>>(
            b->begin() + from, b->begin() + from + width));
      }
      graph_.SetValues(dense, std::move(values));
    }
    prod.made[{from, width}] = dense;
    return dense;
  }

  // v on a layer of the graph: the block of a product's columns it reads
  // made a dense layer. Its axes within a row (strides below the row's
  // length) must read a block of columns whole, the others every row.
  View Realize(View v) {
    if (v.layer >= 0) return v;
    const size_t p = -v.layer - 1;
    const Shape shape = products_[p].shape;
    const int64_t units = shape.back();
    int64_t width = 1;
    std::vector<std::pair<int64_t, int64_t>> inner;  // stride, size
    View rows{v.layer, {}, {}, 0, 1};
    for (size_t k = 0; k < v.shape.size(); ++k) {
      if (v.shape[k] == 1) continue;
      if (v.strides[k] < units) {
        inner.push_back({v.strides[k], v.shape[k]});
        width *= v.shape[k];
      } else {
        rows.shape.push_back(v.shape[k]);
        rows.strides.push_back(v.strides[k]);
      }
    }
    rows.shape.push_back(units);
    rows.strides.push_back(1);
    std::sort(inner.begin(), inner.end());
    int64_t expected = 1;
    for (const auto& [stride, size] : inner) {
      if (stride != expected) expected = -1;
      if (expected > 0) expected *= size;
    }
    if (expected != width || v.offset + width > units || !Covers(rows, shape)) {
      throw GraphError("a part " + Describe(v) + " of a product " +
                       ToString(shape) + " that is not a block of its columns");
    }
    View out = v;
    out.layer = ProductLayer(p, v.offset, width);
    out.offset = 0;
    for (size_t k = 0; k < v.shape.size(); ++k) {
      if (v.strides[k] >= units) out.strides[k] = v.strides[k] / units * width;
    }
    return out;
  }

  // v where a layer of the graph is: the class token's output (the first
  // position) or feature maps read as a sequence get a layer of their own.
  std::optional<View> Arrange(const View& v) {
    const Shape s = LayerShape(v.layer);
    auto strides = [&](const std::vector<int64_t>& want) {
      return Canonical({v.layer, v.shape, want, 0, 1}).strides == v.strides;
    };
    if (s.size() == 3 && BatchAxis(v.layer) == 1 &&
        v.shape == Shape{s[1], s[2]} && strides({s[2], 1}) && v.offset == 0) {
      return Whole(Derived(graph_.FirstToken(v.layer), v.layer), {s[1], s[2]});
    }
    if (s.size() == 4 && v.offset == 0 &&
        v.shape == Shape{s[0], s[2] * s[3], s[1]} &&
        strides({s[1] * s[2] * s[3], 1, s[2] * s[3]})) {
      const int seq = graph_.Sequence(v.layer);
      batch_axis_[seq] = 1;
      return Canonical({seq, v.shape, {s[1], s[0] * s[1], 1}, 0, 1});
    }
    return std::nullopt;
  }

  // v as rows a layer reads along its last dimension (a product, a
  // normalization, an elementwise function): a view covering its layer
  // with rows whole.
  View Rows(View v) {
    v = Realize(v);
    if (v.scale != 1) {
      throw GraphError("a tensor scaled by " + std::to_string(v.scale) +
                       " where the graph's layers take none");
    }
    if (RowsWhole(v, LayerShape(v.layer))) return v;
    const std::optional<View> a = Arrange(v);
    if (a && RowsWhole(*a, LayerShape(a->layer))) return *a;
    throw GraphError("a view " + Describe(v) + " of " +
                     ToString(LayerShape(v.layer)) +
                     " that the graph's layers do not read");
  }

  // v as the whole output of a layer, in the graph's layout.
  int AsLayer(const View& v) {
    const View rows = Rows(v);
    if (IsWhole(rows, LayerShape(rows.layer))) return rows.layer;
    throw GraphError("a view " + Describe(rows) + " of " +
                     ToString(LayerShape(rows.layer)) +
                     " where the graph's layers take their input whole");
  }

  // How queries, keys or values are read by attention's products: v's
  // last two axes (rows, then a head's dimensions; swapped for the keys of
  // q k^T) over a [length, batch, units] layer, the others each example's
  // heads.
  struct HeadsOf {
    int layer = 0;
    int64_t dh = 0;
    std::vector<std::pair<int64_t, int64_t>> batch;  // size, stride
  };
  std::optional<HeadsOf> Heads(const View& given, bool keys) {
    View v = given;
    v.scale = 1;
    v = Realize(v);
    const Shape s = LayerShape(v.layer);
    const size_t r = v.shape.size();
    if (s.size() != 3 || r < 3 || v.offset != 0) return std::nullopt;
    const size_t rows = keys ? r - 1 : r - 2, dims = keys ? r - 2 : r - 1;
    const int64_t length = s[0], batch = s[1], units = s[2];
    HeadsOf h{v.layer, v.shape[dims], {}};
    if (v.strides[dims] != 1 || units % h.dh != 0 || v.shape[rows] != length ||
        (length > 1 && v.strides[rows] != batch * units)) {
      return std::nullopt;
    }
    std::vector<std::pair<int64_t, int64_t>> by_stride;
    for (size_t k = 0; k + 2 < r; ++k) {
      h.batch.push_back({v.shape[k], v.strides[k]});
      if (v.shape[k] != 1) by_stride.push_back({v.strides[k], v.shape[k]});
    }
    std::sort(by_stride.begin(), by_stride.end());
    int64_t expected = h.dh;
    for (const auto& [stride, size] : by_stride) {
      if (stride != expected) return std::nullopt;
      expected *= size;
    }
    if (expected != batch * units) return std::nullopt;
    return h;
  }

  // Reshape's target: known, its 0s (copy) and -1 (the rest) resolved; a
  // target the exporter fixed at the file's batch (PyTorch writes the
  // batch times the heads as a number) has it replaced by the batch mapped:
  // in the one dimension that then spans the layer's batch and is the
  // smallest that does.
  View Reshape(const onnx::NodeProto& n, const View& given) {
    const Known* target = KnownOf(n.input(1));
    if (target == nullptr) {
      throw GraphError("its target shape is not known from the file");
    }
    Shape shape(target->v.begin(), target->v.end());
    int64_t rest = -1, product = 1;
    for (size_t k = 0; k < shape.size(); ++k) {
      if (shape[k] == 0 && Attributes(n).Int("allowzero", 0) == 0) {
        shape[k] = given.shape.at(k);
      }
      if (shape[k] == -1) {
        rest = k;
      } else {
        product *= shape[k];
      }
    }
    const int64_t elements = Elements(given.shape);
    if (rest >= 0 && product > 0) shape[rest] = elements / product;
    auto reshaped = [&](const View& v, const Shape& to) {
      std::optional<View> out = Reshaped(v, to);
      if (!out && v.layer < 0) out = Reshaped(Realize(v), to);
      return out;
    };
    if (Elements(shape) == elements) {
      if (const auto out = reshaped(given, shape)) return *out;
      throw GraphError("a reshape of " + Describe(given) + " to " +
                       ToString(shape) + " that moves elements");
    }
    // Fixed at the file's batch.
    std::optional<View> best;
    int64_t best_size = 0;
    int candidates = 0;
    if (file_batch_ > 0) {
      for (size_t k = 0; k < shape.size(); ++k) {
        if (shape[k] % file_batch_ != 0) continue;
        Shape to = shape;
        to[k] = shape[k] / file_batch_ * batch_;
        if (Elements(to) != elements) continue;
        std::optional<View> out = reshaped(given, to);
        if (!out) continue;
        const int layer = out->layer;
        const int64_t stride = BatchStride(layer);
        const int64_t size = LayerShape(layer)[BatchAxis(layer)];
        // At batch 1 the batch spans nothing: the smallest decides.
        if (batch_ > 1 && !Spans(*out, static_cast<int>(k), stride, size)) {
          continue;
        }
        if (best && best_size == to[k]) ++candidates;
        if (!best || to[k] < best_size) {
          best = out;
          best_size = to[k];
          candidates = 1;
        }
      }
    }
    if (!best || candidates > 1) {
      throw GraphError(
          "a reshape of " + ToString(given.shape) + " to " + ToString(shape) +
          " (a shape fixed at the file's batch of " +
          std::to_string(file_batch_) +
          " that no one dimension of it scales to batch " +
          std::to_string(batch_) + "; export with a dynamic batch axis)");
    }
    return *best;
  }

  // The node reading `value` with operator `op` (and `also`, if given, as
  // another input), or -1.
  int ReaderOf(const std::string& value, const std::string& op,
               const std::string& also = "") const {
    const auto it = reader_nodes_.find(value);
    if (it == reader_nodes_.end()) return -1;
    for (int k : it->second) {
      const onnx::NodeProto& r = g_.node(k);
      if (r.op_type() != op) continue;
      if (also.empty()) return k;
      for (const std::string& in : r.input()) {
        if (in == also) return k;
      }
    }
    return -1;
  }

  // The input of node k other than `value`.
  std::string Other(int k, const std::string& value) const {
    const onnx::NodeProto& r = g_.node(k);
    return r.input(0) == value ? r.input(1) : r.input(0);
  }

  // A layer normalization as PyTorch's exporter writes it before opset 17:
  // from the mean over the last axis of x, nine nodes. The last node's
  // index, or -1 where they are not that.
  int LayerNormNodes(int index, double* epsilon, std::string* scale,
                     std::string* shift) {
    const onnx::NodeProto& mean = g_.node(index);
    const std::string& x = mean.input(0);
    const int sub = ReaderOf(mean.output(0), "Sub", x);
    if (sub < 0 || g_.node(sub).input(0) != x) return -1;
    const std::string& d = g_.node(sub).output(0);
    const int pow = ReaderOf(d, "Pow");
    if (pow < 0 || Scalar(g_.node(pow).input(1)) != 2.0) return -1;
    const int var = ReaderOf(g_.node(pow).output(0), "ReduceMean");
    if (var < 0) return -1;
    const int add = ReaderOf(g_.node(var).output(0), "Add");
    if (add < 0) return -1;
    const std::optional<double> eps =
        Scalar(Other(add, g_.node(var).output(0)));
    const int sqrt = ReaderOf(g_.node(add).output(0), "Sqrt");
    if (!eps || sqrt < 0) return -1;
    const int div = ReaderOf(g_.node(sqrt).output(0), "Div", d);
    if (div < 0) return -1;
    const int mul = ReaderOf(g_.node(div).output(0), "Mul");
    if (mul < 0) return -1;
    const int bias = ReaderOf(g_.node(mul).output(0), "Add");
    if (bias < 0) return -1;
    *scale = Other(mul, g_.node(div).output(0));
    *shift = Other(bias, g_.node(mul).output(0));
    if (!IsInitializer(*scale) || !IsInitializer(*shift)) return -1;
    *epsilon = AsWritten(static_cast<float>(*eps));
    for (int k : {sub, pow, var, add, sqrt, div, mul, bias}) fused_.insert(k);
    return bias;
  }

  // GELU as the exporter writes it: x * (erf(x / sqrt 2) + 1) * 0.5, from
  // the division. The last node's index, or -1.
  int GeluNodes(int index) {
    const onnx::NodeProto& div = g_.node(index);
    const std::string& x = div.input(0);
    const std::optional<double> root = Scalar(div.input(1));
    if (!root || std::abs(*root - std::sqrt(2.0)) > 1e-6) return -1;
    const int erf = ReaderOf(div.output(0), "Erf");
    if (erf < 0) return -1;
    const int one = ReaderOf(g_.node(erf).output(0), "Add");
    if (one < 0 || Scalar(Other(one, g_.node(erf).output(0))) != 1.0) {
      return -1;
    }
    const int times = ReaderOf(g_.node(one).output(0), "Mul", x);
    if (times < 0) return -1;
    const int half = ReaderOf(g_.node(times).output(0), "Mul");
    if (half < 0 || Scalar(Other(half, g_.node(times).output(0))) != 0.5) {
      return -1;
    }
    for (int k : {erf, one, times, half}) fused_.insert(k);
    return half;
  }

  // Every input known (and at least one).
  bool AllKnown(const onnx::NodeProto& n) const {
    if (n.input_size() == 0) return false;
    for (const std::string& in : n.input()) {
      if (!in.empty() && KnownOf(in) == nullptr) return false;
    }
    return true;
  }

  // Computes a node of shape arithmetic; false for an operator it does
  // not compute.
  bool Fold(const onnx::NodeProto& n) {
    const std::string& op = n.op_type();
    const Attributes a(n);
    auto in = [&](int i) -> const Known& { return *KnownOf(n.input(i)); };
    Known out;
    if (op == "Identity" || op == "Unsqueeze" || op == "Squeeze" ||
        op == "Reshape") {
      out = in(0);
      if (op == "Unsqueeze") {
        std::vector<int64_t> axes = IntsOf(n, "axes", 1);
        const size_t rank = out.dims.size() + axes.size();
        for (int64_t& x : axes) x = Axis(x, rank);
        std::sort(axes.begin(), axes.end());
        for (int64_t x : axes) out.dims.insert(out.dims.begin() + x, 1);
      } else if (op == "Squeeze") {
        out.dims.erase(std::remove(out.dims.begin(), out.dims.end(), 1),
                       out.dims.end());
      } else if (op == "Reshape") {
        out.dims.assign(in(1).v.begin(), in(1).v.end());
        for (int64_t& d : out.dims) {
          if (d == -1) d = static_cast<int64_t>(out.v.size());
        }
      }
    } else if (op == "Concat") {
      for (int i = 0; i < n.input_size(); ++i) {
        out.v.insert(out.v.end(), in(i).v.begin(), in(i).v.end());
        out.integer = in(i).integer;
      }
      out.dims = {static_cast<int64_t>(out.v.size())};
    } else if (op == "Gather") {
      const Known& data = in(0);
      out.dims = in(1).dims;
      for (double i : in(1).v) {
        const int64_t at = Axis(static_cast<int64_t>(i), data.v.size());
        out.v.push_back(data.v.at(at));
      }
      out.integer = data.integer;
    } else if (op == "Slice") {
      const Known& data = in(0);
      const int64_t size = static_cast<int64_t>(data.v.size());
      const int64_t step = n.input_size() > 4 ? in(4).v.at(0) : 1;
      if (step != 1) return false;
      for (int64_t i = SliceBound(in(1).v.at(0), size);
           i < SliceBound(in(2).v.at(0), size); ++i) {
        out.v.push_back(data.v[i]);
      }
      out.dims = {static_cast<int64_t>(out.v.size())};
      out.integer = data.integer;
    } else if (op == "ConstantOfShape") {
      double fill = 0;
      out.integer = false;
      for (const onnx::AttributeProto& t : n.attribute()) {
        if (t.name() == "value" && !Values(t.t()).empty()) {
          fill = Values(t.t())[0];
          out.integer = t.t().data_type() != onnx::TensorProto::FLOAT;
        }
      }
      out.dims.assign(in(0).v.begin(), in(0).v.end());
      out.v.assign(Elements(out.dims), fill);
    } else if (op == "Cast" || op == "Sqrt" || op == "Neg") {
      out = in(0);
      for (double& x : out.v)
        x = op == "Sqrt" ? std::sqrt(x) : op == "Neg" ? -x : x;
      if (op == "Sqrt") out.integer = false;
      if (op == "Cast") {
        const int64_t to = a.Int("to", onnx::TensorProto::FLOAT);
        out.integer = to != onnx::TensorProto::FLOAT &&
                      to != onnx::TensorProto::DOUBLE &&
                      to != onnx::TensorProto::FLOAT16;
        if (out.integer) {
          for (double& x : out.v) x = std::trunc(x);
        }
      }
    } else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" ||
               op == "Mod" || op == "Equal" || op == "Where") {
      const int first = op == "Where" ? 1 : 0;
      const Known& x = in(first);
      const Known& y = in(first + 1);
      const size_t size = std::max(x.v.size(), y.v.size());
      auto at = [&](const Known& k, size_t i) {
        return k.v.size() == 1 ? k.v[0] : k.v.at(i);
      };
      out.dims = x.v.size() >= y.v.size() ? x.dims : y.dims;
      out.integer = x.integer && y.integer;
      if (op == "Equal") out.integer = true;
      for (size_t i = 0; i < size; ++i) {
        const double p = at(x, i), q = at(y, i);
        double r = 0;
        if (op == "Add") r = p + q;
        if (op == "Sub") r = p - q;
        if (op == "Mul") r = p * q;
        if (op == "Div") r = out.integer ? std::trunc(p / q) : p / q;
        if (op == "Mod") r = p - q * std::floor(p / q);
        if (op == "Equal") r = p == q;
        if (op == "Where") r = at(in(0), i) != 0 ? p : q;
        out.v.push_back(r);
      }
    } else {
      return false;
    }
    known_[n.output(0)] = std::move(out);
    return true;
  }

  // Maps a node of the transformers' kind: shape arithmetic, views of
  // layers, attention from its products and softmax, layer normalization
  // and GELU from their nodes, the class token and positions. False where
  // the node is left to the mapping of whole layers.
  bool ApplyViews(int index, const onnx::NodeProto& n) {
    const std::string& op = n.op_type();
    const Attributes a(n);
    const std::string& out = n.output(0);
    if (AllKnown(n) && Fold(n)) return true;
    if (op == "Shape") {
      const std::optional<View> v = ViewOf(n.input(0));
      const Known* k = KnownOf(n.input(0));
      if (!v && k == nullptr) return false;
      const Shape dims = v ? v->shape : k->dims;
      const int64_t rank = static_cast<int64_t>(dims.size());
      const int64_t from =
          std::clamp<int64_t>(Axis(a.Int("start", 0), dims.size()), 0, rank);
      const int64_t to =
          std::clamp<int64_t>(a.Int("end", rank) < 0 ? a.Int("end", rank) + rank
                                                     : a.Int("end", rank),
                              0, rank);
      Known shape;
      for (int64_t k2 = from; k2 < to; ++k2) shape.v.push_back(dims[k2]);
      shape.dims = {static_cast<int64_t>(shape.v.size())};
      known_[out] = std::move(shape);
      return true;
    }
    if (op == "Expand" && IsInitializer(n.input(0))) {
      expanded_[out] = n.input(0);
      return true;
    }
    if (op == "Transpose" && IsInitializer(n.input(0)) &&
        InitializerDims(n.input(0)).size() == 2) {
      transposed_[out] = n.input(0);
      return true;
    }
    if ((op == "Identity" || op == "Dropout") && views_.count(n.input(0))) {
      views_[out] = views_.at(n.input(0));
      return true;
    }
    if (op == "Softmax" && scores_.count(n.input(0))) {
      const Scores& s = scores_.at(n.input(0));
      const int64_t rank = static_cast<int64_t>(s.q.shape.size());
      if (Axis(a.Int("axis", -1), rank) != rank - 1) {
        throw GraphError("a softmax of attention's scores over another axis");
      }
      probs_[out] = s;
      return true;
    }
    if (op == "MatMul" || op == "Gemm") return ApplyProduct(n);
    const std::optional<View> v = ViewOf(n.input(0));
    if (op == "Add") return ApplyAdd(n);
    if (op == "Concat") {
      for (const std::string& in : n.input()) {
        if (expanded_.count(in)) return ApplyClassToken(n);
      }
      return false;
    }
    if (!v) return false;
    const bool whole = !views_.count(n.input(0));
    if (op == "Reshape") {
      // A whole 4-D or 2-D layer flattened is the graph's flatten.
      if (whole && ReshapeFlattens(n, ShapeOf(v->layer))) return false;
      SetView(out, Reshape(n, *v));
      return true;
    }
    if (op == "Transpose") {
      std::vector<int64_t> perm = a.Ints("perm");
      if (perm.empty()) {
        for (size_t k = v->shape.size(); k-- > 0;) perm.push_back(k);
      }
      SetView(out, Permuted(*v, perm));
      return true;
    }
    if (op == "Slice") {
      View s = *v;
      const Known* starts = KnownOf(n.input(1));
      const Known* ends = KnownOf(n.input(2));
      const Known* axes = n.input_size() > 3 ? KnownOf(n.input(3)) : nullptr;
      const Known* steps = n.input_size() > 4 ? KnownOf(n.input(4)) : nullptr;
      if (starts == nullptr || ends == nullptr ||
          (n.input_size() > 3 && axes == nullptr)) {
        throw GraphError("its bounds are not known from the file");
      }
      for (size_t k = 0; k < starts->v.size(); ++k) {
        const int axis =
            Axis(axes ? static_cast<int64_t>(axes->v[k]) : k, s.shape.size());
        if (steps != nullptr && steps->v[k] != 1) {
          throw GraphError("a slice with a step");
        }
        const int64_t size = s.shape[axis];
        s = Narrowed(s, axis, SliceBound(starts->v[k], size),
                     SliceBound(ends->v[k], size));
      }
      SetView(out, s);
      return true;
    }
    if (op == "Gather") {
      const std::optional<double> i = Scalar(n.input(1));
      if (!i || !KnownOf(n.input(1))->dims.empty()) {
        throw GraphError("a gather of other than one index");
      }
      const int axis = Axis(a.Int("axis", 0), v->shape.size());
      const int64_t at = static_cast<int64_t>(*i);
      SetView(out, Selected(*v, axis, at < 0 ? at + v->shape[axis] : at));
      return true;
    }
    if (op == "Unsqueeze" || op == "Squeeze") {
      View s = *v;
      std::vector<int64_t> axes = IntsOf(n, "axes", 1);
      if (op == "Unsqueeze") {
        const size_t rank = s.shape.size() + axes.size();
        for (int64_t& x : axes) x = Axis(x, rank);
        std::sort(axes.begin(), axes.end());
        for (int64_t x : axes) {
          s.shape.insert(s.shape.begin() + x, 1);
          s.strides.insert(s.strides.begin() + x, 0);
        }
      } else {
        for (int64_t& x : axes) x = Axis(x, s.shape.size());
        if (axes.empty()) {
          for (size_t k = 0; k < s.shape.size(); ++k) {
            if (s.shape[k] == 1) axes.push_back(k);
          }
        }
        std::sort(axes.rbegin(), axes.rend());
        for (int64_t x : axes) {
          if (s.shape[x] != 1)
            throw GraphError("a squeeze of an axis of " +
                             std::to_string(s.shape[x]));
          s.shape.erase(s.shape.begin() + x);
          s.strides.erase(s.strides.begin() + x);
        }
      }
      SetView(out, s);
      return true;
    }
    if (op == "Div" || op == "Mul") {
      if (op == "Div") {
        const int gelu = GeluNodes(index);
        if (gelu >= 0) {
          const View rows = Rows(*v);
          const int layer = Derived(graph_.Gelu(rows.layer), rows.layer);
          const int64_t units = rows.shape.back();
          SetView(g_.node(gelu).output(0), Moved(rows, layer, units, units));
          return true;
        }
      }
      const std::optional<double> factor = Scalar(n.input(1));
      if (!factor) return false;
      View s = *v;
      s.scale *= op == "Div" ? 1 / *factor : *factor;
      SetView(out, s);
      return true;
    }
    if (op == "ReduceMean" && a.Ints("axes") == std::vector<int64_t>{-1}) {
      double epsilon = 0;
      std::string scale, shift;
      const int last = LayerNormNodes(index, &epsilon, &scale, &shift);
      if (last < 0) {
        throw GraphError(
            "a mean over the last axis that is not a layer "
            "normalization's");
      }
      const View rows = Rows(*v);
      params_ += Count(scale) + Count(shift);
      const int norm =
          Derived(graph_.LayerNorm(rows.layer, epsilon), rows.layer);
      Give(norm, {{scale, false}, {shift, false}});
      const int64_t units = rows.shape.back();
      SetView(g_.node(last).output(0), Moved(rows, norm, units, units));
      return true;
    }
    if (op == "LayerNormalization") {
      if (n.input_size() < 3 || !IsInitializer(n.input(1)) ||
          !IsInitializer(n.input(2)) ||
          static_cast<size_t>(Axis(a.Int("axis", -1), v->shape.size())) + 1 !=
              v->shape.size()) {
        throw GraphError(
            "a layer normalization other than over the last "
            "axis with a scale and a shift");
      }
      const View rows = Rows(*v);
      params_ += Count(n.input(1)) + Count(n.input(2));
      const int norm = Derived(
          graph_.LayerNorm(rows.layer, AsWritten(a.Float("epsilon", 1e-5f))),
          rows.layer);
      Give(norm, {{n.input(1), false}, {n.input(2), false}});
      const int64_t units = rows.shape.back();
      SetView(out, Moved(rows, norm, units, units));
      return true;
    }
    if (kViewsOnly.count(op)) {
      throw GraphError("a " + op + " of " + Describe(*v) +
                       " that no layer of the graph expresses");
    }
    return false;
  }

  // A product by weights of a view (a dense layer, made when read), or of
  // two views (attention's scores, or its weighted values).
  bool ApplyProduct(const onnx::NodeProto& n) {
    const std::string& op = n.op_type();
    const std::string& out = n.output(0);
    const std::string& b = n.input(1);
    const bool weights = IsInitializer(b) || transposed_.count(b);
    if (weights) {
      const std::optional<View> x = ViewOf(n.input(0));
      if (!x) return false;
      // A whole [batch, in] layer: the dense layer of CNNs' classifiers.
      if (!views_.count(n.input(0)) && ShapeOf(x->layer).size() == 2 &&
          IsInitializer(b)) {
        return false;
      }
      const View rows = Rows(*x);
      const bool gemm_t = op == "Gemm" && Attributes(n).Int("transB", 0) != 0;
      Product p;
      p.weight = IsInitializer(b) ? b : transposed_.at(b);
      p.rows_are_units = IsInitializer(b) ? gemm_t : !gemm_t;
      const std::vector<int64_t>& w = InitializerDims(p.weight);
      const int64_t units = p.rows_are_units ? w[0] : w[1];
      const int64_t in = p.rows_are_units ? w[1] : w[0];
      if (op == "Gemm" && Attributes(n).Int("transA", 0) != 0) {
        throw GraphError("a product by weights with transA");
      }
      if (rows.shape.back() != in) {
        throw GraphError("a product of " + ToString(rows.shape) + " by " +
                         ToString(w));
      }
      p.x = rows.layer;
      p.shape = LayerShape(rows.layer);
      p.shape.back() = units;
      params_ += Count(p.weight);
      if (op == "Gemm" && n.input_size() > 2 && !n.input(2).empty()) {
        p.bias = n.input(2);
        params_ += Count(p.bias);
      }
      products_.push_back(std::move(p));
      const int id = ProductId(products_.size() - 1);
      if (BatchAxis(rows.layer) != 0) batch_axis_[id] = BatchAxis(rows.layer);
      SetView(out, Moved(rows, id, in, units));
      return true;
    }
    if (op != "MatMul") return false;
    if (probs_.count(n.input(0))) {
      const Scores& s = probs_.at(n.input(0));
      const std::optional<View> values = ViewOf(b);
      const std::optional<HeadsOf> q = Heads(s.q, false), k = Heads(s.k, true);
      const std::optional<HeadsOf> v =
          values ? Heads(*values, false) : std::nullopt;
      if (!q || !k || !v || q->dh != k->dh || q->dh != v->dh ||
          q->batch != k->batch || q->batch != v->batch ||
          LayerShape(q->layer) != LayerShape(k->layer) ||
          LayerShape(q->layer) != LayerShape(v->layer) || values->scale != 1) {
        throw GraphError(
            "softmax(q k^T) v whose queries, keys and values "
            "are not the heads of [length, batch, units] "
            "layers alike");
      }
      const double scale = s.q.scale * s.k.scale;
      if (std::abs(scale * std::sqrt(static_cast<double>(q->dh)) - 1) > 1e-5) {
        throw GraphError("attention's scores scaled by " +
                         std::to_string(scale) + ", not 1/sqrt(" +
                         std::to_string(q->dh) + ")");
      }
      const int64_t units = LayerShape(q->layer)[2];
      const int att = Derived(
          graph_.Attention(q->layer, k->layer, v->layer, units / q->dh, false),
          q->layer);
      View o = Realize(*values);
      o.layer = att;
      SetView(out, o);
      return true;
    }
    const std::optional<View> x = ViewOf(n.input(0)), y = ViewOf(b);
    if (!x || !y) return false;
    scores_[out] = {*x, *y};
    return true;
  }

  // An add: a product's bias; a positional table over a sequence; two
  // views of layers laid out alike.
  bool ApplyAdd(const onnx::NodeProto& n) {
    const std::string& out = n.output(0);
    for (int side = 0; side < 2; ++side) {
      const std::string& t = n.input(1 - side);
      const std::optional<View> v = ViewOf(n.input(side));
      if (!v || !IsInitializer(t)) continue;
      if (v->layer < 0 && products_[-v->layer - 1].bias.empty() &&
          products_[-v->layer - 1].made.empty() &&
          Count(t) == products_[-v->layer - 1].shape.back()) {
        products_[-v->layer - 1].bias = t;
        params_ += Count(t);
        SetView(out, *v);
        return true;
      }
      const View rows = Rows(*v);
      const Shape s = LayerShape(rows.layer);
      const std::vector<int64_t>& dims = InitializerDims(t);
      if (s.size() != 3 || BatchAxis(rows.layer) != 1 ||
          dims.size() != rows.shape.size()) {
        continue;
      }
      // The table broadcast over the batch: one along the axis that is.
      bool table = Count(t) == s[0] * s[2];
      for (size_t k = 0; k < dims.size(); ++k) {
        const bool positions = rows.strides[k] == s[1] * s[2];
        const int64_t want = rows.shape[k] == 1                  ? 1
                             : k + 1 == dims.size() || positions ? rows.shape[k]
                                                                 : 1;
        table = table && dims[k] == want;
      }
      if (!table) continue;
      params_ += Count(t);
      const int pos = Derived(graph_.Positional(rows.layer), rows.layer);
      Give(pos, {{t, false}});
      SetView(out, Moved(rows, pos, s[2], s[2]));
      return true;
    }
    if (IsInitializer(n.input(0)) || IsInitializer(n.input(1))) {
      throw GraphError(
          "a constant added (not a dense layer's bias nor a table of "
          "positions)");
    }
    if (!views_.count(n.input(0)) && !views_.count(n.input(1))) return false;
    const std::optional<View> x = ViewOf(n.input(0)), y = ViewOf(n.input(1));
    if (!x || !y) return false;
    const View a = Rows(*x), b = Rows(*y);
    if (a.shape != b.shape || a.strides != b.strides ||
        LayerShape(a.layer) != LayerShape(b.layer)) {
      throw GraphError("a sum of " + Describe(a) + " and " + Describe(b) +
                       ", laid out differently");
    }
    const int sum = Derived(graph_.Add(a.layer, b.layer), a.layer);
    const int64_t units = a.shape.back();
    SetView(out, Moved(a, sum, units, units));
    return true;
  }

  // A class token (a [1, 1, units] tensor expanded over the batch) joined
  // before a sequence along its positions.
  bool ApplyClassToken(const onnx::NodeProto& n) {
    if (n.input_size() != 2 || !expanded_.count(n.input(0))) {
      throw GraphError(
          "a concat of an expanded tensor other than a class "
          "token before a sequence");
    }
    const std::string& token = expanded_.at(n.input(0));
    const std::optional<View> x = ViewOf(n.input(1));
    if (!x)
      throw GraphError("its input " + n.input(1) + " is made by no layer");
    const View rows = Rows(*x);
    const Shape s = LayerShape(rows.layer);
    const int axis = Axis(Attributes(n).Int("axis", 0), rows.shape.size());
    if (s.size() != 3 || BatchAxis(rows.layer) != 1 || Count(token) != s[2] ||
        rows.strides[axis] != s[1] * s[2]) {
      throw GraphError("a concat of a class token with " + Describe(rows) +
                       " other than before its positions");
    }
    params_ += Count(token);
    const int joined = Derived(graph_.ClassToken(rows.layer), rows.layer);
    Give(joined, {{token, false}});
    View o = rows;
    o.layer = joined;
    o.shape[axis] += 1;
    SetView(n.output(0), o);
    return true;
  }

  void Apply(int index, const onnx::NodeProto& n) {
    const std::string op = n.op_type();
    const Attributes a(n);
    if (op == "Constant") return;  // read as a weight by its readers
    if (ApplyViews(index, n)) return;
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
      Bind(n.output(0),
           x_maps ? graph_.ChannelMul(x, y) : graph_.ChannelMul(y, x));
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

  const onnx::GraphProto& g_;
  const bool given_;  // the layers get the file's values
  Tensors weights_;
  Graph graph_;
  std::map<std::string, std::vector<int64_t>> initializers_;
  std::map<std::string, std::vector<double>> values_;  // the small ones
  std::map<std::string, int> readers_;   // value -> nodes reading it
  std::map<std::string, int> layer_of_;  // value -> the layer making it
  std::set<int> fused_;  // nodes folded into an earlier one's layer
  std::map<std::string, std::vector<int>> reader_nodes_;  // value -> nodes
  std::map<std::string, Known> known_;
  std::map<std::string, View> views_;  // values that are views of layers
  std::vector<Product> products_;
  std::map<std::string, std::string> transposed_;  // value -> initializer
  std::map<std::string, std::string> expanded_;    // value -> initializer
  std::map<std::string, Scores> scores_, probs_;
  std::map<int, int> batch_axis_;  // layer -> its batch's dimension
  int64_t batch_ = 0;
  int64_t file_batch_ = 0;  // the input's, as the file gives it (0: any)
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
    const bool parsed = data != MAP_FAILED &&
                        size <= static_cast<size_t>(INT_MAX) &&
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
