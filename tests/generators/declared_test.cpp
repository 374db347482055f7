#include "generators/declared.h"

#include <cctype>
#include <map>
#include <set>

#include "generators/cost.h"
#include "generators/init.h"
#include "generators/sweep.h"
#include "tests/catch.h"
#include "tests/generators/reference_families.h"

namespace paradnn {
namespace {

using Catch::Matchers::ContainsSubstring;

std::string Source(const std::string& path) {
  return std::string(PARADNN_SOURCE_DIR) + "/" + path;
}

// Every field of every layer, the graph's batch and logits, its tensors.
void CheckSameGraph(const Graph& a, const Graph& b) {
  REQUIRE(a.size() == b.size());
  CHECK(a.batch() == b.batch());
  CHECK(a.logits() == b.logits());
  for (int i = 0; i < a.size(); ++i) {
    INFO("layer " << i << " " << ToString(a.layer(i).op));
    const Layer &x = a.layer(i), &y = b.layer(i);
    CHECK(x.op == y.op);
    CHECK(x.inputs == y.inputs);
    CHECK(x.shape == y.shape);
    CHECK(x.units == y.units);
    CHECK(x.kernel == y.kernel);
    CHECK(x.kernel_w == y.kernel_w);
    CHECK(x.stride == y.stride);
    CHECK(x.pad == y.pad);
    CHECK(x.pad_w == y.pad_w);
    CHECK(x.count_pad == y.count_pad);
    CHECK(x.vocab == y.vocab);
    CHECK(x.bias == y.bias);
    CHECK(x.cell == y.cell);
    CHECK(x.heads == y.heads);
    CHECK(x.causal == y.causal);
    CHECK(x.rank == y.rank);
    CHECK(x.requires_grad == y.requires_grad);
  }
  const std::vector<ParamTensor> p = a.Params(), q = b.Params();
  REQUIRE(p.size() == q.size());
  for (size_t i = 0; i < p.size(); ++i) {
    CHECK(p[i].layer == q[i].layer);
    CHECK(p[i].role == q[i].role);
    CHECK(p[i].shape == q[i].shape);
    CHECK(p[i].bound == q[i].bound);
  }
}

TEST_CASE(
    "FC, CNN and RNN declared in their files are the models they were in "
    "C++, over the paper's grids",
    "[declared]") {
  const std::map<std::string, Graph (*)(const ModelSpec&)> reference = {
      {"FC", test::ReferenceFc},
      {"CNN", test::ReferenceCnn},
      {"RNN", test::ReferenceRnn}};
  for (const std::string family : {"FC", "CNN", "RNN"}) {
    std::string lower = family;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(ch));
    const std::string config = "configs/paper_" + lower + ".yaml";
    INFO(config);
    REQUIRE(FindFamily(family) != nullptr);
    CHECK(FindFamily(family)->source == "families/" + lower + ".yaml");
    const Sweep sweep = LoadSweep(Source(config), {"torch"});
    std::set<std::string> models;
    for (const Case& c : sweep.cases) {
      if (!models.insert(c.model.Name()).second) continue;
      INFO(c.Name());
      CHECK(ParseCaseName(c.Name()) == c);
      const Graph declared = c.model.BuildGraph();
      const Graph built = reference.at(family)(c.model);
      CheckSameGraph(declared, built);
      for (Mode m : {Mode::kTrain, Mode::kInfer}) {
        const Cost a = ComputeCost(declared, m, DType::kFp32);
        const Cost b = ComputeCost(built, m, DType::kFp32);
        CHECK(a.params == b.params);
        CHECK(a.flops == b.flops);
        CHECK(a.bytes == b.bytes);
      }
    }
    // The paper's grids: 9,720 FC, 2,160 CNN and 2,160 RNN models.
    CHECK(models.size() == (family == "FC" ? 9720u : 2160u));
  }
}

// Inception v3's family: a 1x7 and a 7x1 convolution are padded across
// their long axis only (the padding's default: half the kernel along each
// axis, the height's where the kernel is square); its average pools count
// their padding. Blocks C have 6 non-square kernels each, D 2 and E 4: 34;
// one average pool in each of the 3 A, 4 C and 2 E blocks. And a resize
// declared with and without its width.
TEST_CASE("INCEPTION: non-square kernels and averages counting padding",
          "[declared]") {
  const Graph g =
      ParseCaseName("INCEPTION/image:299/output:1000/batch:1/torch/fp32/infer")
          .model.BuildGraph();
  int non_square = 0, counting = 0;
  for (int i = 0; i < g.size(); ++i) {
    const Layer& l = g.layer(i);
    if (l.op == Op::kConv2d && l.kernel != l.kernel_w) {
      ++non_square;
      CHECK(l.pad == l.kernel / 2);
      CHECK(l.pad_w == l.kernel_w / 2);
      CHECK(l.shape[2] == g.layer(l.inputs[0]).shape[2]);
      CHECK(l.shape[3] == g.layer(l.inputs[0]).shape[3]);
    }
    if (l.op == Op::kAvgPool) counting += l.count_pad ? 1 : 0;
  }
  CHECK(non_square == 34);
  CHECK(counting == 9);
  // A resize's width is its height where none is given.
  const FamilyDef up = ParseFamily(
      "family: UP\nparams: [batch]\ngraph:\n"
      "  - {op: input, shape: [batch, 3, 4, 4]}\n"
      "  - {op: resize, height: 8}\n  - {op: resize, height: 6, width: 10}\n"
      "  - {op: avgpool}\n  - {op: softmax_xent}\n",
      "up.yaml");
  ModelSpec s;
  s.family = up.name;
  s.values = {"2"};
  const Graph resized = up.build(s);
  CHECK(resized.layer(1).shape == Shape{2, 3, 8, 8});
  CHECK(resized.layer(2).shape == Shape{2, 3, 6, 10});
  // The stem's 3x3 of no padding keeps none across either.
  CHECK(g.layer(1).pad_w == 0);
  CHECK(g.layer(g.logits()).shape == Shape{1, 1000});
  // Segmentation's loss: a class per pixel, over the channels.
  const FamilyDef seg = ParseFamily(
      "family: SEG\nparams: [batch]\ngraph:\n"
      "  - {op: input, shape: [batch, 3, 4, 4]}\n"
      "  - {op: conv2d, channels: 5, kernel: 1}\n"
      "  - {op: softmax_xent, axis: 1}\n",
      "seg.yaml");
  s.family = seg.name;
  const Graph per_pixel = seg.build(s);
  CHECK(per_pixel.class_axis() == 1);
  CHECK(per_pixel.layer(per_pixel.size() - 1).vocab == 5);
  CHECK(InitLabels(per_pixel, 1).size() == 2 * 4 * 4);
  // Video: a cube where no depth is given, padded to keep the size.
  const FamilyDef clip = ParseFamily(
      "family: CLIP\nparams: [batch]\ngraph:\n"
      "  - {op: input, shape: [batch, 3, 4, 8, 8]}\n"
      "  - {op: conv3d, channels: 6, kernel: 3}\n"
      "  - {op: conv3d, channels: 6, kernel: 7, kernel_d: 3, stride: 2, "
      "stride_d: 1}\n"
      "  - {op: avgpool}\n  - {op: softmax_xent}\n",
      "clip.yaml");
  s.family = clip.name;
  const Graph clipped = clip.build(s);
  CHECK(clipped.layer(1).shape == Shape{2, 6, 4, 8, 8});
  CHECK(clipped.layer(2).shape == Shape{2, 6, 4, 4, 4});
  CHECK(clipped.layer(2).pad == 3);
  CHECK(clipped.layer(2).pad_d == 1);
  // Speech: a 1-D convolution over maps of height 1, an instance norm, the
  // frames as a sequence and back, a weight-normed grouped convolution.
  const FamilyDef speech = ParseFamily(
      "family: SPEECH\nparams: [batch]\ngraph:\n"
      "  - {op: input, shape: [batch, 1, 1, 400]}\n"
      "  - {op: conv2d, channels: 8, kernel: 1, kernel_w: 10, stride: 5, "
      "pad: 0, pad_w: 0}\n"
      "  - {op: instance_norm}\n  - {op: sequence}\n"
      "  - {op: maps, height: 1}\n"
      "  - {op: conv2d, channels: 8, kernel: 1, kernel_w: 4, pad: 0, "
      "groups: 2, bias: 1, weight_norm: 3}\n"
      "  - {op: avgpool}\n  - {op: softmax_xent}\n",
      "speech.yaml");
  s.family = speech.name;
  const Graph spoken = speech.build(s);
  CHECK(spoken.layer(1).shape == Shape{2, 8, 1, 79});
  CHECK(spoken.layer(2).op == Op::kInstanceNorm);
  CHECK(spoken.layer(3).shape == Shape{79, 2, 8});
  CHECK(spoken.layer(4).shape == Shape{2, 8, 1, 79});
  CHECK(spoken.layer(5).shape == Shape{2, 8, 1, 80});
  CHECK(spoken.layer(5).weight_norm == 3);
  // 8 x 10 weights; a scale and shift per channel; v (8 x 4 x 4), a
  // magnitude per tap (4) and a bias (8); 8 x 8 + 8 dense... none: the
  // loss reads the pool directly.
  int64_t params = 0;
  for (const ParamTensor& p : spoken.Params()) params += Elements(p.shape);
  CHECK(params == 80 + 16 + 128 + 4 + 8);
}

TEST_CASE("a family declared only in YAML: params and FLOPs by hand",
          "[declared]") {
  const std::string file = Source("tests/data/families/patch_encoder.yaml");
  CHECK(LoadFamilyFile(file) == "PATCH_ENCODER");
  CHECK(LoadFamilyFile(file) == "PATCH_ENCODER");  // the same file: no change
  // heads and mlp_ratio from their defaults, in the sweep and the name.
  const Sweep sweep = ParseSweep(
      "families: [" + file +
          "]\nmodes: [train, infer]\nsweeps:\n  - {family: PATCH_ENCODER, "
          "layers: 2, d_model: 32, patch: 4, patches: 16, classes: 10, "
          "batch: 2}\n",
      "sweep.yaml", {"torch"});
  REQUIRE(sweep.cases.size() == 2);
  const Case& c = sweep.cases[0];
  CHECK(c.Name() ==
        "PATCH_ENCODER/layers:2/d_model:32/heads:4/mlp_ratio:4/patch:4/"
        "patches:16/classes:10/batch:2/torch/fp32/train");
  CHECK(ParseCaseName(c.Name()) == c);
  const Graph g = c.model.BuildGraph();
  CHECK(g.batch() == 2);
  // 3 x 4^2 = 48 values a patch, embedded in 32; 16 positions of 32; per
  // layer two layer norms (2 x 64), q, k, v and the output projection
  // (4 x (32 x 32 + 32)), the feed-forward (32 x 128 + 128, 128 x 32 + 32);
  // the last layer norm (64) and the classifier (32 x 10 + 10).
  const int64_t per_layer =
      2 * 64 + 4 * (32 * 32 + 32) + (32 * 128 + 128) + (128 * 32 + 32);
  const int64_t params =
      (48 * 32 + 32) + 16 * 32 + 2 * per_layer + 64 + (32 * 10 + 10);
  CHECK(params == 27882);
  const Cost infer = ComputeCost(g, Mode::kInfer, DType::kFp32);
  CHECK(infer.params == params);
  // Matrix products over 16 x 2 = 32 rows, 2 per multiply-add: the patch
  // embedding, per layer the four projections, the scores and their
  // weighted sum (2 images x 16 x 16 x 32 each), the feed-forward; the
  // classifier.
  const int64_t rows = 32;
  const int64_t layer_flops = 4 * 2 * rows * 32 * 32 +
                              2 * (2 * 2 * 16 * 16 * 32) +
                              2 * (2 * rows * 32 * 128);
  const int64_t forward =
      2 * rows * 48 * 32 + 2 * layer_flops + 2 * rows * 32 * 10;
  CHECK(forward == 1822720);
  CHECK(infer.flops == forward);
  // Training: each product's two gradients too, but none for the input,
  // which takes no gradient.
  CHECK(ComputeCost(g, Mode::kTrain, DType::kFp32).flops ==
        3 * forward - 2 * rows * 48 * 32);
  // A model whose values do not fit together is no model, and says why.
  CHECK_THROWS_WITH(
      ParseCaseName("PATCH_ENCODER/layers:1/d_model:30/heads:4/mlp_ratio:4/"
                    "patch:4/patches:16/classes:10/batch:2/torch/fp32/train"),
      ContainsSubstring("heads must divide d_model"));
}

TEST_CASE("DLRM, a built-in family file: params, FLOPs and bytes by hand",
          "[declared]") {
  REQUIRE(FindFamily("DLRM") != nullptr);
  CHECK(FindFamily("DLRM")->source == "families/dlrm.yaml");
  // dense, cross and rank from their defaults (13, 3, 512) where left out.
  const Sweep defaults = ParseSweep(
      "modes: [train]\nsweeps:\n  - {family: DLRM, tables: 2, rows: 100, "
      "dim: 8, hotness: 3, bottom: 16-16-8, top: 16, batch: 5}\n",
      "sweep.yaml", {"torch"});
  REQUIRE(defaults.cases.size() == 1);
  CHECK(defaults.cases[0].model.Name() ==
        "DLRM/tables:2/rows:100/dim:8/hotness:3/dense:13/bottom:16-16-8/"
        "top:16/cross:3/rank:512/batch:5");
  const ModelSpec m = ParseCaseName(
                          "DLRM/tables:2/rows:100/dim:8/hotness:3/dense:4/"
                          "bottom:16-16-8/top:16/cross:2/rank:4/batch:5/"
                          "torch/fp32/train")
                          .model;
  const Graph g = m.BuildGraph();
  CHECK(g.batch() == 5);
  // The bottom MLP 4 -> 16 -> 16 -> 8; two tables of 100 x 8; the join of
  // 8 + 2 x 8 = 24; two cross layers of V (4 x 24), U (24 x 4) and b
  // (24); the top MLP 24 -> 16 -> 16 -> 16 -> 16 and two logits.
  const int64_t bottom = (4 * 16 + 16) + (16 * 16 + 16) + (16 * 8 + 8);
  const int64_t cross = 4 * 24 + 24 * 4 + 24;
  const int64_t top = (24 * 16 + 16) + 3 * (16 * 16 + 16) + (16 * 2 + 2);
  const int64_t params = bottom + 2 * 100 * 8 + 2 * cross + top;
  CHECK(params == 3770);
  const Cost infer = ComputeCost(g, Mode::kInfer, DType::kFp32);
  CHECK(infer.params == params);
  // Products over the 5 examples: the MLPs' layers, a cross layer's V x
  // and U (V x); bags and the join do none.
  const int64_t bottom_flops = 2 * 5 * (4 * 16 + 16 * 16 + 16 * 8);
  const int64_t cross_flops = 2 * 5 * (24 * 4 + 4 * 24);
  const int64_t top_flops = 2 * 5 * (24 * 16 + 3 * 16 * 16 + 16 * 2);
  CHECK(infer.flops == bottom_flops + 2 * cross_flops + top_flops);
  // Training: every dense layer's two gradients but the first's input
  // gradient (its input is data); a cross layer's backward is four
  // products of its forward two's size (the gradients of U, V x, V and
  // x), so three times its forward in all.
  const int64_t first = 2 * 5 * 4 * 16;
  CHECK(ComputeCost(g, Mode::kTrain, DType::kFp32).flops ==
        3 * (bottom_flops + top_flops) - first + 2 * 3 * cross_flops);
  // A table's 15 ids a step, uniform over 100 rows: the rows a step reads
  // are the distinct ones, counted over the generator's own ids.
  int bag = -1;
  for (int i = 0; i < g.size(); ++i) {
    if (g.layer(i).op == Op::kEmbeddingBag) bag = i;
  }
  REQUIRE(bag > 0);
  CHECK(RowsLookedUp(g, bag) == 14);  // 100 (1 - 0.99^15) = 13.99
  const Graph wide =
      ParseCaseName(
          "DLRM/tables:1/rows:5000/dim:8/hotness:5/dense:4/bottom:8/top:8/"
          "cross:1/rank:4/batch:1000/torch/fp32/infer")
          .model.BuildGraph();
  std::set<int64_t> ids;
  for (int i = 0; i < wide.size(); ++i) {
    if (wide.layer(i).op == Op::kEmbeddingBag) {
      CHECK(RowsLookedUp(wide, i) == 3161);  // 5000 (1 - (1 - 1/5000)^5000)
      for (int64_t id : InitTokens(wide, 11, wide.layer(i).inputs[0])) {
        ids.insert(id);
      }
    }
  }
  // The expectation's standard deviation is about 20 rows here.
  CHECK(std::abs(static_cast<double>(ids.size()) - 3161) < 100);
  // Bytes of an inference step: the weights it reads (the rows looked up
  // of the tables, every other weight) and every layer's output but the
  // loss (inference has none), ids at 8.
  const Cost cost = ComputeCost(g, Mode::kInfer, DType::kFp32);
  int64_t outputs = 0;
  for (const Layer& l : g.layers()) {
    if (l.op == Op::kSoftmaxCrossEntropy) continue;
    outputs += Elements(l.shape) * (l.op == Op::kTokens ? 8 : 4);
  }
  CHECK(cost.bytes == (params - 2 * 100 * 8 + 2 * 14 * 8) * 4 + outputs);
}

// The message of a family file's error, for `text` as lines.
std::string ErrorOf(const std::string& text) {
  try {
    const FamilyDef def = ParseFamily(text, "f.yaml");
    ModelSpec s;
    s.family = def.name;
    for (const ParamDef& p : def.params) {
      s.values.push_back(p.choices.empty() ? "8" : p.choices[0]);
    }
    return def.check(s);
  } catch (const SpecError& e) {
    return e.what();
  }
}

TEST_CASE("bad family files: the file, the line, the value, what was expected",
          "[declared]") {
  const std::string head =
      "family: FC\nparams: [layers, nodes, input, output, batch]\n";
  CHECK(ErrorOf(head + "graph:\n  - {op: input, shape: [batch, input]}\n"
                       "  - {op: dens, units: nodes}\n") ==
        "f.yaml:5: 'dens' is not an operation: expected one of add, "
        "attention, avgpool, avgpool2d, batchnorm, cached_attention, "
        "channel_mul, channel_shuffle, class_token, concat, conv2d, conv3d, "
        "cross, "
        "dense, embedding, "
        "embedding_bag, first_token, flatten, gelu, hardsigmoid, hardswish, "
        "input, instance_norm, last_position, layer_scale, layernorm, maps, "
        "maxpool, positional, "
        "recurrent, "
        "relu, relu6, resize, rmsnorm, rope, sequence, sigmoid, silu, slice, "
        "softmax_xent, "
        "swiglu, tokens");
  CHECK_THAT(ErrorOf(head + "graph:\n  - {op: input, shape: [batch, input]}\n"
                            "  - {op: dense, units: width}\n"),
             ContainsSubstring("f.yaml:5: 'width': 'width' is no parameter or "
                               "variable here: expected one of batch, input, "
                               "layers, nodes, output"));
  CHECK_THAT(
      ErrorOf(head + "graph:\n  - {op: input, shape: [batch, input]}\n"
                     "  - {op: dense, units: nodes, size: 3}\n"),
      ContainsSubstring("f.yaml:5: unknown key 'size' of dense: "
                        "expected input, inputs, units, bias, as, into or if"));
  // A layer reads only layers above it: no cycles.
  CHECK_THAT(ErrorOf(head + "graph:\n  - {op: input, shape: [batch, input]}\n"
                            "  - {op: add, inputs: [., later]}\n"
                            "  - {op: relu, as: later}\n"),
             ContainsSubstring("f.yaml:5: 'later' names no layer before this "
                               "one: a layer reads only layers above it (no "
                               "cycles)"));
  // Found when a model is built, with the layer's line and the shapes.
  CHECK_THAT(ErrorOf(head + "graph:\n  - {op: input, shape: [batch, input]}\n"
                            "  - {op: dense, units: nodes, as: a}\n"
                            "  - {op: dense, units: output * 2}\n"
                            "  - {op: add, inputs: [., a]}\n"
                            "  - {op: softmax_xent}\n"),
             ContainsSubstring("f.yaml:7: add: add of unequal shapes (inputs "
                               "[8, 16] [8, 8])"));
  CHECK_THAT(ErrorOf(head + "graph:\n  - {op: input, shape: [batch, input]}\n"
                            "  - {op: dense, units: nodes - output}\n"
                            "  - {op: softmax_xent}\n"),
             ContainsSubstring("f.yaml:5: units = nodes - output is 0 for this "
                               "model: expected a positive integer"));
  CHECK_THAT(ErrorOf(head + "graph:\n  - {op: input, shape: [batch, input]}\n"
                            "  - {op: conv2d, channels: 4, kernel: 3}\n"),
             ContainsSubstring("f.yaml:5: conv2d: windowed layer needs NCHW "
                               "input (inputs [8, 8])"));
  CHECK_THAT(ErrorOf(head + "graph:\n  - {op: input, shape: [batch, input]}\n"
                            "  - {op: dense, units: output}\n"),
             ContainsSubstring("a family that trains ends with softmax_xent"));
  CHECK_THAT(ErrorOf("family: fc\nparams: [a]\ngraph: []\n"),
             ContainsSubstring("f.yaml:1: 'fc' is not a valid family: expected "
                               "capitals"));
  CHECK_THAT(ErrorOf("family: X\nparams: [a]\ngraph:\n  - [1, 2]\n"),
             ContainsSubstring("f.yaml:4: [1, 2] is not a layer"));
  CHECK_THAT(ErrorOf("family: X\nparams: [a\n"),
             ContainsSubstring("f.yaml:3: invalid YAML"));
  // Lists of layers (into) are read by concat only.
  CHECK_THAT(ErrorOf(head + "graph:\n  - {op: input, shape: [batch, input]}\n"
                            "  - {op: dense, units: nodes, into: parts}\n"
                            "  - {op: relu, inputs: [parts]}\n"),
             ContainsSubstring("f.yaml:6: 'parts' is a list of layers (into): "
                               "relu reads layers, only concat lists"));
  CHECK_THAT(ErrorOf(head + "graph:\n  - {op: input, shape: [batch, input]}\n"
                            "  - {op: concat}\n"),
             ContainsSubstring("f.yaml:5: concat reads layers and lists of "
                               "them: expected 'inputs: [...]'"));
  CHECK_THAT(ErrorOf(head + "graph:\n  - {op: input, shape: [batch, input]}\n"
                            "  - {op: dense, units: nodes, as: a}\n"
                            "  - {op: dense, units: output * 2}\n"
                            "  - {op: cross, inputs: [a, .]}\n"),
             ContainsSubstring("f.yaml:7: cross: a cross layer of unequal "
                               "shapes (inputs [8, 8] [8, 16])"));
  // A built-in's name is taken.
  CHECK_THROWS_WITH(
      RegisterFamily(ParseFamily(head + "graph:\n  - {op: "
                                        "input, shape: [batch, input]}\n",
                                 "mine.yaml")),
      "mine.yaml: family 'FC' is declared already in "
      "families/fc.yaml: expected a name of its own");
}

}  // namespace
}  // namespace paradnn
