// How the ONNX module (importers/onnx_module.cpp) maps a file's nodes, in
// order, onto the layer graph: the Mapper, the context the table of
// operators (importers/onnx_operators.h) shares. Each node is mapped by
// its operator's entry; the Mapper keeps what the entries build on and
// read: the graph, which values are layers, views of layers (onnx_views.h,
// onnx_products.cpp), products not yet layers, or known tensors
// (onnx_fold.cpp). importers/onnx_mapper.cpp holds what is not an
// operator's: the file's tensors and input, the loss, parameters' sources.
#ifndef PARADNN_IMPORTERS_ONNX_MAPPER_H_
#define PARADNN_IMPORTERS_ONNX_MAPPER_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "generators/graph.h"
#include "importers/onnx.h"
#include "importers/onnx_operators.h"
#include "importers/onnx_views.h"

namespace paradnn {

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

// A tensor's values as `Out`, where the file holds them (its raw bytes and
// its typed field): float, double, int64 and int32 tensors; none for other
// types, or where the values were let go.
template <typename Out>
std::vector<Out> TensorValues(const onnx::TensorProto& t) {
  std::vector<Out> out;
  auto read = [&](auto zero, const auto& typed) {
    using T = decltype(zero);
    const std::string& raw = t.raw_data();
    out.resize(raw.size() / sizeof(T));
    for (size_t i = 0; i < out.size(); ++i) {
      T v;
      std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
      out[i] = static_cast<Out>(v);
    }
    for (const auto v : typed) out.push_back(static_cast<Out>(v));
  };
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      read(0.f, t.float_data());
      break;
    case onnx::TensorProto::DOUBLE:
      read(0.0, t.double_data());
      break;
    case onnx::TensorProto::INT64:
      read(int64_t{0}, t.int64_data());
      break;
    case onnx::TensorProto::INT32:
      read(int32_t{0}, t.int32_data());
      break;
    default:
      break;
  }
  return out;
}

// The tensors whose values the mapping reads (a clip's bounds, a pad's
// widths) are this small; the values of larger ones are let go.
constexpr int64_t kValuesKept = 64;

// A float attribute as the exporter wrote it (1e-5f is 1e-5, not
// 9.99999975e-6): the shortest decimal that reads back as the float, so
// that a file's default epsilon is the graph's.
double AsWritten(float f);

// A small tensor the file computes from shapes and constants, known once
// the batch is: a reshape's target, a slice's bounds, a scale.
struct Known {
  std::vector<int64_t> dims;
  std::vector<double> v;
  bool integer = true;
};

// A tensor's values, shared by the layers that start from them.
using Tensor = std::shared_ptr<const std::vector<float>>;
using Tensors = std::map<std::string, Tensor>;

// Maps a file's nodes, in order, onto a graph.
class Mapper {
 public:
  // With `weights` (the file's float tensors by name), each layer gets its
  // values; without, none. `opset`: the file's default domain's.
  Mapper(const onnx::GraphProto& g, int64_t opset, int64_t batch,
         const Tensors* weights);

  // Maps one node; returns why it cannot be ("" where it maps). Past the
  // first node that cannot, nodes are checked by their operator alone:
  // the shapes they would read are unknown.
  std::string Map(int index);

  // The graph with its loss over the file's first output, or why not; each
  // parameter's source in the file.
  std::optional<Graph> Finish(std::string* why,
                              std::vector<OnnxParamSource>* sources);

  int64_t params() const { return params_; }

 private:
  friend struct OperatorTable;  // the entries (importers/onnx_operator_table.h)

  void Fail(const std::string& why);

  // Why node `n` cannot map from its operator and attributes alone (its
  // entry's check, its opset), or "".
  std::string Refused(const onnx::NodeProto& n, const Operator* op) const;

  void Bind(const std::string& value, int layer) { layer_of_[value] = layer; }

  bool IsInitializer(const std::string& name) const;

  const std::vector<int64_t>& InitializerDims(const std::string& name) const;

  int64_t Count(const std::string& initializer) const;

  // The node's data input, made by an earlier layer (a view of one as the
  // layer it is); -1 where none is.
  int DataInput(const onnx::NodeProto& n, int i = 0);

  const Shape& ShapeOf(int layer) const { return graph_.layer(layer).shape; }

  // The file's values of tensor `name`; with `transpose`, those of a
  // [rows, columns] matrix as [columns, rows].
  Tensor Weight(const std::string& name, bool transpose = false) const;

  // Layer i's values are the file's tensors `names` (transposing those
  // marked): their sources, and where the file's weights are asked for the
  // layer's starting values.
  void Give(int i, const std::vector<std::pair<std::string, bool>>& names);

  std::string Where(const onnx::NodeProto& n) const;

  // ---- Known values (importers/onnx_fold.cpp).

  void Know(const std::string& name, const onnx::TensorProto& t);

  const Known* KnownOf(const std::string& name) const;

  // A known scalar (one value), or nullopt.
  std::optional<double> Scalar(const std::string& name) const;

  // Attribute `name`'s ints, or from input `i` where the opset moved them
  // there (Unsqueeze's and Squeeze's axes since opset 13).
  std::vector<int64_t> IntsOf(const onnx::NodeProto& n, const char* name,
                              int i) const;

  // A Slice's start or end on an axis of `size`: from the end where
  // negative, INT64_MAX (the exporter's "to the end") the size, clamped.
  static int64_t SliceBound(double x, int64_t size);

  static int Axis(int64_t axis, size_t rank);

  // Every input known (and at least one).
  bool AllKnown(const onnx::NodeProto& n) const;

  // ---- Views of layers, products by weights (importers/onnx_products.cpp).

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

  const Shape& LayerShape(int layer) const;

  // The dimension of a layer that counts examples: a sequence's is its
  // second ([length, batch, units]).
  int BatchAxis(int layer) const;

  int64_t BatchStride(int layer) const;

  // A value as a view of a layer; a signal's maps without their height.
  std::optional<View> ViewOf(const std::string& name) const;
  // The float values of a tensor in the file, however large (the values
  // kept otherwise are small ones'); empty where it holds none.
  std::vector<float> FileValues(const std::string& name) const;

  void SetView(const std::string& name, const View& given);

  // A layer made from `from`'s: of its kind of dimensions.
  int Derived(int layer, int from);

  static std::string Describe(const View& v);

  // Columns [from, from + width) of product p as a dense layer.
  int ProductLayer(size_t p, int64_t from, int64_t width);

  // v on a layer of the graph: the block of a product's columns it reads
  // made a dense layer. Its axes within a row (strides below the row's
  // length) must read a block of columns whole, the others every row.
  View Realize(View v);

  // v where a layer of the graph is: the class token's output (the first
  // position) or feature maps read as a sequence get a layer of their own.
  std::optional<View> Arrange(const View& v);

  // v as rows a layer reads along its last dimension (a product, a
  // normalization, an elementwise function): a view covering its layer
  // with rows whole.
  View Rows(View v);

  // v as the whole output of a layer, in the graph's layout.
  int AsLayer(const View& v);

  // How queries, keys or values are read by attention's products: v's
  // last two axes (rows, then a head's dimensions; swapped for the keys of
  // q k^T) over a [length, batch, units] layer, the others each example's
  // heads.
  struct HeadsOf {
    int layer = 0;
    int64_t dh = 0;
    std::vector<std::pair<int64_t, int64_t>> batch;  // size, stride
  };
  std::optional<HeadsOf> Heads(const View& given, bool keys);

  // Reshape's target: known, its 0s (copy) and -1 (the rest) resolved; a
  // target the exporter fixed at the file's batch (PyTorch writes the
  // batch times the heads as a number) has it replaced by the batch mapped:
  // in the one dimension that then spans the layer's batch and is the
  // smallest that does.
  View Reshape(const onnx::NodeProto& n, const View& given);
  // ShuffleNet's channel shuffle (torchvision's: maps [N, C, H, W] viewed
  // as [N, g, C / g, H, W], the two channel axes transposed, reshaped
  // back): `v` that view after the transpose, `to` the maps' shape (at
  // the graph's batch or the file's, -1 where the reshape puts the rest). The
  // layer that moves the channels, as a view of its whole output; nullopt
  // for any other view.
  std::optional<View> Shuffled(const View& v, const Shape& to);
  // A range of indices along one dimension after the batch, the others
  // whole (a `chunk` or `split` of the channels): a slice layer, made once
  // per range, as a view of its whole output; nullopt for any other view.
  std::optional<View> Sliced(const View& v);

  // The node reading `value` with operator `op` (and `also`, if given, as
  // another input), or -1.
  int ReaderOf(const std::string& value, const std::string& op,
               const std::string& also = "") const;

  // The input of node k other than `value`.
  std::string Other(int k, const std::string& value) const;

  // Whether v is a sequence layer's [L, N, E] read with its axes permuted
  // by `perm`: batch first, [N, L, E] ({1, 0, 2}); as a signal, [N, E, L]
  // ({1, 2, 0}).
  bool SequenceRead(const View& v, const std::vector<int64_t>& perm) const;
  // Whether v is a layer's [N, C, H, W] maps read channels-last.
  bool IsMaps(const View& v) const;

  const onnx::GraphProto& g_;
  const int64_t opset_;
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
  // layer -> its values' sources in the file, in Layer::values' order
  std::map<int, std::vector<OnnxParamSource>> sources_;
  // (layer, dimension, begin, size) -> the slice layer reading it
  std::map<std::tuple<int, int64_t, int64_t, int64_t>, int> slices_;
  int64_t batch_ = 0;
  int64_t file_batch_ = 0;  // the input's, as the file gives it (0: any)
  // The data is a signal, [N, L] or [N, C, L], read by 1-D convolutions
  // (speech's): the graph holds [N, C, 1, L] maps, which the file's nodes
  // see without their height (ViewOf).
  bool signal_ = false;
  // A weight-normed convolution's weights (PyTorch's weight_norm: v / |v|
  // x g, as ReduceL2, Div and Mul of the file's v and g): the Mul's output
  // -> v, g and the axis of the magnitudes.
  struct WeightNormOf {
    std::string v, g;
    int64_t axis = 0;
  };
  std::map<std::string, WeightNormOf> weight_norms_;
  bool failed_ = false;
  std::string why_;
  int64_t params_ = 0;
};

}  // namespace paradnn

#endif  // PARADNN_IMPORTERS_ONNX_MAPPER_H_
