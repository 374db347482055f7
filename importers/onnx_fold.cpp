// The Mapper's known values: the small tensors a file computes from shapes
// and constants (a reshape's target, a slice's bounds), which the entries'
// `fold` (importers/onnx_operator_table.h) compute once the batch is known.

#include <algorithm>

#include "importers/onnx_mapper.h"

namespace paradnn {

void Mapper::Know(const std::string& name, const onnx::TensorProto& t) {
  const int64_t n = Elements({t.dims().begin(), t.dims().end()});
  if (n > kValuesKept) return;
  Known k{{t.dims().begin(), t.dims().end()},
          TensorValues<double>(t),
          t.data_type() != onnx::TensorProto::FLOAT &&
              t.data_type() != onnx::TensorProto::DOUBLE &&
              t.data_type() != onnx::TensorProto::FLOAT16};
  if (static_cast<int64_t>(k.v.size()) == n) known_[name] = std::move(k);
}

const Known* Mapper::KnownOf(const std::string& name) const {
  const auto it = known_.find(name);
  return it == known_.end() ? nullptr : &it->second;
}

std::optional<double> Mapper::Scalar(const std::string& name) const {
  const Known* k = KnownOf(name);
  if (k == nullptr || k->v.size() != 1) return std::nullopt;
  return k->v[0];
}

std::vector<int64_t> Mapper::IntsOf(const onnx::NodeProto& n, const char* name,
                                    int i) const {
  if (n.input_size() > i && !n.input(i).empty()) {
    const Known* k = KnownOf(n.input(i));
    if (k == nullptr)
      throw GraphError("its " + std::string(name) +
                       " are not known from the file");
    return {k->v.begin(), k->v.end()};
  }
  return Attributes(n).Ints(name);
}

int64_t Mapper::SliceBound(double x, int64_t size) {
  const int64_t i = x >= 9e18 ? size : static_cast<int64_t>(x);
  return std::clamp<int64_t>(i < 0 ? i + size : i, 0, size);
}

int Mapper::Axis(int64_t axis, size_t rank) {
  return static_cast<int>(axis < 0 ? axis + static_cast<int64_t>(rank) : axis);
}

bool Mapper::AllKnown(const onnx::NodeProto& n) const {
  if (n.input_size() == 0) return false;
  for (const std::string& in : n.input()) {
    if (!in.empty() && KnownOf(in) == nullptr) return false;
  }
  return true;
}

}  // namespace paradnn
