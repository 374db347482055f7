#include "bricks/bricks.h"

#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "generators/cost.h"
#include "tests/catch.h"

namespace paradnn {
namespace {

using Catch::Matchers::ContainsSubstring;

std::vector<Brick> Of(const std::string& name, int granularity = 1) {
  const Case c = ParseCaseName(name);
  return BricksOf(c.model.BuildGraph(), c.mode, granularity);
}

std::set<std::string> Keys(const std::vector<Brick>& bricks) {
  std::set<std::string> keys;
  for (const Brick& b : bricks) keys.insert(b.Key());
  return keys;
}

TEST_CASE("an FC model repeats its hidden layers", "[bricks]") {
  // input -> 4 x (dense, relu) -> dense -> loss: 10 layers in training.
  std::vector<Brick> b =
      Of("FC/layers:4/nodes:32/input:64/output:10/batch:8/torch/fp32/train");
  REQUIRE(b.size() == 10);
  // The first dense (its input is the data: no input gradient), the other
  // three hidden denses, one relu shape, the output dense, the loss.
  CHECK(Keys(b) == std::set<std::string>{"dense/in:8x64/units:32/bias:1/grad:0",
                                         "dense/in:8x32/units:32/bias:1/grad:1",
                                         "relu/in:8x32/grad:1",
                                         "dense/in:8x32/units:10/bias:1/grad:1",
                                         "softmax_xent/in:8x10/grad:1"});
  // Inference: no loss, no input gradients.
  std::vector<Brick> infer =
      Of("FC/layers:4/nodes:32/input:64/output:10/batch:8/torch/fp32/infer");
  CHECK(infer.size() == 9);
  CHECK(Keys(infer).size() == 4);
}

TEST_CASE("the layers bricks do not cover, by model", "[bricks]") {
  auto uncovered = [](const std::string& model) {
    std::vector<std::string> names;
    for (Op op : UncoveredLayers(
             ParseCaseName(model + "/torch/fp32/infer").model.BuildGraph())) {
      names.push_back(ToString(op));
    }
    return names;
  };
  CHECK(uncovered("FC/layers:2/nodes:8/input:4/output:2/batch:2").empty());
  CHECK(uncovered("TRANSFORMER/layers:1/d_model:8/heads:2/ffn:16/length:4/"
                  "vocab:10/causal:true/batch:2")
            .empty());
  CHECK(uncovered("LLM/layers:2/d_model:16/heads:4/kv_heads:2/ffn:32/"
                  "vocab:10/context:8/batch:1/phase:decode") ==
        std::vector<std::string>{"rmsnorm", "rope", "cached_attention",
                                 "swiglu", "last_position"});
  CHECK(uncovered("DLRM/tables:2/rows:10/dim:4/hotness:2/dense:3/bottom:4/"
                  "top:4/cross:1/rank:2/batch:2") ==
        std::vector<std::string>{"embedding_bag", "cross"});
}

TEST_CASE("unique layers across a hand-built sweep", "[bricks]") {
  // Two FC models differing only in depth share every layer type; a third
  // with another width adds its own.
  std::set<std::string> unique;
  size_t total = 0;
  for (const char* name :
       {"FC/layers:2/nodes:32/input:64/output:10/batch:8/torch/fp32/train",
        "FC/layers:6/nodes:32/input:64/output:10/batch:8/torch/fp32/train",
        "FC/layers:2/nodes:16/input:64/output:10/batch:8/torch/fp32/train"}) {
    for (const Brick& b : Of(name)) {
      unique.insert(b.Key());
      ++total;
    }
  }
  CHECK(total == 6 + 14 + 6);
  CHECK(unique.size() ==
        5 + 4);  // 16 wide: dense x 3, relu; the loss is shared
}

TEST_CASE("ResNet blocks repeat within a group", "[bricks]") {
  std::vector<Brick> b = Of(
      "CNN/block:residual/blocks:3/filters:8/image:64/output:10/batch:2/torch/"
      "fp32/train");
  // The stem's conv, bn, ReLU and pool (4); per group a first block with
  // its projection (shortcut conv and bn, conv, bn, ReLU, conv, bn, add,
  // ReLU: 9) and two plain ones (7 each); then pool, dense, loss (3):
  // 4 + 4 x 23 + 3 layers.
  CHECK(b.size() == 99);
  // Distinct: the stem's 4 and the tail's 3; in group 0 (stride 1, 8
  // channels in and out) the shortcut conv, one bn, one 3x3 conv, one
  // ReLU and the add, 5, the second block's and third's all seen; in each
  // later group (stride 2) the shortcut conv, one bn, the strided and the
  // plain 3x3 conv, one ReLU and the add, 6.
  CHECK(Keys(b).size() == 4 + 5 + 3 * 6 + 3);
  // The stem convolution needs no input gradient, the others do.
  CHECK(b[0].op == Op::kConv2d);
  CHECK_FALSE(b[0].input_grad);
  CHECK(b[4].op == Op::kConv2d);
  CHECK(b[4].input_grad);
}

TEST_CASE("brick names round-trip", "[bricks]") {
  for (const char* model :
       {"FC/layers:2/nodes:32/input:64/output:10/batch:8/torch/fp32/train",
        "CNN/block:bottleneck/blocks:1/filters:4/image:32/output:10/batch:2/"
        "onednn/bf16/train",
        "RNN/cell:gru/layers:2/embed:16/vocab:32/length:5/batch:4/torch/fp32/"
        "infer",
        "TRANSFORMER/layers:2/d_model:16/heads:2/ffn:32/length:6/vocab:32/"
        "causal:true/batch:3/onednn/fp32/train"}) {
    const Case c = ParseCaseName(model);
    for (int granularity : {1, 3}) {
      for (const Brick& b :
           BricksOf(c.model.BuildGraph(), c.mode, granularity)) {
        const BrickCase bc{b, c.backend, c.dtype, c.mode};
        INFO(bc.Name());
        const BrickCase back = ParseBrickName(bc.Name());
        CHECK(back.Name() == bc.Name());
        CHECK(back.brick == b);
        CHECK(back.backend == c.backend);
      }
    }
  }
  // The layers of mobile and dense CNNs: a convolution's groups and bias
  // are in its key where it has them only.
  Graph g;
  const int image = g.Input({2, 8, 9, 9});
  const int depthwise = g.Silu(g.Conv2d(image, 8, 3, 1, 1, 8, true));
  const int excited =
      g.Sigmoid(g.Dense(g.HardSwish(g.GlobalAvgPool(depthwise)), 8));
  const int scaled = g.ChannelMul(depthwise, excited);
  const int joined =
      g.Concat({g.Relu6(scaled), g.Conv2d(scaled, 4, 1, 1, 0)}, 1);
  g.SoftmaxCrossEntropy(g.Dense(g.Flatten(g.AvgPool(joined, 3, 2, 1)), 5));
  std::vector<std::string> keys;
  for (Mode mode : {Mode::kTrain, Mode::kInfer}) {
    for (const Brick& b : BricksOf(g, mode)) {
      const BrickCase bc{b, "onednn", DType::kFp32, mode};
      INFO(bc.Name());
      CHECK(ParseBrickName(bc.Name()).Name() == bc.Name());
      CHECK(ParseBrickName(bc.Name()).brick == b);
      keys.push_back(b.Key());
    }
  }
  CHECK(UncoveredLayers(g).empty());
  CHECK(keys[0] ==
        "conv2d/in:2x8x9x9/units:8/kernel:3/stride:1/pad:1/groups:8/bias:1/"
        "grad:0");
  CHECK(keys[6] == "channel_mul/in:2x8x9x9,2x8/grad:1");
  CHECK(keys[8] == "conv2d/in:2x8x9x9/units:4/kernel:1/stride:1/pad:0/grad:1");
  CHECK(keys[9] == "concat/in:2x8x9x9,2x4x9x9/axis:1/grad:1");
  CHECK(keys[10] == "avgpool2d/in:2x12x9x9/kernel:3/stride:2/pad:1/grad:1");
  // A normalization's epsilon other than the default is in its key.
  Graph n;
  n.BatchNorm(n.Input({2, 4, 3, 3}), 0.001);
  const Brick norm = BricksOf(n, Mode::kInfer).at(0);
  CHECK(norm.Key() == "batchnorm/in:2x4x3x3/eps:0.001/grad:0");
  const std::string norm_name =
      BrickCase{norm, "torch", DType::kFp32, Mode::kInfer}.Name();
  CHECK(ParseBrickName(norm_name).brick.epsilon == 0.001);
  CHECK(ParseBrickName(norm_name).Name() == norm_name);
  // A max pool in ceil mode says so; one rounding down, as before.
  Graph pools;
  const int maps = pools.Input({2, 4, 8, 8});
  pools.MaxPool(pools.MaxPool(maps, 3, 2, 0, true), 2, 2, 0);
  const std::vector<Brick> pool_bricks = BricksOf(pools, Mode::kInfer);
  CHECK(pool_bricks.at(0).Key() ==
        "maxpool/in:2x4x8x8/kernel:3/stride:2/pad:0/ceil:1/grad:0");
  CHECK(pool_bricks.at(1).Key() ==
        "maxpool/in:2x4x4x4/kernel:2/stride:2/pad:0/grad:0");
  const std::string pool_name =
      BrickCase{pool_bricks[0], "onednn", DType::kFp32, Mode::kInfer}.Name();
  CHECK(ParseBrickName(pool_name).brick == pool_bricks[0]);
  CHECK(
      ParseBrickName(pool_name).brick.BuildGraph(Mode::kInfer).layer(1).shape ==
      Shape{2, 4, 4, 4});
  // A kernel that is not square names its height and width, its padding
  // that of each axis; an average counting its padding says so, as a
  // dilated convolution its dilation. Their names build them again.
  Graph inception;
  const int in = inception.Input({2, 4, 8, 8});
  inception.Conv2d(inception.AvgPool(inception.Conv2d(in, 6, {1, 7}, 1, {0, 3}),
                                     3, 1, 1, true),
                   6, 3, 1, 2, 1, false, 2);
  const std::vector<Brick> seven = BricksOf(inception, Mode::kInfer);
  CHECK(seven.at(0).Key() ==
        "conv2d/in:2x4x8x8/units:6/kernel:1x7/stride:1/pad:0x3/grad:0");
  CHECK(seven.at(1).Key() ==
        "avgpool2d/in:2x6x8x8/kernel:3/stride:1/pad:1/count_pad:1/grad:0");
  CHECK(seven.at(2).Key() ==
        "conv2d/in:2x6x8x8/units:6/kernel:3/stride:1/pad:2/dilation:2/grad:0");
  for (const Brick& b : seven) {
    const std::string name =
        BrickCase{b, "onednn", DType::kFp32, Mode::kTrain}.Name();
    CHECK(ParseBrickName(name).Name() == name);
    const Graph built = ParseBrickName(name).brick.BuildGraph(Mode::kTrain);
    CHECK(built.layer(1).shape == Shape{2, 6, 8, 8});
    CHECK(built.layer(1).kernel_w == (b.op == Op::kConv2d ? b.kernel_w : 3));
    CHECK(built.layer(1).count_pad == (b.op == Op::kAvgPool));
    CHECK(built.layer(1).dilation == b.dilation);
  }
  // A resize names its output's height and width.
  Graph up;
  up.Resize(up.Input({2, 4, 8, 8}), 16, 12);
  const Brick resize = BricksOf(up, Mode::kTrain).at(0);
  CHECK(resize.Key() == "resize/in:2x4x8x8/size:16x12/grad:0");
  const std::string resize_name =
      BrickCase{resize, "torch", DType::kFp32, Mode::kTrain}.Name();
  CHECK(ParseBrickName(resize_name).brick == resize);
  CHECK(ParseBrickName(resize_name)
            .brick.BuildGraph(Mode::kTrain)
            .layer(1)
            .shape == Shape{2, 4, 16, 12});
  // A 3-D convolution names its kernel, stride and padding by depth,
  // height and width where they differ, one value where they do not.
  Graph clips;
  const int frames = clips.Input({2, 3, 4, 16, 16});
  clips.Conv3d(clips.Conv3d(frames, 8, {3, 7, 7}, {1, 2, 2}, {1, 3, 3}), 8,
               {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, true);
  const std::vector<Brick> video = BricksOf(clips, Mode::kTrain);
  CHECK(video.at(0).Key() ==
        "conv3d/in:2x3x4x16x16/units:8/kernel:3x7x7/stride:1x2x2/pad:1x3x3/"
        "grad:0");
  CHECK(video.at(1).Key() ==
        "conv3d/in:2x8x4x8x8/units:8/kernel:3/stride:2/pad:1/bias:1/grad:1");
  for (const Brick& b : video) {
    const std::string name =
        BrickCase{b, "torch", DType::kFp32, Mode::kTrain}.Name();
    CHECK(ParseBrickName(name).Name() == name);
    CHECK(ParseBrickName(name).brick.BuildGraph(Mode::kTrain).layer(1).shape ==
          clips.layer(b.op == Op::kConv3d && b.kernel_w == 7 ? 1 : 2).shape);
  }
  CHECK_THROWS_WITH(
      ParseBrickName("BRICK/conv3d/in:2x3x4x16x16/units:8/kernel:3x7/stride:1/"
                     "pad:1/grad:0/torch/fp32/train"),
      ContainsSubstring("expected one value or depth x height x width"));
  // Speech's layers name what builds them again: an instance norm, maps
  // of a sequence (their height), a weight-normed convolution (its axis).
  Graph speech;
  const int heard = speech.Sequence(speech.InstanceNorm(
      speech.Conv2d(speech.Input({2, 1, 1, 40}), 4, {1, 10}, 5, 0)));
  speech.WeightNorm(
      speech.Conv2d(speech.Maps(heard, 1), 4, {1, 4}, 1, {0, 2}, 2, true), 3);
  const std::vector<Brick> spoken = BricksOf(speech, Mode::kTrain);
  CHECK(spoken.at(1).Key() == "instance_norm/in:2x4x1x7/grad:1");
  CHECK(spoken.at(3).Key() == "maps/in:7x2x4/height:1/grad:1");
  CHECK(spoken.at(4).Key() ==
        "conv2d/in:2x4x1x7/units:4/kernel:1x4/stride:1/pad:0x2/groups:2/"
        "bias:1/weight_norm:3/grad:1");
  for (const Brick& b : spoken) {
    const std::string name =
        BrickCase{b, "onednn", DType::kFp32, Mode::kTrain}.Name();
    CHECK(ParseBrickName(name).Name() == name);
    const Graph rebuilt = ParseBrickName(name).brick.BuildGraph(Mode::kTrain);
    CHECK(rebuilt.layer(1).op == b.op);
    CHECK(rebuilt.layer(1).weight_norm == b.weight_norm);
  }
  // A loss over a class per pixel names its classes' dimension; one over
  // the last dimension names none.
  Graph pixels;
  const int segmented = pixels.Conv2d(pixels.Input({2, 4, 8, 8}), 5, 1, 1, 0);
  pixels.SoftmaxCrossEntropy(segmented, 1);
  const Brick per_pixel = BricksOf(pixels, Mode::kTrain, 2).at(0);
  CHECK(per_pixel.Key() ==
        "conv2d/in:2x4x8x8/units:5/kernel:1/stride:1/pad:0/+softmax_xent/"
        "axis:1/grad:0");
  const std::string pixel_name =
      BrickCase{per_pixel, "onednn", DType::kFp32, Mode::kTrain}.Name();
  CHECK(ParseBrickName(pixel_name).Name() == pixel_name);
  const Graph rebuilt =
      ParseBrickName(pixel_name).brick.BuildGraph(Mode::kTrain);
  CHECK(rebuilt.class_axis() == 1);
  CHECK(rebuilt.layer(rebuilt.size() - 1).vocab == 5);
  // A slice names its dimension, first index and size, and its name builds
  // it again.
  Graph halves;
  halves.Slice(halves.Input({2, 6, 4, 4}), 1, 3, 3);
  const Brick half = BricksOf(halves, Mode::kInfer).at(0);
  CHECK(half.Key() == "slice/in:2x6x4x4/axis:1/begin:3/units:3/grad:0");
  const std::string half_name =
      BrickCase{half, "onednn", DType::kFp32, Mode::kInfer}.Name();
  CHECK(ParseBrickName(half_name).brick == half);
  CHECK(
      ParseBrickName(half_name).brick.BuildGraph(Mode::kInfer).layer(1).begin ==
      3);
  // A layer norm over the channels names its axis; over the last
  // dimension, none; a layer scale has no attributes.
  Graph convnext;
  convnext.LayerScale(
      convnext.LayerNorm(convnext.Input({2, 8, 4, 4}), kNormEpsilon, 1));
  convnext.LayerNorm(convnext.Input({4, 2, 8}));
  const std::vector<Brick> norms = BricksOf(convnext, Mode::kTrain);
  REQUIRE(norms.size() == 3);
  CHECK(norms[0].Key() == "layernorm/in:2x8x4x4/axis:1/grad:0");
  CHECK(norms[1].Key() == "layer_scale/in:2x8x4x4/grad:1");
  CHECK(norms[2].Key() == "layernorm/in:4x2x8/grad:0");
  for (const Brick& b : norms) {
    const std::string name =
        BrickCase{b, "torch", DType::kFp32, Mode::kTrain}.Name();
    CHECK(ParseBrickName(name).brick == b);
  }
  CHECK(ParseBrickName("BRICK/layernorm/in:2x8x4x4/axis:1/grad:0/torch/fp32/"
                       "train")
            .brick.BuildGraph(Mode::kTrain)
            .layer(1)
            .units == 8);
  CHECK(ParseBrickName("BRICK/layernorm/in:4x2x8/grad:0/torch/fp32/train")
            .brick.BuildGraph(Mode::kTrain)
            .layer(1)
            .axis == 2);
  CHECK_THROWS_WITH(
      ParseBrickName("BRICK/concat/in:2x8x9x9/axis:1/grad:1/torch/fp32/train"),
      ContainsSubstring("1 input shape, concat takes two or more"));
  CHECK_THROWS_WITH(
      ParseBrickName("BRICK/softmax/in:8x10/grad:0/torch/fp32/train"),
      ContainsSubstring("'softmax' is not a layer type"));
  CHECK_THROWS_WITH(
      ParseBrickName(
          "BRICK/dense/in:8x64/units:0/bias:1/grad:0/torch/fp32/train"),
      ContainsSubstring("'0' is not a valid units"));
  CHECK_THROWS_WITH(ParseBrickName("BRICK/add/in:8x64/grad:1/torch/fp32/train"),
                    ContainsSubstring("1 input shapes, add takes 2"));
  CHECK_THROWS_WITH(
      ParseBrickName("BRICK/dense/in:8x64/units:4/grad:0/torch/fp32/train"),
      ContainsSubstring(
          "segment 'grad:0' should be bias:<value> (dense takes units bias)"));
  CHECK_THROWS_WITH(
      ParseBrickName("BRICK/attention/in:6x3x16,6x3x16,6x3x16/heads:3/causal:1/"
                     "grad:1/torch/fp32/train")
          .brick.BuildGraph(Mode::kTrain),
      ContainsSubstring("units a multiple of heads"));
  CHECK(ParseBrickName("BRICK/attention/in:6x3x16,6x3x16,6x3x16/heads:2/"
                       "causal:1/grad:1/torch/fp32/train")
            .brick.causal);
  CHECK_THROWS_WITH(
      ParseBrickName("BRICK/relu/in:8x64/+add/grad:1/torch/fp32/train"),
      ContainsSubstring("'+add' cannot follow in a chain"));
  CHECK_THROWS_WITH(
      ParseBrickName(
          "BRICK/relu/in:8x64/+softmax_xent/+relu/grad:1/torch/fp32/train"),
      ContainsSubstring(
          "the loss (softmax_xent) must be a chain's last layer"));
  CHECK_THROWS_WITH(
      ParseBrickName("BRICK/relu/in:8x64/+relu/torch/fp32/train"),
      ContainsSubstring(
          "expected /grad:<0|1>/<backend>/<dtype>/<mode> after the layers, "
          "found 'torch'"));
}

TEST_CASE("granularity: chains of consecutive layers", "[bricks]") {
  const char* fc =
      "FC/layers:4/nodes:32/input:64/output:10/batch:8/torch/fp32/train";
  // 10 layers in a single chain: G = 3 cuts it into 3 + 3 + 3 + 1.
  std::vector<Brick> b = Of(fc, 3);
  REQUIRE(b.size() == 4);
  CHECK(b[0].Key() ==
        "dense/in:8x64/units:32/bias:1/+relu/+dense/units:32/"
        "bias:1/grad:0");
  CHECK(b[1].Key() == "relu/in:8x32/+dense/units:32/bias:1/+relu/grad:1");
  CHECK(b[3].Key() == "softmax_xent/in:8x10/grad:1");
  CHECK(Of(fc, 100).size() == 1);
  CHECK(Of(fc, 100)[0].layers() == 10);
  // A residual add reads two layers, and a block's input is read twice:
  // chains stop there, so no brick spans a branch.
  const char* resnet =
      "CNN/block:residual/blocks:1/filters:8/image:64/output:10/batch:2/torch/"
      "fp32/train";
  const size_t layers = Of(resnet).size();
  int covered = 0;
  for (const Brick& brick : Of(resnet, 4)) {
    covered += brick.layers();
    CHECK(brick.layers() <= 4);
    for (const Brick& next : brick.then) CHECK(next.op != Op::kAdd);
  }
  CHECK(covered == static_cast<int>(layers));
  CHECK(Of(resnet, 4).size() < layers);
  // The stem: conv, bn, relu, maxpool; the maxpool's output is read by the
  // first block's convolution and its shortcut.
  CHECK(Of(resnet, 4)[0].Key() ==
        "conv2d/in:2x3x64x64/units:8/kernel:7/stride:2/pad:3/+batchnorm/+relu/"
        "+maxpool/kernel:3/stride:2/pad:1/grad:0");
}

TEST_CASE("an activation joins the brick of the layer it reads, if asked",
          "[bricks]") {
  const Case fc = ParseCaseName(
      "FC/layers:4/nodes:32/input:64/output:10/batch:8/torch/fp32/train");
  const Graph g = fc.model.BuildGraph();
  // Each ReLU with its dense layer; the output layer and the loss alone:
  // the same 10 layers in 6 bricks.
  std::vector<Brick> b = BricksOf(g, fc.mode, 1, true);
  REQUIRE(b.size() == 6);
  CHECK(b[0].Key() == "dense/in:8x64/units:32/bias:1/+relu/grad:0");
  for (int k = 1; k < 4; ++k) {
    CHECK(b[k].Key() == "dense/in:8x32/units:32/bias:1/+relu/grad:1");
  }
  CHECK(b[4].Key() == "dense/in:8x32/units:10/bias:1/grad:1");
  CHECK(b[5].Key() == "softmax_xent/in:8x10/grad:1");
  // Past the granularity too: at 3, dense and ReLU and the next dense,
  // whose ReLU joins them.
  b = BricksOf(g, fc.mode, 3, true);
  REQUIRE(b.size() == 3);
  CHECK(b[0].Key() ==
        "dense/in:8x64/units:32/bias:1/+relu/+dense/units:32/bias:1/+relu/"
        "grad:0");
  CHECK(b[2].Key() == "dense/in:8x32/units:10/bias:1/+softmax_xent/grad:1");
  // A residual block: the ReLU after the add joins it; the stem's ReLU its
  // batch norm; a ReLU never joins a layer that another layer reads too.
  const Case resnet = ParseCaseName(
      "CNN/block:residual/blocks:1/filters:8/image:64/output:10/batch:2/torch/"
      "fp32/train");
  const Graph r = resnet.model.BuildGraph();
  const std::vector<Brick> single = BricksOf(r, resnet.mode);
  const std::vector<Brick> joined = BricksOf(r, resnet.mode, 1, true);
  int relus = 0, covered = 0;
  for (const Brick& brick : single) relus += brick.op == Op::kReLU;
  CHECK(relus > 0);
  for (const Brick& brick : joined) {
    INFO(brick.Key());
    covered += brick.layers();
    CHECK(brick.op != Op::kReLU);
    CHECK(brick.layers() <= 2);
    if (brick.layers() == 2) CHECK(brick.then[0].op == Op::kReLU);
  }
  CHECK(covered == static_cast<int>(single.size()));
  CHECK(joined.size() + relus == single.size());
  CHECK(joined[0].Key() ==
        "conv2d/in:2x3x64x64/units:8/kernel:7/stride:2/pad:3/grad:0");
  CHECK(joined[1].Key() == "batchnorm/in:2x8x32x32/+relu/grad:1");
}

TEST_CASE("a recurrent stack's layers share one brick at every depth",
          "[bricks]") {
  // tokens -> embedding -> 3 x gru -> dense -> loss: the GRUs after the
  // first read only their copy, whose output has the same shape.
  const Case c = ParseCaseName(
      "RNN/cell:gru/layers:3/embed:16/vocab:32/length:5/batch:4/torch/fp32/"
      "train");
  const std::vector<Brick> b = BricksOf(c.model.BuildGraph(), c.mode);
  REQUIRE(b.size() == 6);
  const std::string gru = "recurrent/in:5x4x16/cell:gru/units:16";
  for (size_t k : {1, 2, 3}) CHECK(b[k].Key() == gru + "/grad:1");
  // At granularity 2: embedding + gru, then pairs of GRUs, each pair the
  // same brick, then the dense layer.
  const std::vector<Brick> two = BricksOf(
      ParseCaseName("RNN/cell:gru/layers:5/embed:16/vocab:32/length:5/batch:4/"
                    "torch/fp32/infer")
          .model.BuildGraph(),
      Mode::kInfer, 2);
  REQUIRE(two.size() == 4);
  for (size_t k : {1, 2}) {
    CHECK(two[k].Key() == gru + "/+recurrent/cell:gru/units:16/grad:0");
  }
}

TEST_CASE(
    "in training a run of one recurrent layer is a stack, timed as a chain of "
    "its length up to 3",
    "[bricks]") {
  const std::string gru = "recurrent/in:5x4x16/cell:gru/units:16";
  const std::string next = "/+recurrent/cell:gru/units:16";
  auto stacks = [](const std::string& name, bool join) {
    const Case c = ParseCaseName(name);
    return StacksOf(c.model.BuildGraph(), c.mode, join);
  };
  for (bool join : {false, true}) {
    INFO("activations join: " << join);
    // tokens -> embedding -> 4 x gru -> dense -> loss: bricks 1 to 4.
    const std::vector<BrickStack> four = stacks(
        "RNN/cell:gru/layers:4/embed:16/vocab:32/length:5/batch:4/torch/fp32/"
        "train",
        join);
    REQUIRE(four.size() == 1);
    CHECK(four[0].first == 1);
    CHECK(four[0].layers == 4);
    CHECK(four[0].chain.Key() == gru + next + next + "/grad:1");
    // Two layers: a chain of 2.
    const std::vector<BrickStack> two = stacks(
        "RNN/cell:lstm/layers:2/embed:16/vocab:32/length:5/batch:4/onednn/"
        "fp32/train",
        join);
    REQUIRE(two.size() == 1);
    CHECK(two[0].layers == 2);
    CHECK(two[0].chain.Key() ==
          "recurrent/in:5x4x16/cell:lstm/units:16/+recurrent/cell:lstm/"
          "units:16/grad:1");
    // None: one layer, inference, and layers of other kinds repeated.
    for (const char* none :
         {"RNN/cell:gru/layers:1/embed:16/vocab:32/length:5/batch:4/torch/fp32/"
          "train",
          "RNN/cell:gru/layers:4/embed:16/vocab:32/length:5/batch:4/torch/fp32/"
          "infer",
          "FC/layers:4/nodes:32/input:64/output:10/batch:8/torch/fp32/train"}) {
      INFO(none);
      CHECK(stacks(none, join).empty());
    }
  }
}

TEST_CASE(
    "a stack takes its chain, and past it what the chain's later layers "
    "added, at least the chain's time per layer",
    "[bricks]") {
  // Chains as long as the run.
  CHECK(StackMs(2, 5, 2) == 5);
  CHECK(StackMs(2, 7, 3) == 7);
  // Past a chain of 3 (7 ms, its layer 2 ms): (7 - 2) / 2 a layer.
  CHECK(StackMs(2, 7, 5) == Approx(7 + 2 * 2.5));
  CHECK(StackMs(2, 7, 9) == Approx(7 + 6 * 2.5));
  // A brick slower than its chain's later layers (3 ms against 2): the
  // chain's time per layer, 7 / 3.
  CHECK(StackMs(3, 7, 5) == Approx(7 + 2 * 7.0 / 3));
}

TEST_CASE("a brick's graph does the layer's own work", "[bricks]") {
  for (const char* name :
       {"FC/layers:2/nodes:32/input:64/output:10/batch:8/torch/fp32/train",
        "CNN/block:bottleneck/blocks:2/filters:4/image:32/output:10/batch:2/"
        "torch/fp32/train",
        "RNN/cell:lstm/layers:2/embed:16/vocab:32/length:5/batch:4/torch/fp32/"
        "train",
        "TRANSFORMER/layers:2/d_model:16/heads:2/ffn:32/length:6/vocab:32/"
        "causal:false/batch:3/torch/fp32/train"}) {
    const Case c = ParseCaseName(name);
    const Graph model = c.model.BuildGraph();
    for (int granularity : {1, 2, 5}) {
      INFO(name << " granularity " << granularity);
      int64_t sum = 0;
      for (const Brick& b : BricksOf(model, c.mode, granularity)) {
        sum += ComputeCost(b.BuildGraph(c.mode), c.mode, c.dtype).flops;
      }
      // The bricks' FLOPs add up to the model's: the input gradients match.
      CHECK(sum == ComputeCost(model, c.mode, c.dtype).flops);
    }
  }
}

TEST_CASE("backward's gradient sums, where two layers read a tensor",
          "[bricks]") {
  const Case c = ParseCaseName(
      "CNN/block:residual/blocks:2/filters:8/image:32/output:10/batch:2/"
      "torch/fp32/train");
  const Graph g = c.model.BuildGraph();
  // Every block's input is read by its first convolution and by its
  // shortcut (a projection or the add): one sum per block, of its input.
  // Stem: 32 -> 16 (conv) -> 8 (pool), 8 channels; each group after the
  // first halves the image and doubles the channels in its first block.
  std::multiset<std::string> keys;
  for (const Brick& b : GradientSumsOf(g, Mode::kTrain)) keys.insert(b.Key());
  const auto sum = [](const std::string& s) {
    return "add/in:" + s + "," + s + "/grad:0";
  };
  CHECK(keys == std::multiset<std::string>{sum("2x8x8x8"), sum("2x8x8x8"),
                                           sum("2x8x8x8"), sum("2x16x4x4"),
                                           sum("2x16x4x4"), sum("2x32x2x2"),
                                           sum("2x32x2x2"), sum("2x64x1x1")});
  // Its brick adds in the forward pass and has nothing to send back: no
  // weights, no layer takes a gradient.
  const Graph sum_graph =
      GradientSumsOf(g, Mode::kTrain)[0].BuildGraph(Mode::kTrain);
  CHECK(sum_graph.Params().empty());
  for (bool grad : sum_graph.NeedsGrad()) CHECK_FALSE(grad);
  CHECK(GradientSumsOf(g, Mode::kInfer).empty());
  // An FC model reads every tensor once.
  CHECK(GradientSumsOf(ParseCaseName("FC/layers:4/nodes:32/input:64/output:10/"
                                     "batch:8/torch/fp32/train")
                           .model.BuildGraph(),
                       Mode::kTrain)
            .empty());
}

TEST_CASE("a brick's cold steps find only what the layer before just wrote",
          "[bricks]") {
  // Every add of every family takes the tensor the layer before it wrote
  // first, and its shortcut second (Graph::Add): four groups of two blocks,
  // or two layers of two residuals each.
  const std::pair<const char*, int> models[] = {
      {"CNN/block:residual/blocks:2/filters:8/image:32/output:10/batch:2/"
       "torch/fp32/train",
       8},
      {"CNN/block:bottleneck/blocks:2/filters:8/image:32/output:10/batch:2/"
       "torch/fp32/train",
       8},
      {"TRANSFORMER/layers:2/d_model:16/heads:2/ffn:32/length:6/vocab:32/"
       "causal:true/batch:3/torch/fp32/train",
       4}};
  for (const auto& [name, expected_adds] : models) {
    INFO(name);
    const Graph g = ParseCaseName(name).model.BuildGraph();
    int adds = 0;
    for (int i = 0; i < g.size(); ++i) {
      if (g.layer(i).op != Op::kAdd) continue;
      ++adds;
      CHECK(g.layer(i).inputs[0] == i - 1);
      CHECK(g.layer(i).inputs[1] < i - 1);
    }
    CHECK(adds == expected_adds);
  }
  // So an add's brick reads its first input back in, not its second; a
  // layer of one input reads it.
  const Graph add =
      ParseBrickName("BRICK/add/in:2x8x4x4,2x8x4x4/grad:1/torch/fp32/train")
          .brick.BuildGraph(Mode::kTrain);
  const std::vector<bool> written = add.InputsJustWritten();
  std::vector<bool> inputs;
  for (int i = 0; i < add.size(); ++i) {
    if (add.layer(i).op == Op::kInput) inputs.push_back(written[i]);
  }
  CHECK(inputs == std::vector<bool>{true, false});
  const Graph relu =
      ParseBrickName("BRICK/relu/in:2x8x4x4/grad:1/torch/fp32/train")
          .brick.BuildGraph(Mode::kTrain);
  CHECK(relu.InputsJustWritten() == std::vector<bool>{true, false, false});
}

}  // namespace
}  // namespace paradnn
