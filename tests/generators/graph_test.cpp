#include "generators/graph.h"

#include "generators/cost.h"
#include "generators/init.h"
#include "generators/spec.h"
#include "tests/catch.h"

namespace paradnn {
namespace {

Graph Build(const std::string& family, std::vector<std::string> values) {
  return ModelSpec::Make(family, std::move(values)).BuildGraph();
}

TEST_CASE("FC graph: hidden layers, output layer, loss", "[graph]") {
  Graph g = Build("FC", {"3", "16", "8", "4", "2"});
  // input, 3 x (dense, relu), dense, loss
  REQUIRE(g.size() == 1 + 3 * 2 + 1 + 1);
  CHECK(g.layer(0).shape == Shape{2, 8});
  CHECK(g.layer(g.logits()).shape == Shape{2, 4});
  CHECK(g.batch() == 2);
  CHECK(g.layer(g.size() - 1).op == Op::kSoftmaxCrossEntropy);
}

TEST_CASE("CNN graph: ResNet v1 shapes and projection shortcuts", "[graph]") {
  Graph g = Build("CNN", {"residual", "2", "4", "32", "10", "2"});
  int adds = 0, projections = 0;
  for (const Layer& l : g.layers()) {
    if (l.op == Op::kAdd) {
      ++adds;
      // A projection shortcut ends in a batch norm; identity is a ReLU.
      if (g.layer(l.inputs[1]).op == Op::kBatchNorm) ++projections;
    }
  }
  CHECK(adds == 8);         // 4 groups x 2 blocks
  CHECK(projections == 4);  // the first block of every group
  // 32 -> stem /2 -> 16 -> pool /2 -> 8 -> groups 8, 4, 2, 1
  const Layer& pool = g.layer(g.logits() - 1);
  REQUIRE(pool.op == Op::kGlobalAvgPool);
  CHECK(g.layer(pool.inputs[0]).shape == Shape{2, 32, 1, 1});

  Graph b = Build("CNN", {"bottleneck", "1", "4", "32", "10", "2"});
  const Layer& bpool = b.layer(b.logits() - 1);
  CHECK(bpool.shape == Shape{2, 128});  // 4 x 8f channels
}

TEST_CASE("RNN graph: embedding, stacked cells, per-step dense", "[graph]") {
  Graph g = Build("RNN", {"gru", "3", "16", "32", "5", "4"});
  CHECK(g.layer(0).op == Op::kTokens);
  CHECK(g.layer(0).shape == Shape{5, 4});
  int cells = 0;
  for (const Layer& l : g.layers()) cells += l.op == Op::kRecurrent;
  CHECK(cells == 3);
  CHECK(g.layer(g.logits()).shape == Shape{5, 4, 32});
  CHECK(g.batch() == 4);
}

TEST_CASE("parameter tensors follow LibTorch's layout", "[graph]") {
  Graph g = Build("RNN", {"lstm", "1", "16", "32", "5", "4"});
  std::vector<ParamTensor> p = g.Params();
  REQUIRE(p.size() == 1 + 4 + 2);
  CHECK(p[0].shape == Shape{32, 16});  // embedding
  CHECK(p[1].role == "weight_ih");
  CHECK(p[1].shape == Shape{64, 16});  // 4 gates x hidden
  CHECK(p[2].shape == Shape{64, 16});
  CHECK(p[5].shape == Shape{32, 16});  // dense weight [out, in]
  CHECK(p[6].shape == Shape{32});
}

TEST_CASE("only the data input needs no gradient", "[graph]") {
  Graph g = Build("FC", {"1", "3", "2", "4", "5"});
  std::vector<bool> needs = g.NeedsGrad();
  CHECK_FALSE(needs[0]);
  for (int i = 1; i < g.size(); ++i) CHECK(needs[i]);
}

TEST_CASE("initial values are deterministic and bounded", "[graph][init]") {
  Graph g = Build("FC", {"1", "3", "100", "4", "5"});
  std::vector<float> w = InitParam(g, 1, 0);
  CHECK(w == InitParam(g, 1, 0));
  CHECK(w != InitParam(g, 2, 0));
  // Another tensor of the same shape and fan-in: another stream of values.
  Graph same = Build("FC", {"2", "3", "3", "3", "5"});  // three 3x3 weights
  const std::vector<float> first = InitParam(same, 1, 0);
  const std::vector<float> second = InitParam(same, 1, 2);
  REQUIRE(first.size() == 9);
  REQUIRE(second.size() == 9);
  CHECK(first != second);
  for (float v : w) CHECK(std::abs(v) <= 0.1f);  // 1/sqrt(fan_in = 100)
  Graph c = Build("CNN", {"residual", "1", "4", "32", "10", "2"});
  std::vector<ParamTensor> p = c.Params();
  REQUIRE(p[1].role == "weight");  // batch-norm scale
  for (float v : InitParam(c, 1, 1)) CHECK(v == 1.0f);
  for (float v : InitParam(c, 1, 2)) CHECK(v == 0.0f);
  for (int64_t label : InitLabels(g, 1)) CHECK((label >= 0 && label < 4));
  Graph r = Build("RNN", {"rnn", "1", "8", "3", "5", "4"});
  std::vector<int64_t> tokens = InitTokens(r, 1);
  CHECK(tokens.size() == 20);
  for (int64_t t : tokens) CHECK((t >= 0 && t < 3));
}

// PyTorch's ceil_mode, its sizes worked by hand: 8 - 3 = 5 steps of 2 is
// 2.5 windows after the first, 3 rounded down and 4 up; from 5 with
// padding 1 and windows of 2, ceil would give 4, but the fourth window
// would start at 6, in the padding after the input: 3.
TEST_CASE("a max pool in ceil mode keeps a last window that hangs past",
          "[graph]") {
  Graph g;
  const int x = g.Input({1, 2, 8, 5});
  CHECK(g.layer(g.MaxPool(x, 3, 2, 0)).shape == Shape{1, 2, 3, 2});
  CHECK(g.layer(g.MaxPool(x, 3, 2, 0, true)).shape == Shape{1, 2, 4, 2});
  const int padded = g.MaxPool(x, 2, 2, 1, true);
  CHECK(g.layer(padded).shape == Shape{1, 2, 5, 3});
  CHECK(g.layer(padded).ceil);
}

// Inception v3's 1x7 convolution of 12 channels into 8, padded by 3 across:
// 8 x 12 x 1 x 7 weights, and 2 x 1 x 7 x 12 FLOPs per output value; a 3x3
// average counting its padding reads 9 values per output, as any does.
TEST_CASE("a convolution's kernel may be wider than tall, its padding too",
          "[graph]") {
  Graph g;
  const int x = g.Input({2, 12, 17, 17});
  const int wide = g.Conv2d(x, 8, {1, 7}, 1, {0, 3});
  const int tall = g.Conv2d(wide, 8, {7, 1}, 2, {3, 0});
  const int pooled = g.AvgPool(tall, 3, 1, 1, true);
  CHECK(g.layer(wide).shape == Shape{2, 8, 17, 17});
  CHECK(g.layer(tall).shape == Shape{2, 8, 9, 9});
  CHECK(g.layer(pooled).shape == Shape{2, 8, 9, 9});
  CHECK(g.layer(pooled).count_pad);
  const std::vector<ParamTensor> params = g.Params();
  REQUIRE(params.size() == 2);
  CHECK(params[0].shape == Shape{8, 12, 1, 7});
  CHECK(params[1].shape == Shape{8, 8, 7, 1});
  CHECK(ForwardFlops(g, wide) == 2 * (2 * 8 * 17 * 17) * 12 * 7);
  CHECK(ForwardFlops(g, tall) == 2 * (2 * 8 * 9 * 9) * 8 * 7);
  // Taps 2 apart: a 3x3 spans 5x5, its padding of 2 keeps the size; its
  // FLOPs are its taps'.
  const int atrous = g.Conv2d(pooled, 8, 3, 1, 2, 8, false, 2);
  CHECK(g.layer(atrous).shape == Shape{2, 8, 9, 9});
  CHECK(g.layer(atrous).dilation == 2);
  CHECK(ForwardFlops(g, atrous) == 2 * (2 * 8 * 9 * 9) * 1 * 9);
  // The pool's reads are the step's only elementwise work.
  CHECK(ComputeCost(g, Mode::kInfer, DType::kFp32).elementwise ==
        (2 * 8 * 9 * 9) * 9);
}

TEST_CASE("a channel shuffle keeps the maps' shape, its groups dividing C",
          "[graph]") {
  Graph g;
  const int x = g.Input({2, 6, 4, 4});
  const int s = g.ChannelShuffle(x, 3);
  CHECK(g.layer(s).shape == Shape{2, 6, 4, 4});
  CHECK(g.layer(s).groups == 3);
  CHECK_THROWS_WITH(g.ChannelShuffle(x, 4),
                    Catch::Matchers::ContainsSubstring("C a multiple of them"));
}

TEST_CASE("a slice keeps its range of one dimension after the batch",
          "[graph]") {
  Graph g;
  const int x = g.Input({2, 6, 4, 4});
  const int s = g.Slice(x, 1, 2, 3);
  CHECK(g.layer(s).shape == Shape{2, 3, 4, 4});
  CHECK(g.layer(s).begin == 2);
  CHECK(g.layer(s).units == 3);
  CHECK_THROWS_WITH(g.Slice(x, 1, 4, 3),
                    Catch::Matchers::ContainsSubstring(
                        "a slice [4, 7) along dimension 1 of [2, 6, 4, 4]"));
  CHECK_THROWS(g.Slice(x, 0, 0, 1));  // the batch
}

TEST_CASE(
    "a layer norm is over the last dimension or over maps' channels, a layer "
    "scale has a factor per channel",
    "[graph]") {
  Graph g;
  const int x = g.Input({2, 6, 4, 3});
  const int last = g.LayerNorm(x);
  CHECK(g.layer(last).axis == 3);
  CHECK(g.layer(last).units == 3);
  const int channels = g.LayerNorm(x, 1e-6, 1);
  CHECK(g.layer(channels).axis == 1);
  CHECK(g.layer(channels).units == 6);
  CHECK(g.layer(channels).shape == Shape{2, 6, 4, 3});
  CHECK_THROWS_WITH(g.LayerNorm(x, 1e-6, 2),
                    Catch::Matchers::ContainsSubstring("over the channels"));
  const int scale = g.LayerScale(channels);
  CHECK(g.layer(scale).shape == Shape{2, 6, 4, 3});
  const std::vector<ParamTensor> params = g.Params();
  REQUIRE(params.size() == 5);
  CHECK(params[2].shape == Shape{6});  // the channel norm's scale
  CHECK(params[4].layer == scale);
  CHECK(params[4].shape == Shape{6});
  CHECK(params[4].fill == 1);
  CHECK(g.NeedsGrad()[scale]);
  CHECK_THROWS(g.LayerScale(g.Input({2, 6})));
}

}  // namespace
}  // namespace paradnn
