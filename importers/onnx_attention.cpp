// The Mapper's nodes of the layers exporters write out: attention's
// products and softmax, layer normalization, GELU, a class token.

#include <algorithm>
#include <cmath>

#include "importers/onnx_mapper.h"

namespace paradnn {

int Mapper::ReaderOf(const std::string& value, const std::string& op,
                     const std::string& also) const {
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

std::string Mapper::Other(int k, const std::string& value) const {
  const onnx::NodeProto& r = g_.node(k);
  return r.input(0) == value ? r.input(1) : r.input(0);
}

int Mapper::LayerNormNodes(int index, double* epsilon, std::string* scale,
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
  const std::optional<double> eps = Scalar(Other(add, g_.node(var).output(0)));
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

int Mapper::GeluNodes(int index) {
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

bool Mapper::ApplyViews(int index, const onnx::NodeProto& n) {
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
    const int64_t to = std::clamp<int64_t>(
        a.Int("end", rank) < 0 ? a.Int("end", rank) + rank : a.Int("end", rank),
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
  if (op == "MatMul" && ApplyPointwise(index, n)) return true;
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
    View maps = *v;
    if (perm.size() == 4 && maps.shape.size() == 2 && maps.layer >= 0 &&
        graph_.layer(maps.layer).op == Op::kGlobalAvgPool) {
      // The graph's [N, C] after a global pool is ONNX's [N, C, 1, 1].
      maps.shape.insert(maps.shape.end(), {1, 1});
      maps.strides.insert(maps.strides.end(), {0, 0});
    }
    if (perm.size() != maps.shape.size()) {
      throw GraphError("a transpose of " + Describe(maps) + " by " +
                       ToString(perm));
    }
    SetView(out, Permuted(maps, perm));
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
      if (gelu >= 0 && IsMaps(*v)) {
        const int layer = graph_.Gelu(v->layer);
        SetView(g_.node(gelu).output(0), ChannelsLast(layer, ShapeOf(layer)));
        return true;
      }
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
    SetView(g_.node(last).output(0), Normalized(*v, epsilon, scale, shift));
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
    SetView(out, Normalized(*v, AsWritten(a.Float("epsilon", 1e-5f)),
                            n.input(1), n.input(2)));
    return true;
  }
  if (kViewsOnly.count(op)) {
    throw GraphError("a " + op + " of " + Describe(*v) +
                     " that no layer of the graph expresses");
  }
  return false;
}

bool Mapper::IsMaps(const View& v) const {
  return v.layer >= 0 && IsChannelsLast(v, ShapeOf(v.layer));
}

View Mapper::Normalized(const View& v, double epsilon, const std::string& scale,
                        const std::string& shift) {
  params_ += Count(scale) + Count(shift);
  if (IsMaps(v)) {
    const int norm = graph_.LayerNorm(v.layer, epsilon, 1);
    Give(norm, {{scale, false}, {shift, false}});
    return ChannelsLast(norm, ShapeOf(norm));
  }
  const View rows = Rows(v);
  const int norm = Derived(graph_.LayerNorm(rows.layer, epsilon), rows.layer);
  Give(norm, {{scale, false}, {shift, false}});
  const int64_t units = rows.shape.back();
  return Moved(rows, norm, units, units);
}

bool Mapper::ApplyPointwise(int index, const onnx::NodeProto& n) {
  const std::optional<View> x = ViewOf(n.input(0));
  const std::string& b = n.input(1);
  if (!x || !IsMaps(*x) || (!IsInitializer(b) && !transposed_.count(b))) {
    return false;
  }
  // MatMul's B is [in, units]; the exporter's transpose of a [units, in]
  // initializer (a linear layer's weights) is one already laid out as the
  // convolution's [units, in, 1, 1].
  const bool rows_are_units = !IsInitializer(b);
  const std::string& w = rows_are_units ? transposed_.at(b) : b;
  const std::vector<int64_t>& dims = InitializerDims(w);
  const int64_t units = rows_are_units ? dims[0] : dims[1];
  const int64_t in = rows_are_units ? dims[1] : dims[0];
  const Shape& maps = ShapeOf(x->layer);
  if (in != maps[1]) {
    throw GraphError("a product of " + Describe(*x) + " by " + ToString(dims));
  }
  const int bias_add = BiasAdd(index, units);
  params_ += Count(w) + (bias_add >= 0 ? units : 0);
  const int conv = graph_.Conv2d(x->layer, units, 1, 1, 0, 1, bias_add >= 0);
  std::vector<std::pair<std::string, bool>> tensors = {{w, !rows_are_units}};
  const View out = ChannelsLast(conv, ShapeOf(conv));
  SetView(n.output(0), out);
  if (bias_add >= 0) {
    const onnx::NodeProto& add = g_.node(bias_add);
    tensors.push_back({Other(bias_add, n.output(0)), false});
    fused_.insert(bias_add);
    SetView(add.output(0), out);
  }
  Give(conv, tensors);
  return true;
}

bool Mapper::ApplyProduct(const onnx::NodeProto& n) {
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
      throw GraphError("attention's scores scaled by " + std::to_string(scale) +
                       ", not 1/sqrt(" + std::to_string(q->dh) + ")");
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

bool Mapper::ApplyAdd(const onnx::NodeProto& n) {
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

bool Mapper::ApplyClassToken(const onnx::NodeProto& n) {
  if (n.input_size() != 2 || !expanded_.count(n.input(0))) {
    throw GraphError(
        "a concat of an expanded tensor other than a class "
        "token before a sequence");
  }
  const std::string& token = expanded_.at(n.input(0));
  const std::optional<View> x = ViewOf(n.input(1));
  if (!x) throw GraphError("its input " + n.input(1) + " is made by no layer");
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

}  // namespace paradnn
