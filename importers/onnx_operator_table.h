// The table of ONNX operators as the importer builds it (importers/
// onnx_operators.h): one static function an entry, each returning its
// operator's row and functions, and the helpers they share. The Mapper's
// friend, so that each entry reads and extends the shared context.
// Defined by kind: importers/onnx_operators.cpp the table and the shared
// helpers, onnx_layers.cpp the operators that are CNNs' layers,
// onnx_arithmetic.cpp shape arithmetic and views, onnx_attention.cpp
// products, attention, layer normalization and GELU.
#ifndef PARADNN_IMPORTERS_ONNX_OPERATOR_TABLE_H_
#define PARADNN_IMPORTERS_ONNX_OPERATOR_TABLE_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "importers/onnx_mapper.h"

namespace paradnn {

struct OperatorTable {
  // Whether every value of v is `value`.
  static bool AllEqual(const std::vector<int64_t>& v, int64_t value);

  // The one value of a list whose values are all equal (a square window, a
  // symmetric padding), `otherwise` where it is empty, or -1.
  static int64_t Uniform(const std::vector<int64_t>& v, int64_t otherwise);

  // ---- Shared by entries of several files (onnx_operators.cpp).

  // An entry with its row of the table.
  static Operator Entry(const char* type, int64_t since, const char* onto,
                        const char* when);

  // The layer making input i; GraphError where none does.
  static int Input(Mapper& m, const onnx::NodeProto& n, int i = 0);

  // Input 0 as a view of a layer; GraphError where no layer makes it.
  static View ViewInput(const Mapper& m, const onnx::NodeProto& n);

  // The input passed on: a view as a view, a layer as the layer.
  static void PassOn(Mapper& m, int, const onnx::NodeProto& n);

  // A node that is one layer of the graph's, built by `build` from its
  // input.
  template <int (Graph::*build)(int)>
  static void OneLayer(Mapper& m, int, const onnx::NodeProto& n) {
    m.Bind(n.output(0), (m.graph_.*build)(Input(m, n)));
  }

  // An operator that is shape arithmetic or part of a pattern (a layer
  // normalization's, GELU's) met on its own.
  static void Alone(Mapper& m, int, const onnx::NodeProto& n);

  // The same values with other dimensions (a squeeze, a reshape).
  static Known SameValues(const Mapper& m, const onnx::NodeProto& n);

  // Elementwise arithmetic of known values, broadcast as ONNX does for a
  // scalar; inputs from `first` (Where's condition is input 0).
  template <typename F>
  static Known Elementwise(const Mapper& m, const onnx::NodeProto& n, int first,
                           bool integer, F f) {
    const Known& x = *m.KnownOf(n.input(first));
    const Known& y = *m.KnownOf(n.input(first + 1));
    auto at = [](const Known& k, size_t i) {
      return k.v.size() == 1 ? k.v[0] : k.v.at(i);
    };
    Known out;
    out.dims = x.v.size() >= y.v.size() ? x.dims : y.dims;
    out.integer = integer || (x.integer && y.integer);
    const size_t size = std::max(x.v.size(), y.v.size());
    for (size_t i = 0; i < size; ++i) out.v.push_back(f(at(x, i), at(y, i), i));
    return out;
  }

  // A view scaled by a known factor (attention's scores by 1/sqrt(d));
  // false where the factor is not known.
  static bool Scaled(Mapper& m, const onnx::NodeProto& n, bool divide);

  // A Reshape to [batch, the rest]: its target shape is in the file, two
  // values, the second -1 or the rest's size.
  static bool ReshapeFlattens(const Mapper& m, const onnx::NodeProto& n,
                              const paradnn::Shape& in);

  // Maps [N, C, H, W] or a layer already [batch, units] (after a global
  // pool: nothing to flatten) flattened to [batch, the rest].
  static void Flattened(Mapper& m, const onnx::NodeProto& n, bool flattens);

  static std::vector<Operator> All();

  // ---- CNNs' layers (onnx_layers.cpp).

  // A window's attributes the graph cannot express (a convolution's of
  // `kernel`, or a pool's, which is `square`), or "": one stride for both
  // axes, the same padding before and after each axis (and on all four
  // sides of a pool's square); a convolution's one dilation for both axes,
  // a pool's none.
  static std::string Window(const Mapper& m, const onnx::NodeProto& n,
                            const std::vector<int64_t>& kernel, bool square);
  // A 3-D convolution's attributes that the graph takes: "" or why not.
  static std::string Window3d(const Mapper& m, const onnx::NodeProto& n);

  static void Pool(Mapper& m, int, const onnx::NodeProto& n);

  // An add of views: a product's bias, a positional table over a sequence,
  // or two views of layers laid out alike. False for two whole layers.
  static bool AddOfViews(Mapper& m, const onnx::NodeProto& n);

  static Operator Add();

  static Operator AveragePool();

  static Operator BatchNormalization();

  // A Clip's bound `i` (1: min, 2: max) from its input, or from its
  // attribute before opset 11; nullopt where none is given, NaN where the
  // input is not one known value.
  static std::optional<double> ClipBound(const Mapper& m,
                                         const onnx::NodeProto& n, int i);

  static Operator Clip();

  // A class token (a [1, 1, units] tensor expanded over the batch) joined
  // before a sequence along its positions.
  static void ClassToken(Mapper& m, const onnx::NodeProto& n);

  static Operator Concat();

  static Operator Conv();

  static Operator Dropout();

  static Operator Flatten();

  static Operator GlobalAveragePool();

  static Operator HardSigmoid();

  static Operator HardSwish();

  static Operator Identity();

  static Operator MaxPool();

  // A product of [N, C, H, W] maps by a constant of one value per channel
  // ([C, 1, 1]: ConvNeXt's layer scale). False where neither input is a
  // constant of more than one value.
  static bool LayerScale(Mapper& m, const onnx::NodeProto& n);

  // An initializer of one value per channel of maps: [C, 1, 1] or
  // [1, C, 1, 1].
  static bool PerChannel(const Mapper& m, const std::string& initializer);

  static Operator Mul();

  // Pad's widths, [the start of each axis..., the end of each axis...],
  // where they are known: in the file, or computed from shapes (as Swin's
  // padding to whole windows is) once the nodes before map.
  static const std::vector<double>* PadWidths(const Mapper& m,
                                              const onnx::NodeProto& n);

  // The AveragePool that alone reads Pad node n's output and pads nothing
  // itself, or -1.
  static int PaddedPool(const Mapper& m, const onnx::NodeProto& n);

  static Operator Pad();

  static Operator Relu();

  static Operator Resize();

  static Operator Sigmoid();

  // ---- Shape arithmetic and views (onnx_arithmetic.cpp).

  static Operator Cast();

  static Operator Constant();

  static Operator ConstantOfShape();

  static Operator Equal();

  static Operator Expand();

  static Operator Gather();

  static Operator Mod();

  static Operator Neg();

  static Operator Reshape();

  static Operator Shape();

  static Operator Slice();

  static Operator Sqrt();

  // Squeeze and Unsqueeze: the axes `name` removes or inserts, an
  // attribute before opset 13, an input from it.
  static Operator Squeezes(const char* type, bool insert);

  static Operator Sub();

  static Operator Transpose();

  static Operator Where();

  // ---- Products, attention, layer normalization, GELU (onnx_attention.cpp).

  // A following Add that adds an initializer of `units` values to the
  // output of node `index` and nothing else reads it: a bias, folded into
  // the dense layer.
  static int BiasAdd(const Mapper& m, int index, int64_t units);

  // A product by weights of a view (a dense layer, made when read), or of
  // two views (attention's scores, or its weighted values). False where
  // it is a whole [batch, in] layer's product by weights (a dense layer of
  // its own) or not a product of views.
  static bool ProductOfViews(Mapper& m, const onnx::NodeProto& n);

  // A product by a weight matrix of a whole [batch, in] layer: a dense
  // layer, its bias Gemm's C or the Add after a MatMul.
  static void Dense(Mapper& m, int index, const onnx::NodeProto& n);

  // A layer normalization over v's last axis, its scale and shift the
  // file's: of a layer's rows, or of maps' channels where v reads them
  // channels-last (ConvNeXt's). The normalized values as v arranged them.
  static View Normalized(Mapper& m, const View& v, double epsilon,
                         const std::string& scale, const std::string& shift);

  // GELU as the exporter writes it: x * (erf(x / sqrt 2) + 1) * 0.5, from
  // the division. The last node's index, or -1.
  static int GeluNodes(Mapper& m, int index);

  static Operator Div();

  static Operator Erf();

  static Operator Gemm();

  static Operator LayerNormalization();

  // A product by weights of maps read channels-last (ConvNeXt's linear
  // layers over [N, H, W, C]): a 1x1 convolution, its bias the Add after
  // it. False for any other product.
  static bool Pointwise(Mapper& m, int index, const onnx::NodeProto& n);

  static Operator MatMul();

  static Operator Pow();

  // A layer normalization as PyTorch's exporter writes it before opset 17:
  // from the mean over the last axis of x, nine nodes. The last node's
  // index, or -1 where they are not that.
  static int LayerNormNodes(Mapper& m, int index, double* epsilon,
                            std::string* scale, std::string* shift);

  // ReduceMean's axes: its attribute, or its second input from opset 18.
  static std::vector<int64_t> MeanAxes(const Mapper& m,
                                       const onnx::NodeProto& n);

  static Operator ReduceMean();

  static Operator Softmax();

  // ---- Speech's (importers/onnx_speech.cpp).

  // Why a 1-D convolution's window does not fit the graph's, or "".
  static std::string Window1d(const Mapper& m, const onnx::NodeProto& n);

  // The file's tensor a value is, directly or through an Unsqueeze of it
  // (that node's index, else -1); "" for any other value.
  struct FileTensorOf {
    std::string tensor;
    int unsqueeze = -1;
  };
  static FileTensorOf FileTensor(const Mapper& m, const std::string& value);

  // A weight norm as PyTorch exports it, v / ReduceL2(v) x g read by a
  // convolution as its weights, from its ReduceL2 node: the Div and Mul.
  struct WeightNormNodes {
    int div = -1, mul = -1;
    Mapper::WeightNormOf of;
  };
  static std::optional<WeightNormNodes> WeightNormAt(const Mapper& m,
                                                     const onnx::NodeProto& n);

  static Operator InstanceNormalization();

  static Operator ReduceL2();

  static Operator ReduceMax();
};

}  // namespace paradnn

#endif  // PARADNN_IMPORTERS_ONNX_OPERATOR_TABLE_H_
