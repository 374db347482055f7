// The table's entries of shape arithmetic (values computed from shapes and
// constants) and of views of layers' outputs (importers/
// onnx_operator_table.h).

#include <algorithm>
#include <cmath>

#include "importers/onnx_operator_table.h"

namespace paradnn {

Operator OperatorTable::Cast() {
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

Operator OperatorTable::Constant() {
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

Operator OperatorTable::ConstantOfShape() {
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
    throw GraphError("its shape " + n.input(0) + " is not known from the file");
  };
  return op;
}

Operator OperatorTable::Equal() {
  Operator op = Entry("Equal", 7, "nothing", "of known values, computed");
  op.fold = [](const Mapper& m, const onnx::NodeProto& n) {
    return std::optional<Known>(Elementwise(
        m, n, 0, true, [](double p, double q, size_t) { return p == q; }));
  };
  op.apply = Alone;
  return op;
}

Operator OperatorTable::Expand() {
  Operator op = Entry("Expand", 8, "`class_token`",
                      "of a tensor in the file, before a sequence in a "
                      "`Concat` (see `Concat`)");
  op.apply = [](Mapper& m, int index, const onnx::NodeProto& n) {
    if (!m.IsInitializer(n.input(0))) return Alone(m, index, n);
    m.expanded_[n.output(0)] = n.input(0);
  };
  return op;
}

Operator OperatorTable::Gather() {
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
    const int axis = Mapper::Axis(Attributes(n).Int("axis", 0), v.shape.size());
    const int64_t at = static_cast<int64_t>(*i);
    m.SetView(n.output(0), Selected(v, axis, at < 0 ? at + v.shape[axis] : at));
  };
  return op;
}

Operator OperatorTable::Mod() {
  Operator op = Entry("Mod", 10, "nothing", "of known values, computed");
  op.fold = [](const Mapper& m, const onnx::NodeProto& n) {
    return std::optional<Known>(Elementwise(
        m, n, 0, false,
        [](double p, double q, size_t) { return p - q * std::floor(p / q); }));
  };
  op.apply = Alone;
  return op;
}

Operator OperatorTable::Neg() {
  Operator op = Entry("Neg", 6, "nothing", "of known values, computed");
  op.fold = [](const Mapper& m, const onnx::NodeProto& n) {
    Known out = SameValues(m, n);
    for (double& x : out.v) x = -x;
    return std::optional<Known>(out);
  };
  op.apply = Alone;
  return op;
}

Operator OperatorTable::Reshape() {
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

Operator OperatorTable::Shape() {
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
    const int64_t to = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
    Known shape;
    for (int64_t i = from; i < to; ++i) shape.v.push_back(dims[i]);
    shape.dims = {static_cast<int64_t>(shape.v.size())};
    m.known_[n.output(0)] = std::move(shape);
  };
  return op;
}

Operator OperatorTable::Slice() {
  Operator op =
      Entry("Slice", 10, "`slice`; nothing",
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
      const int axis = Mapper::Axis(axes ? static_cast<int64_t>(axes->v[k]) : k,
                                    s.shape.size());
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

Operator OperatorTable::Sqrt() {
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

Operator OperatorTable::Squeezes(const char* type, bool insert) {
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

Operator OperatorTable::Sub() {
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

Operator OperatorTable::Transpose() {
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

Operator OperatorTable::Where() {
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

}  // namespace paradnn
