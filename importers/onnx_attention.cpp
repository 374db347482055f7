// The table's entries of products by weights, attention, layer
// normalization and GELU as exporters write them (importers/
// onnx_operator_table.h).

#include <cmath>

#include "importers/onnx_operator_table.h"

namespace paradnn {

int OperatorTable::BiasAdd(const Mapper& m, int index, int64_t units) {
  const std::string& out = m.g_.node(index).output(0);
  if (m.readers_.count(out) == 0 || m.readers_.at(out) != 1) return -1;
  for (int k = index + 1; k < m.g_.node_size(); ++k) {
    const onnx::NodeProto& a = m.g_.node(k);
    if (a.op_type() != "Add" || a.input_size() != 2) continue;
    for (int side = 0; side < 2; ++side) {
      if (a.input(side) == out && m.IsInitializer(a.input(1 - side)) &&
          m.Count(a.input(1 - side)) == units) {
        return k;
      }
    }
  }
  return -1;
}

bool OperatorTable::ProductOfViews(Mapper& m, const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  const std::string& out = n.output(0);
  const std::string& b = n.input(1);
  if (m.IsInitializer(b) || m.transposed_.count(b)) {
    const std::optional<View> x = m.ViewOf(n.input(0));
    if (!x) return false;
    // A whole [batch, in] layer: the dense layer of CNNs' classifiers.
    if (!m.views_.count(n.input(0)) && m.ShapeOf(x->layer).size() == 2 &&
        m.IsInitializer(b)) {
      return false;
    }
    const View rows = m.Rows(*x);
    const bool gemm_t = op == "Gemm" && Attributes(n).Int("transB", 0) != 0;
    Mapper::Product p;
    p.weight = m.IsInitializer(b) ? b : m.transposed_.at(b);
    p.rows_are_units = m.IsInitializer(b) ? gemm_t : !gemm_t;
    const std::vector<int64_t>& w = m.InitializerDims(p.weight);
    const int64_t units = p.rows_are_units ? w[0] : w[1];
    const int64_t in = p.rows_are_units ? w[1] : w[0];
    if (rows.shape.back() != in) {
      throw GraphError("a product of " + ToString(rows.shape) + " by " +
                       ToString(w));
    }
    p.x = rows.layer;
    p.shape = m.LayerShape(rows.layer);
    p.shape.back() = units;
    m.params_ += m.Count(p.weight);
    if (op == "Gemm" && n.input_size() > 2 && !n.input(2).empty()) {
      p.bias = n.input(2);
      m.params_ += m.Count(p.bias);
    }
    m.products_.push_back(std::move(p));
    const int id = Mapper::ProductId(m.products_.size() - 1);
    if (m.BatchAxis(rows.layer) != 0) {
      m.batch_axis_[id] = m.BatchAxis(rows.layer);
    }
    m.SetView(out, Moved(rows, id, in, units));
    return true;
  }
  if (op != "MatMul") return false;
  if (m.probs_.count(n.input(0))) {
    const Mapper::Scores& s = m.probs_.at(n.input(0));
    const std::optional<View> values = m.ViewOf(b);
    const std::optional<Mapper::HeadsOf> q = m.Heads(s.q, false),
                                         k = m.Heads(s.k, true);
    const std::optional<Mapper::HeadsOf> v =
        values ? m.Heads(*values, false) : std::nullopt;
    if (!q || !k || !v || q->dh != k->dh || q->dh != v->dh ||
        q->batch != k->batch || q->batch != v->batch ||
        m.LayerShape(q->layer) != m.LayerShape(k->layer) ||
        m.LayerShape(q->layer) != m.LayerShape(v->layer) ||
        values->scale != 1) {
      throw GraphError(
          "softmax(q k^T) v whose queries, keys and values "
          "are not the heads of [length, batch, units] "
          "layers alike");
    }
    const double scale = s.q.scale * s.k.scale;
    if (std::abs(scale * std::sqrt(static_cast<double>(q->dh)) - 1) > 1e-5) {
      throw GraphError("attention's scores scaled by " + std::to_string(scale) +
                       ", not 1/sqrt(" + std::to_string(q->dh) + ")");
    }
    const int64_t units = m.LayerShape(q->layer)[2];
    const int att = m.Derived(
        m.graph_.Attention(q->layer, k->layer, v->layer, units / q->dh, false),
        q->layer);
    View o = m.Realize(*values);
    o.layer = att;
    m.SetView(out, o);
    return true;
  }
  const std::optional<View> x = m.ViewOf(n.input(0)), y = m.ViewOf(b);
  if (!x || !y) return false;
  m.scores_[out] = {*x, *y};
  return true;
}

void OperatorTable::Dense(Mapper& m, int index, const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  const int x = Input(m, n);
  if (!m.IsInitializer(n.input(1)) ||
      m.InitializerDims(n.input(1)).size() != 2) {
    throw GraphError("a product of " + ToString(m.ShapeOf(x)) +
                     " by other than a matrix in the file");
  }
  const std::vector<int64_t>& w = m.InitializerDims(n.input(1));
  const bool transposed = op == "Gemm" && Attributes(n).Int("transB", 0) != 0;
  const int64_t units = transposed ? w[0] : w[1];
  const int64_t in = transposed ? w[1] : w[0];
  if (m.ShapeOf(x).size() != 2 || m.ShapeOf(x)[1] != in) {
    throw GraphError("a product of " + ToString(m.ShapeOf(x)) + " by " +
                     ToString(w) + ": the graph's dense layer reads [batch, " +
                     std::to_string(in) + "]");
  }
  m.params_ += m.Count(n.input(1));
  bool bias = op == "Gemm" && n.input_size() > 2 && !n.input(2).empty();
  int bias_add = -1;
  if (op == "MatMul") {
    bias_add = BiasAdd(m, index, units);
    bias = bias_add >= 0;
  }
  if (bias) m.params_ += units;
  const int dense = m.graph_.Dense(x, units, bias);
  // The dense layer's weights are [units, in]: Gemm's B is that where
  // transposed, MatMul's is [in, units].
  std::vector<std::pair<std::string, bool>> tensors = {
      {n.input(1), !transposed}};
  if (bias_add >= 0) {
    const onnx::NodeProto& add = m.g_.node(bias_add);
    tensors.push_back({add.input(add.input(0) == n.output(0) ? 1 : 0), false});
  } else if (bias) {
    tensors.push_back({n.input(2), false});
  }
  m.Give(dense, tensors);
  m.Bind(n.output(0), dense);
  if (bias_add >= 0) {
    m.fused_.insert(bias_add);
    m.Bind(m.g_.node(bias_add).output(0), dense);
  }
}

View OperatorTable::Normalized(Mapper& m, const View& v, double epsilon,
                               const std::string& scale,
                               const std::string& shift) {
  m.params_ += m.Count(scale) + m.Count(shift);
  if (m.IsMaps(v)) {
    const int norm = m.graph_.LayerNorm(v.layer, epsilon, 1);
    m.Give(norm, {{scale, false}, {shift, false}});
    return ChannelsLast(norm, m.ShapeOf(norm));
  }
  const View rows = m.Rows(v);
  const int norm =
      m.Derived(m.graph_.LayerNorm(rows.layer, epsilon), rows.layer);
  m.Give(norm, {{scale, false}, {shift, false}});
  const int64_t units = rows.shape.back();
  return Moved(rows, norm, units, units);
}

int OperatorTable::GeluNodes(Mapper& m, int index) {
  const auto& g = m.g_;
  const onnx::NodeProto& div = g.node(index);
  const std::string& x = div.input(0);
  const std::optional<double> root = m.Scalar(div.input(1));
  if (!root || std::abs(*root - std::sqrt(2.0)) > 1e-6) return -1;
  const int erf = m.ReaderOf(div.output(0), "Erf");
  if (erf < 0) return -1;
  const int one = m.ReaderOf(g.node(erf).output(0), "Add");
  if (one < 0 || m.Scalar(m.Other(one, g.node(erf).output(0))) != 1.0) {
    return -1;
  }
  const int times = m.ReaderOf(g.node(one).output(0), "Mul", x);
  if (times < 0) return -1;
  const int half = m.ReaderOf(g.node(times).output(0), "Mul");
  if (half < 0 || m.Scalar(m.Other(half, g.node(times).output(0))) != 0.5) {
    return -1;
  }
  for (int k : {erf, one, times, half}) m.fused_.insert(k);
  return half;
}

Operator OperatorTable::Div() {
  Operator op =
      Entry("Div", 7, "`gelu`; nothing",
            "by sqrt 2, then `Erf`, `Add` 1, `Mul` by the input, `Mul` by 1/2: "
            "GELU as exporters write it (of feature maps read channels-last, a "
            "`gelu` of the maps); of a view by a known scalar, the view scaled "
            "(attention's scores); of known values, computed");
  op.fold = [](const Mapper& m, const onnx::NodeProto& n) {
    const bool integer =
        m.KnownOf(n.input(0))->integer && m.KnownOf(n.input(1))->integer;
    return std::optional<Known>(
        Elementwise(m, n, 0, false, [integer](double p, double q, size_t) {
          return integer ? std::trunc(p / q) : p / q;
        }));
  };
  op.apply = [](Mapper& m, int index, const onnx::NodeProto& n) {
    const View v = ViewInput(m, n);
    const int gelu = GeluNodes(m, index);
    if (gelu >= 0 && m.IsMaps(v)) {
      const int layer = m.graph_.Gelu(v.layer);
      m.SetView(m.g_.node(gelu).output(0),
                ChannelsLast(layer, m.ShapeOf(layer)));
    } else if (gelu >= 0) {
      const View rows = m.Rows(v);
      const int layer = m.Derived(m.graph_.Gelu(rows.layer), rows.layer);
      const int64_t units = rows.shape.back();
      m.SetView(m.g_.node(gelu).output(0), Moved(rows, layer, units, units));
    } else if (!Scaled(m, n, true)) {
      Alone(m, index, n);
    }
  };
  return op;
}

Operator OperatorTable::Erf() {
  Operator op = Entry("Erf", 9, "`gelu`", "within GELU's nodes (see `Div`)");
  op.apply = Alone;
  return op;
}

Operator OperatorTable::Gemm() {
  Operator op =
      Entry("Gemm", 7, "`dense`",
            "`alpha` = `beta` = 1, `transA` 0, B a matrix in the file (or a "
            "`Transpose` of one); C, if any, its bias. Of a view, made when "
            "read (see `MatMul`)");
  op.check = [](const Mapper& m, const onnx::NodeProto& n) {
    const Attributes a(n);
    const std::string where = m.Where(n);
    if (a.Float("alpha", 1) != 1 || a.Float("beta", 1) != 1 ||
        a.Int("transA", 0) != 0) {
      return where + ": alpha, beta or transA other than the product's";
    }
    if (!m.IsInitializer(n.input(1)) ||
        m.InitializerDims(n.input(1)).size() != 2) {
      return where + ": B is not a matrix in the file";
    }
    return std::string();
  };
  op.apply = [](Mapper& m, int index, const onnx::NodeProto& n) {
    if (!ProductOfViews(m, n)) Dense(m, index, n);
  };
  return op;
}

Operator OperatorTable::LayerNormalization() {
  Operator op =
      Entry("LayerNormalization", 17, "`layernorm`",
            "over the last axis, its scale and shift in the file, the epsilon "
            "the file's; of feature maps read channels-last, over their "
            "channels (see `ReduceMean`)");
  op.apply = [](Mapper& m, int, const onnx::NodeProto& n) {
    const Attributes a(n);
    const View v = ViewInput(m, n);
    if (n.input_size() < 3 || !m.IsInitializer(n.input(1)) ||
        !m.IsInitializer(n.input(2)) ||
        static_cast<size_t>(Mapper::Axis(a.Int("axis", -1), v.shape.size())) +
                1 !=
            v.shape.size()) {
      throw GraphError(
          "a layer normalization other than over the last "
          "axis with a scale and a shift");
    }
    m.SetView(n.output(0),
              Normalized(m, v, AsWritten(a.Float("epsilon", 1e-5f)), n.input(1),
                         n.input(2)));
  };
  return op;
}

bool OperatorTable::Pointwise(Mapper& m, int index, const onnx::NodeProto& n) {
  const std::optional<View> x = m.ViewOf(n.input(0));
  const std::string& b = n.input(1);
  if (!x || !m.IsMaps(*x) || (!m.IsInitializer(b) && !m.transposed_.count(b))) {
    return false;
  }
  // MatMul's B is [in, units]; the exporter's transpose of a [units, in]
  // initializer (a linear layer's weights) is one already laid out as
  // the convolution's [units, in, 1, 1].
  const bool rows_are_units = !m.IsInitializer(b);
  const std::string& w = rows_are_units ? m.transposed_.at(b) : b;
  const std::vector<int64_t>& dims = m.InitializerDims(w);
  const int64_t units = rows_are_units ? dims[0] : dims[1];
  const int64_t in = rows_are_units ? dims[1] : dims[0];
  const paradnn::Shape& maps = m.ShapeOf(x->layer);
  if (in != maps[1]) {
    throw GraphError("a product of " + Mapper::Describe(*x) + " by " +
                     ToString(dims));
  }
  const int bias_add = BiasAdd(m, index, units);
  m.params_ += m.Count(w) + (bias_add >= 0 ? units : 0);
  const int conv = m.graph_.Conv2d(x->layer, units, 1, 1, 0, 1, bias_add >= 0);
  std::vector<std::pair<std::string, bool>> tensors = {{w, !rows_are_units}};
  const View out = ChannelsLast(conv, m.ShapeOf(conv));
  m.SetView(n.output(0), out);
  if (bias_add >= 0) {
    const onnx::NodeProto& add = m.g_.node(bias_add);
    tensors.push_back({m.Other(bias_add, n.output(0)), false});
    m.fused_.insert(bias_add);
    m.SetView(add.output(0), out);
  }
  m.Give(conv, tensors);
  return true;
}

Operator OperatorTable::MatMul() {
  Operator op = Entry(
      "MatMul", 1, "`dense`; `conv2d`; `attention`",
      "by a matrix in the file (or a `Transpose` of one): of a `[batch, "
      "in]` layer, a dense layer, an `Add` of a vector of its units to its "
      "output, read by nothing else, its bias; of a view, a dense layer "
      "made when read, each block of its columns read on its own a dense "
      "layer of its own (queries, keys and values cut from one packed "
      "projection: three); of feature maps read channels-last, a 1x1 "
      "convolution (ConvNeXt's linear layers over `[N, H, W, C]`), its "
      "output read channels-last. Of two views, `softmax(q k^T s) v`: "
      "attention, q, k and v the heads of `[length, batch, units]` layers "
      "alike (each example's heads in the leading axes, their rows and "
      "dimensions last), the scales s on q and k multiplying to "
      "1/sqrt(units / heads), the softmax over the keys; no mask");
  op.apply = [](Mapper& m, int index, const onnx::NodeProto& n) {
    if (Pointwise(m, index, n) || ProductOfViews(m, n)) return;
    Dense(m, index, n);
  };
  return op;
}

Operator OperatorTable::Pow() {
  Operator op = Entry("Pow", 7, "`layernorm`",
                      "within a layer normalization's nodes (see "
                      "`ReduceMean`)");
  op.apply = Alone;
  return op;
}

int OperatorTable::LayerNormNodes(Mapper& m, int index, double* epsilon,
                                  std::string* scale, std::string* shift) {
  const auto& g = m.g_;
  const std::string& x = g.node(index).input(0);
  const int sub = m.ReaderOf(g.node(index).output(0), "Sub", x);
  if (sub < 0 || g.node(sub).input(0) != x) return -1;
  const std::string& d = g.node(sub).output(0);
  const int pow = m.ReaderOf(d, "Pow");
  if (pow < 0 || m.Scalar(g.node(pow).input(1)) != 2.0) return -1;
  const int var = m.ReaderOf(g.node(pow).output(0), "ReduceMean");
  if (var < 0) return -1;
  const int add = m.ReaderOf(g.node(var).output(0), "Add");
  if (add < 0) return -1;
  const std::optional<double> eps =
      m.Scalar(m.Other(add, g.node(var).output(0)));
  const int sqrt = m.ReaderOf(g.node(add).output(0), "Sqrt");
  if (!eps || sqrt < 0) return -1;
  const int div = m.ReaderOf(g.node(sqrt).output(0), "Div", d);
  if (div < 0) return -1;
  const int mul = m.ReaderOf(g.node(div).output(0), "Mul");
  if (mul < 0) return -1;
  const int bias = m.ReaderOf(g.node(mul).output(0), "Add");
  if (bias < 0) return -1;
  *scale = m.Other(mul, g.node(div).output(0));
  *shift = m.Other(bias, g.node(mul).output(0));
  if (!m.IsInitializer(*scale) || !m.IsInitializer(*shift)) return -1;
  *epsilon = AsWritten(static_cast<float>(*eps));
  for (int k : {sub, pow, var, add, sqrt, div, mul, bias}) m.fused_.insert(k);
  return bias;
}

std::vector<int64_t> OperatorTable::MeanAxes(const Mapper& m,
                                             const onnx::NodeProto& n) {
  if (n.input_size() > 1 && !n.input(1).empty()) {
    const Known* k = m.KnownOf(n.input(1));
    if (k == nullptr) return {};
    return {k->v.begin(), k->v.end()};
  }
  return Attributes(n).Ints("axes");
}

Operator OperatorTable::ReduceMean() {
  Operator op = Entry(
      "ReduceMean", 1, "`avgpool`; `layernorm`",
      "over the feature maps' height and width (axes 2 and 3), a global "
      "pool; over the last axis, then `Sub`, `Pow` 2, `ReduceMean`, `Add` "
      "epsilon, `Sqrt`, `Div`, `Mul` by a scale, `Add` of a shift: a "
      "layer normalization as exporters before opset 17 write it, the "
      "scale and shift in the file, the epsilon the file's; of feature "
      "maps `[N, C, H, W]` read channels-last (`Transpose` 0, 2, 3, 1: "
      "ConvNeXt's), a `layernorm` over their channels (axis 1), its "
      "output read channels-last again");
  op.check = [](const Mapper& m, const onnx::NodeProto& n) {
    std::vector<int64_t> axes = MeanAxes(m, n);
    if (axes == std::vector<int64_t>{-1}) return std::string();
    for (int64_t& x : axes) x = x < 0 ? x + 4 : x;
    std::sort(axes.begin(), axes.end());
    return axes == std::vector<int64_t>{2, 3}
               ? std::string()
               : m.Where(n) + ": a mean over axes " + ToString(MeanAxes(m, n)) +
                     " (the graph's is a global pool's, over height and "
                     "width)";
  };
  op.apply = [](Mapper& m, int index, const onnx::NodeProto& n) {
    if (MeanAxes(m, n) != std::vector<int64_t>{-1}) {
      m.Bind(n.output(0), m.graph_.GlobalAvgPool(Input(m, n)));
      return;
    }
    const View v = ViewInput(m, n);
    double epsilon = 0;
    std::string scale, shift;
    const int last = LayerNormNodes(m, index, &epsilon, &scale, &shift);
    if (last < 0) {
      throw GraphError(
          "a mean over the last axis that is not a layer "
          "normalization's");
    }
    m.SetView(m.g_.node(last).output(0),
              Normalized(m, v, epsilon, scale, shift));
  };
  return op;
}

Operator OperatorTable::Softmax() {
  Operator op = Entry("Softmax", 13, "`attention`",
                      "of attention's scores, over the keys (see `MatMul`)");
  op.apply = [](Mapper& m, int index, const onnx::NodeProto& n) {
    const auto scores = m.scores_.find(n.input(0));
    if (scores == m.scores_.end()) return Alone(m, index, n);
    const int64_t rank = static_cast<int64_t>(scores->second.q.shape.size());
    if (Mapper::Axis(Attributes(n).Int("axis", -1), rank) != rank - 1) {
      throw GraphError("a softmax of attention's scores over another axis");
    }
    m.probs_[n.output(0)] = scores->second;
  };
  return op;
}

}  // namespace paradnn
