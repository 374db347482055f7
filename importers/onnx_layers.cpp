// The table's entries of the operators that are CNNs' layers: convolutions,
// pools, activations, normalization, joins, resizes (importers/
// onnx_operator_table.h).

#include <algorithm>
#include <cmath>
#include <limits>

#include "importers/onnx_operator_table.h"

namespace paradnn {

std::string OperatorTable::Window(const Mapper& m, const onnx::NodeProto& n,
                                  const std::vector<int64_t>& kernel,
                                  bool square) {
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

std::string OperatorTable::Window3d(const Mapper& m, const onnx::NodeProto& n) {
  const Attributes a(n);
  const std::vector<int64_t> strides = a.Ints("strides");
  const std::vector<int64_t> pads = a.Ints("pads");
  const bool fits =
      (strides.empty() || (strides.size() == 3 && strides[1] == strides[2])) &&
      (pads.empty() || (pads.size() == 6 && pads[0] == pads[3] &&
                        pads[1] == pads[4] && pads[2] == pads[5])) &&
      AllEqual(a.Ints("dilations"), 1) && a.Int("group", 1) == 1;
  const std::string pad = a.String("auto_pad");
  if (fits && (pad.empty() || pad == "NOTSET")) return "";
  return m.Where(n) + ": strides " + ToString(strides) + ", pads " +
         ToString(pads) + ", dilations " + ToString(a.Ints("dilations")) +
         ", group " + std::to_string(a.Int("group", 1)) + ", auto_pad " +
         (pad.empty() ? "NOTSET" : pad) +
         ": the graph's 3-D convolutions have one stride across height and "
         "width, the same padding before and after each axis, one group and "
         "no dilation";
}

void OperatorTable::Pool(Mapper& m, int, const onnx::NodeProto& n) {
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

bool OperatorTable::AddOfViews(Mapper& m, const onnx::NodeProto& n) {
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
  const std::optional<View> x = m.ViewOf(n.input(0)), y = m.ViewOf(n.input(1));
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

Operator OperatorTable::Add() {
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

Operator OperatorTable::AveragePool() {
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

Operator OperatorTable::BatchNormalization() {
  Operator op =
      Entry("BatchNormalization", 9, "`batchnorm`",
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
    const int norm =
        m.graph_.BatchNorm(x, AsWritten(Attributes(n).Float("epsilon", 1e-5f)));
    // Scale, shift, running mean and variance.
    m.Give(norm, {{n.input(1), false},
                  {n.input(2), false},
                  {n.input(3), false},
                  {n.input(4), false}});
    m.Bind(n.output(0), norm);
  };
  return op;
}

std::optional<double> OperatorTable::ClipBound(const Mapper& m,
                                               const onnx::NodeProto& n,
                                               int i) {
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

Operator OperatorTable::Clip() {
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

void OperatorTable::ClassToken(Mapper& m, const onnx::NodeProto& n) {
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
  if (s.size() != 3 || m.BatchAxis(rows.layer) != 1 || m.Count(token) != s[2] ||
      rows.strides[axis] != s[1] * s[2]) {
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

Operator OperatorTable::Concat() {
  Operator op =
      Entry("Concat", 4, "`concat`; `class_token`",
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
           xs.size() == 1 ? xs[0]
                          : m.graph_.Concat(xs, Attributes(n).Int("axis", 0)));
  };
  return op;
}

Operator OperatorTable::Conv() {
  Operator op =
      Entry("Conv", 1, "`conv2d`; `conv3d`; `dense`",
            "a kernel of any height and width (Inception's 1x7 and 7x1), one "
            "stride and one dilation for both axes (DeepLab's atrous "
            "convolutions), the same padding before and after each axis; any "
            "groups (depthwise: one per channel); weights and a "
            "bias, if any, of one value per output channel in the file. A 1x1 "
            "convolution of a global pool's output (squeeze-and-excitation) is "
            "a `dense` layer of it. Of video's `[N, C, D, H, W]` (R3D's), a "
            "`conv3d`: any kernel, one stride across height and width, the "
            "same padding before and after each axis, one group, no "
            "dilation. Of a signal's `[N, C, L]` (speech's; its weights "
            "`[out, in, k]`), a `conv2d` over maps of height 1, any groups, "
            "weight-normed where its weights are made so (see `ReduceL2`); of "
            "a sequence read as one, over `maps` of it");
  op.check = [](const Mapper& m, const onnx::NodeProto& n) {
    const std::string where = m.Where(n);
    const auto normed = m.weight_norms_.find(n.input(1));
    const std::string weights =
        normed != m.weight_norms_.end() ? normed->second.v : n.input(1);
    const size_t rank =
        m.IsInitializer(weights) ? m.InitializerDims(weights).size() : 0;
    if (rank < 3 || rank > 5) {
      return where + ": weights not a 1-D, 2-D or 3-D kernel in the file";
    }
    const std::vector<int64_t>& w = m.InitializerDims(weights);
    if (n.input_size() > 2 && !n.input(2).empty() &&
        (!m.IsInitializer(n.input(2)) || m.Count(n.input(2)) != w[0])) {
      return where + ": a bias not of one value per output channel in the file";
    }
    if (rank == 5) return Window3d(m, n);
    if (rank == 3) return Window1d(m, n);
    return Window(m, n, {w[2], w[3]}, false);
  };
  op.apply = [](Mapper& m, int, const onnx::NodeProto& n) {
    const Attributes a(n);
    // A sequence [L, N, E] read as a signal [N, E, L] (Wav2Vec2's
    // positional convolution): maps of height 1 again.
    std::optional<View> v = m.ViewOf(n.input(0));
    if (v && v->layer < 0) v = m.Realize(*v);
    const int x = v && m.SequenceRead(*v, {1, 2, 0})
                      ? m.graph_.Maps(v->layer, 1)
                      : Input(m, n);
    const auto normed = m.weight_norms_.find(n.input(1));
    const bool norm = normed != m.weight_norms_.end();
    const std::string weights = norm ? normed->second.v : n.input(1);
    const std::vector<int64_t>& w = m.InitializerDims(weights);
    const bool bias = n.input_size() > 2 && !n.input(2).empty();
    const int64_t groups = a.Int("group", 1);
    m.params_ += m.Count(weights) + (bias ? w[0] : 0);
    std::vector<std::pair<std::string, bool>> tensors = {{weights, false}};
    if (norm) {
      m.params_ += m.Count(normed->second.g);
      tensors.push_back({normed->second.g, false});
    }
    if (bias) tensors.push_back({n.input(2), false});
    int layer = 0;
    if (w.size() == 3) {
      // Over a signal: maps of height 1, the kernel 1 x k.
      const paradnn::Shape& in = m.ShapeOf(x);
      if (in.size() != 4 || in[2] != 1) {
        throw GraphError("a 1-D convolution of " + ToString(in) +
                         ": expected a signal [N, C, L]");
      }
      layer = m.graph_.Conv2d(x, w[0], {1, w[2]}, Uniform(a.Ints("strides"), 1),
                              {0, Uniform(a.Ints("pads"), 0)}, groups, bias,
                              Uniform(a.Ints("dilations"), 1));
      // The file's [out, in, k] axes: 0, 1 and the graph's 3.
      if (norm) {
        const int64_t axis = normed->second.axis;
        m.graph_.WeightNorm(layer, axis == 2 ? 3 : axis);
      }
    } else if (norm) {
      throw GraphError("a weight norm of " + ToString(w) +
                       " weights: built for 1-D convolutions'");
    } else if (w.size() == 5) {
      const std::vector<int64_t> strides = a.Ints("strides");
      const std::vector<int64_t> pads = a.Ints("pads");
      auto at = [](const std::vector<int64_t>& v, size_t k, int64_t none) {
        return v.empty() ? none : v[k];
      };
      layer = m.graph_.Conv3d(
          x, w[0], {w[2], w[3], w[4]},
          {at(strides, 0, 1), at(strides, 1, 1), at(strides, 2, 1)},
          {at(pads, 0, 0), at(pads, 1, 0), at(pads, 2, 0)}, bias);
    } else if (m.ShapeOf(x).size() == 2) {
      // After a global pool the graph's [batch, channels] is ONNX's
      // [batch, channels, 1, 1] (squeeze-and-excitation): a 1x1
      // convolution of it is a dense layer.
      if (w[2] != 1 || groups != 1 || Uniform(a.Ints("pads"), 0) != 0) {
        throw GraphError("a " + std::to_string(w[2]) + "x" +
                         std::to_string(w[3]) + " convolution of a 1x1 image");
      }
      layer = m.graph_.Dense(x, w[0], bias);
    } else {
      const std::vector<int64_t> pads = a.Ints("pads");
      const Hw pad = pads.empty() ? Hw(0) : Hw(pads[0], pads[1]);
      layer =
          m.graph_.Conv2d(x, w[0], {w[2], w[3]}, Uniform(a.Ints("strides"), 1),
                          pad, groups, bias, Uniform(a.Ints("dilations"), 1));
    }
    m.Give(layer, tensors);
    m.Bind(n.output(0), layer);
  };
  return op;
}

Operator OperatorTable::Dropout() {
  Operator op = Entry("Dropout", 1, "nothing",
                      "the input passes on (dropout is a no-op in "
                      "inference, and the graph has none in training)");
  op.apply = PassOn;
  return op;
}

Operator OperatorTable::Flatten() {
  Operator op = Entry("Flatten", 1, "`flatten`, or nothing",
                      "of axis 1, to `[batch, the rest]`; nothing of a "
                      "layer already `[batch, units]` (after a global pool)");
  op.apply = [](Mapper& m, int, const onnx::NodeProto& n) {
    Flattened(m, n, Attributes(n).Int("axis", 1) == 1);
  };
  return op;
}

Operator OperatorTable::GlobalAveragePool() {
  Operator op = Entry("GlobalAveragePool", 1, "`avgpool`",
                      "its output is `[batch, channels]` in the graph");
  op.apply = OneLayer<&Graph::GlobalAvgPool>;
  return op;
}

Operator OperatorTable::HardSigmoid() {
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

Operator OperatorTable::HardSwish() {
  Operator op = Entry("HardSwish", 14, "`hardswish`", "");
  op.apply = OneLayer<&Graph::HardSwish>;
  return op;
}

Operator OperatorTable::Identity() {
  Operator op =
      Entry("Identity", 1, "nothing",
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

Operator OperatorTable::MaxPool() {
  Operator op =
      Entry("MaxPool", 1, "`maxpool`",
            "a square window, the same stride and padding on every side, no "
            "dilation; in either rounding (`ceil_mode` 1 as PyTorch's: a last "
            "window that starts in the input may hang past it)");
  op.check = [](const Mapper& m, const onnx::NodeProto& n) {
    return Window(m, n, Attributes(n).Ints("kernel_shape"), true);
  };
  op.apply = Pool;
  return op;
}

bool OperatorTable::LayerScale(Mapper& m, const onnx::NodeProto& n) {
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

bool OperatorTable::PerChannel(const Mapper& m,
                               const std::string& initializer) {
  const std::vector<int64_t>& dims = m.InitializerDims(initializer);
  const size_t r = dims.size();
  return (r == 3 || (r == 4 && dims[0] == 1)) && dims[r - 1] == 1 &&
         dims[r - 2] == 1;
}

Operator OperatorTable::Mul() {
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

const std::vector<double>* OperatorTable::PadWidths(const Mapper& m,
                                                    const onnx::NodeProto& n) {
  const Known* k = n.input_size() > 1 ? m.KnownOf(n.input(1)) : nullptr;
  return k == nullptr || k->v.empty() ? nullptr : &k->v;
}

int OperatorTable::PaddedPool(const Mapper& m, const onnx::NodeProto& n) {
  const std::string& out = n.output(0);
  if (m.readers_.count(out) == 0 || m.readers_.at(out) != 1) return -1;
  const int pool = m.ReaderOf(out, "AveragePool");
  if (pool < 0) return -1;
  const Attributes a(m.g_.node(pool));
  return AllEqual(a.Ints("pads"), 0) && a.Int("ceil_mode", 0) == 0 ? pool : -1;
}

Operator OperatorTable::Pad() {
  Operator op =
      Entry("Pad", 11, "`avgpool2d`; nothing",
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
                      w[5] == 0 && w[2] == w[3] && w[2] == w[6] && w[2] == w[7];
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

Operator OperatorTable::Relu() {
  Operator op = Entry("Relu", 6, "`relu`", "");
  op.apply = OneLayer<&Graph::ReLU>;
  return op;
}

Operator OperatorTable::Resize() {
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

Operator OperatorTable::Sigmoid() {
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

}  // namespace paradnn
