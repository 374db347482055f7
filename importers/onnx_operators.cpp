// The table of ONNX operators (importers/onnx_operators.h): each entry
// says what of its operator the layer graph takes, and maps its nodes
// with the Mapper's shared context. An entry's functions are its own;
// what several share (windows, views, products) is a helper here or a
// method of the Mapper.

#include "importers/onnx_operators.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "importers/onnx_mapper.h"

namespace paradnn {

namespace {

bool AllEqual(const std::vector<int64_t>& v, int64_t value) {
  return std::all_of(v.begin(), v.end(), [&](int64_t x) { return x == value; });
}

// The one value of a list whose values are all equal (a square window, a
// symmetric padding), `otherwise` where it is empty, or -1.
int64_t Uniform(const std::vector<int64_t>& v, int64_t otherwise) {
  if (v.empty()) return otherwise;
  return AllEqual(v, v[0]) ? v[0] : -1;
}

}  // namespace

// The entries, one static function each, and their helpers: the Mapper's
// friend, so that each entry reads and extends the shared context.
struct OperatorTable {
  // ---- Helpers of several entries.

  // An entry with its row of the table.
  static Operator Entry(const char* type, int64_t since, const char* onto,
                        const char* when) {
    Operator op;
    op.info = {type, since, onto, when};
    return op;
  }

  // The layer making input i; GraphError where none does.
  static int Input(Mapper& m, const onnx::NodeProto& n, int i = 0) {
    const int x = m.DataInput(n, i);
    if (x < 0) {
      throw GraphError("its input " + n.input(i) + " is made by no layer");
    }
    return x;
  }

  // Input 0 as a view of a layer; GraphError where no layer makes it.
  static View ViewInput(const Mapper& m, const onnx::NodeProto& n) {
    const std::optional<View> v = m.ViewOf(n.input(0));
    if (!v) {
      throw GraphError("its input " + n.input(0) + " is made by no layer");
    }
    return *v;
  }

  // The input passed on: a view as a view, a layer as the layer.
  static void PassOn(Mapper& m, int, const onnx::NodeProto& n) {
    const auto view = m.views_.find(n.input(0));
    if (view != m.views_.end()) {
      m.views_[n.output(0)] = view->second;
    } else {
      m.Bind(n.output(0), Input(m, n));
    }
  }

  // A node that is one layer of the graph's, built by `build` from its
  // input.
  template <int (Graph::*build)(int)>
  static void OneLayer(Mapper& m, int, const onnx::NodeProto& n) {
    m.Bind(n.output(0), (m.graph_.*build)(Input(m, n)));
  }

  // An operator that is shape arithmetic or part of a pattern (a layer
  // normalization's, GELU's) met on its own.
  static void Alone(Mapper& m, int, const onnx::NodeProto& n) {
    throw GraphError("a " + n.op_type() + " of " +
                     Mapper::Describe(ViewInput(m, n)) +
                     " that no layer of the graph expresses");
  }

  // The same values with other dimensions (a squeeze, a reshape).
  static Known SameValues(const Mapper& m, const onnx::NodeProto& n) {
    return *m.KnownOf(n.input(0));
  }

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

  // A window's attributes the graph cannot express (a convolution's of
  // `kernel`, or a pool's, which is `square`), or "": one stride for both
  // axes, the same padding before and after each axis (and on all four
  // sides of a pool's square); a convolution's one dilation for both axes,
  // a pool's none.
  static std::string Window(const Mapper& m, const onnx::NodeProto& n,
                            const std::vector<int64_t>& kernel, bool square) {
    const Attributes a(n);
    const std::string where = m.Where(n);
    const std::vector<int64_t> pads = a.Ints("pads");
    const bool fits =
        kernel.size() == 2 && Uniform(a.Ints("strides"), 1) >= 0 &&
        (square ? kernel[0] == kernel[1] && Uniform(pads, 0) >= 0
                : pads.empty() || (pads.size() == 4 && pads[0] == pads[2] &&
                                   pads[1] == pads[3]));
    if (!fits) {
      return where + ": window " + ToString(kernel) + ", strides " +
             ToString(a.Ints("strides")) + ", pads " + ToString(pads) +
             (square ? ": the graph's pools are square, the same on every side"
                     : ": the graph's convolutions have one stride and the "
                       "same padding before and after each axis");
    }
    if (square ? !AllEqual(a.Ints("dilations"), 1)
               : Uniform(a.Ints("dilations"), 1) < 1) {
      return where + ": dilations " + ToString(a.Ints("dilations"));
    }
    const std::string pad = a.String("auto_pad");
    if (!pad.empty() && pad != "NOTSET") return where + ": auto_pad " + pad;
    return "";
  }

  static void Pool(Mapper& m, int, const onnx::NodeProto& n) {
    const Attributes a(n);
    const int x = Input(m, n);
    const int64_t k = a.Ints("kernel_shape")[0];
    const int64_t stride = Uniform(a.Ints("strides"), 1);
    const int64_t pad = Uniform(a.Ints("pads"), 0);
    m.Bind(n.output(0),
           n.op_type() == "MaxPool"
               ? m.graph_.MaxPool(x, k, stride, pad, a.Int("ceil_mode", 0) != 0)
               : m.graph_.AvgPool(x, k, stride, pad,
                                  a.Int("count_include_pad", 0) != 0));
  }

  // A following Add that adds an initializer of `units` values to the
  // output of node `index` and nothing else reads it: a bias, folded into
  // the dense layer.
  static int BiasAdd(const Mapper& m, int index, int64_t units) {
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

  // A product by weights of a view (a dense layer, made when read), or of
  // two views (attention's scores, or its weighted values). False where
  // it is a whole [batch, in] layer's product by weights (a dense layer of
  // its own) or not a product of views.
  static bool ProductOfViews(Mapper& m, const onnx::NodeProto& n) {
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
        throw GraphError("attention's scores scaled by " +
                         std::to_string(scale) + ", not 1/sqrt(" +
                         std::to_string(q->dh) + ")");
      }
      const int64_t units = m.LayerShape(q->layer)[2];
      const int att = m.Derived(m.graph_.Attention(q->layer, k->layer, v->layer,
                                                   units / q->dh, false),
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

  // A product by a weight matrix of a whole [batch, in] layer: a dense
  // layer, its bias Gemm's C or the Add after a MatMul.
  static void Dense(Mapper& m, int index, const onnx::NodeProto& n) {
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
                       ToString(w) +
                       ": the graph's dense layer reads [batch, " +
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
      tensors.push_back(
          {add.input(add.input(0) == n.output(0) ? 1 : 0), false});
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

  // A layer normalization over v's last axis, its scale and shift the
  // file's: of a layer's rows, or of maps' channels where v reads them
  // channels-last (ConvNeXt's). The normalized values as v arranged them.
  static View Normalized(Mapper& m, const View& v, double epsilon,
                         const std::string& scale, const std::string& shift) {
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

  // A view scaled by a known factor (attention's scores by 1/sqrt(d));
  // false where the factor is not known.
  static bool Scaled(Mapper& m, const onnx::NodeProto& n, bool divide) {
    const std::optional<double> factor = m.Scalar(n.input(1));
    if (!factor) return false;
    View s = ViewInput(m, n);
    s.scale *= divide ? 1 / *factor : *factor;
    m.SetView(n.output(0), s);
    return true;
  }

  // A Reshape to [batch, the rest]: its target shape is in the file, two
  // values, the second -1 or the rest's size.
  static bool ReshapeFlattens(const Mapper& m, const onnx::NodeProto& n,
                              const paradnn::Shape& in) {
    const Known* target = m.KnownOf(n.input(1));
    if (target == nullptr || target->v.size() != 2) return false;
    const double rest = target->v[1];
    return rest == -1 || rest == static_cast<double>(Elements(in) / in[0]);
  }

  // Maps [N, C, H, W] or a layer already [batch, units] (after a global
  // pool: nothing to flatten) flattened to [batch, the rest].
  static void Flattened(Mapper& m, const onnx::NodeProto& n, bool flattens) {
    const int x = Input(m, n);
    const paradnn::Shape& in = m.ShapeOf(x);
    if (!flattens) {
      throw GraphError("a reshape of " + ToString(in) +
                       " other than to [batch, the rest]");
    }
    m.Bind(n.output(0), in.size() == 2 ? x : m.graph_.Flatten(x));
  }

  // ---- The entries, by operator type, each after what it alone uses.

  // An add of views: a product's bias, a positional table over a sequence,
  // or two views of layers laid out alike. False for two whole layers.
  static bool AddOfViews(Mapper& m, const onnx::NodeProto& n) {
    const std::string& out = n.output(0);
    for (int side = 0; side < 2; ++side) {
      const std::string& t = n.input(1 - side);
      const std::optional<View> v = m.ViewOf(n.input(side));
      if (!v || !m.IsInitializer(t)) continue;
      if (v->layer < 0) {
        Mapper::Product& p = m.products_[-v->layer - 1];
        if (p.bias.empty() && p.made.empty() && m.Count(t) == p.shape.back()) {
          p.bias = t;
          m.params_ += m.Count(t);
          m.SetView(out, *v);
          return true;
        }
      }
      const View rows = m.Rows(*v);
      const paradnn::Shape s = m.LayerShape(rows.layer);
      const std::vector<int64_t>& dims = m.InitializerDims(t);
      if (s.size() != 3 || m.BatchAxis(rows.layer) != 1 ||
          dims.size() != rows.shape.size()) {
        continue;
      }
      // The table broadcast over the batch: one along the axis that is.
      bool table = m.Count(t) == s[0] * s[2];
      for (size_t k = 0; k < dims.size(); ++k) {
        const bool positions = rows.strides[k] == s[1] * s[2];
        const int64_t want = rows.shape[k] == 1                  ? 1
                             : k + 1 == dims.size() || positions ? rows.shape[k]
                                                                 : 1;
        table = table && dims[k] == want;
      }
      if (!table) continue;
      m.params_ += m.Count(t);
      const int pos = m.Derived(m.graph_.Positional(rows.layer), rows.layer);
      m.Give(pos, {{t, false}});
      m.SetView(out, Moved(rows, pos, s[2], s[2]));
      return true;
    }
    if (m.IsInitializer(n.input(0)) || m.IsInitializer(n.input(1))) {
      throw GraphError(
          "a constant added (not a dense layer's bias nor a table of "
          "positions)");
    }
    if (!m.views_.count(n.input(0)) && !m.views_.count(n.input(1))) {
      return false;
    }
    const std::optional<View> x = m.ViewOf(n.input(0)),
                              y = m.ViewOf(n.input(1));
    if (!x || !y) return false;
    const View a = m.Rows(*x), b = m.Rows(*y);
    if (a.shape != b.shape || a.strides != b.strides ||
        m.LayerShape(a.layer) != m.LayerShape(b.layer)) {
      throw GraphError("a sum of " + Mapper::Describe(a) + " and " +
                       Mapper::Describe(b) + ", laid out differently");
    }
    const int sum = m.Derived(m.graph_.Add(a.layer, b.layer), a.layer);
    const int64_t units = a.shape.back();
    m.SetView(out, Moved(a, sum, units, units));
    return true;
  }

  static Operator Add() {
    Operator op = Entry(
        "Add", 7, "`add`; a bias; `positional`",
        "of two layers' outputs of one shape, or of two views of layers laid "
        "out alike; a vector of a product's units in the file, its bias "
        "(see `MatMul`); a tensor of `[length, units]` values in the file "
        "added to a sequence, a table of positions broadcast over the batch; "
        "of known values, computed");
    op.fold = [](const Mapper& m, const onnx::NodeProto& n) {
      return std::optional<Known>(Elementwise(
          m, n, 0, false, [](double p, double q, size_t) { return p + q; }));
    };
    op.apply = [](Mapper& m, int, const onnx::NodeProto& n) {
      if (AddOfViews(m, n)) return;
      const int x = Input(m, n);
      m.Bind(n.output(0), m.graph_.Add(x, Input(m, n, 1)));
    };
    return op;
  }

  static Operator AveragePool() {
    Operator op =
        Entry("AveragePool", 7, "`avgpool2d`",
              "a square window, the same stride and padding on every side, no "
              "dilation; `ceil_mode` 0; padding left out of the average or, "
              "with `count_include_pad` 1, counted as zeros (`count_pad`)");
    op.check = [](const Mapper& m, const onnx::NodeProto& n) {
      const Attributes a(n);
      const std::string why = Window(m, n, a.Ints("kernel_shape"), true);
      if (!why.empty()) return why;
      if (a.Int("ceil_mode", 0) != 0) {
        return m.Where(n) + ": ceil_mode on an average";
      }
      return std::string();
    };
    op.apply = Pool;
    return op;
  }

  static Operator BatchNormalization() {
    Operator op = Entry(
        "BatchNormalization", 9, "`batchnorm`",
        "its scale and shift are the parameters, its running statistics "
        "are not; a training export's statistics outputs read by no node; "
        "its epsilon the file's (MobileNetV3's 1e-3)");
    op.check = [](const Mapper& m, const onnx::NodeProto& n) {
      // A training export's running statistics (its outputs after the
      // first) are the layer's own state where nothing reads them.
      for (int k = 1; k < n.output_size(); ++k) {
        if (!n.output(k).empty() && m.readers_.count(n.output(k)) > 0) {
          return m.Where(n) +
                 ": its running statistics are read by other "
                 "nodes";
        }
      }
      return std::string();
    };
    op.apply = [](Mapper& m, int, const onnx::NodeProto& n) {
      const int x = Input(m, n);
      m.params_ += m.Count(n.input(1)) + m.Count(n.input(2));
      const int norm = m.graph_.BatchNorm(
          x, AsWritten(Attributes(n).Float("epsilon", 1e-5f)));
      // Scale, shift, running mean and variance.
      m.Give(norm, {{n.input(1), false},
                    {n.input(2), false},
                    {n.input(3), false},
                    {n.input(4), false}});
      m.Bind(n.output(0), norm);
    };
    return op;
  }

  static Operator Cast() {
    Operator op = Entry("Cast", 6, "nothing", "of known values, computed");
    op.fold = [](const Mapper& m, const onnx::NodeProto& n) {
      Known out = SameValues(m, n);
      const int64_t to = Attributes(n).Int("to", onnx::TensorProto::FLOAT);
      out.integer = to != onnx::TensorProto::FLOAT &&
                    to != onnx::TensorProto::DOUBLE &&
                    to != onnx::TensorProto::FLOAT16;
      if (out.integer) {
        for (double& x : out.v) x = std::trunc(x);
      }
      return std::optional<Known>(out);
    };
    op.apply = Alone;
    return op;
  }

  // A Clip's bound `i` (1: min, 2: max) from its input, or from its
  // attribute before opset 11; nullopt where none is given, NaN where the
  // input is not one known value.
  static std::optional<double> ClipBound(const Mapper& m,
                                         const onnx::NodeProto& n, int i) {
    if (n.input_size() > i && !n.input(i).empty()) {
      const auto it = m.values_.find(n.input(i));
      if (it == m.values_.end() || it->second.size() != 1) {
        return std::nan("");
      }
      return it->second[0];
    }
    const float none = std::numeric_limits<float>::quiet_NaN();
    const float v = Attributes(n).Float(i == 1 ? "min" : "max", none);
    if (std::isnan(v)) return std::nullopt;
    return v;
  }

  static Operator Clip() {
    Operator op = Entry("Clip", 6, "`relu6`",
                        "to [0, 6] (PyTorch's ReLU6), its bounds attributes "
                        "before opset 11, known inputs from it");
    op.check = [](const Mapper& m, const onnx::NodeProto& n) {
      const std::optional<double> lo = ClipBound(m, n, 1),
                                  hi = ClipBound(m, n, 2);
      if (lo == 0.0 && hi == 6.0) return std::string();
      auto text = [](const std::optional<double>& v) {
        return v ? std::to_string(*v) : std::string("none");
      };
      return m.Where(n) + ": a clip to [" + text(lo) + ", " + text(hi) +
             "]: the graph's is ReLU6's [0, 6]";
    };
    op.apply = OneLayer<&Graph::Relu6>;
    return op;
  }

  // A class token (a [1, 1, units] tensor expanded over the batch) joined
  // before a sequence along its positions.
  static void ClassToken(Mapper& m, const onnx::NodeProto& n) {
    if (n.input_size() != 2 || !m.expanded_.count(n.input(0))) {
      throw GraphError(
          "a concat of an expanded tensor other than a class "
          "token before a sequence");
    }
    const std::string& token = m.expanded_.at(n.input(0));
    const std::optional<View> x = m.ViewOf(n.input(1));
    if (!x) {
      throw GraphError("its input " + n.input(1) + " is made by no layer");
    }
    const View rows = m.Rows(*x);
    const paradnn::Shape s = m.LayerShape(rows.layer);
    const int axis =
        Mapper::Axis(Attributes(n).Int("axis", 0), rows.shape.size());
    if (s.size() != 3 || m.BatchAxis(rows.layer) != 1 ||
        m.Count(token) != s[2] || rows.strides[axis] != s[1] * s[2]) {
      throw GraphError("a concat of a class token with " +
                       Mapper::Describe(rows) +
                       " other than before its "
                       "positions");
    }
    m.params_ += m.Count(token);
    const int joined = m.Derived(m.graph_.ClassToken(rows.layer), rows.layer);
    m.Give(joined, {{token, false}});
    View o = rows;
    o.layer = joined;
    o.shape[axis] += 1;
    m.SetView(n.output(0), o);
  }

  static Operator Concat() {
    Operator op = Entry(
        "Concat", 4, "`concat`; `class_token`",
        "along its axis; of one input, that input (DenseNet's first "
        "layers); an `Expand`ed `[1, 1, units]` tensor before a sequence, "
        "along its positions, a class token; of known values, computed");
    op.fold = [](const Mapper& m, const onnx::NodeProto& n) {
      Known out;
      for (const std::string& in : n.input()) {
        const Known& k = *m.KnownOf(in);
        out.v.insert(out.v.end(), k.v.begin(), k.v.end());
        out.integer = k.integer;
      }
      out.dims = {static_cast<int64_t>(out.v.size())};
      return std::optional<Known>(out);
    };
    op.apply = [](Mapper& m, int, const onnx::NodeProto& n) {
      for (const std::string& in : n.input()) {
        if (m.expanded_.count(in)) return ClassToken(m, n);
      }
      std::vector<int> xs;
      for (int k = 0; k < n.input_size(); ++k) xs.push_back(Input(m, n, k));
      m.Bind(n.output(0),
             xs.size() == 1
                 ? xs[0]
                 : m.graph_.Concat(xs, Attributes(n).Int("axis", 0)));
    };
    return op;
  }

  static Operator Constant() {
    Operator op = Entry("Constant", 1, "nothing",
                        "a tensor (`value`) its readers take as they take an "
                        "initializer");
    op.check = [](const Mapper& m, const onnx::NodeProto& n) {
      return n.output_size() == 1 && m.IsInitializer(n.output(0))
                 ? std::string()
                 : m.Where(n) + ": a constant other than a tensor";
    };
    op.apply = [](Mapper&, int, const onnx::NodeProto&) {};
    return op;
  }

  static Operator ConstantOfShape() {
    Operator op =
        Entry("ConstantOfShape", 9, "nothing", "of a known shape, computed");
    op.fold = [](const Mapper& m, const onnx::NodeProto& n) {
      Known out;
      double fill = 0;
      out.integer = false;
      for (const onnx::AttributeProto& t : n.attribute()) {
        if (t.name() == "value" && !TensorValues<double>(t.t()).empty()) {
          fill = TensorValues<double>(t.t())[0];
          out.integer = t.t().data_type() != onnx::TensorProto::FLOAT;
        }
      }
      out.dims.assign(m.KnownOf(n.input(0))->v.begin(),
                      m.KnownOf(n.input(0))->v.end());
      out.v.assign(Elements(out.dims), fill);
      return std::optional<Known>(out);
    };
    op.apply = [](Mapper&, int, const onnx::NodeProto& n) {
      throw GraphError("its shape " + n.input(0) +
                       " is not known from the file");
    };
    return op;
  }

  static Operator Conv() {
    Operator op = Entry(
        "Conv", 1, "`conv2d`; `dense`",
        "a kernel of any height and width (Inception's 1x7 and 7x1), one "
        "stride and one dilation for both axes (DeepLab's atrous "
        "convolutions), the same padding before and after each axis; any "
        "groups (depthwise: one per channel); weights and a "
        "bias, if any, of one value per output channel in the file. A 1x1 "
        "convolution of a global pool's output (squeeze-and-excitation) is "
        "a `dense` layer of it");
    op.check = [](const Mapper& m, const onnx::NodeProto& n) {
      const std::string where = m.Where(n);
      if (!m.IsInitializer(n.input(1)) ||
          m.InitializerDims(n.input(1)).size() != 4) {
        return where + ": weights not a 2-D kernel in the file";
      }
      const std::vector<int64_t>& w = m.InitializerDims(n.input(1));
      if (n.input_size() > 2 && !n.input(2).empty() &&
          (!m.IsInitializer(n.input(2)) || m.Count(n.input(2)) != w[0])) {
        return where +
               ": a bias not of one value per output channel in the file";
      }
      return Window(m, n, {w[2], w[3]}, false);
    };
    op.apply = [](Mapper& m, int, const onnx::NodeProto& n) {
      const Attributes a(n);
      const int x = Input(m, n);
      const std::vector<int64_t>& w = m.InitializerDims(n.input(1));
      const bool bias = n.input_size() > 2 && !n.input(2).empty();
      const int64_t groups = a.Int("group", 1);
      m.params_ += m.Count(n.input(1)) + (bias ? w[0] : 0);
      std::vector<std::pair<std::string, bool>> tensors = {{n.input(1), false}};
      if (bias) tensors.push_back({n.input(2), false});
      int layer = 0;
      if (m.ShapeOf(x).size() == 2) {
        // After a global pool the graph's [batch, channels] is ONNX's
        // [batch, channels, 1, 1] (squeeze-and-excitation): a 1x1
        // convolution of it is a dense layer.
        if (w[2] != 1 || groups != 1 || Uniform(a.Ints("pads"), 0) != 0) {
          throw GraphError("a " + std::to_string(w[2]) + "x" +
                           std::to_string(w[3]) +
                           " convolution of a 1x1 image");
        }
        layer = m.graph_.Dense(x, w[0], bias);
      } else {
        const std::vector<int64_t> pads = a.Ints("pads");
        const Hw pad = pads.empty() ? Hw(0) : Hw(pads[0], pads[1]);
        layer = m.graph_.Conv2d(x, w[0], {w[2], w[3]},
                                Uniform(a.Ints("strides"), 1), pad, groups,
                                bias, Uniform(a.Ints("dilations"), 1));
      }
      m.Give(layer, tensors);
      m.Bind(n.output(0), layer);
    };
    return op;
  }

  // GELU as the exporter writes it: x * (erf(x / sqrt 2) + 1) * 0.5, from
  // the division. The last node's index, or -1.
  static int GeluNodes(Mapper& m, int index) {
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

  static Operator Div() {
    Operator op = Entry(
        "Div", 7, "`gelu`; nothing",
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

  static Operator Dropout() {
    Operator op = Entry("Dropout", 1, "nothing",
                        "the input passes on (dropout is a no-op in "
                        "inference, and the graph has none in training)");
    op.apply = PassOn;
    return op;
  }

  static Operator Equal() {
    Operator op = Entry("Equal", 7, "nothing", "of known values, computed");
    op.fold = [](const Mapper& m, const onnx::NodeProto& n) {
      return std::optional<Known>(Elementwise(
          m, n, 0, true, [](double p, double q, size_t) { return p == q; }));
    };
    op.apply = Alone;
    return op;
  }

  static Operator Erf() {
    Operator op = Entry("Erf", 9, "`gelu`", "within GELU's nodes (see `Div`)");
    op.apply = Alone;
    return op;
  }

  static Operator Expand() {
    Operator op = Entry("Expand", 8, "`class_token`",
                        "of a tensor in the file, before a sequence in a "
                        "`Concat` (see `Concat`)");
    op.apply = [](Mapper& m, int index, const onnx::NodeProto& n) {
      if (!m.IsInitializer(n.input(0))) return Alone(m, index, n);
      m.expanded_[n.output(0)] = n.input(0);
    };
    return op;
  }

  static Operator Flatten() {
    Operator op = Entry("Flatten", 1, "`flatten`, or nothing",
                        "of axis 1, to `[batch, the rest]`; nothing of a "
                        "layer already `[batch, units]` (after a global pool)");
    op.apply = [](Mapper& m, int, const onnx::NodeProto& n) {
      Flattened(m, n, Attributes(n).Int("axis", 1) == 1);
    };
    return op;
  }

  static Operator Gather() {
    Operator op = Entry("Gather", 1, "nothing",
                        "one index of a layer's output: a view of it (see "
                        "`Reshape`); of known values, computed");
    op.fold = [](const Mapper& m, const onnx::NodeProto& n) {
      const Known& data = *m.KnownOf(n.input(0));
      const Known& at = *m.KnownOf(n.input(1));
      Known out;
      out.dims = at.dims;
      for (double i : at.v) {
        out.v.push_back(
            data.v.at(Mapper::Axis(static_cast<int64_t>(i), data.v.size())));
      }
      out.integer = data.integer;
      return std::optional<Known>(out);
    };
    op.apply = [](Mapper& m, int, const onnx::NodeProto& n) {
      const View v = ViewInput(m, n);
      const std::optional<double> i = m.Scalar(n.input(1));
      if (!i || !m.KnownOf(n.input(1))->dims.empty()) {
        throw GraphError("a gather of other than one index");
      }
      const int axis =
          Mapper::Axis(Attributes(n).Int("axis", 0), v.shape.size());
      const int64_t at = static_cast<int64_t>(*i);
      m.SetView(n.output(0),
                Selected(v, axis, at < 0 ? at + v.shape[axis] : at));
    };
    return op;
  }

  static Operator Gemm() {
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

  static Operator GlobalAveragePool() {
    Operator op = Entry("GlobalAveragePool", 1, "`avgpool`",
                        "its output is `[batch, channels]` in the graph");
    op.apply = OneLayer<&Graph::GlobalAvgPool>;
    return op;
  }

  static Operator HardSigmoid() {
    Operator op = Entry("HardSigmoid", 6, "`hardsigmoid`",
                        "PyTorch's: alpha 1/6, beta 1/2");
    op.check = [](const Mapper& m, const onnx::NodeProto& n) {
      // PyTorch's: relu6(x + 3) / 6 (ONNX's default alpha is 0.2).
      const Attributes a(n);
      const float alpha = a.Float("alpha", 0.2f), beta = a.Float("beta", 0.5f);
      return std::abs(alpha - 1.f / 6.f) < 1e-6f && beta == 0.5f
                 ? std::string()
                 : m.Where(n) + ": alpha " + std::to_string(alpha) + ", beta " +
                       std::to_string(beta) +
                       ": the graph's hard sigmoid is PyTorch's (1/6, 1/2)";
    };
    op.apply = OneLayer<&Graph::HardSigmoid>;
    return op;
  }

  static Operator HardSwish() {
    Operator op = Entry("HardSwish", 14, "`hardswish`", "");
    op.apply = OneLayer<&Graph::HardSwish>;
    return op;
  }

  static Operator Identity() {
    Operator op = Entry(
        "Identity", 1, "nothing",
        "the input passes on; of a tensor in the file, that tensor to its "
        "readers (an inference export shares equal constants, such as zero "
        "biases, so)");
    op.fold = [](const Mapper& m, const onnx::NodeProto& n) {
      return std::optional<Known>(SameValues(m, n));
    };
    op.apply = [](Mapper& m, int index, const onnx::NodeProto& n) {
      // A tensor in the file is its readers' already (the Mapper's
      // constructor).
      if (!m.IsInitializer(n.output(0))) PassOn(m, index, n);
    };
    return op;
  }

  static Operator LayerNormalization() {
    Operator op = Entry(
        "LayerNormalization", 17, "`layernorm`",
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
                Normalized(m, v, AsWritten(a.Float("epsilon", 1e-5f)),
                           n.input(1), n.input(2)));
    };
    return op;
  }

  // A product by weights of maps read channels-last (ConvNeXt's linear
  // layers over [N, H, W, C]): a 1x1 convolution, its bias the Add after
  // it. False for any other product.
  static bool Pointwise(Mapper& m, int index, const onnx::NodeProto& n) {
    const std::optional<View> x = m.ViewOf(n.input(0));
    const std::string& b = n.input(1);
    if (!x || !m.IsMaps(*x) ||
        (!m.IsInitializer(b) && !m.transposed_.count(b))) {
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
    const int conv =
        m.graph_.Conv2d(x->layer, units, 1, 1, 0, 1, bias_add >= 0);
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

  static Operator MatMul() {
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

  static Operator MaxPool() {
    Operator op = Entry(
        "MaxPool", 1, "`maxpool`",
        "a square window, the same stride and padding on every side, no "
        "dilation; in either rounding (`ceil_mode` 1 as PyTorch's: a last "
        "window that starts in the input may hang past it)");
    op.check = [](const Mapper& m, const onnx::NodeProto& n) {
      return Window(m, n, Attributes(n).Ints("kernel_shape"), true);
    };
    op.apply = Pool;
    return op;
  }

  static Operator Mod() {
    Operator op = Entry("Mod", 10, "nothing", "of known values, computed");
    op.fold = [](const Mapper& m, const onnx::NodeProto& n) {
      return std::optional<Known>(
          Elementwise(m, n, 0, false, [](double p, double q, size_t) {
            return p - q * std::floor(p / q);
          }));
    };
    op.apply = Alone;
    return op;
  }

  // A product of [N, C, H, W] maps by a constant of one value per channel
  // ([C, 1, 1]: ConvNeXt's layer scale). False where neither input is a
  // constant of more than one value.
  static bool LayerScale(Mapper& m, const onnx::NodeProto& n) {
    for (int side = 0; side < 2; ++side) {
      const std::string& t = n.input(side);
      if (!m.IsInitializer(t) || m.Count(t) == 1) continue;
      const int x = Input(m, n, 1 - side);
      const paradnn::Shape& maps = m.ShapeOf(x);
      if (maps.size() != 4 || !PerChannel(m, t) || m.Count(t) != maps[1]) {
        throw GraphError("a product of " + ToString(maps) + " by a constant " +
                         ToString(m.InitializerDims(t)) +
                         ": the graph's is per channel of [N, C, H, W] maps "
                         "([C, 1, 1]: a layer scale), or a layer "
                         "normalization's scale within its nodes");
      }
      m.params_ += m.Count(t);
      const int scale = m.graph_.LayerScale(x);
      m.Give(scale, {{t, false}});
      m.Bind(n.output(0), scale);
      return true;
    }
    return false;
  }

  // An initializer of one value per channel of maps: [C, 1, 1] or
  // [1, C, 1, 1].
  static bool PerChannel(const Mapper& m, const std::string& initializer) {
    const std::vector<int64_t>& dims = m.InitializerDims(initializer);
    const size_t r = dims.size();
    return (r == 3 || (r == 4 && dims[0] == 1)) && dims[r - 1] == 1 &&
           dims[r - 2] == 1;
  }

  static Operator Mul() {
    Operator op = Entry(
        "Mul", 7, "`channel_mul`; `layer_scale`; `silu`",
        "feature maps times a `[batch, channels]` layer (ONNX's `[batch, "
        "channels, 1, 1]`); feature maps times a tensor in the file of one "
        "value per channel, `[C, 1, 1]` or `[1, C, 1, 1]` (ConvNeXt's layer "
        "scale: its values the parameter); a vector in the file within a "
        "layer normalization's nodes, its scale (see `ReduceMean`); a "
        "`Sigmoid`'s input by its "
        "output, a SiLU (see `Sigmoid`); of a view by a known scalar, the "
        "view scaled; of known values, computed");
    op.check = [](const Mapper& m, const onnx::NodeProto& n) {
      // A vector may be a layer normalization's scale: its nodes are known
      // only where the mapping reaches them.
      for (const std::string& in : n.input()) {
        if (m.IsInitializer(in) && m.Count(in) > 1 && !PerChannel(m, in) &&
            m.InitializerDims(in).size() != 1) {
          return m.Where(n) + ": a constant factor " +
                 ToString(m.InitializerDims(in)) +
                 " (the graph's are per channel of [N, C, H, W] maps, "
                 "[C, 1, 1]: a layer scale)";
        }
      }
      return std::string();
    };
    op.fold = [](const Mapper& m, const onnx::NodeProto& n) {
      return std::optional<Known>(Elementwise(
          m, n, 0, false, [](double p, double q, size_t) { return p * q; }));
    };
    op.apply = [](Mapper& m, int, const onnx::NodeProto& n) {
      if (Scaled(m, n, false) || LayerScale(m, n)) return;
      const int x = Input(m, n), y = Input(m, n, 1);
      m.Bind(n.output(0), m.ShapeOf(x).size() == 4 ? m.graph_.ChannelMul(x, y)
                                                   : m.graph_.ChannelMul(y, x));
    };
    return op;
  }

  static Operator Neg() {
    Operator op = Entry("Neg", 6, "nothing", "of known values, computed");
    op.fold = [](const Mapper& m, const onnx::NodeProto& n) {
      Known out = SameValues(m, n);
      for (double& x : out.v) x = -x;
      return std::optional<Known>(out);
    };
    op.apply = Alone;
    return op;
  }

  // Pad's widths, [the start of each axis..., the end of each axis...],
  // where they are known: in the file, or computed from shapes (as Swin's
  // padding to whole windows is) once the nodes before map.
  static const std::vector<double>* PadWidths(const Mapper& m,
                                              const onnx::NodeProto& n) {
    const Known* k = n.input_size() > 1 ? m.KnownOf(n.input(1)) : nullptr;
    return k == nullptr || k->v.empty() ? nullptr : &k->v;
  }

  // The AveragePool that alone reads Pad node n's output and pads nothing
  // itself, or -1.
  static int PaddedPool(const Mapper& m, const onnx::NodeProto& n) {
    const std::string& out = n.output(0);
    if (m.readers_.count(out) == 0 || m.readers_.at(out) != 1) return -1;
    const int pool = m.ReaderOf(out, "AveragePool");
    if (pool < 0) return -1;
    const Attributes a(m.g_.node(pool));
    return AllEqual(a.Ints("pads"), 0) && a.Int("ceil_mode", 0) == 0 ? pool
                                                                     : -1;
  }

  static Operator Pad() {
    Operator op = Entry(
        "Pad", 11, "`avgpool2d`; nothing",
        "widths known from the file (or from shapes): of zero widths, "
        "nothing; with zeros "
        "(mode `constant`), the same before and after feature maps' height "
        "and width and by as much on both, read only by an `AveragePool` "
        "that pads nothing: that pool, counting the padding (`count_pad`: "
        "an average pool with `count_include_pad`, as PyTorch exports "
        "Inception v3's)");
    op.check = [](const Mapper& m, const onnx::NodeProto& n) {
      const std::vector<double>* widths = PadWidths(m, n);
      if (widths != nullptr && std::all_of(widths->begin(), widths->end(),
                                           [](double v) { return v == 0; })) {
        return std::string();
      }
      const std::string mode = Attributes(n).String("mode");
      const auto value =
          n.input_size() > 2 ? m.values_.find(n.input(2)) : m.values_.end();
      const std::vector<double> w = widths ? *widths : std::vector<double>();
      const bool maps = w.size() == 8 && w[0] == 0 && w[1] == 0 && w[4] == 0 &&
                        w[5] == 0 && w[2] == w[3] && w[2] == w[6] &&
                        w[2] == w[7];
      if (widths != nullptr && (mode.empty() || mode == "constant") &&
          (value == m.values_.end() ||
           (value->second.size() == 1 && value->second[0] == 0)) &&
          (n.input_size() < 4 || n.input(3).empty()) && maps &&
          PaddedPool(m, n) >= 0) {
        return std::string();
      }
      if (widths == nullptr) {
        return m.Where(n) +
               ": a padding whose widths are not known from "
               "the file";
      }
      return m.Where(n) + ": a padding of its own " +
             ToString(std::vector<int64_t>(w.begin(), w.end())) +
             " (the graph pads inside convolutions and pools only: with "
             "zeros, read by an average pool alone)";
    };
    op.apply = [](Mapper& m, int, const onnx::NodeProto& n) {
      const int x = Input(m, n);
      const std::vector<double>& widths = *PadWidths(m, n);
      if (std::all_of(widths.begin(), widths.end(),
                      [](double v) { return v == 0; })) {
        return m.Bind(n.output(0), x);
      }
      const int index = PaddedPool(m, n);
      const onnx::NodeProto& pool = m.g_.node(index);
      const Attributes a(pool);
      const std::string why = Window(m, pool, a.Ints("kernel_shape"), true);
      if (!why.empty()) throw GraphError("its reader " + why);
      m.fused_.insert(index);
      m.Bind(pool.output(0),
             m.graph_.AvgPool(x, a.Ints("kernel_shape")[0],
                              Uniform(a.Ints("strides"), 1),
                              static_cast<int64_t>(widths[2]), true));
    };
    return op;
  }

  static Operator Pow() {
    Operator op = Entry("Pow", 7, "`layernorm`",
                        "within a layer normalization's nodes (see "
                        "`ReduceMean`)");
    op.apply = Alone;
    return op;
  }

  // A layer normalization as PyTorch's exporter writes it before opset 17:
  // from the mean over the last axis of x, nine nodes. The last node's
  // index, or -1 where they are not that.
  static int LayerNormNodes(Mapper& m, int index, double* epsilon,
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

  // ReduceMean's axes: its attribute, or its second input from opset 18.
  static std::vector<int64_t> MeanAxes(const Mapper& m,
                                       const onnx::NodeProto& n) {
    if (n.input_size() > 1 && !n.input(1).empty()) {
      const Known* k = m.KnownOf(n.input(1));
      if (k == nullptr) return {};
      return {k->v.begin(), k->v.end()};
    }
    return Attributes(n).Ints("axes");
  }

  static Operator ReduceMean() {
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
                 : m.Where(n) + ": a mean over axes " +
                       ToString(MeanAxes(m, n)) +
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

  static Operator Relu() {
    Operator op = Entry("Relu", 6, "`relu`", "");
    op.apply = OneLayer<&Graph::ReLU>;
    return op;
  }

  static Operator Reshape() {
    Operator op = Entry(
        "Reshape", 5, "`flatten`; `channel_shuffle`; nothing",
        "to `[batch, the rest]` (a target in the file of two values, the "
        "second -1 or the rest), a flatten, nothing of a layer already "
        "`[batch, units]`; of a layer's output, a view of it (shape, "
        "strides, offset), as `Transpose`, `Slice`, `Gather`, `Squeeze` and "
        "`Unsqueeze` make (a layer reading it takes it where it is the "
        "layer's output whole, or its rows whole in any order of the other "
        "axes: a product, a normalization, an elementwise function); "
        "feature maps `[N, C, H, W]` read as `[N, H x W, C]` a `sequence` "
        "`[H x W, N, C]`, the first position of a sequence read as `[N, E]` "
        "its `first_token`; with a `Transpose` and a `Reshape` back, "
        "ShuffleNet's channel shuffle (maps viewed as `[N, g, C/g, H, W]`, "
        "its two channel axes transposed: the one view that moves elements "
        "the graph takes); of known values, computed");
    op.fold = [](const Mapper& m, const onnx::NodeProto& n) {
      Known out = SameValues(m, n);
      const Known& target = *m.KnownOf(n.input(1));
      out.dims.assign(target.v.begin(), target.v.end());
      for (int64_t& d : out.dims) {
        if (d == -1) d = static_cast<int64_t>(out.v.size());
      }
      return std::optional<Known>(out);
    };
    op.apply = [](Mapper& m, int, const onnx::NodeProto& n) {
      const View v = ViewInput(m, n);
      // A whole 4-D or 2-D layer flattened is the graph's flatten.
      if (!m.views_.count(n.input(0)) &&
          ReshapeFlattens(m, n, m.ShapeOf(v.layer))) {
        return Flattened(m, n, true);
      }
      m.SetView(n.output(0), m.Reshape(n, v));
    };
    return op;
  }

  static Operator Resize() {
    Operator op = Entry(
        "Resize", 11, "`resize`",
        "of feature maps, bilinear (`mode` linear, "
        "`coordinate_transformation_mode` half_pixel, or pytorch_half_pixel "
        "to sizes over 1: PyTorch's `align_corners=False`) to a height and "
        "width its `sizes` or `scales` give, known from the file or from "
        "shapes (segmentation's upsampling); of a global pool's `[N, C]` "
        "(ONNX's `[N, C, 1, 1]`), its values spread over the maps "
        "(DeepLabV3's image pooling)");
    op.check = [](const Mapper& m, const onnx::NodeProto& n) {
      const Attributes a(n);
      const std::string mode = a.String("mode");
      const std::string centres = a.String("coordinate_transformation_mode");
      if (mode != "linear" ||
          (centres != "half_pixel" && centres != "pytorch_half_pixel") ||
          a.Int("antialias", 0) != 0 || !a.Ints("axes").empty()) {
        return m.Where(n) + ": a resize in mode " +
               (mode.empty() ? "nearest" : mode) + ", coordinates " +
               (centres.empty() ? "half_pixel" : centres) +
               (a.Int("antialias", 0) ? ", antialiased" : "") +
               (a.Ints("axes").empty() ? "" : ", of some axes") +
               " (the graph's is bilinear over half-pixel centres)";
      }
      return std::string();
    };
    op.apply = [](Mapper& m, int, const onnx::NodeProto& n) {
      const int x = Input(m, n);
      const paradnn::Shape& in = m.ShapeOf(x);
      const Known* sizes = n.input_size() > 3 && !n.input(3).empty()
                               ? m.KnownOf(n.input(3))
                               : nullptr;
      const Known* scales = n.input_size() > 2 && !n.input(2).empty()
                                ? m.KnownOf(n.input(2))
                                : nullptr;
      std::vector<int64_t> to;
      if (sizes != nullptr && sizes->v.size() == 4) {
        to.assign(sizes->v.begin(), sizes->v.end());
      } else if (scales != nullptr && scales->v.size() == 4) {
        // [N, C] after a global pool is ONNX's [N, C, 1, 1].
        for (size_t d = 0; d < 4; ++d) {
          const int64_t size = d < in.size() ? in[d] : 1;
          to.push_back(static_cast<int64_t>(std::floor(size * scales->v[d])));
        }
      } else {
        throw GraphError("its sizes or scales are not known from the file");
      }
      // Sizes in the file name the batch the file has.
      if ((to[0] != in[0] && to[0] != m.file_batch_) || to[1] != in[1]) {
        throw GraphError("a resize of " + ToString(in) + " to " + ToString(to) +
                         ": the graph's resizes [N, C, H, W] maps' height "
                         "and width");
      }
      if (Attributes(n).String("coordinate_transformation_mode") ==
              "pytorch_half_pixel" &&
          (to[2] == 1 || to[3] == 1)) {
        throw GraphError(
            "pytorch_half_pixel to a size of 1 (the graph's reads the "
            "middle, as PyTorch's interpolation does)");
      }
      m.Bind(n.output(0), m.graph_.Resize(x, to[2], to[3]));
    };
    return op;
  }

  static Operator Shape() {
    Operator op = Entry("Shape", 1, "nothing",
                        "of a layer's output or a known tensor: its "
                        "dimensions at the batch mapped (`start`, `end`)");
    op.apply = [](Mapper& m, int, const onnx::NodeProto& n) {
      const Attributes a(n);
      const std::optional<View> v = m.ViewOf(n.input(0));
      const Known* k = m.KnownOf(n.input(0));
      if (!v && k == nullptr) {
        throw GraphError("its input " + n.input(0) + " is made by no layer");
      }
      const paradnn::Shape dims = v ? v->shape : k->dims;
      const int64_t rank = static_cast<int64_t>(dims.size());
      const int64_t from = std::clamp<int64_t>(
          Mapper::Axis(a.Int("start", 0), dims.size()), 0, rank);
      const int64_t end = a.Int("end", rank);
      const int64_t to =
          std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
      Known shape;
      for (int64_t i = from; i < to; ++i) shape.v.push_back(dims[i]);
      shape.dims = {static_cast<int64_t>(shape.v.size())};
      m.known_[n.output(0)] = std::move(shape);
    };
    return op;
  }

  static Operator Sigmoid() {
    Operator op = Entry("Sigmoid", 6, "`sigmoid`; `silu`",
                        "a `Mul` of its input by its output, its only reader, "
                        "makes the two one `silu` (PyTorch exports SiLU so)");
    op.apply = [](Mapper& m, int, const onnx::NodeProto& n) {
      const int x = Input(m, n);
      // The node after it that multiplies its input by its output, the
      // only reader of that output: sigmoid(x) * x.
      const std::string &in = n.input(0), &y = n.output(0);
      int mul = -1;
      if (m.readers_.count(y) && m.readers_.at(y) == 1) {
        const int k = m.ReaderOf(y, "Mul", in);
        if (k >= 0 && m.g_.node(k).input_size() == 2) mul = k;
      }
      if (mul < 0) {
        m.Bind(y, m.graph_.Sigmoid(x));
      } else {
        m.fused_.insert(mul);
        m.Bind(m.g_.node(mul).output(0), m.graph_.Silu(x));
      }
    };
    return op;
  }

  static Operator Slice() {
    Operator op = Entry(
        "Slice", 10, "`slice`; nothing",
        "of a layer's output, its bounds known, no step: a view (see "
        "`Reshape`); a range of one dimension after the batch, the others "
        "whole, read by a layer is a `slice` layer (torchvision's `chunk` "
        "of the channels: ShuffleNet's split); ranges a product reads "
        "(attention's queries, keys and values) stay views of it; of known "
        "values, computed");
    op.fold = [](const Mapper& m, const onnx::NodeProto& n) {
      const Known& data = *m.KnownOf(n.input(0));
      const int64_t size = static_cast<int64_t>(data.v.size());
      const int64_t step =
          n.input_size() > 4 ? m.KnownOf(n.input(4))->v.at(0) : 1;
      if (step != 1) return std::optional<Known>();
      Known out;
      for (int64_t i = Mapper::SliceBound(m.KnownOf(n.input(1))->v.at(0), size);
           i < Mapper::SliceBound(m.KnownOf(n.input(2))->v.at(0), size); ++i) {
        out.v.push_back(data.v[i]);
      }
      out.dims = {static_cast<int64_t>(out.v.size())};
      out.integer = data.integer;
      return std::optional<Known>(out);
    };
    op.apply = [](Mapper& m, int, const onnx::NodeProto& n) {
      View s = ViewInput(m, n);
      const Known* starts = m.KnownOf(n.input(1));
      const Known* ends = m.KnownOf(n.input(2));
      const Known* axes = n.input_size() > 3 ? m.KnownOf(n.input(3)) : nullptr;
      const Known* steps = n.input_size() > 4 ? m.KnownOf(n.input(4)) : nullptr;
      if (starts == nullptr || ends == nullptr ||
          (n.input_size() > 3 && axes == nullptr)) {
        throw GraphError("its bounds are not known from the file");
      }
      for (size_t k = 0; k < starts->v.size(); ++k) {
        const int axis = Mapper::Axis(
            axes ? static_cast<int64_t>(axes->v[k]) : k, s.shape.size());
        if (steps != nullptr && steps->v[k] != 1) {
          throw GraphError("a slice with a step");
        }
        const int64_t size = s.shape[axis];
        s = Narrowed(s, axis, Mapper::SliceBound(starts->v[k], size),
                     Mapper::SliceBound(ends->v[k], size));
      }
      m.SetView(n.output(0), s);
    };
    return op;
  }

  static Operator Softmax() {
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

  static Operator Sqrt() {
    Operator op = Entry("Sqrt", 6, "nothing",
                        "of known values, computed; within a layer "
                        "normalization's nodes (see `ReduceMean`)");
    op.fold = [](const Mapper& m, const onnx::NodeProto& n) {
      Known out = SameValues(m, n);
      for (double& x : out.v) x = std::sqrt(x);
      out.integer = false;
      return std::optional<Known>(out);
    };
    op.apply = Alone;
    return op;
  }

  // Squeeze and Unsqueeze: the axes `name` removes or inserts, an
  // attribute before opset 13, an input from it.
  static Operator Squeezes(const char* type, bool insert) {
    Operator op = Entry(type, 1, "nothing",
                        "of a layer's output, a view (see `Reshape`); of "
                        "known values, computed");
    if (insert) {
      op.fold = [](const Mapper& m, const onnx::NodeProto& n) {
        Known out = SameValues(m, n);
        std::vector<int64_t> axes = m.IntsOf(n, "axes", 1);
        const size_t rank = out.dims.size() + axes.size();
        for (int64_t& x : axes) x = Mapper::Axis(x, rank);
        std::sort(axes.begin(), axes.end());
        for (int64_t x : axes) out.dims.insert(out.dims.begin() + x, 1);
        return std::optional<Known>(out);
      };
      op.apply = [](Mapper& m, int, const onnx::NodeProto& n) {
        View s = ViewInput(m, n);
        std::vector<int64_t> axes = m.IntsOf(n, "axes", 1);
        const size_t rank = s.shape.size() + axes.size();
        for (int64_t& x : axes) x = Mapper::Axis(x, rank);
        std::sort(axes.begin(), axes.end());
        for (int64_t x : axes) {
          s.shape.insert(s.shape.begin() + x, 1);
          s.strides.insert(s.strides.begin() + x, 0);
        }
        m.SetView(n.output(0), s);
      };
    } else {
      op.fold = [](const Mapper& m, const onnx::NodeProto& n) {
        Known out = SameValues(m, n);
        out.dims.erase(std::remove(out.dims.begin(), out.dims.end(), 1),
                       out.dims.end());
        return std::optional<Known>(out);
      };
      op.apply = [](Mapper& m, int, const onnx::NodeProto& n) {
        View s = ViewInput(m, n);
        std::vector<int64_t> axes = m.IntsOf(n, "axes", 1);
        for (int64_t& x : axes) x = Mapper::Axis(x, s.shape.size());
        if (axes.empty()) {
          for (size_t k = 0; k < s.shape.size(); ++k) {
            if (s.shape[k] == 1) axes.push_back(k);
          }
        }
        std::sort(axes.rbegin(), axes.rend());
        for (int64_t x : axes) {
          if (s.shape[x] != 1) {
            throw GraphError("a squeeze of an axis of " +
                             std::to_string(s.shape[x]));
          }
          s.shape.erase(s.shape.begin() + x);
          s.strides.erase(s.strides.begin() + x);
        }
        m.SetView(n.output(0), s);
      };
    }
    return op;
  }

  static Operator Sub() {
    Operator op = Entry("Sub", 7, "nothing",
                        "of known values, computed; within a layer "
                        "normalization's nodes (see `ReduceMean`)");
    op.fold = [](const Mapper& m, const onnx::NodeProto& n) {
      return std::optional<Known>(Elementwise(
          m, n, 0, false, [](double p, double q, size_t) { return p - q; }));
    };
    op.apply = Alone;
    return op;
  }

  static Operator Transpose() {
    Operator op =
        Entry("Transpose", 1, "nothing",
              "of a layer's output, a view (see `Reshape`; `[N, C]` after a "
              "global pool is ONNX's `[N, C, 1, 1]`); of a matrix in the file, "
              "that matrix transposed to its product (see `MatMul`)");
    op.apply = [](Mapper& m, int, const onnx::NodeProto& n) {
      if (m.IsInitializer(n.input(0)) &&
          m.InitializerDims(n.input(0)).size() == 2) {
        m.transposed_[n.output(0)] = n.input(0);
        return;
      }
      View maps = ViewInput(m, n);
      std::vector<int64_t> perm = Attributes(n).Ints("perm");
      if (perm.empty()) {
        for (size_t k = maps.shape.size(); k-- > 0;) perm.push_back(k);
      }
      if (perm.size() == 4 && maps.shape.size() == 2 && maps.layer >= 0 &&
          m.graph_.layer(maps.layer).op == Op::kGlobalAvgPool) {
        // The graph's [N, C] after a global pool is ONNX's [N, C, 1, 1].
        maps.shape.insert(maps.shape.end(), {1, 1});
        maps.strides.insert(maps.strides.end(), {0, 0});
      }
      if (perm.size() != maps.shape.size()) {
        throw GraphError("a transpose of " + Mapper::Describe(maps) + " by " +
                         ToString(perm));
      }
      m.SetView(n.output(0), Permuted(maps, perm));
    };
    return op;
  }

  static Operator Where() {
    Operator op = Entry("Where", 9, "nothing", "of known values, computed");
    op.fold = [](const Mapper& m, const onnx::NodeProto& n) {
      const Known& cond = *m.KnownOf(n.input(0));
      return std::optional<Known>(
          Elementwise(m, n, 1, false, [&cond](double p, double q, size_t i) {
            const double c = cond.v.size() == 1 ? cond.v[0] : cond.v.at(i);
            return c != 0 ? p : q;
          }));
    };
    op.apply = Alone;
    return op;
  }

  static std::vector<Operator> All() {
    std::vector<Operator> all = {Add(),
                                 AveragePool(),
                                 BatchNormalization(),
                                 Cast(),
                                 Clip(),
                                 Concat(),
                                 Constant(),
                                 ConstantOfShape(),
                                 Conv(),
                                 Div(),
                                 Dropout(),
                                 Equal(),
                                 Erf(),
                                 Expand(),
                                 Flatten(),
                                 Gather(),
                                 Gemm(),
                                 GlobalAveragePool(),
                                 HardSigmoid(),
                                 HardSwish(),
                                 Identity(),
                                 LayerNormalization(),
                                 MatMul(),
                                 MaxPool(),
                                 Mod(),
                                 Mul(),
                                 Neg(),
                                 Pad(),
                                 Pow(),
                                 ReduceMean(),
                                 Relu(),
                                 Reshape(),
                                 Resize(),
                                 Shape(),
                                 Sigmoid(),
                                 Slice(),
                                 Softmax(),
                                 Sqrt(),
                                 Squeezes("Squeeze", false),
                                 Sub(),
                                 Transpose(),
                                 Squeezes("Unsqueeze", true),
                                 Where()};
    std::sort(all.begin(), all.end(), [](const Operator& a, const Operator& b) {
      return a.info.type < b.info.type;
    });
    return all;
  }
};

const std::vector<Operator>& Operators() {
  static const std::vector<Operator> all = OperatorTable::All();
  return all;
}

const Operator* FindOperator(const std::string& type) {
  const std::vector<Operator>& all = Operators();
  const auto it =
      std::lower_bound(all.begin(), all.end(), type,
                       [](const Operator& op, const std::string& t) {
                         return op.info.type < t;
                       });
  return it != all.end() && it->info.type == type ? &*it : nullptr;
}

}  // namespace paradnn
