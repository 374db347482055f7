// The oneDNN backend against the LibTorch backend: the same graph and the
// same deterministic weights must give the same numbers.
#include <oneapi/dnnl/dnnl_version.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "backends/onednn/onednn_backend.h"
#include "backends/onednn/padded_reorder.h"
#include "backends/torch/torch_backend.h"
#include "bricks/bricks.h"
#include "generators/declared.h"
#include "generators/init.h"
#include "generators/sweep.h"
#include "tests/backends/values.h"
#include "tests/busy_threads.h"
#include "tests/catch.h"
#include "tests/cpu_isa.h"
#include "tests/generators/fused_graph.h"

namespace paradnn {
namespace {

std::vector<Case> Cases(const std::string& config, DType dtype) {
  std::vector<Case> cases =
      LoadSweep(std::string(PARADNN_SOURCE_DIR) + "/configs/" + config,
                {"torch"})
          .cases;
  for (Case& c : cases) c.dtype = dtype;
  return cases;
}

std::unique_ptr<Runner> Prepare(const Backend& b, Case c, const Graph& g) {
  c.backend = b.name();
  RunOptions opt;
  opt.threads = 2;
  opt.seed = 11;
  opt.warmup = 0;
  return b.Prepare({g, c.dtype, c.mode}, opt);
}

using test::RelativeError;

// fp32: the backends sum in different orders, nothing more. Updates carry
// the rounding of a whole backward pass, amplified by batch norm over few
// values in the small test models.
constexpr double kFp32Tolerance = 1e-4;
constexpr double kUpdateTolerance = 2e-3;

// After one step of both: every parameter's SGD update agrees. The updates
// themselves are compared: they are small next to the weights, so a wrong
// gradient cannot hide behind the weights' scale.
void CheckUpdates(Runner& a, Runner& b, const Graph& g) {
  const int n = static_cast<int>(g.Params().size());
  for (int p = 0; p < n; ++p) {
    INFO("parameter " << p << " (" << g.Params()[p].role << " of layer "
                      << g.Params()[p].layer << ")");
    const std::vector<float> start = InitParam(g, 11, p);
    std::vector<float> da = a.Param(p), db = b.Param(p);
    float weights = 0, updates = 0;
    for (size_t k = 0; k < start.size(); ++k) {
      da[k] -= start[k];
      db[k] -= start[k];
      weights = std::max(weights, std::abs(start[k]));
      updates = std::max({updates, std::abs(da[k]), std::abs(db[k])});
    }
    // A gradient that vanishes leaves both updates at rounding noise, far
    // under the weights' own rounding: a convolution before batch norm in
    // a brick, whose mean loss hands every output the same gradient, which
    // batch norm's backward cancels exactly (1e-11 next to weights of 0.1).
    if (updates < 1e-6f * weights) continue;
    CHECK(RelativeError(da, db) < kUpdateTolerance);
  }
}

struct Stepped {
  std::unique_ptr<Runner> onednn, torch;
};

// One step of the case's graph on both backends: the same outputs and loss,
// and in training the same update of every parameter.
Stepped StepBoth(const Backend& onednn, const Backend& torch, const Case& c,
                 const Graph& g) {
  Stepped s{Prepare(onednn, c, g), Prepare(torch, c, g)};
  s.onednn->Step();
  s.torch->Step();
  CHECK(RelativeError(s.onednn->Output(), s.torch->Output()) < kFp32Tolerance);
  CHECK(s.onednn->Loss() == Approx(s.torch->Loss()).epsilon(kFp32Tolerance));
  if (c.mode == Mode::kTrain) CheckUpdates(*s.onednn, *s.torch, g);
  return s;
}

// A graph built by hand, stepped on both backends in training and in
// inference (StepBoth), as an fp32 case.
void StepBothModes(const Backend& onednn, const Backend& torch,
                   const Graph& g) {
  for (Mode mode : {Mode::kTrain, Mode::kInfer}) {
    Case c = ParseCaseName(
        "FC/layers:1/nodes:1/input:1/output:1/batch:1/torch/fp32/train");
    c.mode = mode;
    INFO(ToString(mode));
    StepBoth(onednn, torch, c, g);
  }
}

TEST_CASE("the table of built-in backends says what oneDNN's says",
          "[onednn][bricks]") {
  // Bricks are made before any module loads, from the table.
  CHECK_FALSE(ActivationsJoinProducer("onednn"));
  CHECK_FALSE(MakeOnednnBackend()->ActivationsJoinProducer());
}

TEST_CASE("the table of built-in backends says which fuse inference",
          "[onednn][fusion]") {
  CHECK(InferenceFusion("onednn") == Fusion::kFull);
  CHECK(MakeOnednnBackend()->InferenceFusion() == Fusion::kFull);
}

// Inference fused (generators/fusion.h): each group one primitive, batch
// norms with a trained model's statistics folded in, sums in place and
// into copies; the same logits as every layer on its own and as LibTorch.
TEST_CASE("oneDNN's fused inference: LibTorch's logits, fewer primitives",
          "[onednn][fusion]") {
  auto torch = MakeTorchBackend(false);
  auto onednn = MakeOnednnBackend();
  const test::FusedGraph f = test::MakeFusedGraph();
  for (DType dtype : {DType::kFp32, DType::kBf16}) {
    if (dtype == DType::kBf16 && !test::HasAvx512Core()) continue;
    INFO(ToString(dtype));
    const Job job{f.g, dtype, Mode::kInfer};
    RunOptions opt;
    opt.threads = 2;
    opt.seed = 5;
    auto fused = onednn->Prepare(job, opt);
    opt.fuse = false;
    auto plain = onednn->Prepare(job, opt);
    fused->Step();
    plain->Step();
    const double tolerance = dtype == DType::kFp32 ? kFp32Tolerance : 2e-2;
    CHECK(RelativeError(fused->Output(), plain->Output()) < tolerance);
    if (dtype == DType::kFp32) {
      auto reference = torch->Prepare(job, opt);
      reference->Step();
      CHECK(RelativeError(fused->Output(), reference->Output()) <
            kFp32Tolerance);
      CHECK(fused->Loss() == Approx(reference->Loss()).epsilon(1e-5));
      // LibTorch's own fast path: batch norms folded, channels-last.
      opt.fuse = true;
      auto folded = torch->Prepare(job, opt);
      folded->Step();
      CHECK(RelativeError(folded->Output(), reference->Output()) <
            kFp32Tolerance);
      CHECK(folded->Param(1) == *f.g.layer(f.bn1).values[0]);
      opt.fuse = false;
    }
    // Each layer's kernels: a fused group runs no eltwise, batch norm or
    // binary primitive of its own, and its anchor's primitive carries it.
    auto kinds = [](Runner& r) {
      std::multiset<std::string> out;
      const StepProfile profile = r.Profile(1);
      for (const auto& [layer, lp] : profile.layers()) {
        for (const auto& [name, s] : lp.kernels) {
          out.insert(name.substr(0, name.find(" (")));
        }
      }
      return out;
    };
    const std::multiset<std::string> with = kinds(*fused),
                                     without = kinds(*plain);
    CHECK(with.count("eltwise forward") == 0);
    // The batch norm without a convolution before it, its ReLU inside.
    CHECK(with.count("batch_normalization forward") == 1);
    // The one sum of two sums (add7), no product's.
    CHECK(with.count("binary forward") == 1);
    CHECK(without.count("eltwise forward") == 7);
    CHECK(without.count("batch_normalization forward") == 3);
    CHECK(without.count("binary forward") == 5);
    // Two shortcuts are copied, not overwritten: relu1, which conv2 reads
    // as it sums it, and add5, which add7 reads after conv6 summed it.
    CHECK(with.count("reorder forward") ==
          without.count("reorder forward") + 2);
    // Inference never changes a parameter: the batch norm's are the
    // file's, folded or not.
    const int scale = 1;  // bn1's weight: after conv1's
    REQUIRE(f.g.Params()[scale].layer == f.bn1);
    CHECK(fused->Param(scale) == *f.g.layer(f.bn1).values[0]);
  }
}

// The element copy that stands in for oneDNN's reorders of padded layouts
// where those are wrong, against the layouts' offsets written out by hand:
// AB16b32a (16 columns by 32 rows a block, rows innermost) and nChw16c.
TEST_CASE(
    "element copies into padded layouts: their offsets and zeros and bf16",
    "[onednn]") {
  using dnnl::memory;
  using Tag = memory::format_tag;
  using Dt = memory::data_type;
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  auto filled = [&](const memory::desc& md, float value) {
    memory m(md, engine);
    float* p = static_cast<float*>(m.get_data_handle());
    std::fill(p, p + md.get_size() / sizeof(float), value);
    return m;
  };
  SECTION("a matrix into blocks, its padding zeroed, and back") {
    const int64_t rows = 5, cols = 3;
    std::vector<float> values(rows * cols);
    for (size_t i = 0; i < values.size(); ++i) values[i] = i + 1.f;
    memory plain({{rows, cols}, Dt::f32, Tag::ab}, engine, values.data());
    memory blocked = filled({{rows, cols}, Dt::f32, Tag::AB16b32a}, 7.f);
    onednn::CopyElements(plain, blocked, false, 1.f);
    const float* b = static_cast<const float*>(blocked.get_data_handle());
    std::vector<float> want(16 * 32, 0.f);
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < cols; ++c) want[c * 32 + r] = values[r * cols + c];
    }
    CHECK(std::vector<float>(b, b + want.size()) == want);
    CHECK(onednn::Padded(blocked.get_desc()));
    CHECK(!onednn::Padded(plain.get_desc()));
    memory back = filled(plain.get_desc(), 0.f);
    onednn::CopyElements(blocked, back, false, 1.f);
    const float* r = static_cast<const float*>(back.get_data_handle());
    CHECK(std::vector<float>(r, r + values.size()) == values);
  }
  SECTION("images into 16-channel blocks, scaled and added") {
    const int64_t n = 2, c = 3, h = 2, w = 2;
    std::vector<float> values(n * c * h * w);
    for (size_t i = 0; i < values.size(); ++i) values[i] = i + 1.f;
    memory plain({{n, c, h, w}, Dt::f32, Tag::nchw}, engine, values.data());
    memory blocked = filled({{n, c, h, w}, Dt::f32, Tag::nChw16c}, 0.f);
    onednn::CopyElements(plain, blocked, false, 1.f);
    onednn::CopyElements(plain, blocked, true, -0.25f);
    const float* b = static_cast<const float*>(blocked.get_data_handle());
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t k = 0; k < c; ++k) {
        for (int64_t y = 0; y < h * w; ++y) {
          INFO(i << " " << k << " " << y);
          CHECK(b[(i * h * w + y) * 16 + k] ==
                0.75f * values[(i * c + k) * h * w + y]);
        }
      }
    }
  }
  SECTION("f32 to bf16 rounds to nearest, ties to even") {
    // 1 + 2^-8 lies halfway between bf16's 1 and 1 + 2^-7 (odd): to 1;
    // 1 + 3 * 2^-8 halfway between 1 + 2^-7 and 1 + 2^-6 (even): up.
    std::vector<float> values = {1.f + 0x1p-8f, 1.f + 0x3p-8f, -2.5f};
    memory plain({{3, 1}, Dt::f32, Tag::ab}, engine, values.data());
    memory half({{3, 1}, Dt::bf16, Tag::AB16b32a}, engine);
    onednn::CopyElements(plain, half, false, 1.f);
    memory back = filled(plain.get_desc(), 0.f);
    onednn::CopyElements(half, back, false, 1.f);
    const float* r = static_cast<const float*>(back.get_data_handle());
    CHECK(r[0] == 1.f);
    CHECK(r[1] == 1.f + 0x1p-6f);
    CHECK(r[2] == -2.5f);
  }
}

// The comparisons below hold only if a NaN or an infinity fails them.
TEST_CASE("a relative error with a NaN or an infinity fails every bound",
          "[values]") {
  CHECK(std::isinf(RelativeError({NAN, 1.f}, {1.f, 1.f})));
  CHECK(std::isinf(RelativeError({1.f, 1.f}, {1.f, INFINITY})));
  CHECK(std::isinf(RelativeError({1.f}, {1.f, 2.f})));
  // |2 - 2.5| over the largest |b|, 2.5.
  CHECK(RelativeError({1.f, 2.f}, {1.f, 2.5f}) == Approx(0.2));
}

TEST_CASE("oneDNN matches LibTorch in fp32: outputs, loss, updated weights",
          "[onednn]") {
  auto torch = MakeTorchBackend(false);
  auto onednn = MakeOnednnBackend();
  std::vector<Case> cases = Cases("smoke.yaml", DType::kFp32);
  // Deeper stacks and a second block per group: identity shortcuts too.
  cases.push_back(ParseCaseName(
      "CNN/block:residual/blocks:2/filters:8/image:40/output:7/batch:3/torch/"
      "fp32/train"));
  cases.push_back(ParseCaseName(
      "RNN/cell:gru/layers:3/embed:24/vocab:50/length:6/batch:5/torch/fp32/"
      "train"));
  // A family declared only in YAML, as a user declares one.
  LoadFamilyFile(std::string(PARADNN_SOURCE_DIR) +
                 "/tests/data/families/patch_encoder.yaml");
  for (const char* mode : {"train", "infer"}) {
    cases.push_back(ParseCaseName(
        std::string("PATCH_ENCODER/layers:2/d_model:32/heads:4/mlp_ratio:4/"
                    "patch:4/patches:16/classes:10/batch:2/torch/fp32/") +
        mode));
  }
  for (const Case& c : cases) {
    INFO(c.Name());
    Graph g = c.model.BuildGraph();
    Stepped s = StepBoth(*onednn, *torch, c, g);
    if (c.mode != Mode::kTrain) continue;
    // A second step starts from the updated weights: their rounding
    // differences pass through batch norm over as few as 2 values here.
    s.onednn->Step();
    s.torch->Step();
    CHECK(s.onednn->Loss() == Approx(s.torch->Loss()).epsilon(5e-3));
  }
}

// No family has these: a full-rank cross layer whose x0 is its x, and a
// join that reads one layer twice.
TEST_CASE(
    "oneDNN matches LibTorch in fp32: full-rank cross, a join of one "
    "layer twice",
    "[onednn]") {
  auto torch = MakeTorchBackend(false);
  auto onednn = MakeOnednnBackend();
  Graph g;
  const int x = g.Dense(g.Input({6, 5}), 7);
  const int joined = g.Concat({x, g.ReLU(x), x});
  const int crossed = g.Cross(joined, joined, 0);
  g.SoftmaxCrossEntropy(g.Dense(crossed, 4));
  CHECK(g.layer(joined).shape == Shape{6, 21});
  StepBothModes(*onednn, *torch, g);
}

// The layers of mobile and densely connected CNNs, each where its
// backward has work to do: a grouped and a depthwise convolution with
// biases, a squeeze-and-excitation (a per-channel product whose factors
// come from the same maps), every activation, average pools with and
// without padding, a maximum in ceil mode, a concat of channels (one input
// twice, channel counts that split oneDNN's blocks of 16), a flatten of
// feature maps.
TEST_CASE(
    "oneDNN matches LibTorch in fp32: the layers of mobile and dense CNNs",
    "[onednn]") {
  auto torch = MakeTorchBackend(false);
  auto onednn = MakeOnednnBackend();
  Graph g;
  const int image = g.Input({3, 6, 9, 9});
  const int grouped = g.Relu6(g.Conv2d(image, 12, 3, 1, 1, 3, true));
  const int depthwise = g.Silu(g.Conv2d(grouped, 12, 3, 2, 1, 12, true));
  const int squeezed = g.Dense(g.GlobalAvgPool(depthwise), 4);
  const int excited =
      g.HardSigmoid(g.Sigmoid(g.Dense(g.HardSwish(squeezed), 12)));
  const int scaled = g.ChannelMul(depthwise, excited);
  const int joined =
      g.Concat({scaled, g.Conv2d(scaled, 5, 1, 1, 0), scaled}, 1);
  // A ceil-mode maximum's last window hangs past the 5x5 maps: 3x3 (2x2
  // rounded down).
  const int ceiled = g.MaxPool(g.AvgPool(joined, 3, 1, 1), 2, 2, 0, true);
  const int pooled = g.AvgPool(ceiled, 2, 1, 0);
  g.SoftmaxCrossEntropy(g.Dense(g.Flatten(pooled), 7));
  CHECK(g.layer(joined).shape == Shape{3, 29, 5, 5});
  CHECK(g.layer(ceiled).shape == Shape{3, 29, 3, 3});
  CHECK(g.layer(pooled).shape == Shape{3, 29, 2, 2});
  StepBothModes(*onednn, *torch, g);
}

// An inference step of `g` on both backends gives `want`, worked out by
// hand: exactly, or within `tolerance` (relative) where the backends sum
// in another order.
void CheckOutputs(const Backend& torch, const Backend& onednn, const Graph& g,
                  const std::vector<float>& want, double tolerance = 0) {
  Case c = ParseCaseName(
      "FC/layers:1/nodes:1/input:1/output:1/batch:1/torch/fp32/infer");
  for (const Backend* b : {&torch, &onednn}) {
    INFO(b->name());
    auto r = Prepare(*b, c, g);
    r->Step();
    if (tolerance == 0) {
      CHECK(r->Output() == want);
    } else {
      CHECK(RelativeError(r->Output(), want) < tolerance);
    }
  }
}

// ShuffleNet's channel shuffle, its permutation written out: of 6
// channels in 3 groups (3 rows of 2), output channel 3i + j is input
// channel 2j + i; and where backward passes its gradient back, in
// 16-channel blocks behind a convolution.
TEST_CASE("a channel shuffle moves channels as torchvision's, on both backends",
          "[onednn]") {
  auto torch = MakeTorchBackend(false);
  auto onednn = MakeOnednnBackend();
  Graph small;
  const int maps = small.Input({2, 6, 1, 2});
  small.SoftmaxCrossEntropy(small.Flatten(small.ChannelShuffle(maps, 3)));
  const std::vector<float> x = InitInput(small, 11, maps);
  std::vector<float> want(x.size());
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t c = 0; c < 6; ++c) {
      const int64_t from = c % 3 * 2 + c / 3;  // i = c / 3, j = c % 3
      for (int64_t p = 0; p < 2; ++p) {
        want[(n * 6 + c) * 2 + p] = x[(n * 6 + from) * 2 + p];
      }
    }
  }
  CheckOutputs(*torch, *onednn, small, want);
  Graph g;
  const int conv = g.Conv2d(g.Input({2, 4, 5, 5}), 32, 3, 1, 1);
  const int shuffled = g.ChannelShuffle(g.ReLU(conv), 2);
  g.SoftmaxCrossEntropy(
      g.Dense(g.GlobalAvgPool(g.Conv2d(shuffled, 8, 1, 1, 0)), 3));
  StepBothModes(*onednn, *torch, g);
}

// A slice of channels, its values written out: channels 2 to 4 of 6; and
// ShuffleNet's split behind a convolution in 16-channel blocks, the halves
// starting inside a block, both read (their gradients summed into the
// convolution's), one through a convolution and joined again.
TEST_CASE(
    "a slice takes a range of channels as torch.chunk's, on both backends",
    "[onednn]") {
  auto torch = MakeTorchBackend(false);
  auto onednn = MakeOnednnBackend();
  Graph small;
  const int maps = small.Input({2, 6, 1, 2});
  small.SoftmaxCrossEntropy(small.Flatten(small.Slice(maps, 1, 2, 3)));
  const std::vector<float> x = InitInput(small, 11, maps);
  std::vector<float> want;
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t c = 2; c < 5; ++c) {
      for (int64_t p = 0; p < 2; ++p) want.push_back(x[(n * 6 + c) * 2 + p]);
    }
  }
  CheckOutputs(*torch, *onednn, small, want);
  Graph g;
  const int conv = g.ReLU(g.Conv2d(g.Input({2, 4, 5, 5}), 48, 3, 1, 1));
  const int first = g.Slice(conv, 1, 0, 24);
  const int second = g.ReLU(g.Conv2d(g.Slice(conv, 1, 24, 24), 24, 1, 1, 0));
  const int joined = g.ChannelShuffle(g.Concat({first, second}, 1), 2);
  g.SoftmaxCrossEntropy(g.Dense(g.GlobalAvgPool(joined), 3));
  StepBothModes(*onednn, *torch, g);
}

// ConvNeXt's layers: a layer norm over each position's channels, its
// values written out (a fresh model's scale 1 and shift 0), and a layer
// scale by factors a file gives; then a block of them behind a depthwise
// convolution, with 48 channels (oneDNN's blocks of 16) and 40 (of 8),
// and ConvNeXt's head, stepped on both backends.
TEST_CASE("a layer norm over channels and a layer scale, as ConvNeXt's",
          "[onednn]") {
  auto torch = MakeTorchBackend(false);
  auto onednn = MakeOnednnBackend();
  constexpr int64_t kN = 2, kC = 5, kP = 6;  // P: positions, 3 x 2
  constexpr double kEps = 1e-6;
  Graph norm;
  const int maps = norm.Input({kN, kC, 3, 2});
  norm.SoftmaxCrossEntropy(norm.Flatten(norm.LayerNorm(maps, kEps, 1)));
  const std::vector<float> x = InitInput(norm, 11, maps);
  std::vector<float> want(x.size());
  for (int64_t n = 0; n < kN; ++n) {
    for (int64_t p = 0; p < kP; ++p) {
      double mean = 0, square = 0;
      for (int64_t c = 0; c < kC; ++c) mean += x[(n * kC + c) * kP + p];
      mean /= kC;
      for (int64_t c = 0; c < kC; ++c) {
        square += std::pow(x[(n * kC + c) * kP + p] - mean, 2);
      }
      const double deviation = std::sqrt(square / kC + kEps);
      for (int64_t c = 0; c < kC; ++c) {
        const int64_t k = (n * kC + c) * kP + p;
        want[k] = static_cast<float>((x[k] - mean) / deviation);
      }
    }
  }
  Case c = ParseCaseName(
      "FC/layers:1/nodes:1/input:1/output:1/batch:1/torch/fp32/infer");
  for (const Backend* b : {torch.get(), onednn.get()}) {
    INFO(b->name());
    auto r = Prepare(*b, c, norm);
    r->Step();
    CHECK(RelativeError(r->Output(), want) < kFp32Tolerance);
  }
  Graph scaled;
  const int in = scaled.Input({kN, kC, 3, 2});
  const int scale = scaled.LayerScale(in);
  const std::vector<float> factors = {0.5f, -2.f, 3.f, 1e-6f, 0.f};
  scaled.SetValues(scale,
                   {std::make_shared<const std::vector<float>>(factors)});
  scaled.SoftmaxCrossEntropy(scaled.Flatten(scale));
  const std::vector<float> y = InitInput(scaled, 11, in);
  std::vector<float> times(y.size());
  for (size_t k = 0; k < y.size(); ++k) {
    times[k] = y[k] * factors[k / kP % kC];
  }
  CheckOutputs(*torch, *onednn, scaled, times);
  for (int64_t channels : {48, 40}) {
    INFO(channels << " channels");
    Graph g;
    const int stem =
        g.Conv2d(g.Input({2, 3, 9, 9}), channels, 3, 1, 1, 1, true);
    const int deep = g.Conv2d(stem, channels, 7, 1, 3, channels, true);
    const int wide = g.Gelu(
        g.Conv2d(g.LayerNorm(deep, kEps, 1), 4 * channels, 1, 1, 0, 1, true));
    const int block = g.LayerScale(g.Conv2d(wide, channels, 1, 1, 0, 1, true));
    const int out = g.LayerNorm(g.Add(block, stem), kEps, 1);
    // The head's norm of the pooled [N, C] (oneDNN's pool writes
    // [N, C, 1, 1]).
    g.SoftmaxCrossEntropy(g.Dense(g.LayerNorm(g.GlobalAvgPool(out), kEps), 5));
    StepBothModes(*onednn, *torch, g);
  }
}

// Inception v3's layers: an average pool counting its padding as zeros,
// its values written out (a 2x2 image padded by 1: every 3x3 window holds
// all four values, their sum / 9, where leaving the padding out gives the
// sum / 4); a 1x3 convolution of ones, each output the sum of its row's
// value and its two neighbours; then 1x7 and 7x1 convolutions, each padded
// across its long axis only, behind and before pools that count their padding,
// stepped on both backends.
TEST_CASE("non-square kernels and averages counting padding, as Inception's",
          "[onednn]") {
  auto torch = MakeTorchBackend(false);
  auto onednn = MakeOnednnBackend();
  Graph pool;
  const int four = pool.Input({1, 1, 2, 2});
  pool.SoftmaxCrossEntropy(pool.Flatten(pool.AvgPool(four, 3, 1, 1, true)));
  const std::vector<float> x = InitInput(pool, 11, four);
  const float sum = x[0] + x[1] + x[2] + x[3];
  CheckOutputs(*torch, *onednn, pool, std::vector<float>(4, sum / 9),
               kFp32Tolerance);
  Graph row;
  const int image = row.Input({1, 1, 2, 4});
  const int conv = row.Conv2d(image, 1, {1, 3}, 1, {0, 1});
  CHECK(row.layer(conv).shape == Shape{1, 1, 2, 4});
  row.SetValues(conv, {std::make_shared<const std::vector<float>>(3, 1.f)});
  row.SoftmaxCrossEntropy(row.Flatten(conv));
  const std::vector<float> y = InitInput(row, 11, image);
  std::vector<float> sums(8);
  for (int k = 0; k < 8; ++k) {
    const int c = k % 4;
    sums[k] = y[k] + (c > 0 ? y[k - 1] : 0.f) + (c < 3 ? y[k + 1] : 0.f);
  }
  CheckOutputs(*torch, *onednn, row, sums, kFp32Tolerance);
  Graph g;
  const int stem = g.ReLU(g.Conv2d(g.Input({2, 5, 9, 9}), 24, 3, 1, 1));
  const int wide = g.ReLU(g.Conv2d(stem, 20, {1, 7}, 1, {0, 3}, 1, true));
  const int tall = g.ReLU(g.Conv2d(wide, 16, {7, 1}, 2, {3, 0}));
  const int pooled = g.AvgPool(stem, 3, 2, 1, true);
  const int joined = g.Concat({tall, pooled}, 1);
  CHECK(g.layer(joined).shape == Shape{2, 40, 5, 5});
  g.SoftmaxCrossEntropy(g.Dense(g.GlobalAvgPool(joined), 3));
  StepBothModes(*onednn, *torch, g);
}

// DeepLab's atrous convolutions: a 3x3 of ones with its taps 2 apart over a
// 5x5 image, unpadded, reads the image's corners, the middles of its edges
// and its centre: one output, their sum; then dilations 2 and 3 padded to
// keep the maps' size, depthwise and not, stepped on both backends.
TEST_CASE("a dilated convolution reads taps that far apart, on both backends",
          "[onednn]") {
  auto torch = MakeTorchBackend(false);
  auto onednn = MakeOnednnBackend();
  Graph one;
  const int image = one.Input({1, 1, 5, 5});
  const int conv = one.Conv2d(image, 1, 3, 1, 0, 1, false, 2);
  CHECK(one.layer(conv).shape == Shape{1, 1, 1, 1});
  one.SetValues(conv, {std::make_shared<const std::vector<float>>(9, 1.f)});
  one.SoftmaxCrossEntropy(one.Flatten(conv));
  const std::vector<float> x = InitInput(one, 11, image);
  float sum = 0;
  for (int r : {0, 2, 4}) {
    for (int c : {0, 2, 4}) sum += x[r * 5 + c];
  }
  CheckOutputs(*torch, *onednn, one, {sum}, kFp32Tolerance);
  Graph g;
  const int stem = g.ReLU(g.Conv2d(g.Input({2, 4, 11, 11}), 24, 3, 2, 1));
  const int atrous = g.ReLU(g.Conv2d(stem, 24, 3, 1, 2, 24, true, 2));
  const int wide = g.ReLU(g.Conv2d(atrous, 16, 3, 1, 3, 1, false, 3));
  CHECK(g.layer(wide).shape == Shape{2, 16, 6, 6});
  g.SoftmaxCrossEntropy(g.Dense(g.GlobalAvgPool(wide), 3));
  StepBothModes(*onednn, *torch, g);
}

// Segmentation's bilinear resize, its values written out: 2x2 maps to 4x4
// with half-pixel centres (PyTorch's align_corners=False), each output
// axis reading its inputs with weights 1, 3/4 and 1/4, 1/4 and 3/4, 1 (the
// outer ones clamped to the edge); a global pool's [N, C] spread over 2x2.
// Then both stepped behind convolutions, upsampled maps added to others.
TEST_CASE("a bilinear resize weighs its nearest inputs, on both backends",
          "[onednn]") {
  auto torch = MakeTorchBackend(false);
  auto onednn = MakeOnednnBackend();
  Graph up;
  const int maps = up.Input({1, 2, 2, 2});
  up.SoftmaxCrossEntropy(up.Flatten(up.Resize(maps, 4, 4)));
  const std::vector<float> x = InitInput(up, 11, maps);
  const double w[4][2] = {{1, 0}, {0.75, 0.25}, {0.25, 0.75}, {0, 1}};
  std::vector<float> want;
  for (int c = 0; c < 2; ++c) {
    for (int r = 0; r < 4; ++r) {
      for (int k = 0; k < 4; ++k) {
        double v = 0;
        for (int i = 0; i < 2; ++i) {
          for (int j = 0; j < 2; ++j)
            v += w[r][i] * w[k][j] * x[c * 4 + i * 2 + j];
        }
        want.push_back(static_cast<float>(v));
      }
    }
  }
  CheckOutputs(*torch, *onednn, up, want, kFp32Tolerance);
  Graph spread;
  const int flat = spread.Input({1, 3});
  spread.SoftmaxCrossEntropy(spread.Flatten(spread.Resize(flat, 2, 2)));
  const std::vector<float> y = InitInput(spread, 11, flat);
  std::vector<float> spread_want;
  for (float v : y) spread_want.insert(spread_want.end(), 4, v);
  CheckOutputs(*torch, *onednn, spread, spread_want, kFp32Tolerance);
  Graph g;
  const int stem = g.ReLU(g.Conv2d(g.Input({2, 3, 12, 12}), 24, 3, 2, 1));
  const int deep = g.ReLU(g.Conv2d(stem, 24, 3, 2, 1, 1, false, 1));
  const int pooled = g.ReLU(g.Dense(g.GlobalAvgPool(deep), 24));
  const int sum = g.Add(g.Resize(deep, 6, 6), g.Resize(pooled, 6, 6));
  const int logits = g.Add(sum, stem);
  g.SoftmaxCrossEntropy(g.Dense(g.GlobalAvgPool(logits), 3));
  StepBothModes(*onednn, *torch, g);
}

// Segmentation's loss, a class per pixel: logits [2, 3, 2, 3] from a 1x1
// convolution without bias, the mean over 12 pixels of each pixel's
// softmax cross-entropy over the 3 channels, and one SGD step of the
// convolution's weights, computed here in double from the initial weights,
// the input and the labels ([N, H, W]).
TEST_CASE("a class per pixel: the loss and its step by hand, on both backends",
          "[onednn]") {
  auto torch = MakeTorchBackend(false);
  auto onednn = MakeOnednnBackend();
  Graph g;
  const int image = g.Input({2, 2, 2, 3});
  const int logits = g.Conv2d(image, 3, 1, 1, 0);
  g.SoftmaxCrossEntropy(logits, 1);
  CHECK(g.class_axis() == 1);
  const std::vector<float> x = InitInput(g, 11, image);
  const std::vector<float> w = InitParam(g, 11, 0);  // [3, 2, 1, 1]
  const std::vector<int64_t> y = InitLabels(g, 11);
  REQUIRE(y.size() == 12);
  double z[2][3][6], loss = 0, dw[3][2] = {};
  for (int n = 0; n < 2; ++n) {
    for (int p = 0; p < 6; ++p) {
      double top = -INFINITY, sum = 0;
      for (int o = 0; o < 3; ++o) {
        z[n][o][p] = 0;
        for (int i = 0; i < 2; ++i) {
          z[n][o][p] += w[o * 2 + i] * x[(n * 2 + i) * 6 + p];
        }
        top = std::max(top, z[n][o][p]);
      }
      for (int o = 0; o < 3; ++o) sum += std::exp(z[n][o][p] - top);
      const int64_t label = y[n * 6 + p];
      loss += (std::log(sum) + top - z[n][label][p]) / 12;
      for (int o = 0; o < 3; ++o) {
        const double dz =
            (std::exp(z[n][o][p] - top) / sum - (o == label ? 1 : 0)) / 12;
        for (int i = 0; i < 2; ++i) dw[o][i] += dz * x[(n * 2 + i) * 6 + p];
      }
    }
  }
  for (const Backend* b : {torch.get(), onednn.get()}) {
    INFO(b->name());
    RunOptions opt;
    opt.threads = 2;
    opt.seed = 11;
    opt.warmup = 0;
    auto r = b->Prepare({g, DType::kFp32, Mode::kTrain}, opt);
    r->Step();
    const std::vector<float> out = r->Output();
    REQUIRE(out.size() == 36);
    for (int n = 0; n < 2; ++n) {
      for (int o = 0; o < 3; ++o) {
        for (int p = 0; p < 6; ++p) {
          CHECK(out[(n * 3 + o) * 6 + p] == Approx(z[n][o][p]).margin(1e-5));
        }
      }
    }
    CHECK(r->Loss() == Approx(loss).epsilon(1e-5));
    const std::vector<float> after = r->Param(0);
    for (int o = 0; o < 3; ++o) {
      for (int i = 0; i < 2; ++i) {
        CHECK(after[o * 2 + i] ==
              Approx(w[o * 2 + i] - kLearningRate * dw[o][i]).margin(1e-6));
      }
    }
  }
}

// A global pool averages every position of maps that are not square (its
// window their height by their width), and of a clip's frames too.
TEST_CASE("a global pool averages maps of any shape, on both backends",
          "[onednn]") {
  auto torch = MakeTorchBackend(false);
  auto onednn = MakeOnednnBackend();
  for (const Shape& in : {Shape{2, 3, 2, 5}, Shape{1, 2, 3, 2, 4}}) {
    INFO(ToString(in));
    Graph g;
    const int x = g.Input(in);
    g.SoftmaxCrossEntropy(g.GlobalAvgPool(x));
    const std::vector<float> v = InitInput(g, 11, x);
    const int64_t rows = in[0] * in[1], per = Elements(in) / rows;
    std::vector<float> means(rows);
    for (int64_t r = 0; r < rows; ++r) {
      double sum = 0;
      for (int64_t k = 0; k < per; ++k) sum += v[r * per + k];
      means[r] = static_cast<float>(sum / per);
    }
    CheckOutputs(*torch, *onednn, g, means, kFp32Tolerance);
  }
}

// Video's layers: a 3x3x3 convolution of ones over a 3x3x3 clip, padded by
// one, gives each voxel the sum of itself and its neighbours in the clip;
// a 1x3x3 kernel striding 1x2x2 keeps the frames and halves the pixels.
// Then a residual block of 3-D convolutions with batch norm over frames
// and pixels, a projection striding 2x2x2, a global pool, stepped on both
// backends.
TEST_CASE("a 3-D convolution sums a voxel's neighbours, on both backends",
          "[onednn]") {
  auto torch = MakeTorchBackend(false);
  auto onednn = MakeOnednnBackend();
  Graph cube;
  const int clip = cube.Input({1, 1, 3, 3, 3});
  const int conv = cube.Conv3d(clip, 1, {3, 3, 3}, {1, 1, 1}, {1, 1, 1});
  CHECK(cube.layer(conv).shape == Shape{1, 1, 3, 3, 3});
  cube.SetValues(conv, {std::make_shared<const std::vector<float>>(27, 1.f)});
  cube.SoftmaxCrossEntropy(cube.Flatten(conv));
  const std::vector<float> x = InitInput(cube, 11, clip);
  std::vector<float> sums;
  for (int d = 0; d < 3; ++d) {
    for (int h = 0; h < 3; ++h) {
      for (int w = 0; w < 3; ++w) {
        float sum = 0;
        for (int i = std::max(d - 1, 0); i <= std::min(d + 1, 2); ++i) {
          for (int j = std::max(h - 1, 0); j <= std::min(h + 1, 2); ++j) {
            for (int k = std::max(w - 1, 0); k <= std::min(w + 1, 2); ++k) {
              sum += x[(i * 3 + j) * 3 + k];
            }
          }
        }
        sums.push_back(sum);
      }
    }
  }
  CheckOutputs(*torch, *onednn, cube, sums, kFp32Tolerance);
  Graph g;
  const int video = g.Input({2, 3, 4, 9, 9});
  const int stem =
      g.ReLU(g.BatchNorm(g.Conv3d(video, 8, {1, 3, 3}, {1, 2, 2}, {0, 1, 1})));
  CHECK(g.layer(stem).shape == Shape{2, 8, 4, 5, 5});
  const int body = g.BatchNorm(g.Conv3d(
      g.ReLU(g.BatchNorm(g.Conv3d(stem, 16, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}))),
      16, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}));
  const int shortcut =
      g.BatchNorm(g.Conv3d(stem, 16, {1, 1, 1}, {2, 2, 2}, {0, 0, 0}));
  const int joined = g.ReLU(g.Add(body, shortcut));
  CHECK(g.layer(joined).shape == Shape{2, 16, 2, 3, 3});
  g.SoftmaxCrossEntropy(g.Dense(g.GlobalAvgPool(joined), 5));
  StepBothModes(*onednn, *torch, g);
}

// Speech's layers, by hand: an instance norm (each example's channel
// normalized over its positions, then the channel's scale and shift), and
// a weight-normed convolution (w = g v / |v|, |v| per tap over outputs and
// inputs, as torchaudio's positional convolution). Then Wav2Vec2's
// pattern at small sizes, stepped on both backends: 1-D convolutions over
// [N, C, 1, L], the sequence of their frames, back to maps for a grouped
// weight-normed convolution cut to the sequence's length, added to it.
TEST_CASE(
    "speech's layers: an instance norm and a weight norm, on both "
    "backends",
    "[onednn]") {
  auto torch = MakeTorchBackend(false);
  auto onednn = MakeOnednnBackend();
  {
    Graph g;
    const int x = g.Input({2, 3, 1, 4});
    const int norm = g.InstanceNorm(x);
    const std::vector<float> scale = {1.f, 2.f, -0.5f}, shift = {0.f, 1.f, 3.f};
    g.SetValues(norm, {std::make_shared<const std::vector<float>>(scale),
                       std::make_shared<const std::vector<float>>(shift)});
    g.SoftmaxCrossEntropy(g.Flatten(norm));
    const std::vector<float> in = InitInput(g, 11, x);
    std::vector<float> want;
    for (int n = 0; n < 2; ++n) {
      for (int c = 0; c < 3; ++c) {
        const float* row = &in[(n * 3 + c) * 4];
        double mean = 0, var = 0;
        for (int t = 0; t < 4; ++t) mean += row[t] / 4.0;
        for (int t = 0; t < 4; ++t)
          var += (row[t] - mean) * (row[t] - mean) / 4;
        for (int t = 0; t < 4; ++t) {
          want.push_back(static_cast<float>(
              (row[t] - mean) / std::sqrt(var + kNormEpsilon) * scale[c] +
              shift[c]));
        }
      }
    }
    CheckOutputs(*torch, *onednn, g, want, kFp32Tolerance);
  }
  {
    Graph g;
    const int x = g.Input({1, 1, 1, 5});
    const int conv = g.WeightNorm(g.Conv2d(x, 2, {1, 3}, 1, {0, 1}), 3);
    const std::vector<float> v = {3, 1, -2, 4, 2, 0}, magnitude = {2, 5, 1};
    g.SetValues(conv, {std::make_shared<const std::vector<float>>(v),
                       std::make_shared<const std::vector<float>>(magnitude)});
    g.SoftmaxCrossEntropy(g.Flatten(conv));
    const std::vector<float> in = InitInput(g, 11, x);
    // Tap k's weights, out 0 and 1: v[k] and v[3 + k] over their norm.
    double w[2][3];
    for (int k = 0; k < 3; ++k) {
      const double norm = std::hypot(v[k], v[3 + k]);
      for (int o = 0; o < 2; ++o) w[o][k] = v[o * 3 + k] / norm * magnitude[k];
    }
    std::vector<float> want;
    for (int o = 0; o < 2; ++o) {
      for (int t = 0; t < 5; ++t) {
        double sum = 0;
        for (int k = 0; k < 3; ++k) {
          if (t + k - 1 >= 0 && t + k - 1 < 5) sum += w[o][k] * in[t + k - 1];
        }
        want.push_back(static_cast<float>(sum));
      }
    }
    CheckOutputs(*torch, *onednn, g, want, kFp32Tolerance);
  }
  Graph g;
  const int wave = g.Input({2, 1, 1, 67});
  const int c1 =
      g.Gelu(g.InstanceNorm(g.Conv2d(wave, 8, {1, 6}, 3, 0, 1, false)));
  const int c2 = g.Gelu(g.Conv2d(c1, 8, {1, 3}, 2, 0, 1, false));
  CHECK(g.layer(c2).shape == Shape{2, 8, 1, 10});
  const int x = g.Dense(g.LayerNorm(g.Sequence(c2)), 12);
  const int maps = g.Maps(x, 1);
  CHECK(g.layer(maps).shape == Shape{2, 12, 1, 10});
  const int pos = g.WeightNorm(g.Conv2d(maps, 12, {1, 4}, 1, {0, 2}, 4), 3);
  const int cut = g.Gelu(g.Slice(pos, 3, 0, 10));
  const int y = g.LayerNorm(g.Add(x, g.Sequence(cut)));
  g.SoftmaxCrossEntropy(g.Dense(y, 5));
  StepBothModes(*onednn, *torch, g);
}

// A vision transformer's layers: patches of the image as a sequence (from
// maps in oneDNN's blocked format), the class token first, an encoder
// layer, the class token's output; its every layer with a gradient to pass.
TEST_CASE("oneDNN matches LibTorch in fp32: a vision transformer's layers",
          "[onednn]") {
  auto torch = MakeTorchBackend(false);
  auto onednn = MakeOnednnBackend();
  Graph g;
  const int image = g.Input({3, 3, 12, 8});
  const int patches = g.Sequence(g.Conv2d(image, 16, 4, 4, 0, 1, true));
  const int x = g.Positional(g.ClassToken(patches));
  const int n = g.LayerNorm(x);
  const int a = g.Dense(
      g.Attention(g.Dense(n, 16), g.Dense(n, 16), g.Dense(n, 16), 2, false),
      16);
  const int y = g.Add(a, x);
  const int out = g.Gelu(g.FirstToken(g.LayerNorm(y)));
  g.SoftmaxCrossEntropy(g.Dense(out, 5));
  CHECK(g.layer(patches).shape == Shape{6, 3, 16});
  CHECK(g.layer(x).shape == Shape{7, 3, 16});
  CHECK(g.layer(out).shape == Shape{3, 16});
  StepBothModes(*onednn, *torch, g);
}

TEST_CASE("oneDNN's decoder matches LibTorch's in fp32: prefill and decode",
          "[onednn][llm]") {
  // Multi-head, grouped-query and multi-query attention; a prompt shorter
  // and a cache longer than a vector's lanes, an odd batch.
  auto torch = MakeTorchBackend(false);
  auto onednn = MakeOnednnBackend();
  std::vector<Case> cases;
  for (const char* kv : {"8", "2", "1"}) {
    for (const char* phase : {"prefill", "decode"}) {
      cases.push_back(ParseCaseName(
          std::string("LLM/layers:2/d_model:64/heads:8/kv_heads:") + kv +
          "/ffn:176/vocab:97/context:19/batch:3/phase:" + phase +
          "/torch/fp32/infer"));
    }
  }
  // A prompt that oneDNN's attention takes in three chunks of positions,
  // in two layers: the logits read the last position only, but the first
  // layer's every chunk makes the keys and values the second reads. With
  // grouped-query (two heads a key/value head) and multi-head attention.
  for (const char* kv : {"2", "4"}) {
    cases.push_back(ParseCaseName(
        std::string("LLM/layers:2/d_model:32/heads:4/kv_heads:") + kv +
        "/ffn:64/vocab:50/context:300/batch:2/phase:prefill/torch/fp32/"
        "infer"));
  }
  for (const Case& c : cases) {
    INFO(c.Name());
    const Graph g = c.model.BuildGraph();
    auto a = Prepare(*onednn, c, g);
    auto b = Prepare(*torch, c, g);
    a->Step();
    b->Step();
    const std::vector<float> logits = a->Output();
    REQUIRE(logits.size() == Elements(g.layer(g.logits()).shape));
    CHECK(RelativeError(logits, b->Output()) < kFp32Tolerance);
    // Every step does the same work: the same logits after two.
    a->Step();
    CHECK(a->Output() == logits);
  }
}

TEST_CASE("bricks agree too: a layer on its own, its mean loss and update",
          "[onednn][bricks]") {
  auto torch = MakeTorchBackend(false);
  auto onednn = MakeOnednnBackend();
  for (const char* model :
       {"CNN/block:residual/blocks:1/filters:4/image:32/output:10/batch:2/"
        "torch/fp32/train",
        "TRANSFORMER/layers:1/d_model:16/heads:2/ffn:32/length:6/vocab:32/"
        "causal:true/batch:3/torch/fp32/train"}) {
    const Case c = ParseCaseName(model);
    for (const Brick& b : BricksOf(c.model.BuildGraph(), c.mode, 2)) {
      INFO((BrickCase{b, "onednn", c.dtype, c.mode}.Name()));
      const Graph g = b.BuildGraph(c.mode);
      auto a = Prepare(*onednn, c, g);
      auto t = Prepare(*torch, c, g);
      a->Step();
      t->Step();
      CHECK(RelativeError(a->Output(), t->Output()) < kFp32Tolerance);
      CHECK(a->Loss() ==
            Approx(t->Loss()).epsilon(kFp32Tolerance).margin(1e-6));
      CheckUpdates(*a, *t, g);
    }
  }
}

TEST_CASE("cooling the caches between steps changes no number",
          "[onednn][torch][bricks]") {
  // Runner::Cool() flushes every buffer a runner holds (the step
  // allocator's blocks, free or in use, on LibTorch) and reads the inputs
  // back: values must survive it, whatever it flushes.
  auto torch = MakeTorchBackend(false);
  auto onednn = MakeOnednnBackend();
  for (const Backend* backend : {torch.get(), onednn.get()}) {
    for (const Case& c : Cases("smoke.yaml", DType::kFp32)) {
      INFO(backend->name() << " " << c.Name());
      const Graph g = c.model.BuildGraph();
      auto cooled = Prepare(*backend, c, g);
      auto plain = Prepare(*backend, c, g);
      for (int i = 0; i < 2; ++i) {
        cooled->Cool();
        cooled->Step();
        plain->Step();
      }
      CHECK(RelativeError(cooled->Output(), plain->Output()) < 1e-6);
      CHECK(cooled->Loss() == Approx(plain->Loss()).epsilon(1e-6));
      for (int p = 0; p < static_cast<int>(g.Params().size()); ++p) {
        CHECK(RelativeError(cooled->Param(p), plain->Param(p)) < 1e-6);
      }
    }
  }
}

TEST_CASE("oneDNN matches LibTorch in bf16 within bf16's precision",
          "[onednn]") {
  auto torch = MakeTorchBackend(false);
  auto onednn = MakeOnednnBackend();
  // The smoke CNNs normalize 2 values per channel in their last group,
  // where bf16 rounding decides the sign: larger images and batches here.
  std::vector<Case> cases;
  for (const Case& c : Cases("smoke.yaml", DType::kBf16)) {
    if (c.model.family != "CNN") cases.push_back(c);
  }
  for (const char* phase : {"prefill", "decode"}) {
    cases.push_back(ParseCaseName(
        std::string("LLM/layers:2/d_model:64/heads:8/kv_heads:2/ffn:176/"
                    "vocab:97/context:19/batch:3/phase:") +
        phase + "/torch/bf16/infer"));
  }
  for (const char* block : {"residual", "bottleneck"}) {
    for (const char* mode : {"train", "infer"}) {
      cases.push_back(ParseCaseName(std::string("CNN/block:") + block +
                                    "/blocks:1/filters:8/image:64/output:10/"
                                    "batch:8/torch/bf16/" +
                                    mode));
    }
  }
  // Every case but the RNNs' training, for whose cells oneDNN has no
  // correct bf16 backward (2.6 and 3.7 alike): FC 2, RNN inference 3,
  // Transformer 4, LLM 2, CNN 4, DLRM 2.
  std::set<std::string> expected, compared;
  for (const Case& c : cases) {
    if (c.model.family != "RNN" || c.mode != Mode::kTrain) {
      expected.insert(c.Name());
    }
  }
  REQUIRE(expected.size() == 17);
  for (const Case& c : cases) {
    INFO(c.Name());
    Graph g = c.model.BuildGraph();
    const std::string why = onednn->Unsupported({g, c.dtype, c.mode});
    if (!why.empty()) {
      // Only what oneDNN itself lacks may be skipped.
      CHECK_THAT(why, Catch::Matchers::ContainsSubstring("bf16 backward") ||
                          Catch::Matchers::ContainsSubstring("AVX-512"));
      continue;
    }
    compared.insert(c.Name());
    Case fp32 = c;
    fp32.dtype = DType::kFp32;
    auto a = Prepare(*onednn, c, g);
    auto reference = Prepare(*torch, fp32, g);
    a->Step();
    reference->Step();
    // bf16 keeps 8 bits of mantissa: through a dozen layers both backends
    // stay within a few percent of the fp32 model.
    CHECK(std::isfinite(a->Loss()));
    CHECK(a->Loss() == Approx(reference->Loss()).epsilon(0.05));
    CHECK(RelativeError(a->Output(), reference->Output()) < 0.1);
    // Really computed in bf16: every logit is a bf16 number (its low 16
    // bits are zero), which an fp32 computation's are not.
    CHECK(test::AllBf16(a->Output()));
    CHECK_FALSE(test::AllBf16(reference->Output()));
    // LibTorch 1.13 has no bf16 embedding bag on the CPU, and says so.
    const std::string torch_why = torch->Unsupported({g, c.dtype, c.mode});
    if (!torch_why.empty()) {
      CHECK(c.model.family == "DLRM");
      CHECK_THAT(torch_why, Catch::Matchers::ContainsSubstring(
                                "embedding_bag has no bf16"));
      continue;
    }
    auto b = Prepare(*torch, c, g);
    b->Step();
    CHECK(b->Loss() == Approx(reference->Loss()).epsilon(0.05));
    CHECK(test::AllBf16(b->Output()));
  }
  // A CPU with AVX-512 compares every case; one without it (oneDNN's
  // bf16 kernels need avx512_core) none, each skipped for that reason
  // above.
  if (test::HasAvx512Core()) {
    CHECK(compared == expected);
  } else {
    WARN("no AVX-512 here: oneDNN's bf16 cases were skipped, not compared");
    CHECK(compared.empty());
  }
}

TEST_CASE("oneDNN runs as many threads as it is given", "[onednn][threads]") {
  for (int threads : {1, 2}) {
    INFO(threads << " threads");
    CHECK(test::BusyThreadsOf(*MakeOnednnBackend(), threads) == threads);
  }
}

TEST_CASE("both backends time their library's own GEMM", "[calibrate]") {
  for (const auto& backend : {MakeTorchBackend(false), MakeOnednnBackend()}) {
    INFO(backend->name());
    CHECK(backend->Device() == "cpu");
    const double flops = backend->GemmFlops(256, 256, 256, DType::kFp32, 1,
                                            /*tf32=*/false);
    // 2 x 256^3 FLOPs in more than a microsecond and less than a second.
    CHECK(flops > 2 * 256.0 * 256 * 256);
    CHECK(flops < 2 * 256.0 * 256 * 256 * 1e6);
  }
  CHECK(MakeTorchBackend(true)->Device() == "gpu");
}

TEST_CASE("fp16 is the GPUs': oneDNN refuses it, saying so", "[onednn]") {
  const Case c = ParseCaseName(
      "FC/layers:2/nodes:32/input:64/output:10/batch:8/onednn/fp16/infer");
  const Graph g = c.model.BuildGraph();
  CHECK(MakeOnednnBackend()->Unsupported({g, c.dtype, c.mode}) ==
        "onednn: fp16 is a GPU data type here (torch_cuda); this backend runs "
        "fp32 and bf16 on the CPU");
  CHECK(MakeOnednnBackend()->GemmFlops(64, 64, 64, DType::kFp16, 1,
                                       /*tf32=*/false) == 0);
  CHECK(MakeOnednnBackend()->GemmFlops(64, 64, 64, DType::kFp32, 1,
                                       /*tf32=*/true) == 0);
}

TEST_CASE("oneDNN names itself and its library", "[onednn]") {
  auto onednn = MakeOnednnBackend();
  CHECK(onednn->name() == "onednn");
  // The library loaded, as its headers number it.
  const std::string version = std::to_string(DNNL_VERSION_MAJOR) + "." +
                              std::to_string(DNNL_VERSION_MINOR) + "." +
                              std::to_string(DNNL_VERSION_PATCH);
  CHECK_THAT(onednn->Describe(),
             Catch::Matchers::StartsWith("oneDNN " + version +
                                         ", CPU runtime OpenMP, ISA "));
}

}  // namespace
}  // namespace paradnn
