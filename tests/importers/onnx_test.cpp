// ONNX files read into the layer graph: models written here with ONNX's
// own protobuf classes, whose layers and parameters the test knows.
#include "importers/onnx.h"

#include <onnx/onnx_pb.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "generators/cost.h"
#include "generators/spec.h"
#include "tests/catch.h"
#include "tests/scratch.h"

namespace paradnn {
namespace {

using Catch::Matchers::ContainsSubstring;

// A model of one graph, written to the scratch folder as `name`.
class ModelWriter {
 public:
  ModelWriter() {
    m_.set_ir_version(8);
    m_.set_producer_name("paradnn-test");
    m_.add_opset_import()->set_version(13);
  }

  void Input(const std::string& name, std::initializer_list<int64_t> dims) {
    Value(g()->add_input(), name, dims);
  }
  void Output(const std::string& name, std::initializer_list<int64_t> dims) {
    Value(g()->add_output(), name, dims);
  }
  void Weights(const std::string& name, std::initializer_list<int64_t> dims) {
    onnx::TensorProto* t = g()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    int64_t n = 1;
    for (int64_t d : dims) {
      t->add_dims(d);
      n *= d;
    }
    for (int64_t i = 0; i < n; ++i) t->add_float_data(0.5f);
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
  static void Int(onnx::NodeProto* n, const std::string& name, int64_t v) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  std::string Write(const std::string& name) {
    const std::string path = test::Scratch("onnx/" + name).string();
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
// 10 classes as Gemm with a bias, on 3x16x16 images.
std::string ResidualNet(bool conv_bias = false) {
  ModelWriter w;
  w.Input("x", {1, 3, 16, 16});
  w.Weights("w1", {8, 3, 3, 3});
  if (conv_bias) w.Weights("b1", {8});
  w.Weights("s1", {8});
  w.Weights("t1", {8});
  w.Weights("m1", {8});
  w.Weights("v1", {8});
  w.Weights("w2", {8, 8, 3, 3});
  w.Weights("fc_w", {10, 8});
  w.Weights("fc_b", {10});
  onnx::NodeProto* c1 = conv_bias
                            ? w.Node("Conv", "conv1", {"x", "w1", "b1"}, {"c1"})
                            : w.Node("Conv", "conv1", {"x", "w1"}, {"c1"});
  ModelWriter::Ints(c1, "kernel_shape", {3, 3});
  ModelWriter::Ints(c1, "pads", {1, 1, 1, 1});
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
  return w.Write(conv_bias ? "residual_bias.onnx" : "residual.onnx");
}

TEST_CASE("ONNX: a residual network maps layer by layer, at any batch",
          "[onnx]") {
  const OnnxModel m = ReadOnnx(ResidualNet(), 32);
  CHECK(m.producer == "paradnn-test");
  CHECK(m.opset == 13);
  REQUIRE(m.nodes.size() == 9);
  for (const OnnxNode& n : m.nodes) CHECK(n.unsupported.empty());
  REQUIRE(m.graph);
  const Graph& g = *m.graph;
  // input, conv, bn, relu, conv, add, pool, gap, dense, loss: the identity
  // flatten of [32, 8] is no layer.
  const std::vector<Op> ops = {Op::kInput,     Op::kConv2d,
                               Op::kBatchNorm, Op::kReLU,
                               Op::kConv2d,    Op::kAdd,
                               Op::kMaxPool,   Op::kGlobalAvgPool,
                               Op::kDense,     Op::kSoftmaxCrossEntropy};
  REQUIRE(g.size() == static_cast<int>(ops.size()));
  for (int i = 0; i < g.size(); ++i) CHECK(g.layer(i).op == ops[i]);
  CHECK(g.batch() == 32);
  CHECK(g.layer(0).shape == Shape{32, 3, 16, 16});
  CHECK(g.layer(6).shape == Shape{32, 8, 8, 8});
  CHECK(g.layer(8).shape == Shape{32, 10});
  CHECK(g.layer(8).bias);
  // 8*3*9 + 2*8 + 8*8*9 + 10*8 + 10, as the file's initializers hold them
  // (batch norm's running statistics are no parameters).
  const int64_t params = 216 + 16 + 576 + 80 + 10;
  CHECK(m.initializer_params == params);
  int64_t graph_params = 0;
  for (const ParamTensor& p : g.Params()) {
    int64_t n = 1;
    for (int64_t d : p.shape) n *= d;
    graph_params += n;
  }
  CHECK(graph_params == params);
}

TEST_CASE("ONNX: a node the graph cannot express is named, with why",
          "[onnx]") {
  const OnnxModel m = ReadOnnx(ResidualNet(/*conv_bias=*/true), 1);
  CHECK_FALSE(m.graph);
  CHECK(m.nodes[0].unsupported ==
        "Conv conv1: a bias: the graph's convolution has none");
  CHECK(m.why_no_graph == m.nodes[0].unsupported);
  // The others are checked by their operator: none is refused.
  for (size_t i = 1; i < m.nodes.size(); ++i) {
    CHECK(m.nodes[i].unsupported.empty());
  }
  // A flatten of a feature map, and an operator the graph has none of.
  ModelWriter w;
  w.Input("x", {1, 4, 2, 2});
  w.Weights("fc_w", {16, 3});
  w.Node("Sigmoid", "gate", {"x"}, {"s"});
  w.Node("Flatten", "flat", {"x"}, {"f"});
  w.Node("MatMul", "fc", {"f", "fc_w"}, {"y"});
  w.Output("y", {1, 3});
  const OnnxModel n = ReadOnnx(w.Write("flatten.onnx"), 1);
  CHECK(n.nodes[0].unsupported ==
        "Sigmoid gate: no operation of the layer graph expresses ONNX's "
        "Sigmoid");
  CHECK_FALSE(n.graph);
  CHECK_THAT(n.why_no_graph, ContainsSubstring("Sigmoid"));
}

TEST_CASE("ONNX: a product and its bias add make one dense layer", "[onnx]") {
  ModelWriter w;
  w.Input("x", {1, 6});
  w.Weights("w", {6, 4});
  w.Weights("b", {4});
  w.Node("MatMul", "mm", {"x", "w"}, {"p"});
  w.Node("Add", "bias", {"p", "b"}, {"y"});
  // A bias made by a Constant node reads as one from an initializer.
  onnx::NodeProto* c = w.Node("Constant", "c", {}, {"b2"});
  onnx::AttributeProto* value = c->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  value->mutable_t()->add_dims(4);
  for (int i = 0; i < 4; ++i) value->mutable_t()->add_float_data(1);
  w.Weights("w2", {4, 4});
  w.Node("MatMul", "mm2", {"y", "w2"}, {"p2"});
  w.Node("Add", "bias2", {"b2", "p2"}, {"z"});
  w.Output("z", {1, 4});
  const OnnxModel m = ReadOnnx(w.Write("dense.onnx"), 5);
  for (const OnnxNode& n : m.nodes) CHECK(n.unsupported.empty());
  REQUIRE(m.graph);
  REQUIRE(m.graph->size() == 4);  // input, dense, dense, loss
  for (int i : {1, 2}) {
    CHECK(m.graph->layer(i).op == Op::kDense);
    CHECK(m.graph->layer(i).bias);
    CHECK(m.graph->layer(i).shape == Shape{5, 4});
  }
  CHECK(m.initializer_params == 6 * 4 + 4 + 4 * 4 + 4);
}

TEST_CASE("ONNX: a file that is not a model is an error naming it", "[onnx]") {
  const std::string path = test::Scratch("onnx/text.onnx").string();
  std::ofstream(path) << "not a model";
  CHECK_THROWS_WITH(ReadOnnx(path, 1), ContainsSubstring(path + ": not"));
  CHECK_THROWS_WITH(ReadOnnx(path + ".missing", 1),
                    path + ".missing: cannot open the ONNX file");
  // A model ONNX's checker refuses: a node reading a value nothing makes.
  ModelWriter w;
  w.Input("x", {1, 2});
  w.Node("Relu", "r", {"nowhere"}, {"y"});
  w.Output("y", {1, 2});
  CHECK_THROWS_WITH(ReadOnnx(w.Write("invalid.onnx"), 1),
                    ContainsSubstring("not a valid ONNX model"));
}

// `paradnn onnx-check ARGS`: its exit status and stdout.
std::pair<int, std::string> OnnxCheck(const std::string& args) {
  const std::string out = test::Scratch("onnx/check.out").string();
  const std::string cmd =
      std::string(PARADNN_RUNNER) + " onnx-check " + args + " > " + out;
  const int raw = std::system(cmd.c_str());
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, text.str()};
}

TEST_CASE("paradnn onnx-check: operators, unsupported nodes, the graph",
          "[onnx]") {
  const std::string good = ResidualNet(), bad = ResidualNet(true);
  auto [status, out] = OnnxCheck(good + " --batch=4");
  CHECK(status == 0);
  CHECK_THAT(out, ContainsSubstring(good + ": 9 nodes, opset 13, from "
                                           "paradnn-test"));
  CHECK_THAT(
      out, ContainsSubstring(
               "operators: Add 1 BatchNormalization 1 Conv 2 Flatten 1 Gemm 1 "
               "GlobalAveragePool 1 MaxPool 1 Relu 1"));
  CHECK_THAT(out, ContainsSubstring("graph: 10 layers, 898 parameters (the "
                                    "file's, as its layers read them: 898)"));
  std::tie(status, out) = OnnxCheck(good + " " + bad);
  CHECK(status == 1);
  CHECK_THAT(out,
             ContainsSubstring("unsupported: Conv conv1: a bias: the graph's "
                               "convolution has none"));
  CHECK_THAT(out, ContainsSubstring("no graph: Conv conv1: a bias"));
  std::tie(status, out) = OnnxCheck(good + ".missing");
  CHECK(status == 2);
}

// torchvision's model `name`, untrained, exported by PyTorch's own ONNX
// exporter in training mode (batch norm kept, with its running statistics
// as outputs), and its parameter count as torchvision has it (the sum of
// numel over parameters()).
std::pair<std::string, int64_t> Torchvision(const std::string& name) {
  const std::string file = test::Scratch("onnx/" + name + ".onnx").string();
  const std::string count = test::Scratch("onnx/" + name + ".params").string();
  const std::string log = test::Scratch("onnx/" + name + ".log").string();
  // Debian's Python (another one on PATH may have no torch).
  const std::string cmd =
      "/usr/bin/python3 -c \"import torch, torchvision\n"
      "m = torchvision.models." +
      name +
      "()\nm.train()\n"
      "torch.onnx.export(m, torch.randn(1, 3, 224, 224), '" +
      file +
      "', "
      "training=torch.onnx.TrainingMode.TRAINING, "
      "do_constant_folding=False, opset_version=13)\n"
      "open('" +
      count +
      "', 'w').write(str(sum(p.numel() for p in "
      "m.parameters())))\" > " +
      log + " 2>&1";
  {
    INFO("exporting " + name +
         " (python3-torchvision, python3-onnx: "
         "scripts/setup.sh --test) failed; see " +
         log);
    REQUIRE(std::system(cmd.c_str()) == 0);
  }
  int64_t params = 0;
  std::ifstream(count) >> params;
  return {file, params};
}

TEST_CASE(
    "ONNX: torchvision's ResNet-50 as PyTorch exports it has torchvision's "
    "parameters and is the CNN family's ResNet-50",
    "[onnx][torchvision]") {
  const auto [file, params] = Torchvision("resnet50");
  REQUIRE(params == 25557032);  // torchvision's, counted by PyTorch
  const OnnxModel m = ReadOnnx(file, 8);
  for (const OnnxNode& n : m.nodes) CHECK(n.unsupported.empty());
  REQUIRE(m.graph);
  CHECK(m.initializer_params == params);
  int64_t graph_params = 0;
  for (const ParamTensor& p : m.graph->Params()) {
    int64_t n = 1;
    for (int64_t d : p.shape) n *= d;
    graph_params += n;
  }
  CHECK(graph_params == params);
  // The same layers as the family's: the same costs, to the FLOP.
  const Graph family =
      ParseCaseName(
          "CNN/block:bottleneck/blocks:3-4-6-3/filters:64/image:224/"
          "output:1000/batch:8/torch/fp32/train")
          .model.BuildGraph();
  for (Mode mode : {Mode::kTrain, Mode::kInfer}) {
    const Cost a = ComputeCost(*m.graph, mode, DType::kFp32);
    const Cost b = ComputeCost(family, mode, DType::kFp32);
    CHECK(a.flops == b.flops);
    CHECK(a.bytes == b.bytes);
    CHECK(a.params == b.params);
  }
}

// The runner with `args`: its exit status, stdout and stderr.
struct Run {
  int status;
  std::string out, err;
};
Run Runner(const std::string& args) {
  const std::string out = test::Scratch("onnx/run.out").string();
  const std::string err = test::Scratch("onnx/run.err").string();
  const int raw = std::system(
      (std::string(PARADNN_RUNNER) + " " + args + " > " + out + " 2> " + err)
          .c_str());
  auto slurp = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, slurp(out), slurp(err)};
}

TEST_CASE("ONNX files as cases: a sweep's grids and names that round-trip",
          "[onnx]") {
  const std::string good = ResidualNet(), bad = ResidualNet(true);
  const std::string config = test::Scratch("onnx/sweep.yaml").string();
  std::ofstream(config) << "seed: 1\nthreads: 1\nbackends: [torch, onednn]\n"
                           "dtypes: [fp32]\nmodes: [train, infer]\n"
                           "sweeps:\n"
                           "  - onnx: residual.onnx\n    batch: [2, 4]\n"
                           "  - onnx: residual_bias.onnx\n    batch: 2\n";
  const std::string out = test::Scratch("onnx/results.json").string();
  Run r =
      Runner("--paradnn_config=" + config +
             " --paradnn_rounds=1 --paradnn_steps=2 --benchmark_out=" + out +
             " --benchmark_out_format=json");
  INFO(r.err);
  REQUIRE(r.status == 0);
  // The file the checker could not map is a grid point skipped, with why.
  CHECK_THAT(r.err, ContainsSubstring("skipped residual_bias.onnx/batch:2"));
  CHECK_THAT(r.err, ContainsSubstring("Conv conv1: a bias"));
  CHECK_THAT(r.err, ContainsSubstring("8 passed, 0 skipped, 0 failed"));
  std::ifstream in(out);
  const nlohmann::json results = nlohmann::json::parse(in);
  std::set<std::string> names;
  for (const nlohmann::json& b : results["benchmarks"]) {
    names.insert(CaseNameOf(b["name"].get<std::string>()));
    CHECK(b["params"].get<double>() == 898);
  }
  std::set<std::string> expected;
  for (const char* batch : {"2", "4"}) {
    for (const char* backend : {"torch", "onednn"}) {
      for (const char* mode : {"train", "infer"}) {
        expected.insert(std::string("residual.onnx/batch:") + batch + "/" +
                        backend + "/fp32/" + mode);
      }
    }
  }
  CHECK(names == expected);
  // A case by its name, the file named as a family file.
  r = Runner("--paradnn_families=" + good +
             " --paradnn_case=residual.onnx/batch:3/onednn/fp32/infer"
             " --paradnn_rounds=1 --paradnn_steps=2 --benchmark_format=json");
  INFO(r.err);
  REQUIRE(r.status == 0);
  const nlohmann::json one = nlohmann::json::parse(r.out);
  REQUIRE(one["benchmarks"].size() == 1);
  CHECK(CaseNameOf(one["benchmarks"][0]["name"].get<std::string>()) ==
        "residual.onnx/batch:3/onednn/fp32/infer");
  CHECK(one["benchmarks"][0]["params"].get<double>() == 898);
}

}  // namespace
}  // namespace paradnn
