// ONNX files read into the layer graph: models written here with ONNX's
// own protobuf classes, whose layers and parameters the test knows.
#include "importers/onnx.h"

#include <onnx/onnx_pb.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "generators/cost.h"
#include "generators/spec.h"
#include "tests/catch.h"
#include "tests/importers/onnx_writer.h"
#include "tests/scratch.h"

namespace paradnn {
namespace {

using Catch::Matchers::ContainsSubstring;
using test::ModelWriter;
using test::ResidualNet;

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
    graph_params += Elements(p.shape);
  }
  CHECK(graph_params == params);
}

// A convolution dilated alike along both axes (DeepLab's) maps onto one
// whose taps are that far apart: 3x3 taps 2 apart span 5x5, padded by 2.
TEST_CASE("ONNX: a dilated convolution maps with its dilation", "[onnx]") {
  ModelWriter w;
  w.Input("x", {1, 3, 9, 9});
  w.Weights("w", {4, 3, 3, 3});
  onnx::NodeProto* c = w.Node("Conv", "atrous", {"x", "w"}, {"y"});
  ModelWriter::Ints(c, "kernel_shape", {3, 3});
  ModelWriter::Ints(c, "pads", {2, 2, 2, 2});
  ModelWriter::Ints(c, "dilations", {2, 2});
  w.Node("GlobalAveragePool", "pool", {"y"}, {"p"});
  w.Node("Flatten", "flat", {"p"}, {"f"});
  w.Output("f", {1, 4});
  const OnnxModel m = ReadOnnx(w.Write("atrous.onnx"), 2);
  INFO(m.why_no_graph);
  REQUIRE(m.graph);
  const Layer& conv = m.graph->layer(1);
  CHECK(conv.op == Op::kConv2d);
  CHECK(conv.dilation == 2);
  CHECK(conv.shape == Shape{2, 4, 9, 9});
}

// Segmentation's upsampling: a bilinear Resize to sizes the file gives
// (half-pixel centres, PyTorch's align_corners=False), of maps and of a
// global pool's [N, C] (ONNX's [N, C, 1, 1]); a nearest one is refused.
TEST_CASE("ONNX: a bilinear resize maps onto the graph's", "[onnx]") {
  ModelWriter w;
  w.Input("x", {1, 3, 4, 4});
  w.Ints("sizes", {1, 3, 8, 6});
  w.Ints("spread", {1, 3, 8, 6});
  for (const char* name : {"up", "pooled_up"}) {
    const bool pooled = std::string(name) == "pooled_up";
    if (pooled) w.Node("GlobalAveragePool", "pool", {"x"}, {"p"});
    onnx::NodeProto* r =
        w.Node("Resize", name,
               {pooled ? "p" : "x", "", "", pooled ? "spread" : "sizes"},
               {pooled ? "q" : "y"});
    ModelWriter::String(r, "mode", "linear");
    ModelWriter::String(r, "coordinate_transformation_mode", "half_pixel");
  }
  w.Node("Add", "sum", {"y", "q"}, {"s"});
  w.Node("GlobalAveragePool", "head", {"s"}, {"h"});
  w.Node("Flatten", "flat", {"h"}, {"f"});
  w.Output("f", {1, 3});
  const OnnxModel m = ReadOnnx(w.Write("resize.onnx"), 2);
  INFO(m.why_no_graph);
  REQUIRE(m.graph);
  int resizes = 0;
  for (int i = 0; i < m.graph->size(); ++i) {
    const Layer& l = m.graph->layer(i);
    if (l.op != Op::kResize) continue;
    ++resizes;
    CHECK(l.shape == Shape{2, 3, 8, 6});
  }
  CHECK(resizes == 2);
  ModelWriter near;
  near.Input("x", {1, 3, 4, 4});
  near.Ints("sizes", {1, 3, 8, 8});
  onnx::NodeProto* r = near.Node("Resize", "up", {"x", "", "", "sizes"}, {"y"});
  ModelWriter::String(r, "mode", "nearest");
  near.Output("y", {1, 3, 8, 8});
  const OnnxModel n = ReadOnnx(near.Write("nearest.onnx"), 1);
  CHECK(n.nodes[0].unsupported ==
        "Resize up: a resize in mode nearest, coordinates half_pixel (the "
        "graph's is bilinear over half-pixel centres)");
}

TEST_CASE("ONNX: a node the graph cannot express is named, with why",
          "[onnx]") {
  const OnnxModel m = ReadOnnx(ResidualNet(/*dilated=*/true), 1);
  CHECK_FALSE(m.graph);
  CHECK(m.nodes[0].unsupported == "Conv conv1: dilations [2, 1]");
  CHECK(m.why_no_graph == m.nodes[0].unsupported);
  // The others are checked by their operator: none is refused.
  for (size_t i = 1; i < m.nodes.size(); ++i) {
    CHECK(m.nodes[i].unsupported.empty());
  }
  // An operator the graph has none of, a clip other than ReLU6's, a
  // product by a constant other than one per channel (a layer scale), a
  // padding of its own.
  ModelWriter w;
  w.Input("x", {1, 4, 2, 2});
  w.Weights("lo", {}, -1);
  w.Weights("hi", {}, 1);
  w.Weights("k", {1, 1, 2});
  w.Weights("widths", {8}, 1);
  w.Node("Tanh", "squash", {"x"}, {"t"});
  w.Node("Clip", "clamp", {"x", "lo", "hi"}, {"c"});
  w.Node("Mul", "scale", {"x", "k"}, {"m"});
  w.Node("Pad", "pad", {"x", "widths"}, {"p"});
  w.Output("p", {1, 4, 4, 4});
  const OnnxModel n = ReadOnnx(w.Write("unsupported.onnx"), 1);
  REQUIRE(n.nodes.size() == 4);
  CHECK(n.nodes[0].unsupported ==
        "Tanh squash: no operation of the layer graph expresses ONNX's "
        "Tanh");
  CHECK(n.nodes[1].unsupported ==
        "Clip clamp: a clip to [-1.000000, 1.000000]: the graph's is "
        "ReLU6's [0, 6]");
  CHECK_THAT(n.nodes[2].unsupported,
             ContainsSubstring("Mul scale: a constant factor [1, 1, 2]"));
  CHECK_THAT(n.nodes[3].unsupported,
             ContainsSubstring("Pad pad: a padding of its own"));
  CHECK_FALSE(n.graph);
  CHECK_THAT(n.why_no_graph, ContainsSubstring("Tanh"));
  // A vector factor passes the operator's check (a layer normalization's
  // scale is one, known only once its nodes map), and outside a layer
  // normalization's nodes the node names it.
  ModelWriter v;
  v.Input("x", {1, 4, 2, 2});
  v.Weights("scale", {2});
  v.Node("Mul", "times", {"x", "scale"}, {"y"});
  v.Output("y", {1, 4, 2, 2});
  const OnnxModel vector = ReadOnnx(v.Write("vector.onnx"), 1);
  REQUIRE(vector.nodes.size() == 1);
  CHECK(vector.nodes[0].unsupported ==
        "Mul times: a product of [1, 4, 2, 2] by a constant [2]: the graph's "
        "is per channel of [N, C, H, W] maps ([C, 1, 1]: a layer scale), or a "
        "layer normalization's scale within its nodes");
  // An operator as an older opset defines it: before 13, Softmax's axis
  // defaults to 1 and flattens the axes after it.
  ModelWriter old(12);
  old.Input("x", {1, 4});
  old.Node("Softmax", "probs", {"x"}, {"p"});
  old.Output("p", {1, 4});
  const OnnxModel o = ReadOnnx(old.Write("opset12.onnx"), 1);
  REQUIRE(o.nodes.size() == 1);
  CHECK(o.nodes[0].unsupported ==
        "Softmax probs: Softmax as opset 12 defines it (read from opset 13 "
        "on)");
}

// ShuffleNet's channel shuffle as torchvision's exports: the maps viewed
// as [N, groups, C / groups, H, W], the two channel axes transposed, and
// reshaped back, its batch fixed at the file's (1) and the channels left
// to -1: one layer that moves the channels.
TEST_CASE("ONNX: a channel shuffle's reshapes and transpose are one layer",
          "[onnx]") {
  // The maps split into 2 x 4 channels, axes swapped by `perm`, merged
  // back, pooled and classified.
  auto file = [](std::initializer_list<int64_t> perm, const std::string& name) {
    ModelWriter w;
    w.Input("x", {1, 8, 4, 4});
    w.Weights("cw", {8, 8, 1, 1});
    w.Weights("fc_w", {8, 3});
    w.Ints("split", {1, 2, 4, 4, 4});
    w.Ints("merge", {1, -1, 4, 4});
    w.Node("Conv", "conv", {"x", "cw"}, {"c"});
    w.Node("Reshape", "split_channels", {"c", "split"}, {"s"});
    ModelWriter::Ints(w.Node("Transpose", "swap", {"s"}, {"t"}), "perm", perm);
    w.Node("Reshape", "merge_channels", {"t", "merge"}, {"m"});
    w.Node("GlobalAveragePool", "pool", {"m"}, {"p"});
    w.Node("Flatten", "flat", {"p"}, {"f"});
    w.Node("MatMul", "fc", {"f", "fc_w"}, {"y"});
    w.Output("y", {1, 3});
    return w.Write(name);
  };
  const OnnxModel m = ReadOnnx(file({0, 2, 1, 3, 4}, "shuffle.onnx"), 3);
  INFO(m.why_no_graph);
  REQUIRE(m.graph);
  const Graph& g = *m.graph;
  REQUIRE(g.size() == 6);  // input, conv, shuffle, pool, dense, loss
  CHECK(g.layer(2).op == Op::kChannelShuffle);
  CHECK(g.layer(2).groups == 2);
  CHECK(g.layer(2).inputs == std::vector<int>{1});
  CHECK(g.layer(2).shape == Shape{3, 8, 4, 4});
  CHECK(g.layer(3).op == Op::kGlobalAvgPool);
  CHECK(g.layer(3).inputs == std::vector<int>{2});
  // A transpose of other axes (height and width) is no shuffle: a view the
  // graph's layers do not read.
  const OnnxModel n = ReadOnnx(file({0, 1, 2, 4, 3}, "not_shuffle.onnx"), 3);
  CHECK_FALSE(n.graph);
  CHECK_THAT(n.why_no_graph,
             ContainsSubstring("that the graph's layers do not read"));
}

// ShuffleNet's split as torchvision's training export writes `chunk`: two
// slices of the channels, the second convolved, both joined again. A
// slice of the channels and the width at once is no range of one
// dimension, and is refused.
TEST_CASE("ONNX: slices of the channels are slice layers, each made once",
          "[onnx]") {
  auto file = [](std::initializer_list<int64_t> first_axes,
                 std::initializer_list<int64_t> first_ends,
                 const std::string& name) {
    ModelWriter w;
    w.Input("x", {1, 8, 4, 4});
    w.Weights("cw", {8, 8, 1, 1});
    w.Weights("half_w", {4, 4, 1, 1});
    w.Weights("fc_w", {8, 3});
    w.Ints("zeros", {0, 0});
    w.Ints("four", {4});
    w.Ints("eight", {8});
    w.Ints("channels", {1});
    w.Ints("first_axes", first_axes);
    w.Ints("first_ends", first_ends);
    w.Node("Conv", "conv", {"x", "cw"}, {"c"});
    w.Node("Slice", "first", {"c", "zeros", "first_ends", "first_axes"}, {"a"});
    w.Node("Slice", "second", {"c", "four", "eight", "channels"}, {"b"});
    w.Node("Conv", "branch", {"b", "half_w"}, {"bc"});
    ModelWriter::Int(w.Node("Concat", "join", {"a", "bc"}, {"j"}), "axis", 1);
    w.Node("GlobalAveragePool", "pool", {"j"}, {"p"});
    w.Node("Flatten", "flat", {"p"}, {"f"});
    w.Node("MatMul", "fc", {"f", "fc_w"}, {"y"});
    w.Output("y", {1, 3});
    return w.Write(name);
  };
  const OnnxModel m = ReadOnnx(file({1, 2}, {4, 4}, "slices.onnx"), 3);
  INFO(m.why_no_graph);
  REQUIRE(m.graph);
  const Graph& g = *m.graph;
  // input, conv, the slices (as read: the branch's first), the branch,
  // concat, pool, dense, loss
  REQUIRE(g.size() == 9);
  CHECK(g.layer(2).op == Op::kSlice);
  CHECK(g.layer(2).begin == 4);
  CHECK(g.layer(2).shape == Shape{3, 4, 4, 4});
  CHECK(g.layer(3).op == Op::kConv2d);
  CHECK(g.layer(4).op == Op::kSlice);
  CHECK(g.layer(4).begin == 0);
  CHECK(g.layer(4).shape == Shape{3, 4, 4, 4});
  CHECK(g.layer(5).op == Op::kConcat);
  CHECK(g.layer(5).inputs == std::vector<int>{4, 3});
  const OnnxModel n = ReadOnnx(file({1, 3}, {4, 2}, "corner.onnx"), 3);
  CHECK_FALSE(n.graph);
  CHECK_THAT(n.why_no_graph,
             ContainsSubstring("that the graph's layers do not read"));
}

// The nodes of mobile and densely connected CNNs as PyTorch exports them:
// a grouped convolution with a bias, ReLU6 as a clip to constants, a
// depthwise one, SiLU as a sigmoid and a product, squeeze-and-excitation
// (a global pool, 1x1 convolutions of [N, C, 1, 1], a sigmoid, a product
// of the maps), a zero padding before an average pool, a concat of
// channels, hard-swish, a flatten of feature maps; a bias shared through
// an Identity.
TEST_CASE("ONNX: mobile and dense CNNs' nodes map onto their layers",
          "[onnx]") {
  ModelWriter w(14);  // HardSwish's first opset
  w.Input("x", {1, 4, 8, 8});
  w.Weights("gw", {8, 2, 3, 3});
  w.Weights("gb", {8});
  w.Weights("zero", {}, 0);
  w.Weights("six", {}, 6);
  w.Weights("dw", {8, 1, 3, 3});
  w.Weights("db", {8});
  w.Weights("sw", {2, 8, 1, 1});
  w.Weights("sb", {2});
  w.Weights("ew", {8, 2, 1, 1});
  w.Weights("widths", {8}, 0);
  w.Weights("fc_w", {384, 3});
  onnx::NodeProto* g = w.Node("Conv", "grouped", {"x", "gw", "gb"}, {"g"});
  ModelWriter::Ints(g, "kernel_shape", {3, 3});
  ModelWriter::Ints(g, "pads", {1, 1, 1, 1});
  ModelWriter::Int(g, "group", 2);
  w.Node("Clip", "relu6", {"g", "zero", "six"}, {"r"});
  w.Node("Identity", "shared", {"db"}, {"db2"});
  onnx::NodeProto* d = w.Node("Conv", "depthwise", {"r", "dw", "db2"}, {"d"});
  ModelWriter::Ints(d, "kernel_shape", {3, 3});
  ModelWriter::Ints(d, "pads", {1, 1, 1, 1});
  ModelWriter::Int(d, "group", 8);
  w.Node("Sigmoid", "sig", {"d"}, {"ds"});
  w.Node("Mul", "silu", {"d", "ds"}, {"a"});
  w.Node("GlobalAveragePool", "squeeze", {"a"}, {"q"});
  w.Node("Conv", "reduce", {"q", "sw", "sb"}, {"q1"});
  w.Node("Relu", "relu", {"q1"}, {"q2"});
  w.Node("Conv", "expand", {"q2", "ew"}, {"q3"});
  w.Node("Sigmoid", "gate", {"q3"}, {"s"});
  w.Node("Mul", "excite", {"a", "s"}, {"e"});
  w.Node("Pad", "nopad", {"e", "widths"}, {"p"});
  onnx::NodeProto* pool = w.Node("AveragePool", "pool", {"p"}, {"o"});
  ModelWriter::Ints(pool, "kernel_shape", {2, 2});
  ModelWriter::Ints(pool, "strides", {2, 2});
  onnx::NodeProto* cat = w.Node("Concat", "join", {"o", "o", "o"}, {"j"});
  ModelWriter::Int(cat, "axis", 1);
  w.Node("HardSwish", "hswish", {"j"}, {"h"});
  w.Node("Flatten", "flat", {"h"}, {"f"});
  w.Node("MatMul", "fc", {"f", "fc_w"}, {"y"});
  w.Output("y", {1, 3});
  const OnnxModel m = ReadOnnx(w.Write("mobile.onnx"), 5);
  for (const OnnxNode& n : m.nodes) {
    INFO(n.op_type << " " << n.name);
    CHECK(n.unsupported.empty());
  }
  REQUIRE(m.graph);
  const Graph& graph = *m.graph;
  const std::vector<Op> ops = {Op::kInput,
                               Op::kConv2d,
                               Op::kRelu6,
                               Op::kConv2d,
                               Op::kSilu,
                               Op::kGlobalAvgPool,
                               Op::kDense,
                               Op::kReLU,
                               Op::kDense,
                               Op::kSigmoid,
                               Op::kChannelMul,
                               Op::kAvgPool,
                               Op::kConcat,
                               Op::kHardSwish,
                               Op::kFlatten,
                               Op::kDense,
                               Op::kSoftmaxCrossEntropy};
  REQUIRE(graph.size() == static_cast<int>(ops.size()));
  for (int i = 0; i < graph.size(); ++i) {
    INFO("layer " << i);
    CHECK(graph.layer(i).op == ops[i]);
  }
  CHECK(graph.layer(1).groups == 2);
  CHECK(graph.layer(1).bias);
  CHECK(graph.layer(3).groups == 8);
  CHECK(graph.layer(3).bias);
  CHECK(graph.layer(6).bias);
  CHECK_FALSE(graph.layer(8).bias);
  CHECK(graph.layer(10).inputs == std::vector<int>{4, 9});
  CHECK(graph.layer(11).shape == Shape{5, 8, 4, 4});
  CHECK(graph.layer(12).shape == Shape{5, 24, 4, 4});
  CHECK(graph.layer(14).shape == Shape{5, 384});
  // Weights as the file holds them: 8*2*9 + 8, 8*9 + 8, 2*8 + 2, 8*2,
  // 384*3 (the flatten of 24x4x4).
  const int64_t params = 152 + 80 + 18 + 16 + 1152;
  CHECK(m.initializer_params == params);
  int64_t graph_params = 0;
  for (const ParamTensor& p : graph.Params()) graph_params += Elements(p.shape);
  CHECK(graph_params == params);
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

// A model over 2 GB keeps its weights in files of their own beside it
// (PyTorch writes ViT-H/14 so): read from any working directory, it maps;
// its weights' values are not read.
TEST_CASE("ONNX: weights in external data files beside the model", "[onnx]") {
  ModelWriter w;
  w.Input("x", {1, 4});
  w.Weights("w", {3, 4});
  w.External("w", "external_w");
  ModelWriter::Int(w.Node("Gemm", "fc", {"x", "w"}, {"y"}), "transB", 1);
  w.Output("y", {1, 3});
  const std::string path = w.Write("external.onnx");
  REQUIRE(std::filesystem::current_path() != test::Scratch("onnx"));
  const OnnxModel m = ReadOnnx(path, 2);
  INFO(m.why_no_graph);
  REQUIRE(m.graph);
  CHECK(m.graph->layer(1).op == Op::kDense);
  CHECK(m.graph->layer(1).shape == Shape{2, 3});
  CHECK_THROWS_WITH(ReadOnnx(path, 2, /*weights=*/true),
                    ContainsSubstring("external data files"));
}

// torchvision's model `name`, untrained, exported by PyTorch's own ONNX
// exporter in training mode (batch norm kept, with its running statistics
// as outputs) but for its random layers (dropout, stochastic depth: their
// eval mode, which the graph has); its parameter count as torchvision has
// it (the sum of numel over parameters()) and the FLOPs PyTorch's profiler
// counts for its matrix operations (convolutions, products) in an
// inference step of 8 examples.
struct Exported {
  std::string file;
  int64_t params = 0, flops = 0;
};
// `name`: the model's constructor under torchvision.models
// ("segmentation.fcn_resnet50"), or under torchaudio.models, so named
// ("torchaudio.wav2vec2_base"); `args`: its arguments; `example`: one
// example's input shape ([3, H, W], video's [3, frames, H, W], speech's
// [samples]); `batch`: the trace's (DeepLabV3's image pooling normalizes
// one value per channel and example, which PyTorch refuses to train on one
// example). PyTorch's profiler counts no 1-D or 3-D convolution's FLOPs:
// those are counted from each one's output, channels and kernel as it
// runs; nor PyTorch 2's fused attention's (below).
Exported Torchvision(const std::string& name, const std::string& args,
                     const Shape& example, int64_t batch) {
  std::string size;
  for (int64_t d : example) size += ", " + std::to_string(d);
  size = size.substr(2) + ")";
  const std::string file = test::Scratch("onnx/" + name + ".onnx").string();
  const std::string count = test::Scratch("onnx/" + name + ".params").string();
  const std::string log = test::Scratch("onnx/" + name + ".log").string();
  // Debian's Python (another one on PATH may have no torch).
  const bool audio = name.rfind("torchaudio.", 0) == 0;
  const std::string cmd =
      "/usr/bin/python3 -c \"import math, torch, torchvision" +
      std::string(audio ? ", torchaudio" : "") +
      "\n"
      "m = " +
      (audio ? "torchaudio.models." + name.substr(11)
             : "torchvision.models." + name) +
      "(" + args +
      ")\nm.train()\n"
      "for d in m.modules():\n"
      "  if isinstance(d, (torch.nn.Dropout, "
      "torchvision.ops.StochasticDepth)): "
      "d.eval()\n"
      "torch.onnx.export(m, torch.randn(" +
      std::to_string(batch) + ", " + size + ", '" + file +
      "', "
      "training=torch.onnx.TrainingMode.PRESERVE, "
      "do_constant_folding=False, opset_version=14)\n"
      "m.eval()\n"
      "uncounted = []\n"
      "def count(c, i, o):\n"
      "  uncounted.append(2 * o.numel() * c.in_channels // c.groups *\n"
      "                   math.prod(c.kernel_size))\n"
      "for c in m.modules():\n"
      "  if isinstance(c, (torch.nn.Conv1d, torch.nn.Conv3d)):\n"
      "    c.register_forward_hook(count)\n"
      // PyTorch 2's fused attention on the CPU (flash attention: torchaudio
      // 2's Wav2Vec2 calls it) has no FLOPs in the profiler either: those
      // are counted from each call's shapes where that kernel ran.
      "fused = []\n"
      "sdpa = getattr(torch.nn.functional, 'scaled_dot_product_attention', "
      "None)\n"
      "def counted(q, k, v, *args, **kwargs):\n"
      "  fused.append(4 * q.shape[:-1].numel() * k.shape[-2] * q.shape[-1])\n"
      "  return sdpa(q, k, v, *args, **kwargs)\n"
      "if sdpa: torch.nn.functional.scaled_dot_product_attention = counted\n"
      "with torch.no_grad(), torch.profiler.profile(with_flops=True) as p:\n"
      "  m(torch.randn(8, " +
      size +
      ")\n"
      "matrix = ('aten::conv2d', 'aten::addmm', 'aten::mm', 'aten::bmm')\n"
      "flops = sum(e.flops for e in p.key_averages() if e.key in matrix)\n"
      "flops += sum(uncounted)\n"
      "if any('flash_attention' in e.key for e in p.key_averages()):\n"
      "  flops += sum(fused)\n"
      "open('" +
      count +
      "', 'w').write('%d %d' % (sum(p.numel() for p in "
      "m.parameters()), flops))\" > " +
      log + " 2>&1";
  {
    INFO("exporting " + name +
         " (python3-torchvision, python3-onnx: "
         "scripts/setup.sh --test) failed; see " +
         log);
    REQUIRE(std::system(cmd.c_str()) == 0);
  }
  Exported out{file};
  std::ifstream(count) >> out.params >> out.flops;
  return out;
}

// Every node of torchvision's `name` maps, and the graph has torchvision's
// parameters and the profiler's FLOPs; with `family`, the family's case of that
// name has the file's costs, to the FLOP and byte, in training and inference.
void CheckTorchvision(const std::string& name, int64_t torchvision_params,
                      const std::string& family = "",
                      const std::string& args = "",
                      const Shape& example = {3, 224, 224}, int64_t batch = 1) {
  INFO(name);
  const Exported e = Torchvision(name, args, example, batch);
  const int64_t params = e.params;
  REQUIRE(params == torchvision_params);  // torchvision's, counted by PyTorch
  const OnnxModel m = ReadOnnx(e.file, 8);
  for (const OnnxNode& n : m.nodes) {
    INFO(n.op_type << " " << n.name);
    CHECK(n.unsupported.empty());
  }
  REQUIRE(m.graph);
  CHECK(m.initializer_params == params);
  int64_t graph_params = 0;
  for (const ParamTensor& p : m.graph->Params()) {
    graph_params += Elements(p.shape);
  }
  CHECK(graph_params == params);
  CHECK(ComputeCost(*m.graph, Mode::kInfer, DType::kFp32).flops == e.flops);
  if (family.empty()) return;
  const Graph built = ParseCaseName(family).model.BuildGraph();
  for (Mode mode : {Mode::kTrain, Mode::kInfer}) {
    const Cost a = ComputeCost(*m.graph, mode, DType::kFp32);
    const Cost b = ComputeCost(built, mode, DType::kFp32);
    CHECK(a.flops == b.flops);
    CHECK(a.bytes == b.bytes);
    CHECK(a.elementwise == b.elementwise);
    CHECK(a.params == b.params);
  }
}

TEST_CASE(
    "ONNX: torchvision's ResNet-50 as PyTorch exports it has torchvision's "
    "parameters and is the CNN family's ResNet-50",
    "[onnx][torchvision]") {
  CheckTorchvision("resnet50", 25557032,
                   "CNN/block:bottleneck/blocks:3-4-6-3/filters:64/image:224/"
                   "output:1000/batch:8/torch/fp32/train");
}

TEST_CASE(
    "ONNX: torchvision's VGG-16, MobileNetV2 and EfficientNet-B0 have "
    "torchvision's parameters and their families' costs",
    "[onnx][torchvision]") {
  CheckTorchvision("vgg16", 138357544,
                   "VGG/blocks:2-2-3-3-3/image:224/output:1000/batch:8/torch/"
                   "fp32/train");
  CheckTorchvision("mobilenet_v2", 3504872,
                   "MOBILENET_V2/expand:6/image:224/output:1000/batch:8/torch/"
                   "fp32/train");
  CheckTorchvision("efficientnet_b0", 5288548,
                   "EFFICIENTNET/width:100/depth:100/image:224/output:1000/"
                   "batch:8/torch/fp32/train");
}

TEST_CASE(
    "ONNX: torchvision's AlexNet and DenseNet-121 have torchvision's "
    "parameters",
    "[onnx][torchvision]") {
  CheckTorchvision("alexnet", 61100840);
  CheckTorchvision("densenet121", 7978856);
}

// Grouped bottlenecks (ResNeXt), squeeze-and-excitation with ReLU
// (RegNetY), a global pool written as a mean (MNASNet).
TEST_CASE(
    "ONNX: torchvision's ResNet-18, ResNeXt-50, RegNetY-400MF and "
    "MNASNet have torchvision's parameters",
    "[onnx][torchvision]") {
  // Not the CNN family's residual ResNet: that projects the first
  // block's shortcut in every group, as TensorFlow's official model does,
  // torchvision's not in the first.
  CheckTorchvision("resnet18", 11689512);
  CheckTorchvision("resnext50_32x4d", 25028904);
  CheckTorchvision("regnet_y_400mf", 4344144);
  CheckTorchvision("mnasnet1_0", 4383312);
}

// Max pools in ceil mode (SqueezeNet); channel shuffles and halves of the
// channels (ShuffleNetV2).
TEST_CASE(
    "ONNX: torchvision's SqueezeNet 1.1 and ShuffleNetV2 x0.5 have "
    "torchvision's parameters",
    "[onnx][torchvision]") {
  CheckTorchvision("squeezenet1_1", 1235496);
  CheckTorchvision("shufflenet_v2_x0_5", 1366792);
}

// Hard-swish and squeeze-and-excitation with a hard sigmoid.
TEST_CASE("ONNX: torchvision's MobileNetV3-Small has torchvision's parameters",
          "[onnx][torchvision]") {
  CheckTorchvision("mobilenet_v3_small", 2542856);
}

// ConvNeXt: layer norms over the channels of NCHW maps (a permute, the
// norm's nodes, a permute back; after the global pool too), linear layers
// over [N, H, W, C] (1x1 convolutions), layer scale, 7x7 depthwise
// convolutions.
TEST_CASE(
    "ONNX: torchvision's ConvNeXt-Tiny has torchvision's parameters and is "
    "the ConvNeXt family's",
    "[onnx][torchvision]") {
  CheckTorchvision("convnext_tiny", 28589128,
                   "CONVNEXT/blocks:3-3-9-3/width:96/image:224/output:1000/"
                   "batch:8/torch/fp32/train");
}

// Inception v3 (without its auxiliary classifier, which trains only): 1x7
// and 7x1 convolutions, average pools counting their padding (a Pad
// before each), branches joined; its input 299 x 299.
TEST_CASE(
    "ONNX: torchvision's Inception v3 has torchvision's parameters and is "
    "the Inception family's",
    "[onnx][torchvision]") {
  CheckTorchvision("inception_v3", 23834568,
                   "INCEPTION/image:299/output:1000/batch:8/torch/fp32/train",
                   "aux_logits=False, init_weights=True", {3, 299, 299});
}

// A transformer: patches as a sequence, a class token, attention as the
// exporter writes it out (a packed projection cut into queries, keys and
// values, heads split and merged by reshapes fixed at the export's batch),
// layer normalization and GELU from their nodes.
TEST_CASE("ONNX: torchvision's ViT-B/16 has torchvision's parameters",
          "[onnx][torchvision]") {
  CheckTorchvision("vit_b_16", 86567656);
}

// Segmentation: dilated convolutions, bilinear resizes to the image, a
// class per pixel; DeepLabV3's image pooling spread back over the maps,
// LRASPP's per-channel product of two maps.
TEST_CASE(
    "ONNX: torchvision's segmentation models have torchvision's "
    "parameters",
    "[onnx][torchvision]") {
  CheckTorchvision("segmentation.fcn_resnet50", 32957013, "",
                   "weights_backbone=None", {3, 128, 128});
  CheckTorchvision("segmentation.deeplabv3_mobilenet_v3_large", 11025477, "",
                   "weights_backbone=None", {3, 128, 128}, 2);
  CheckTorchvision("segmentation.lraspp_mobilenet_v3_large", 3221538, "",
                   "weights_backbone=None", {3, 128, 128});
}

// Video: 3-D convolutions, batch norm over frames and pixels, a global
// pool over them.
TEST_CASE("ONNX: torchvision's R3D-18 has torchvision's parameters",
          "[onnx][torchvision]") {
  CheckTorchvision("video.r3d_18", 33371472, "", "", {3, 4, 64, 64});
}

// Speech: 1-D convolutions over the signal, a group norm with a group per
// channel, a weight-normed grouped convolution over the frames, a
// transformer encoder (its dropouts and layer drop off, as the graph has
// them).
TEST_CASE("ONNX: torchaudio's Wav2Vec2 base has torchaudio's parameters",
          "[onnx][torchaudio]") {
  CheckTorchvision("torchaudio.wav2vec2_base", 94370944, "",
                   "encoder_projection_dropout=0.0, "
                   "encoder_attention_dropout=0.0, "
                   "encoder_ff_interm_dropout=0.0, encoder_dropout=0.0, "
                   "encoder_layer_drop=0.0",
                   {16000});
}

}  // namespace
}  // namespace paradnn
