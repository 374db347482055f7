// The table's entries that speech models' exports need (torchaudio's
// Wav2Vec2): a group norm with a group per channel, weight-normed
// convolutions, attention's scores less their maximum (importers/
// onnx_operator_table.h). 1-D convolutions are `Conv`'s (onnx_layers.cpp).

#include <optional>

#include "importers/onnx_operator_table.h"

namespace paradnn {

std::string OperatorTable::Window1d(const Mapper& m, const onnx::NodeProto& n) {
  const Attributes a(n);
  const std::vector<int64_t> pads = a.Ints("pads");
  const std::string pad = a.String("auto_pad");
  if (a.Ints("strides").size() <= 1 && a.Ints("dilations").size() <= 1 &&
      (pads.empty() || (pads.size() == 2 && pads[0] == pads[1])) &&
      (pad.empty() || pad == "NOTSET")) {
    return "";
  }
  return m.Where(n) + ": pads " + ToString(pads) + ", auto_pad " +
         (pad.empty() ? "NOTSET" : pad) +
         ": the graph's 1-D convolutions pad both ends alike";
}

OperatorTable::FileTensorOf OperatorTable::FileTensor(
    const Mapper& m, const std::string& value) {
  if (m.IsInitializer(value)) return {value};
  for (int k = 0; k < m.g_.node_size(); ++k) {
    const onnx::NodeProto& p = m.g_.node(k);
    if (p.output_size() == 1 && p.output(0) == value) {
      return p.op_type() == "Unsqueeze" && m.IsInitializer(p.input(0))
                 ? FileTensorOf{p.input(0), k}
                 : FileTensorOf{};
    }
  }
  return {};
}

std::optional<OperatorTable::WeightNormNodes> OperatorTable::WeightNormAt(
    const Mapper& m, const onnx::NodeProto& n) {
  const std::string& v = n.input(0);
  if (!m.IsInitializer(v) || Attributes(n).Int("keepdims", 1) != 1) {
    return std::nullopt;
  }
  const std::vector<int64_t>& dims = m.InitializerDims(v);
  const size_t rank = dims.size();
  std::vector<bool> reduced(rank, false);
  try {
    for (int64_t a : m.IntsOf(n, "axes", 1))
      reduced[Mapper::Axis(a, rank)] = true;
  } catch (const GraphError&) {
    return std::nullopt;
  }
  WeightNormNodes w;
  w.of.v = v;
  w.of.axis = -1;
  for (size_t k = 0; k < rank; ++k) {
    if (reduced[k]) continue;
    if (w.of.axis >= 0) return std::nullopt;  // one axis of magnitudes
    w.of.axis = static_cast<int64_t>(k);
  }
  const std::string& norm = n.output(0);
  w.div = m.ReaderOf(norm, "Div", v);
  if (w.of.axis < 0 || w.div < 0 || m.g_.node(w.div).input(0) != v) {
    return std::nullopt;
  }
  const std::string& unit = m.g_.node(w.div).output(0);
  w.mul = m.ReaderOf(unit, "Mul");
  if (w.mul < 0) return std::nullopt;
  w.of.g = m.Other(w.mul, unit);
  if (!m.IsInitializer(w.of.g)) return std::nullopt;
  std::vector<int64_t> g_dims(rank, 1);
  g_dims[w.of.axis] = dims[w.of.axis];
  const std::string& weights = m.g_.node(w.mul).output(0);
  const int conv = m.ReaderOf(weights, "Conv");
  if (m.InitializerDims(w.of.g) != g_dims || conv < 0 ||
      m.g_.node(conv).input(1) != weights) {
    return std::nullopt;
  }
  return w;
}

Operator OperatorTable::ReduceL2() {
  Operator op = Entry(
      "ReduceL2", 1, "`conv2d` (`weight_norm`)",
      "of a convolution's weights v in the file over every axis but one, in "
      "v / ReduceL2(v) x g read by the convolution (PyTorch's weight_norm, "
      "torchaudio's positional convolution): that convolution weight-normed");
  op.check = [](const Mapper& m, const onnx::NodeProto& n) {
    return WeightNormAt(m, n) ? std::string()
                              : m.Where(n) +
                                    ": not the norm of a convolution's "
                                    "weights v in v / |v| x g (PyTorch's "
                                    "weight_norm)";
  };
  op.apply = [](Mapper& m, int, const onnx::NodeProto& n) {
    const WeightNormNodes w = *WeightNormAt(m, n);
    m.weight_norms_[m.g_.node(w.mul).output(0)] = w.of;
    m.fused_.insert(w.div);
    m.fused_.insert(w.mul);
  };
  return op;
}

Operator OperatorTable::ReduceMax() {
  Operator op =
      Entry("ReduceMax", 1, "nothing",
            "of attention's scores over the keys, subtracted from them "
            "before their softmax (torchaudio's attention): the softmax is "
            "the same without it, and so is its gradient");
  op.check = [](const Mapper& m, const onnx::NodeProto& n) {
    const std::string& scores = n.input(0);
    const int sub = m.ReaderOf(n.output(0), "Sub", scores);
    const bool fits = Attributes(n).Int("keepdims", 1) == 1 && sub >= 0 &&
                      m.g_.node(sub).input(0) == scores &&
                      m.ReaderOf(m.g_.node(sub).output(0), "Softmax") >= 0 &&
                      m.IntsOf(n, "axes", 1) == std::vector<int64_t>{-1};
    return fits ? std::string()
                : m.Where(n) +
                      ": not the maximum over the last axis subtracted from "
                      "its input before a softmax";
  };
  op.apply = [](Mapper& m, int, const onnx::NodeProto& n) {
    const auto scores = m.scores_.find(n.input(0));
    if (scores == m.scores_.end()) {
      throw GraphError("a maximum of a value that is not attention's scores");
    }
    const int sub = m.ReaderOf(n.output(0), "Sub", n.input(0));
    m.scores_[m.g_.node(sub).output(0)] = scores->second;
    m.fused_.insert(sub);
  };
  return op;
}

Operator OperatorTable::InstanceNormalization() {
  Operator op = Entry(
      "InstanceNormalization", 6, "`instance_norm`",
      "each channel of each example of maps or a signal over its positions; "
      "its scale and bias the layer's, or where they are 1 and 0, the "
      "per-channel `Mul` and `Add` after it reshaped back (PyTorch's "
      "GroupNorm with a group per channel, torchaudio's); a group norm of "
      "fewer groups than channels is not built");
  op.apply = [](Mapper& m, int, const onnx::NodeProto& n) {
    const View v = ViewInput(m, n);
    const bool channels =
        v.layer >= 0 && IsWholeButOnes(v, m.LayerShape(v.layer)) &&
        m.LayerShape(v.layer).size() == 4 && v.shape.size() >= 2 &&
        v.shape[1] == m.LayerShape(v.layer)[1];
    if (!channels) {
      throw GraphError("an instance norm of " + Mapper::Describe(v) +
                       ": expected each channel of [N, C, ...] (a group "
                       "norm of fewer groups than channels is not built)");
    }
    const int x = Input(m, n);
    const int64_t c = m.ShapeOf(x)[1];
    const double epsilon = AsWritten(Attributes(n).Float("epsilon", 1e-5f));
    const int layer = m.Derived(m.graph_.InstanceNorm(x, epsilon), x);
    std::string scale = n.input(1), shift = n.input(2), out = n.output(0);
    auto all = [&](const std::string& t, float value) {
      const std::vector<float> values = m.FileValues(t);
      for (float f : values) {
        if (f != value) return false;
      }
      return !values.empty();
    };
    if (all(scale, 1.f) && all(shift, 0.f)) {
      // PyTorch's GroupNorm: the normalized values reshaped back, times
      // the weight and plus the bias, each [C, 1] (Unsqueeze of [C]).
      const int back = m.ReaderOf(out, "Reshape");
      const int mul =
          back < 0 ? -1 : m.ReaderOf(m.g_.node(back).output(0), "Mul");
      const int add =
          mul < 0 ? -1 : m.ReaderOf(m.g_.node(mul).output(0), "Add");
      if (add < 0 || m.readers_.at(out) != 1) {
        throw GraphError(
            "an instance norm of scale 1 and bias 0 not followed by a "
            "scale and a shift per channel (the graph's are trained)");
      }
      const FileTensorOf factor =
          FileTensor(m, m.Other(mul, m.g_.node(back).output(0)));
      const FileTensorOf term =
          FileTensor(m, m.Other(add, m.g_.node(mul).output(0)));
      scale = factor.tensor;
      shift = term.tensor;
      if (scale.empty() || shift.empty() || m.Count(scale) != c ||
          m.Count(shift) != c) {
        throw GraphError("an instance norm's scale and shift after it: not " +
                         std::to_string(c) + " values each in the file");
      }
      for (int k : {back, mul, add, factor.unsqueeze, term.unsqueeze}) {
        if (k >= 0) m.fused_.insert(k);
      }
      out = m.g_.node(add).output(0);
    } else if (!m.IsInitializer(scale) || !m.IsInitializer(shift) ||
               m.Count(scale) != c || m.Count(shift) != c) {
      throw GraphError("an instance norm's scale and bias: not " +
                       std::to_string(c) + " values each in the file");
    }
    m.params_ += 2 * c;
    m.Give(layer, {{scale, false}, {shift, false}});
    m.Bind(out, layer);
  };
  return op;
}

}  // namespace paradnn
