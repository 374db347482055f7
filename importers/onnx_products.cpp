// The Mapper's views: tensors that are strided views of a layer's output,
// made layers where an operation reads them, and products by weights made
// dense layers column block by column block.

#include <algorithm>

#include "importers/onnx_mapper.h"

namespace paradnn {

const Shape& Mapper::LayerShape(int layer) const {
  return layer >= 0 ? graph_.layer(layer).shape
                    : products_.at(-layer - 1).shape;
}

int Mapper::BatchAxis(int layer) const {
  const auto it = batch_axis_.find(layer);
  return it == batch_axis_.end() ? 0 : it->second;
}

int64_t Mapper::BatchStride(int layer) const {
  return ContiguousStrides(LayerShape(layer))[BatchAxis(layer)];
}

std::optional<View> Mapper::ViewOf(const std::string& name) const {
  const auto v = views_.find(name);
  if (v != views_.end()) return v->second;
  const auto l = layer_of_.find(name);
  if (l == layer_of_.end()) return std::nullopt;
  const Shape& s = ShapeOf(l->second);
  if (signal_ && s.size() == 4 && s[2] == 1) {
    return Reshaped(Whole(l->second, s), {s[0], s[1], s[3]});
  }
  return Whole(l->second, s);
}

bool Mapper::SequenceRead(const View& v,
                          const std::vector<int64_t>& perm) const {
  if (v.layer < 0 || BatchAxis(v.layer) != 1 || v.scale != 1 || v.offset != 0 ||
      LayerShape(v.layer).size() != 3) {
    return false;
  }
  const View read =
      Canonical(Permuted(Whole(v.layer, LayerShape(v.layer)), perm));
  return Canonical(v).shape == read.shape &&
         Canonical(v).strides == read.strides;
}

std::vector<float> Mapper::FileValues(const std::string& name) const {
  for (const onnx::TensorProto& t : g_.initializer()) {
    if (t.name() == name) return TensorValues<float>(t);
  }
  for (const onnx::NodeProto& n : g_.node()) {
    if (n.op_type() != "Constant" || n.output(0) != name) continue;
    for (const onnx::AttributeProto& a : n.attribute()) {
      if (a.name() == "value") return TensorValues<float>(a.t());
    }
  }
  return {};
}

void Mapper::SetView(const std::string& name, const View& given) {
  const View v = Canonical(given);
  if (v.layer >= 0 && v.scale == 1 && IsWhole(v, LayerShape(v.layer))) {
    views_.erase(name);
    Bind(name, v.layer);
  } else {
    layer_of_.erase(name);
    views_[name] = v;
  }
}

int Mapper::Derived(int layer, int from) {
  if (BatchAxis(from) != 0) batch_axis_[layer] = BatchAxis(from);
  return layer;
}

std::string Mapper::Describe(const View& v) {
  return ToString(v.shape) + " (strides " + ToString(v.strides) +
         (v.offset ? ", offset " + std::to_string(v.offset) : "") + ")";
}

int Mapper::ProductLayer(size_t p, int64_t from, int64_t width) {
  Product& prod = products_[p];
  const auto made = prod.made.find({from, width});
  if (made != prod.made.end()) return made->second;
  const bool bias = !prod.bias.empty();
  const int dense = Derived(graph_.Dense(prod.x, width, bias), prod.x);
  sources_[dense] = {{prod.weight, !prod.rows_are_units, from, width}};
  if (bias) sources_[dense].push_back({prod.bias, false, from, width});
  if (given_) {
    const int64_t units = prod.shape.back();
    const Tensor w = Weight(prod.weight);
    const int64_t in = static_cast<int64_t>(w->size()) / units;
    auto block = std::make_shared<std::vector<float>>(width * in);
    for (int64_t r = 0; r < width; ++r) {
      for (int64_t c = 0; c < in; ++c) {
        (*block)[r * in + c] = prod.rows_are_units ? (*w)[(from + r) * in + c]
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

View Mapper::Realize(View v) {
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

std::optional<View> Mapper::Arrange(const View& v) {
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

View Mapper::Rows(View v) {
  v = Realize(v);
  if (v.scale != 1) {
    throw GraphError("a tensor scaled by " + std::to_string(v.scale) +
                     " where the graph's layers take none");
  }
  if (RowsWhole(v, LayerShape(v.layer))) return v;
  const std::optional<View> a = Arrange(v);
  if (a && RowsWhole(*a, LayerShape(a->layer))) return *a;
  if (const auto s = Sliced(v)) return *s;
  throw GraphError("a view " + Describe(v) + " of " +
                   ToString(LayerShape(v.layer)) +
                   " that the graph's layers do not read");
}

int Mapper::AsLayer(const View& v) {
  if (v.layer >= 0 && IsWholeButOnes(v, LayerShape(v.layer))) return v.layer;
  const View rows = Rows(v);
  if (IsWhole(rows, LayerShape(rows.layer))) return rows.layer;
  throw GraphError("a view " + Describe(rows) + " of " +
                   ToString(LayerShape(rows.layer)) +
                   " where the graph's layers take their input whole");
}

std::optional<Mapper::HeadsOf> Mapper::Heads(const View& given, bool keys) {
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

std::optional<View> Mapper::Shuffled(const View& v, const Shape& to) {
  if (v.layer < 0 || v.offset != 0 || v.scale != 1 || v.shape.size() != 5) {
    return std::nullopt;
  }
  const Shape s = LayerShape(v.layer);
  const int64_t groups = v.shape[2];
  // The maps' shape (-1 where the rest goes), its batch the graph's or the
  // one the file fixed.
  auto fits = [&](size_t k) {
    return to[k] == -1 || to[k] == s[k] || (k == 0 && to[k] == file_batch_);
  };
  if (s.size() != 4 || to.size() != 4 || groups < 2 || s[1] % groups != 0 ||
      !fits(0) || !fits(1) || !fits(2) || !fits(3)) {
    return std::nullopt;
  }
  const int64_t maps = s[2] * s[3];
  const View shuffle =
      Canonical({v.layer,
                 {s[0], s[1] / groups, groups, s[2], s[3]},
                 {s[1] * maps, maps, s[1] / groups * maps, s[3], 1},
                 0,
                 1});
  const View given = Canonical(v);
  if (given.shape != shuffle.shape || given.strides != shuffle.strides) {
    return std::nullopt;
  }
  return Whole(graph_.ChannelShuffle(v.layer, groups), s);
}

std::optional<View> Mapper::Sliced(const View& v) {
  if (v.layer < 0 || v.scale != 1) return std::nullopt;
  const Shape s = LayerShape(v.layer);
  if (signal_ && v.shape.size() == 3 && s.size() == 4 && s[2] == 1) {
    // A signal's range: of its maps, their height put back.
    View maps = v;
    maps.shape.insert(maps.shape.begin() + 2, 1);
    maps.strides.insert(maps.strides.begin() + 2, 0);
    const std::optional<View> cut = Sliced(maps);
    if (!cut) return std::nullopt;
    return Reshaped(*cut, v.shape);
  }
  if (v.shape.size() != s.size() || BatchAxis(v.layer) != 0) {
    return std::nullopt;
  }
  int axis = -1;
  for (size_t k = 1; k < s.size(); ++k) {
    if (v.shape[k] == s[k]) continue;
    if (axis >= 0 || v.shape[k] > s[k]) return std::nullopt;
    axis = static_cast<int>(k);
  }
  if (axis < 0 || v.shape[0] != s[0]) return std::nullopt;
  const std::vector<int64_t> strides = ContiguousStrides(s);
  const int64_t begin = v.offset / strides[axis];
  if (v.offset != begin * strides[axis] || begin + v.shape[axis] > s[axis] ||
      Canonical(Narrowed(Whole(v.layer, s), axis, begin, begin + v.shape[axis]))
              .strides != Canonical(v).strides) {
    return std::nullopt;
  }
  const auto key =
      std::make_tuple(v.layer, int64_t{axis}, begin, v.shape[axis]);
  auto it = slices_.find(key);
  if (it == slices_.end()) {
    it = slices_.emplace(key, graph_.Slice(v.layer, axis, begin, v.shape[axis]))
             .first;
  }
  return Whole(it->second, v.shape);
}

View Mapper::Reshape(const onnx::NodeProto& n, const View& given) {
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
  // Before the -1 takes the rest: a batch the file fixed would move it.
  if (const auto out = Shuffled(given, shape)) return *out;
  const int64_t elements = Elements(given.shape);
  if (rest >= 0 && product > 0) shape[rest] = elements / product;
  auto reshaped = [&](const View& v, const Shape& to) {
    std::optional<View> out = Reshaped(v, to);
    if (!out && v.layer < 0) out = Reshaped(Realize(v), to);
    return out;
  };
  // A -1 beside a batch the file fixed takes the batch into it, and the
  // elements then move (torchaudio 2's heads merged by reshape(batch, -1,
  // units) after its attention): the batch is put back where it was fixed.
  const bool rest_took_batch =
      rest >= 0 && file_batch_ > 0 && batch_ != file_batch_;
  if (Elements(shape) == elements) {
    if (const auto out = reshaped(given, shape)) return *out;
    if (!rest_took_batch) {
      throw GraphError("a reshape of " + Describe(given) + " to " +
                       ToString(shape) + " that moves elements");
    }
  }
  // Fixed at the file's batch.
  std::optional<View> best;
  int64_t best_size = 0;
  int candidates = 0;
  if (file_batch_ > 0) {
    for (size_t k = 0; k < shape.size(); ++k) {
      if (shape[k] % file_batch_ != 0 || static_cast<int64_t>(k) == rest) {
        continue;
      }
      Shape to = shape;
      to[k] = shape[k] / file_batch_ * batch_;
      if (rest >= 0) {
        to[rest] = 1;
        const int64_t others = Elements(to);
        if (others <= 0 || elements % others != 0) continue;
        to[rest] = elements / others;
      }
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

bool Mapper::IsMaps(const View& v) const {
  return v.layer >= 0 && IsChannelsLast(v, ShapeOf(v.layer));
}

}  // namespace paradnn
