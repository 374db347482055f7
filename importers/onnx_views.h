// Strided views of a layer's output: how the ONNX importer follows the
// reshapes, transposes and slices an exporter writes around attention
// (heads split and merged, queries, keys and values cut from one packed
// projection, batch-first tensors) without a layer for each.
#ifndef PARADNN_IMPORTERS_ONNX_VIEWS_H_
#define PARADNN_IMPORTERS_ONNX_VIEWS_H_

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "generators/graph.h"

namespace paradnn {

// An ONNX tensor as a view of a layer's output in the graph's layout
// (contiguous, row-major): element i is the layer's element offset +
// sum_k i_k strides_k, times scale.
struct View {
  int layer = 0;
  Shape shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
  double scale = 1;
};

// Row-major strides of a contiguous tensor.
std::vector<int64_t> ContiguousStrides(const Shape& s);

// The same view with the strides of its axes of one element zero: views
// alike compare equal.
View Canonical(View v);

// The view that is the layer's output itself.
View Whole(int layer, const Shape& layer_shape);

bool IsWhole(const View& v, const Shape& layer_shape);

// Whether the view reads every element of its layer once (its axes a
// permutation, some merged or split, of the layer's).
bool Covers(const View& v, const Shape& layer_shape);

// Whether it is the layer's output whole once the axes of one element are
// left out of both (the graph's [N, C] after a global pool is ONNX's
// [N, C, 1, 1]).
bool IsWholeButOnes(const View& v, const Shape& layer_shape);

// [N, C, H, W] maps read channels-last, [N, H, W, C] (the permute ConvNeXt
// writes before its layer norms and linear layers), and whether v is that.
View ChannelsLast(int layer, const Shape& maps);
bool IsChannelsLast(const View& v, const Shape& layer_shape);

// Whether its last axis is the layer's last, whole: what an operation
// along rows (a product by weights, a normalization) needs.
bool RowsWhole(const View& v, const Shape& layer_shape);

// The view reshaped to `shape` without moving an element, where its
// strides allow (nullopt where a copy would be needed).
std::optional<View> Reshaped(const View& v, const Shape& shape);

View Permuted(const View& v, const std::vector<int64_t>& perm);

// Elements [begin, end) of axis `axis`; index `index` of it (the axis gone).
View Narrowed(const View& v, int axis, int64_t begin, int64_t end);
View Selected(const View& v, int axis, int64_t index);

// A view covering its layer (RowsWhole) moved onto `layer`, whose rows are
// `units` long where its old layer's were `old_units`: the same
// arrangement of the other axes.
View Moved(const View& v, int layer, int64_t old_units, int64_t units);

// Whether axis `axis` of v spans the layer dimension of `stride` and
// `size` (the batch's): its stride at most that one's, its extent beyond.
bool Spans(const View& v, int axis, int64_t stride, int64_t size);

}  // namespace paradnn

#endif  // PARADNN_IMPORTERS_ONNX_VIEWS_H_
