// ONNX models written with ONNX's own protobuf classes for the tests, whose
// layers and parameters the tests know.
#pragma once

#include <onnx/onnx_pb.h>

#include <fstream>
#include <initializer_list>
#include <string>

#include "tests/catch.h"
#include "tests/scratch.h"

namespace paradnn::test {

// A model of one graph, written to the scratch folder as `name`.
class ModelWriter {
 public:
  explicit ModelWriter(int opset = 13) {
    m_.set_ir_version(8);
    m_.set_producer_name("paradnn-test");
    m_.add_opset_import()->set_version(opset);
  }

  void Input(const std::string& name, std::initializer_list<int64_t> dims) {
    Value(g()->add_input(), name, dims);
  }
  void Output(const std::string& name, std::initializer_list<int64_t> dims) {
    Value(g()->add_output(), name, dims);
  }
  // Every value `value`; no dims: a scalar.
  void Weights(const std::string& name, std::initializer_list<int64_t> dims,
               float value = 0.5f) {
    onnx::TensorProto* t = g()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    int64_t n = 1;
    for (int64_t d : dims) {
      t->add_dims(d);
      n *= d;
    }
    for (int64_t i = 0; i < n; ++i) t->add_float_data(value);
  }
  // Tensor `name`'s values moved to `file` beside the model (its external
  // data, as PyTorch writes models over 2 GB).
  void External(const std::string& name, const std::string& file) {
    for (onnx::TensorProto& t : *g()->mutable_initializer()) {
      if (t.name() != name) continue;
      std::ofstream out(Scratch("onnx/" + file), std::ios::binary);
      out.write(reinterpret_cast<const char*>(t.float_data().data()),
                t.float_data_size() * sizeof(float));
      t.clear_float_data();
      t.set_data_location(onnx::TensorProto::EXTERNAL);
      onnx::StringStringEntryProto* e = t.add_external_data();
      e->set_key("location");
      e->set_value(file);
    }
  }
  // A 1-D tensor of int64 values: a reshape's target shape.
  void Ints(const std::string& name, std::initializer_list<int64_t> values) {
    onnx::TensorProto* t = g()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
  }
  onnx::NodeProto* Node(const std::string& op, const std::string& name,
                        std::initializer_list<std::string> inputs,
                        std::initializer_list<std::string> outputs) {
    onnx::NodeProto* n = g()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const std::string& i : inputs) n->add_input(i);
    for (const std::string& o : outputs) n->add_output(o);
    return n;
  }
  static void Ints(onnx::NodeProto* n, const std::string& name,
                   std::initializer_list<int64_t> values) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : values) a->add_ints(v);
  }
  static void String(onnx::NodeProto* n, const std::string& name,
                     const std::string& v) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  static void Int(onnx::NodeProto* n, const std::string& name, int64_t v) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  std::string Write(const std::string& name) {
    const std::string path = Scratch("onnx/" + name).string();
    std::ofstream out(path, std::ios::binary);
    REQUIRE(m_.SerializeToOstream(&out));
    return path;
  }

 private:
  onnx::GraphProto* g() {
    onnx::GraphProto* g = m_.mutable_graph();
    g->set_name("test");
    return g;
  }
  static void Value(onnx::ValueInfoProto* v, const std::string& name,
                    std::initializer_list<int64_t> dims) {
    v->set_name(name);
    onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  }
  onnx::ModelProto m_;
};

// A small residual network: conv 3->8 (3x3, pad 1), batch norm, relu, a
// residual add, max pool, global average pool, flatten, a dense layer to
// 10 classes as Gemm with a bias, on 3x16x16 images. `dilated`: its first
// convolution's taps 2 apart down the image but not across (a dilation
// the graph's convolutions do not have: theirs is one for both axes).
inline std::string ResidualNet(bool dilated = false) {
  ModelWriter w;
  w.Input("x", {1, 3, 16, 16});
  w.Weights("w1", {8, 3, 3, 3});
  w.Weights("s1", {8});
  w.Weights("t1", {8});
  w.Weights("m1", {8});
  w.Weights("v1", {8});
  w.Weights("w2", {8, 8, 3, 3});
  w.Weights("fc_w", {10, 8});
  w.Weights("fc_b", {10});
  onnx::NodeProto* c1 = w.Node("Conv", "conv1", {"x", "w1"}, {"c1"});
  ModelWriter::Ints(c1, "kernel_shape", {3, 3});
  // Dilated, the kernel reaches 5x3: pads of 2 and 1 keep the image's size.
  ModelWriter::Ints(c1, "pads", {1 + dilated, 1, 1 + dilated, 1});
  if (dilated) ModelWriter::Ints(c1, "dilations", {2, 1});
  w.Node("BatchNormalization", "bn1", {"c1", "s1", "t1", "m1", "v1"}, {"n1"});
  w.Node("Relu", "relu1", {"n1"}, {"r1"});
  onnx::NodeProto* c2 = w.Node("Conv", "conv2", {"r1", "w2"}, {"c2"});
  ModelWriter::Ints(c2, "kernel_shape", {3, 3});
  ModelWriter::Ints(c2, "pads", {1, 1, 1, 1});
  w.Node("Add", "add", {"c2", "r1"}, {"a"});
  onnx::NodeProto* p = w.Node("MaxPool", "pool", {"a"}, {"p"});
  ModelWriter::Ints(p, "kernel_shape", {2, 2});
  ModelWriter::Ints(p, "strides", {2, 2});
  w.Node("GlobalAveragePool", "gap", {"p"}, {"g"});
  w.Node("Flatten", "flatten", {"g"}, {"f"});
  onnx::NodeProto* fc = w.Node("Gemm", "fc", {"f", "fc_w", "fc_b"}, {"y"});
  ModelWriter::Int(fc, "transB", 1);
  w.Output("y", {1, 10});
  return w.Write(dilated ? "residual_dilated.onnx" : "residual.onnx");
}

}  // namespace paradnn::test
