// The Mapper's shape arithmetic: the small tensors a file computes from
// shapes and constants (a reshape's target, a slice's bounds), folded once
// the batch is known.

#include <algorithm>
#include <cmath>

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

const Mapper::Known* Mapper::KnownOf(const std::string& name) const {
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

bool Mapper::Fold(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  const Attributes a(n);
  auto in = [&](int i) -> const Known& { return *KnownOf(n.input(i)); };
  Known out;
  if (op == "Identity" || op == "Unsqueeze" || op == "Squeeze" ||
      op == "Reshape") {
    out = in(0);
    if (op == "Unsqueeze") {
      std::vector<int64_t> axes = IntsOf(n, "axes", 1);
      const size_t rank = out.dims.size() + axes.size();
      for (int64_t& x : axes) x = Axis(x, rank);
      std::sort(axes.begin(), axes.end());
      for (int64_t x : axes) out.dims.insert(out.dims.begin() + x, 1);
    } else if (op == "Squeeze") {
      out.dims.erase(std::remove(out.dims.begin(), out.dims.end(), 1),
                     out.dims.end());
    } else if (op == "Reshape") {
      out.dims.assign(in(1).v.begin(), in(1).v.end());
      for (int64_t& d : out.dims) {
        if (d == -1) d = static_cast<int64_t>(out.v.size());
      }
    }
  } else if (op == "Concat") {
    for (int i = 0; i < n.input_size(); ++i) {
      out.v.insert(out.v.end(), in(i).v.begin(), in(i).v.end());
      out.integer = in(i).integer;
    }
    out.dims = {static_cast<int64_t>(out.v.size())};
  } else if (op == "Gather") {
    const Known& data = in(0);
    out.dims = in(1).dims;
    for (double i : in(1).v) {
      const int64_t at = Axis(static_cast<int64_t>(i), data.v.size());
      out.v.push_back(data.v.at(at));
    }
    out.integer = data.integer;
  } else if (op == "Slice") {
    const Known& data = in(0);
    const int64_t size = static_cast<int64_t>(data.v.size());
    const int64_t step = n.input_size() > 4 ? in(4).v.at(0) : 1;
    if (step != 1) return false;
    for (int64_t i = SliceBound(in(1).v.at(0), size);
         i < SliceBound(in(2).v.at(0), size); ++i) {
      out.v.push_back(data.v[i]);
    }
    out.dims = {static_cast<int64_t>(out.v.size())};
    out.integer = data.integer;
  } else if (op == "ConstantOfShape") {
    double fill = 0;
    out.integer = false;
    for (const onnx::AttributeProto& t : n.attribute()) {
      if (t.name() == "value" && !TensorValues<double>(t.t()).empty()) {
        fill = TensorValues<double>(t.t())[0];
        out.integer = t.t().data_type() != onnx::TensorProto::FLOAT;
      }
    }
    out.dims.assign(in(0).v.begin(), in(0).v.end());
    out.v.assign(Elements(out.dims), fill);
  } else if (op == "Cast" || op == "Sqrt" || op == "Neg") {
    out = in(0);
    for (double& x : out.v)
      x = op == "Sqrt" ? std::sqrt(x) : op == "Neg" ? -x : x;
    if (op == "Sqrt") out.integer = false;
    if (op == "Cast") {
      const int64_t to = a.Int("to", onnx::TensorProto::FLOAT);
      out.integer = to != onnx::TensorProto::FLOAT &&
                    to != onnx::TensorProto::DOUBLE &&
                    to != onnx::TensorProto::FLOAT16;
      if (out.integer) {
        for (double& x : out.v) x = std::trunc(x);
      }
    }
  } else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" ||
             op == "Mod" || op == "Equal" || op == "Where") {
    const int first = op == "Where" ? 1 : 0;
    const Known& x = in(first);
    const Known& y = in(first + 1);
    const size_t size = std::max(x.v.size(), y.v.size());
    auto at = [&](const Known& k, size_t i) {
      return k.v.size() == 1 ? k.v[0] : k.v.at(i);
    };
    out.dims = x.v.size() >= y.v.size() ? x.dims : y.dims;
    out.integer = x.integer && y.integer;
    if (op == "Equal") out.integer = true;
    for (size_t i = 0; i < size; ++i) {
      const double p = at(x, i), q = at(y, i);
      double r = 0;
      if (op == "Add") r = p + q;
      if (op == "Sub") r = p - q;
      if (op == "Mul") r = p * q;
      if (op == "Div") r = out.integer ? std::trunc(p / q) : p / q;
      if (op == "Mod") r = p - q * std::floor(p / q);
      if (op == "Equal") r = p == q;
      if (op == "Where") r = at(in(0), i) != 0 ? p : q;
      out.v.push_back(r);
    }
  } else {
    return false;
  }
  known_[n.output(0)] = std::move(out);
  return true;
}

}  // namespace paradnn
