// The LibTorch backend against the cost model and against itself.
#include <dlfcn.h>
#include <sys/resource.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <set>

#include "backends/torch/cuda_driver.h"
#include "backends/torch/torch_backend.h"
#include "generators/cost.h"
#include "generators/init.h"
#include "generators/sweep.h"
#include "tests/backends/values.h"
#include "tests/busy_threads.h"
#include "tests/catch.h"

namespace paradnn {
namespace {

std::vector<Case> SmokeCases() {
  return LoadSweep(std::string(PARADNN_SOURCE_DIR) + "/configs/smoke.yaml",
                   {"torch"})
      .cases;
}

std::unique_ptr<Runner> Prepare(const Case& c, const Graph& g, int warmup = 0,
                                uint64_t seed = 1) {
  RunOptions opt;
  opt.threads = 1;
  opt.seed = seed;
  opt.warmup = warmup;
  return MakeTorchBackend(false)->Prepare({g, c.dtype, c.mode}, opt);
}

TEST_CASE("LibTorch's modules hold exactly the cost model's params",
          "[torch]") {
  std::vector<ModelSpec> models;
  for (const Case& c : SmokeCases()) models.push_back(c.model);
  for (const char* block : {"residual", "bottleneck"}) {
    models.push_back(
        ModelSpec::Make("CNN", {block, "3", "16", "200", "500", "64"}));
  }
  for (const char* cell : {"rnn", "lstm", "gru"}) {
    models.push_back(
        ModelSpec::Make("RNN", {cell, "5", "100", "1024", "10", "16"}));
  }
  models.push_back(ModelSpec::Make("FC", {"8", "512", "2000", "1000", "64"}));
  for (const ModelSpec& m : models) {
    INFO(m.Name());
    Graph g = m.BuildGraph();
    CHECK(TorchModuleParameterCount(g) ==
          ComputeCost(g, Mode::kTrain, DType::kFp32).params);
  }
}

TEST_CASE("the table of built-in backends says what LibTorch's say",
          "[torch][bricks]") {
  // Bricks are made before any module loads, from the table.
  CHECK(ActivationsJoinProducer("torch"));
  CHECK(MakeTorchBackend(false)->ActivationsJoinProducer());
  CHECK(ActivationsJoinProducer("torch_cuda"));
  CHECK(MakeTorchBackend(true)->ActivationsJoinProducer());
  for (bool cuda : {false, true}) {
    CHECK(InferenceFusion(cuda ? "torch_cuda" : "torch") ==
          Fusion::kFoldBatchNorm);
    CHECK(MakeTorchBackend(cuda)->InferenceFusion() == Fusion::kFoldBatchNorm);
  }
}

TEST_CASE("every smoke case runs, with the loss of an untrained model",
          "[torch]") {
  for (const Case& c : SmokeCases()) {
    INFO(c.Name());
    Graph g = c.model.BuildGraph();
    auto runner = Prepare(c, g);
    runner->Step();
    const Shape& logits = g.layer(g.logits()).shape;
    CHECK(runner->Output().size() == static_cast<size_t>(Elements(logits)));
    // Small random weights: cross-entropy near log(classes) at the start
    // (within half of it: a batch of 2 draws only 2 labels).
    CHECK(runner->Loss() ==
          Approx(std::log(static_cast<double>(logits.back()))).epsilon(0.5));
  }
}

TEST_CASE("same seed, same numbers, another seed, others", "[torch]") {
  for (const Case& c : SmokeCases()) {
    if (c.mode != Mode::kInfer) continue;
    INFO(c.Name());
    Graph g = c.model.BuildGraph();
    auto a = Prepare(c, g, 1, 5);
    auto b = Prepare(c, g, 1, 5);
    auto other = Prepare(c, g, 1, 6);
    CHECK(a->Output() == b->Output());
    CHECK(a->Output() != other->Output());
    CHECK(a->Param(0) == b->Param(0));
  }
}

TEST_CASE("training steps update weights and lower the loss", "[torch]") {
  Case c = ParseCaseName(
      "FC/layers:2/nodes:32/input:64/output:10/batch:8/torch/fp32/train");
  Graph g = c.model.BuildGraph();
  auto runner = Prepare(c, g);
  const std::vector<float> before = runner->Param(0);
  runner->Step();
  const double first = runner->Loss();
  const std::vector<float> after = runner->Param(0);
  REQUIRE(after.size() == before.size());
  // SGD with learning rate 0.01 moves weights, but only a little.
  double moved = 0;
  for (size_t i = 0; i < before.size(); ++i) {
    moved = std::max(moved, std::abs(double(after[i]) - before[i]));
  }
  CHECK(moved > 0);
  CHECK(moved < 0.01);
  for (int i = 0; i < 50; ++i) runner->Step();
  CHECK(runner->Loss() < first);
}

int64_t PageFaults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt + usage.ru_majflt;
}

TEST_CASE("training steps reuse the memory of the step before",
          "[torch][allocator]") {
  // Activations and gradients of 0.5 to 8 MB each: glibc alone returns
  // them to the system on free and faults them in again, about 2,000 pages
  // a step here.
  Case c = ParseCaseName(
      "FC/layers:4/nodes:1024/input:2000/output:1000/batch:256/torch/fp32/"
      "train");
  Graph g = c.model.BuildGraph();
  auto runner = Prepare(c, g, /*warmup=*/2);
  const int64_t before = PageFaults();
  for (int i = 0; i < 5; ++i) runner->Step();
  CHECK(PageFaults() - before < 100);
}

TEST_CASE("bf16 follows fp32 within bf16's precision", "[torch]") {
  for (Case c : SmokeCases()) {
    if (c.model.family == "CNN" && c.mode == Mode::kTrain) {
      // Batch norm in training over the smoke CNNs' last stage (1x1 images,
      // batch 2) normalizes two values per channel, their small difference
      // to +-1: bf16's rounding of it moved the loss 7% and the output 57%
      // where LibTorch's convolutions run without AVX-512. Over 16 values
      // (2x2 images, batch 4) the loss agrees within 1%.
      const std::vector<ParamDef>& params = c.model.def().params;
      for (size_t k = 0; k < params.size(); ++k) {
        if (params[k].key == "image") c.model.values[k] = "64";
        if (params[k].key == "batch") c.model.values[k] = "4";
      }
    }
    INFO(c.Name());
    Graph g = c.model.BuildGraph();
    Case bf16 = c;
    bf16.dtype = DType::kBf16;
    // LibTorch 1.13 has no bf16 embedding bag on the CPU, and says so.
    const std::string why =
        MakeTorchBackend(false)->Unsupported({g, bf16.dtype, bf16.mode});
    if (!why.empty()) {
      CHECK(c.model.family == "DLRM");
      CHECK_THAT(
          why, Catch::Matchers::ContainsSubstring("embedding_bag has no bf16"));
      continue;
    }
    auto full = Prepare(c, g);
    auto half = Prepare(bf16, g);
    full->Step();
    half->Step();
    CHECK(std::isfinite(half->Loss()));
    CHECK(half->Loss() == Approx(full->Loss()).epsilon(0.03));
    // Computed in bf16, not in fp32 and labelled so.
    CHECK(test::AllBf16(half->Output()));
    CHECK_FALSE(test::AllBf16(full->Output()));
  }
}

TEST_CASE("LibTorch runs as many threads as it is given", "[torch][threads]") {
  for (int threads : {1, 2}) {
    INFO(threads << " threads");
    CHECK(test::BusyThreadsOf(*MakeTorchBackend(false), threads) == threads);
  }
}

// A thread started while a case is prepared competes with its first steps
// (LibTorch's set_num_threads starts a spinning one on every call).
TEST_CASE("preparing a model at the threads LibTorch has starts no thread",
          "[torch][threads]") {
  auto tids = [] {
    std::set<int> ids;
    for (const auto& [tid, ticks] : test::ThreadTicks()) ids.insert(tid);
    return ids;
  };
  const Case c = ParseCaseName(
      "FC/layers:2/nodes:64/input:64/output:10/batch:32/torch/fp32/train");
  const Graph g = c.model.BuildGraph();
  RunOptions opt;
  opt.threads = 2;
  const std::unique_ptr<Backend> backend = MakeTorchBackend(false);
  backend->Prepare({g, c.dtype, c.mode}, opt)->Step();
  const std::set<int> before = tids();
  backend->Prepare({g, c.dtype, c.mode}, opt)->Step();
  CHECK(tids() == before);
}

TEST_CASE("LibTorch's OpenBLAS runs no generic kernels where the CPU has AVX2",
          "[torch]") {
  const std::string described = MakeTorchBackend(false)->Describe();
  INFO(described);
  // scripts/setup.sh makes libblas.so.3 OpenBLAS.
  REQUIRE_THAT(described, Catch::Matchers::ContainsSubstring("OpenBLAS core "));
  if (std::getenv("OPENBLAS_CORETYPE") == nullptr &&
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    CHECK_THAT(described,
               !Catch::Matchers::ContainsSubstring("OpenBLAS core Prescott"));
  }
}

TEST_CASE("torch_cuda says why it cannot run here", "[torch]") {
  auto cuda = MakeTorchBackend(true);
  CHECK(cuda->name() == "torch_cuda");
  if (!TorchHasCuda()) {
    const Case c = SmokeCases().front();
    const Graph g = c.model.BuildGraph();
    CHECK_THAT(cuda->Unsupported({g, c.dtype, c.mode}),
               Catch::Matchers::ContainsSubstring("no CUDA or no GPU"));
    // Nothing measured where there is no device, and no device said.
    CHECK(cuda->GemmFlops(64, 64, 64, DType::kFp16, 1, /*tf32=*/false) == 0);
    CHECK(cuda->MemoryBandwidth() == 0);
    CHECK(cuda->DeviceMemoryFree() == 0);
    CHECK(cuda->DeviceName().empty());
  }
  // The CPU has neither TF32 nor fp16 products, nor a device of its own.
  auto cpu = MakeTorchBackend(false);
  CHECK(cpu->GemmFlops(64, 64, 64, DType::kFp32, 1, /*tf32=*/true) == 0);
  CHECK(cpu->GemmFlops(64, 64, 64, DType::kFp16, 1, /*tf32=*/false) == 0);
  CHECK(cpu->MemoryBandwidth() == 0);
  CHECK(cpu->DeviceMemoryFree() == 0);
  // Without NVIDIA's driver, the driver's answers are empty, not made up.
  if (dlopen("libcuda.so.1", RTLD_NOW) == nullptr) {
    CHECK(cuda_driver::DeviceName(0).empty());
    CHECK(cuda_driver::Memory(0).total == 0);
  }
}

TEST_CASE("fp16 is the GPUs': LibTorch on the CPU refuses it, saying so",
          "[torch]") {
  const Case c = ParseCaseName(
      "FC/layers:2/nodes:32/input:64/output:10/batch:8/torch/fp16/train");
  CHECK(c.dtype == DType::kFp16);
  CHECK(c.Name() ==
        "FC/layers:2/nodes:32/input:64/output:10/batch:8/torch/fp16/train");
  const Graph g = c.model.BuildGraph();
  CHECK(MakeTorchBackend(false)->Unsupported({g, c.dtype, c.mode}) ==
        "torch: fp16 runs on GPUs (torch_cuda); on the CPU, bf16");
  // Where CUDA is, torch_cuda takes it.
  if (TorchHasCuda()) {
    CHECK(MakeTorchBackend(true)->Unsupported({g, c.dtype, c.mode}).empty());
  }
  // bf16 and fp32 stay the CPU's.
  for (DType d : {DType::kFp32, DType::kBf16}) {
    CHECK(MakeTorchBackend(false)->Unsupported({g, d, c.mode}).empty());
  }
}

TEST_CASE("LibTorch's training step of a tiny FC model, by hand", "[torch]") {
  // Input [2, 4] -> dense 3 (+bias) -> ReLU -> dense 2 (+bias) -> mean
  // softmax cross-entropy, one SGD step of rate 0.01, computed here in
  // double from the initial weights, inputs and labels.
  const Case c = ParseCaseName(
      "FC/layers:1/nodes:3/input:4/output:2/batch:2/torch/fp32/train");
  const Graph g = c.model.BuildGraph();
  auto runner = Prepare(c, g);  // no warm-up step: the weights are initial
  std::vector<std::vector<float>> w;
  for (int p = 0; p < 4; ++p) w.push_back(runner->Param(p));
  REQUIRE(w[0].size() == 12);  // W1 [3, 4]
  REQUIRE(w[1].size() == 3);   // b1
  REQUIRE(w[2].size() == 6);   // W2 [2, 3]
  REQUIRE(w[3].size() == 2);   // b2
  const std::vector<float> x = InitInput(g, 1);
  const std::vector<int64_t> y = InitLabels(g, 1);
  REQUIRE(x.size() == 8);
  REQUIRE(y.size() == 2);
  runner->Step();
  double h[2][3], a[2][3], z[2][2], dz[2][2], loss = 0;
  for (int n = 0; n < 2; ++n) {
    for (int j = 0; j < 3; ++j) {
      h[n][j] = w[1][j];
      for (int i = 0; i < 4; ++i) h[n][j] += w[0][j * 4 + i] * x[n * 4 + i];
      a[n][j] = std::max(0.0, h[n][j]);
    }
    for (int k = 0; k < 2; ++k) {
      z[n][k] = w[3][k];
      for (int j = 0; j < 3; ++j) z[n][k] += w[2][k * 3 + j] * a[n][j];
    }
    const double top = std::max(z[n][0], z[n][1]);
    const double sum = std::exp(z[n][0] - top) + std::exp(z[n][1] - top);
    for (int k = 0; k < 2; ++k) {
      const double p = std::exp(z[n][k] - top) / sum;
      dz[n][k] = (p - (k == y[n] ? 1 : 0)) / 2;  // the mean over 2 rows
      if (k == y[n]) loss -= std::log(p) / 2;
    }
  }
  const std::vector<float> logits = runner->Output();
  REQUIRE(logits.size() == 4);
  for (int n = 0; n < 2; ++n) {
    for (int k = 0; k < 2; ++k) {
      CHECK(logits[n * 2 + k] == Approx(z[n][k]).margin(1e-5));
    }
  }
  CHECK(runner->Loss() == Approx(loss).epsilon(1e-5));
  // Backward and the update.
  std::vector<double> dw1(12, 0), db1(3, 0), dw2(6, 0), db2(2, 0);
  for (int n = 0; n < 2; ++n) {
    for (int k = 0; k < 2; ++k) {
      db2[k] += dz[n][k];
      for (int j = 0; j < 3; ++j) dw2[k * 3 + j] += dz[n][k] * a[n][j];
    }
    for (int j = 0; j < 3; ++j) {
      double da = 0;
      for (int k = 0; k < 2; ++k) da += dz[n][k] * w[2][k * 3 + j];
      const double dh = h[n][j] > 0 ? da : 0;
      db1[j] += dh;
      for (int i = 0; i < 4; ++i) dw1[j * 4 + i] += dh * x[n * 4 + i];
    }
  }
  const std::vector<std::vector<double>> grads = {dw1, db1, dw2, db2};
  // Updates large enough for the comparison below to see them.
  double largest = 0;
  for (double d : dw2) largest = std::max(largest, std::abs(0.01 * d));
  REQUIRE(largest > 1e-4);
  for (int p = 0; p < 4; ++p) {
    INFO("param " << p);
    const std::vector<float> updated = runner->Param(p);
    for (size_t i = 0; i < updated.size(); ++i) {
      CHECK(updated[i] == Approx(w[p][i] - 0.01 * grads[p][i]).margin(1e-6));
    }
  }
}

// A decoder's logits, computed here in double from the initial weights,
// tokens and cache, as Llama's equations say: the reference for the
// LibTorch backend's LLM cases.
std::vector<double> LlmReference(const Case& c, const Graph& g,
                                 const std::vector<std::vector<float>>& w) {
  const ModelSpec& m = c.model;
  const int64_t d = m.Int("d_model"), heads = m.Int("heads");
  const int64_t kvh = m.Int("kv_heads"), ffn = m.Int("ffn");
  const int64_t vocab = m.Int("vocab"), context = m.Int("context");
  const int64_t batch = m.Int("batch"), layers = m.Int("layers");
  const int64_t dh = d / heads, half = dh / 2, group = heads / kvh;
  const int64_t length = m.Str("phase") == "prefill" ? context : 1;
  const int64_t first = context - length;
  using Vec = std::vector<double>;
  auto rms = [&](const Vec& x, const std::vector<float>& scale) {
    double sq = 0;
    for (double v : x) sq += v * v;
    const double r = 1 / std::sqrt(sq / x.size() + 1e-5);
    Vec y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * r * scale[i];
    return y;
  };
  auto dense = [](const Vec& x, const std::vector<float>& weight, int64_t out) {
    Vec y(out, 0);
    for (int64_t j = 0; j < out; ++j) {
      for (size_t i = 0; i < x.size(); ++i)
        y[j] += weight[j * x.size() + i] * x[i];
    }
    return y;
  };
  auto rope = [&](Vec& x, int64_t position) {
    for (int64_t h = 0; h < static_cast<int64_t>(x.size()) / dh; ++h) {
      for (int64_t i = 0; i < half; ++i) {
        const double angle =
            position * std::pow(500000.0, -static_cast<double>(i) / half);
        const double a = x[h * dh + i], b = x[h * dh + half + i];
        x[h * dh + i] = a * std::cos(angle) - b * std::sin(angle);
        x[h * dh + half + i] = b * std::cos(angle) + a * std::sin(angle);
      }
    }
  };
  const std::vector<int64_t> tokens = InitTokens(g, 1);
  std::vector<std::vector<Vec>> x(length, std::vector<Vec>(batch));
  for (int64_t t = 0; t < length; ++t) {
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t id = tokens[t * batch + b];
      x[t][b] = Vec(w[0].begin() + id * d, w[0].begin() + (id + 1) * d);
    }
  }
  int layer = 0;  // the graph's index of the next cached attention
  for (int64_t i = 0; i < layers; ++i) {
    const auto& p = [&](int k) -> const std::vector<float>& {
      return w[1 + 9 * i + k];
    };
    while (g.layer(layer).op != Op::kCachedAttention) ++layer;
    std::vector<float> cache = InitCache(g, 1, layer++);
    // cache[kind][b][kv head][position][dh]
    auto at = [&](int kind, int64_t b, int64_t h, int64_t pos) {
      return &cache[(((kind * batch + b) * kvh + h) * context + pos) * dh];
    };
    std::vector<std::vector<Vec>> q(length, std::vector<Vec>(batch));
    for (int64_t t = 0; t < length; ++t) {
      for (int64_t b = 0; b < batch; ++b) {
        const Vec h = rms(x[t][b], p(0));
        q[t][b] = dense(h, p(1), d);
        Vec k = dense(h, p(2), kvh * dh), v = dense(h, p(3), kvh * dh);
        rope(q[t][b], first + t);
        rope(k, first + t);
        for (int64_t kv = 0; kv < kvh; ++kv) {
          for (int64_t e = 0; e < dh; ++e) {
            at(0, b, kv, first + t)[e] = static_cast<float>(k[kv * dh + e]);
            at(1, b, kv, first + t)[e] = static_cast<float>(v[kv * dh + e]);
          }
        }
      }
    }
    for (int64_t t = 0; t < length; ++t) {
      for (int64_t b = 0; b < batch; ++b) {
        Vec a(d, 0);
        for (int64_t h = 0; h < heads; ++h) {
          const int64_t kv = h / group, seen = first + t + 1;
          Vec score(seen);
          double top = -1e300, sum = 0;
          for (int64_t pos = 0; pos < seen; ++pos) {
            score[pos] = 0;
            for (int64_t e = 0; e < dh; ++e) {
              score[pos] += q[t][b][h * dh + e] * at(0, b, kv, pos)[e];
            }
            score[pos] /= std::sqrt(static_cast<double>(dh));
            top = std::max(top, score[pos]);
          }
          for (double& s : score) sum += (s = std::exp(s - top));
          for (int64_t pos = 0; pos < seen; ++pos) {
            for (int64_t e = 0; e < dh; ++e) {
              a[h * dh + e] += score[pos] / sum * at(1, b, kv, pos)[e];
            }
          }
        }
        const Vec o = dense(a, p(4), d);
        for (int64_t e = 0; e < d; ++e) x[t][b][e] += o[e];
        const Vec n = rms(x[t][b], p(5));
        const Vec gate = dense(n, p(6), ffn), up = dense(n, p(7), ffn);
        Vec f(ffn);
        for (int64_t e = 0; e < ffn; ++e) {
          f[e] = gate[e] / (1 + std::exp(-gate[e])) * up[e];
        }
        const Vec down = dense(f, p(8), d);
        for (int64_t e = 0; e < d; ++e) x[t][b][e] += down[e];
      }
    }
  }
  Vec logits;
  for (int64_t b = 0; b < batch; ++b) {
    const Vec y =
        dense(rms(x[length - 1][b], w[w.size() - 2]), w.back(), vocab);
    logits.insert(logits.end(), y.begin(), y.end());
  }
  return logits;
}

TEST_CASE("LibTorch's LLM prefill and decode, by hand", "[torch][llm]") {
  // Two layers, grouped-query attention (4 query heads on 2 key/value
  // heads of 4), a cache of 6 positions, batch 2.
  for (const char* phase : {"prefill", "decode"}) {
    const Case c = ParseCaseName(
        std::string("LLM/layers:2/d_model:16/heads:4/kv_heads:2/ffn:24/"
                    "vocab:11/context:6/batch:2/phase:") +
        phase + "/torch/fp32/infer");
    INFO(c.Name());
    const Graph g = c.model.BuildGraph();
    auto runner = Prepare(c, g);
    std::vector<std::vector<float>> w;
    for (size_t p = 0; p < g.Params().size(); ++p)
      w.push_back(runner->Param(p));
    REQUIRE(w.size() == 1 + 2 * 9 + 2);
    // Every step does the same work: the same logits after one or two.
    runner->Step();
    const std::vector<float> once = runner->Output();
    runner->Step();
    CHECK(runner->Output() == once);
    const std::vector<double> expected = LlmReference(c, g, w);
    REQUIRE(once.size() == expected.size());
    REQUIRE(once.size() == 2 * 11);
    for (size_t i = 0; i < once.size(); ++i) {
      INFO(i);
      CHECK(once[i] == Approx(expected[i]).margin(1e-5).epsilon(1e-4));
    }
  }
}

TEST_CASE("LLM FLOPs: the cost model's against LibTorch's profiler",
          "[torch][llm]") {
  // The profiler's FLOP count of the matrix products a decode step runs
  // (mm, addmm, bmm: 2 per multiply-add), against the cost model's. A
  // decode step's query sees every cached position, so the products
  // LibTorch computes are the pairs the cost model counts.
  const Case c = ParseCaseName(
      "LLM/layers:2/d_model:64/heads:8/kv_heads:2/ffn:160/vocab:100/"
      "context:32/batch:3/phase:decode/torch/fp32/infer");
  const Graph g = c.model.BuildGraph();
  auto runner = Prepare(c, g);
  namespace prof = torch::autograd::profiler;
  using torch::profiler::impl::ProfilerConfig;
  using torch::profiler::impl::ProfilerState;
  prof::enableProfilerLegacy(ProfilerConfig(ProfilerState::CPU,
                                            /*report_input_shapes=*/true,
                                            /*profile_memory=*/false,
                                            /*with_stack=*/false,
                                            /*with_flops=*/true));
  runner->Step();
  const prof::thread_event_lists lists = prof::disableProfilerLegacy();
  uint64_t flops = 0;
  for (const auto& events : lists) {
    for (const auto& e : events) {
      const std::string name = e.name();
      if (name == "aten::mm" || name == "aten::addmm" || name == "aten::bmm") {
        flops += const_cast<prof::LegacyEvent&>(e).flops();
      }
    }
  }
  CHECK(flops > 0);
  CHECK(static_cast<int64_t>(flops) == ComputeCost(g, c.mode, c.dtype).flops);
}

TEST_CASE("LibTorch's LLM modules hold the cost model's params", "[torch]") {
  const Graph g = ModelSpec::Make("LLM", {"3", "64", "8", "2", "160", "100",
                                          "32", "2", "decode"})
                      .BuildGraph();
  CHECK(TorchModuleParameterCount(g) ==
        ComputeCost(g, Mode::kInfer, DType::kFp32).params);
}

}  // namespace
}  // namespace paradnn
