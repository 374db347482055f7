// The Mapper (importers/onnx_mapper.h): the file's tensors and input read,
// each node mapped by its operator's entry (importers/onnx_operators.h),
// the graph finished with its loss and its parameters' sources.

#include "importers/onnx_mapper.h"

#include <charconv>
#include <cstdlib>

namespace paradnn {

double AsWritten(float f) {
  char text[32];
  const auto end = std::to_chars(text, text + sizeof(text), f).ptr;
  return std::strtod(std::string(text, end).c_str(), nullptr);
}

Mapper::Mapper(const onnx::GraphProto& g, int64_t opset, int64_t batch,
               const Tensors* weights)
    : g_(g), opset_(opset), given_(weights != nullptr) {
  if (weights != nullptr) weights_ = *weights;
  for (const onnx::TensorProto& t : g.initializer()) {
    initializers_[t.name()] = {t.dims().begin(), t.dims().end()};
    values_[t.name()] = TensorValues<double>(t);
    Know(t.name(), t);
  }
  for (int k = 0; k < g.node_size(); ++k) {
    const onnx::NodeProto& n = g.node(k);
    for (const std::string& in : n.input()) {
      ++readers_[in];
      reader_nodes_[in].push_back(k);
    }
    // A signal: the data [N, L] or [N, C, L] and a 1-D convolution of it
    // (weights [out, in, k] in the file).
    if (n.op_type() == "Conv" && n.input_size() > 1 &&
        initializers_.count(n.input(1)) &&
        initializers_.at(n.input(1)).size() == 3) {
      signal_ = true;
    }
    // A Constant node's tensor is a weight like an initializer's.
    if (n.op_type() == "Constant" && n.output_size() == 1) {
      for (const onnx::AttributeProto& a : n.attribute()) {
        if (a.name() == "value") {
          initializers_[n.output(0)] = {a.t().dims().begin(),
                                        a.t().dims().end()};
          values_[n.output(0)] = TensorValues<double>(a.t());
          Know(n.output(0), a.t());
        }
      }
    }
    // An inference export shares equal constants (zero biases) through
    // Identity nodes: each reader uses the tensor as its own.
    if (n.op_type() == "Identity" && n.input_size() == 1 &&
        initializers_.count(n.input(0))) {
      initializers_[n.output(0)] = initializers_.at(n.input(0));
      values_[n.output(0)] = values_.at(n.input(0));
      const auto known = known_.find(n.input(0));
      if (known != known_.end()) known_[n.output(0)] = known->second;
      const auto w = weights_.find(n.input(0));
      if (w != weights_.end()) weights_[n.output(0)] = w->second;
    }
  }
  for (const onnx::ValueInfoProto& v : g.input()) {
    if (initializers_.count(v.name())) continue;
    std::vector<int64_t> dims;
    for (const auto& d : v.type().tensor_type().shape().dim()) {
      dims.push_back(d.has_dim_value() ? d.dim_value() : 0);
    }
    if (dims.empty()) {
      Fail("input " + v.name() + " has no shape");
      break;
    }
    file_batch_ = dims[0];
    batch_ = batch;
    dims[0] = batch;
    for (int64_t d : dims) {
      if (d <= 0) {
        Fail("input " + v.name() + " has a dimension of unknown size");
      }
    }
    if (failed_) break;
    if (signal_ && (dims.size() == 2 || dims.size() == 3)) {
      // [N, C, 1, L] maps, the file's [N, (C,) L] a view of them.
      const Shape maps = {dims[0], dims.size() == 3 ? dims[1] : 1, 1,
                          dims.back()};
      const int input = graph_.Input(maps);
      SetView(v.name(), *Reshaped(Whole(input, maps), dims));
    } else {
      Bind(v.name(), graph_.Input(dims));
    }
    break;  // one data input
  }
}

std::string Mapper::Map(int index) {
  const onnx::NodeProto& n = g_.node(index);
  if (fused_.count(index)) return "";
  const Operator* op = FindOperator(n.op_type());
  std::string why = Refused(n, op);
  if (!why.empty()) {
    Fail(why);
    return why;
  }
  if (failed_) return "";
  try {
    std::optional<Known> value;
    if (op->fold != nullptr && AllKnown(n)) value = op->fold(*this, n);
    if (value) {
      known_[n.output(0)] = std::move(*value);
    } else {
      op->apply(*this, index, n);
    }
  } catch (const GraphError& e) {
    why = Where(n) + ": " + e.what();
    Fail(why);
  }
  return why;
}

std::string Mapper::Refused(const onnx::NodeProto& n,
                            const Operator* op) const {
  const std::string where = Where(n);
  if (!n.domain().empty() && n.domain() != "ai.onnx") {
    return where + ": operator of domain " + n.domain();
  }
  if (op == nullptr) {
    return where + ": no operation of the layer graph expresses ONNX's " +
           n.op_type();
  }
  if (opset_ < op->info.since) {
    return where + ": " + n.op_type() + " as opset " + std::to_string(opset_) +
           " defines it (read from opset " + std::to_string(op->info.since) +
           " on)";
  }
  return op->check == nullptr ? "" : op->check(*this, n);
}

std::optional<Graph> Mapper::Finish(std::string* why,
                                    std::vector<OnnxParamSource>* sources) {
  if (!failed_ && g_.output_size() > 0) {
    const auto view = views_.find(g_.output(0).name());
    if (view != views_.end()) {
      try {
        // A sequence's output batch first ([N, L, E], speech's frames):
        // its [L, N, E] layer, each position's classes last.
        Bind(view->first, SequenceRead(view->second, {1, 0, 2})
                              ? view->second.layer
                              : AsLayer(view->second));
      } catch (const GraphError& e) {
        Fail("the output: " + std::string(e.what()));
      }
    }
  }
  if (!failed_ && g_.output_size() > 0) {
    const auto it = layer_of_.find(g_.output(0).name());
    if (it == layer_of_.end()) {
      Fail("the output " + g_.output(0).name() + " is made by no layer");
    } else {
      // Classes last, or along the channels of maps: a class per pixel
      // (segmentation's [batch, classes, height, width]); a sequence's
      // classes per position.
      const Shape& out = graph_.layer(it->second).shape;
      const bool sequence = out.size() == 3 && BatchAxis(it->second) == 1;
      if (out.size() == 2 || out.size() == 4 || sequence) {
        graph_.SoftmaxCrossEntropy(it->second, out.size() == 4 ? 1 : -1);
      } else {
        Fail("the output is " + ToString(out) +
             ", not [batch, classes], [batch, classes, height, width] or "
             "[batch, length, classes]");
      }
    }
  }
  *why = why_;
  if (failed_) return std::nullopt;
  std::map<int, size_t> taken;  // layer -> its parameters listed so far
  for (const ParamTensor& p : graph_.Params()) {
    const auto it = sources_.find(p.layer);
    const size_t k = taken[p.layer]++;
    sources->push_back(it != sources_.end() && k < it->second.size()
                           ? it->second[k]
                           : OnnxParamSource{});
  }
  return std::move(graph_);
}

void Mapper::Fail(const std::string& why) {
  if (!failed_) why_ = why;
  failed_ = true;
}

bool Mapper::IsInitializer(const std::string& name) const {
  return initializers_.count(name) > 0;
}

const std::vector<int64_t>& Mapper::InitializerDims(
    const std::string& name) const {
  return initializers_.at(name);
}

int64_t Mapper::Count(const std::string& initializer) const {
  return Elements(InitializerDims(initializer));
}

int Mapper::DataInput(const onnx::NodeProto& n, int i) {
  if (i >= n.input_size()) return -1;
  const auto view = views_.find(n.input(i));
  if (view != views_.end()) {
    const int layer = AsLayer(view->second);
    Bind(n.input(i), layer);
    views_.erase(view);
    return layer;
  }
  const auto it = layer_of_.find(n.input(i));
  return it == layer_of_.end() ? -1 : it->second;
}

Tensor Mapper::Weight(const std::string& name, bool transpose) const {
  const auto it = weights_.find(name);
  if (it == weights_.end()) {
    throw GraphError("the file holds no float values for " + name);
  }
  if (!transpose) return it->second;
  const std::vector<int64_t>& dims = InitializerDims(name);
  const int64_t rows = dims.at(0), columns = dims.at(1);
  auto t = std::make_shared<std::vector<float>>(it->second->size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < columns; ++c) {
      (*t)[c * rows + r] = (*it->second)[r * columns + c];
    }
  }
  return t;
}

void Mapper::Give(int i,
                  const std::vector<std::pair<std::string, bool>>& names) {
  for (const auto& [name, transpose] : names) {
    sources_[i].push_back({name, transpose, 0, 0});
  }
  if (!given_) return;
  std::vector<Tensor> values;
  for (const auto& [name, transpose] : names) {
    values.push_back(Weight(name, transpose));
  }
  graph_.SetValues(i, std::move(values));
}

std::string Mapper::Where(const onnx::NodeProto& n) const {
  return n.op_type() + (n.name().empty() ? "" : " " + n.name());
}

}  // namespace paradnn
