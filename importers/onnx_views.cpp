#include "importers/onnx_views.h"

#include <algorithm>

namespace paradnn {

std::vector<int64_t> ContiguousStrides(const Shape& s) {
  std::vector<int64_t> out(s.size(), 1);
  for (size_t k = s.size(); k-- > 1;) out[k - 1] = out[k] * s[k];
  return out;
}

View Canonical(View v) {
  for (size_t k = 0; k < v.shape.size(); ++k) {
    if (v.shape[k] == 1) v.strides[k] = 0;
  }
  return v;
}

View Whole(int layer, const Shape& layer_shape) {
  return Canonical({layer, layer_shape, ContiguousStrides(layer_shape), 0, 1});
}

bool IsWhole(const View& v, const Shape& layer_shape) {
  if (v.shape != layer_shape || v.offset != 0) return false;
  const std::vector<int64_t> c = ContiguousStrides(layer_shape);
  for (size_t k = 0; k < c.size(); ++k) {
    if (v.shape[k] != 1 && v.strides[k] != c[k]) return false;
  }
  return true;
}

bool IsWholeButOnes(const View& v, const Shape& layer_shape) {
  if (v.scale != 1) return false;
  View squeezed{v.layer, {}, {}, v.offset, 1};
  for (size_t k = 0; k < v.shape.size(); ++k) {
    if (v.shape[k] == 1) continue;
    squeezed.shape.push_back(v.shape[k]);
    squeezed.strides.push_back(v.strides[k]);
  }
  Shape s;
  for (int64_t d : layer_shape) {
    if (d != 1) s.push_back(d);
  }
  return IsWhole(squeezed, s);
}

View ChannelsLast(int layer, const Shape& maps) {
  return Canonical(Permuted(Whole(layer, maps), {0, 2, 3, 1}));
}

bool IsChannelsLast(const View& v, const Shape& layer_shape) {
  if (layer_shape.size() != 4 || v.offset != 0 || v.scale != 1) return false;
  const View c = ChannelsLast(v.layer, layer_shape);
  return Canonical(v).shape == c.shape && Canonical(v).strides == c.strides;
}

bool Covers(const View& v, const Shape& layer_shape) {
  if (v.offset != 0) return false;
  std::vector<std::pair<int64_t, int64_t>> axes;  // stride, size
  for (size_t k = 0; k < v.shape.size(); ++k) {
    if (v.shape[k] != 1) axes.push_back({v.strides[k], v.shape[k]});
  }
  std::sort(axes.begin(), axes.end());
  int64_t expected = 1;
  for (const auto& [stride, size] : axes) {
    if (stride != expected) return false;
    expected *= size;
  }
  return expected == Elements(layer_shape);
}

bool RowsWhole(const View& v, const Shape& layer_shape) {
  return Covers(v, layer_shape) && !v.shape.empty() &&
         v.shape.back() == layer_shape.back() &&
         (v.strides.back() == 1 || v.shape.back() == 1);
}

std::optional<View> Reshaped(const View& v, const Shape& shape) {
  if (Elements(shape) != Elements(v.shape)) return std::nullopt;
  // Axes of one element go anywhere: the others are matched in groups of
  // equal products, each group of the old axes contiguous in memory.
  std::vector<int64_t> sizes, strides;
  for (size_t k = 0; k < v.shape.size(); ++k) {
    if (v.shape[k] != 1) {
      sizes.push_back(v.shape[k]);
      strides.push_back(v.strides[k]);
    }
  }
  std::vector<size_t> to;
  for (size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] != 1) to.push_back(k);
  }
  View out = v;
  out.shape = shape;
  out.strides.assign(shape.size(), 0);
  size_t a = 0, b = 0;
  while (a < sizes.size() && b < to.size()) {
    size_t a_end = a + 1, b_end = b + 1;
    int64_t old_product = sizes[a], new_product = shape[to[b]];
    while (old_product != new_product) {
      if (old_product < new_product) {
        if (a_end == sizes.size()) return std::nullopt;
        old_product *= sizes[a_end++];
      } else {
        if (b_end == to.size()) return std::nullopt;
        new_product *= shape[to[b_end++]];
      }
    }
    for (size_t k = a; k + 1 < a_end; ++k) {
      if (strides[k] != strides[k + 1] * sizes[k + 1]) return std::nullopt;
    }
    int64_t stride = strides[a_end - 1];
    for (size_t k = b_end; k-- > b;) {
      out.strides[to[k]] = stride;
      stride *= shape[to[k]];
    }
    a = a_end;
    b = b_end;
  }
  if (a != sizes.size() || b != to.size()) return std::nullopt;
  return Canonical(out);
}

View Permuted(const View& v, const std::vector<int64_t>& perm) {
  View out = v;
  for (size_t k = 0; k < perm.size(); ++k) {
    out.shape[k] = v.shape.at(perm[k]);
    out.strides[k] = v.strides.at(perm[k]);
  }
  return out;
}

View Narrowed(const View& v, int axis, int64_t begin, int64_t end) {
  View out = v;
  out.offset += begin * v.strides[axis];
  out.shape[axis] = end - begin;
  return Canonical(out);
}

View Selected(const View& v, int axis, int64_t index) {
  View out = Narrowed(v, axis, index, index + 1);
  out.shape.erase(out.shape.begin() + axis);
  out.strides.erase(out.strides.begin() + axis);
  return out;
}

View Moved(const View& v, int layer, int64_t old_units, int64_t units) {
  View out = v;
  out.layer = layer;
  out.shape.back() = units;
  for (size_t k = 0; k + 1 < v.shape.size(); ++k) {
    out.strides[k] = v.strides[k] / old_units * units;
  }
  out.strides.back() = 1;
  return out;
}

bool Spans(const View& v, int axis, int64_t stride, int64_t size) {
  return v.shape[axis] > 1 && v.strides[axis] <= stride &&
         stride * size <= v.strides[axis] * v.shape[axis];
}

}  // namespace paradnn
