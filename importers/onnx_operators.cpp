// The table of ONNX operators (importers/onnx_operators.h), assembled from
// its entries (importers/onnx_operator_table.h), and the helpers entries
// of several kinds share.

#include "importers/onnx_operators.h"

#include <algorithm>

#include "importers/onnx_operator_table.h"

namespace paradnn {

bool OperatorTable::AllEqual(const std::vector<int64_t>& v, int64_t value) {
  return std::all_of(v.begin(), v.end(), [&](int64_t x) { return x == value; });
}

int64_t OperatorTable::Uniform(const std::vector<int64_t>& v,
                               int64_t otherwise) {
  if (v.empty()) return otherwise;
  return AllEqual(v, v[0]) ? v[0] : -1;
}

Operator OperatorTable::Entry(const char* type, int64_t since, const char* onto,
                              const char* when) {
  Operator op;
  op.info = {type, since, onto, when};
  return op;
}

int OperatorTable::Input(Mapper& m, const onnx::NodeProto& n, int i) {
  const int x = m.DataInput(n, i);
  if (x < 0) {
    throw GraphError("its input " + n.input(i) + " is made by no layer");
  }
  return x;
}

View OperatorTable::ViewInput(const Mapper& m, const onnx::NodeProto& n) {
  const std::optional<View> v = m.ViewOf(n.input(0));
  if (!v) {
    throw GraphError("its input " + n.input(0) + " is made by no layer");
  }
  return *v;
}

void OperatorTable::PassOn(Mapper& m, int, const onnx::NodeProto& n) {
  const auto view = m.views_.find(n.input(0));
  if (view != m.views_.end()) {
    m.views_[n.output(0)] = view->second;
  } else {
    m.Bind(n.output(0), Input(m, n));
  }
}

void OperatorTable::Alone(Mapper& m, int, const onnx::NodeProto& n) {
  throw GraphError("a " + n.op_type() + " of " +
                   Mapper::Describe(ViewInput(m, n)) +
                   " that no layer of the graph expresses");
}

Known OperatorTable::SameValues(const Mapper& m, const onnx::NodeProto& n) {
  return *m.KnownOf(n.input(0));
}

bool OperatorTable::Scaled(Mapper& m, const onnx::NodeProto& n, bool divide) {
  const std::optional<double> factor = m.Scalar(n.input(1));
  if (!factor) return false;
  View s = ViewInput(m, n);
  s.scale *= divide ? 1 / *factor : *factor;
  m.SetView(n.output(0), s);
  return true;
}

bool OperatorTable::ReshapeFlattens(const Mapper& m, const onnx::NodeProto& n,
                                    const paradnn::Shape& in) {
  const Known* target = m.KnownOf(n.input(1));
  if (target == nullptr || target->v.size() != 2) return false;
  const double rest = target->v[1];
  return rest == -1 || rest == static_cast<double>(Elements(in) / in[0]);
}

void OperatorTable::Flattened(Mapper& m, const onnx::NodeProto& n,
                              bool flattens) {
  const int x = Input(m, n);
  const paradnn::Shape& in = m.ShapeOf(x);
  if (!flattens) {
    throw GraphError("a reshape of " + ToString(in) +
                     " other than to [batch, the rest]");
  }
  m.Bind(n.output(0), in.size() == 2 ? x : m.graph_.Flatten(x));
}

std::vector<Operator> OperatorTable::All() {
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
                               InstanceNormalization(),
                               LayerNormalization(),
                               MatMul(),
                               MaxPool(),
                               Mod(),
                               Mul(),
                               Neg(),
                               Pad(),
                               Pow(),
                               ReduceL2(),
                               ReduceMax(),
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
