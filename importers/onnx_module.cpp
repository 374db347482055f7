// The module libparadnn_import_onnx.so: ONNX files read with the ONNX
// library and mapped onto the layer graph (importers/onnx.h).
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <filesystem>
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

// Maps a file's nodes, in order, onto a graph.
class Mapper {
 public:
  Mapper(const onnx::GraphProto& g, int64_t batch) : g_(g) {
    for (const onnx::TensorProto& t : g.initializer()) {
      initializers_[t.name()] = {t.dims().begin(), t.dims().end()};
    }
    for (const onnx::NodeProto& n : g.node()) {
      for (const std::string& in : n.input()) ++readers_[in];
      // A Constant node's tensor is a weight like an initializer's.
      if (n.op_type() == "Constant" && n.output_size() == 1) {
        for (const onnx::AttributeProto& a : n.attribute()) {
          if (a.name() == "value") {
            initializers_[n.output(0)] = {a.t().dims().begin(),
                                          a.t().dims().end()};
          }
        }
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

  std::string Unsupported(const onnx::NodeProto& n) const {
    const Attributes a(n);
    const std::string op = n.op_type();
    const std::string where = Where(n);
    if (!n.domain().empty() && n.domain() != "ai.onnx") {
      return where + ": operator of domain " + n.domain();
    }
    if (op == "Conv") {
      if (a.Int("group", 1) != 1) {
        return where + ": a grouped convolution (group " +
               std::to_string(a.Int("group", 1)) +
               "): the graph has no grouped or depthwise convolution";
      }
      if (n.input_size() > 2 && !n.input(2).empty()) {
        return where + ": a bias: the graph's convolution has none";
      }
      if (!IsInitializer(n.input(1)) ||
          InitializerDims(n.input(1)).size() != 4) {
        return where + ": weights not a 2-D kernel in the file";
      }
      const std::vector<int64_t>& w = InitializerDims(n.input(1));
      if (w[2] != w[3]) {
        return where + ": a kernel of " + std::to_string(w[2]) + "x" +
               std::to_string(w[3]) + ": the graph's are square";
      }
      if (!AllEqual(a.Ints("dilations"), 1)) {
        return where + ": dilations " + ToString(a.Ints("dilations"));
      }
      if (Uniform(a.Ints("strides"), 1) < 0 || Uniform(a.Ints("pads"), 0) < 0) {
        return where + ": strides " + ToString(a.Ints("strides")) + ", pads " +
               ToString(a.Ints("pads")) +
               ": the graph's are the same on every side";
      }
      const std::string pad = a.String("auto_pad");
      if (!pad.empty() && pad != "NOTSET") return where + ": auto_pad " + pad;
      return "";
    }
    if (op == "MaxPool") {
      const std::vector<int64_t> k = a.Ints("kernel_shape");
      if (Uniform(k, -1) < 0 || Uniform(a.Ints("strides"), 1) < 0 ||
          Uniform(a.Ints("pads"), 0) < 0) {
        return where + ": window " + ToString(k) + ", strides " +
               ToString(a.Ints("strides")) + ", pads " +
               ToString(a.Ints("pads")) +
               ": the graph's windows are square, the same on every side";
      }
      if (a.Int("ceil_mode", 0) != 0) return where + ": ceil_mode";
      if (!AllEqual(a.Ints("dilations"), 1)) return where + ": dilations";
      const std::string pad = a.String("auto_pad");
      if (!pad.empty() && pad != "NOTSET") return where + ": auto_pad " + pad;
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
    if (op == "Add") {
      if (IsInitializer(n.input(0)) || IsInitializer(n.input(1))) {
        return where + ": a constant added (not a dense layer's bias)";
      }
      return "";
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
    if (op == "Flatten" || op == "Reshape") return "";  // checked on shapes
    static const std::set<std::string> kSame = {"Relu", "GlobalAveragePool",
                                                "Identity", "Dropout"};
    if (kSame.count(op)) return "";
    return where + ": no operation of the layer graph expresses ONNX's " + op;
  }

  void Apply(int index, const onnx::NodeProto& n) {
    const std::string op = n.op_type();
    const Attributes a(n);
    if (op == "Constant") return;  // read as a weight by its readers
    const int x = DataInput(n);
    if (x < 0 && op != "Identity") {
      throw GraphError("its input " + n.input(0) + " is made by no layer");
    }
    if (op == "Conv") {
      const std::vector<int64_t>& w = InitializerDims(n.input(1));
      params_ += Count(n.input(1));
      Bind(n.output(0),
           graph_.Conv2d(x, w[0], w[2], Uniform(a.Ints("strides"), 1),
                         Uniform(a.Ints("pads"), 0)));
    } else if (op == "MaxPool") {
      Bind(n.output(0), graph_.MaxPool(x, a.Ints("kernel_shape")[0],
                                       Uniform(a.Ints("strides"), 1),
                                       Uniform(a.Ints("pads"), 0)));
    } else if (op == "Relu") {
      Bind(n.output(0), graph_.ReLU(x));
    } else if (op == "BatchNormalization") {
      params_ += Count(n.input(1)) + Count(n.input(2));  // scale and shift
      Bind(n.output(0), graph_.BatchNorm(x));
    } else if (op == "GlobalAveragePool") {
      Bind(n.output(0), graph_.GlobalAvgPool(x));
    } else if (op == "Identity" || op == "Dropout") {
      if (x >= 0) Bind(n.output(0), x);
    } else if (op == "Flatten" || op == "Reshape") {
      // The graph's layers after a global pooling are already [batch,
      // units]: a flatten of those changes nothing.
      if (ShapeOf(x).size() != 2 ||
          (op == "Flatten" && a.Int("axis", 1) != 1)) {
        throw GraphError("a flatten of " + ToString(ShapeOf(x)) +
                         ": the graph has no flatten");
      }
      Bind(n.output(0), x);
    } else if (op == "Add") {
      const int y = DataInput(n, 1);
      if (y < 0)
        throw GraphError("its input " + n.input(1) + " is made by no layer");
      Bind(n.output(0), graph_.Add(x, y));
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
      Bind(n.output(0), dense);
      if (bias_add >= 0) {
        fused_.insert(bias_add);
        Bind(g_.node(bias_add).output(0), dense);
      }
    }
  }

  const onnx::GraphProto& g_;
  Graph graph_;
  std::map<std::string, std::vector<int64_t>> initializers_;
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
  ProtoFile(std::string path, onnx::ModelProto model)
      : path_(std::move(path)), model_(std::move(model)) {}

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
    Mapper mapper(m.graph(), batch);
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
};

std::shared_ptr<const OnnxFile> ReadFile(const std::string& path) {
  onnx::ModelProto m;
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(path + ": cannot open the ONNX file");
    if (!m.ParseFromIstream(&in)) {
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
  // The mapping reads the weights' shapes only: their values (most of a
  // file) are let go.
  for (onnx::TensorProto& t : *m.mutable_graph()->mutable_initializer()) {
    t.clear_raw_data();
    t.clear_float_data();
  }
  return std::make_shared<ProtoFile>(path, std::move(m));
}

}  // namespace
}  // namespace paradnn

extern "C" __attribute__((visibility("default"))) paradnn::OnnxReader
paradnn_onnx_reader_v1() {
  return paradnn::ReadFile;
}
