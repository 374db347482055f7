#include "generators/cost.h"

#include "generators/spec.h"
#include "tests/catch.h"

namespace paradnn {
namespace {

Cost CostOf(const std::string& family, std::vector<std::string> values,
            Mode mode, DType dtype = DType::kFp32) {
  return ComputeCost(ModelSpec::Make(family, std::move(values)).BuildGraph(),
                     mode, dtype);
}

TEST_CASE("FC: DESIGN.md's worked example", "[cost]") {
  std::vector<std::string> v = {"4", "1024", "2000", "1000", "256"};
  Cost train = CostOf("FC", v, Mode::kTrain);
  // 3 x 2·256·Σ(in·out) − 2·256·2000·1024
  CHECK(train.flops == 8501854208);
  CHECK(CostOf("FC", v, Mode::kInfer).flops == 2LL * 256 * 6217728);
  // 2000·1024+1024 + 3·(1024·1024+1024) + 1024·1000+1000
  CHECK(train.params == 6222824);
}

TEST_CASE("FC: a model small enough to count every number", "[cost]") {
  // input 2 -> dense 3 -> relu -> dense 4, batch 5
  std::vector<std::string> v = {"1", "3", "2", "4", "5"};
  Cost infer = CostOf("FC", v, Mode::kInfer);
  CHECK(infer.params == 2 * 3 + 3 + 3 * 4 + 4);
  CHECK(infer.flops == 2 * 5 * (2 * 3 + 3 * 4));
  // weights 25 + activations (10 + 15 + 15 + 20), 4 bytes each
  CHECK(infer.bytes == 4 * (25 + 60));
  CHECK(infer.intensity == Approx(180.0 / 340.0));
  // bias adds 15 + 20, relu 15
  CHECK(infer.elementwise == 50);

  Cost train = CostOf("FC", v, Mode::kTrain);
  CHECK(train.flops == 3 * 180 - 2 * 5 * 2 * 3);
  // weights and their gradients 2·25, activations 60 + loss 1, activation
  // gradients 15 + 15 + 20 + 1 (none for the input)
  CHECK(train.bytes == 4 * (50 + 61 + 51));
  CHECK(train.gradient_bytes == 4 * 51);
  CHECK(infer.gradient_bytes == 0);
  // Of which read: the weights and the data (5 x 2), in either mode; the
  // rest is written.
  CHECK(infer.read_bytes == 4 * (25 + 10));
  CHECK(train.read_bytes == 4 * (25 + 10));
  // forward and backward elementwise (50 + softmax 20) x 2, SGD 2 x 25
  CHECK(train.elementwise == 2 * 70 + 50);

  CHECK(CostOf("FC", v, Mode::kInfer, DType::kBf16).bytes == 2 * 85);
}

TEST_CASE("grouped and depthwise convolutions, biases, a flatten", "[cost]") {
  // [2, 4, 6, 6] -> conv 8 (3x3, pad 1, 2 groups, bias) -> flatten ->
  // dense 3; then the same maps through a depthwise 3x3.
  Graph g;
  const int conv = g.Conv2d(g.Input({2, 4, 6, 6}), 8, 3, 1, 1, 2, true);
  g.Dense(g.Flatten(conv), 3);
  Cost c = ComputeCost(g, Mode::kInfer, DType::kFp32);
  // 8 filters of 2 channels x 9 and 8 biases; 288 x 3 and 3.
  CHECK(c.params == 8 * 2 * 9 + 8 + 288 * 3 + 3);
  // Each of 2 x 8 x 36 outputs reads its group's 2 channels x 9.
  CHECK(c.flops == 2 * 576 * 18 + 2 * 2 * 288 * 3);
  // Weights, the input and the two layers' outputs; the flatten is a view.
  CHECK(c.bytes == 4 * (1019 + 288 + 576 + 6));
  CHECK(c.elementwise == 576 + 6);  // the biases
  Graph d;
  d.Conv2d(d.Input({2, 8, 6, 6}), 8, 3, 1, 1, 8, false);
  c = ComputeCost(d, Mode::kInfer, DType::kFp32);
  CHECK(c.params == 8 * 9);
  CHECK(c.flops == 2 * 576 * 9);
}

TEST_CASE(
    "a slice moves its part only, its backward the input's gradient whole",
    "[cost]") {
  // [2, 6, 4, 4] -> channels [2, 5): 2 x 3 x 16 = 96 values read and
  // written. Backward reads the output's gradient (96) and writes the
  // input's, zeros outside the slice (192).
  Graph g;
  const int x = g.Input({2, 6, 4, 4}, true);
  const int s = g.Slice(x, 1, 2, 3);
  const LayerCost c = ComputeLayerCost(g, s, Mode::kTrain, DType::kFp32);
  CHECK(c.forward_flops == 0);
  CHECK(c.forward_bytes == 4 * (96 + 96));
  CHECK(c.backward_bytes == 4 * (96 + 192));
}

TEST_CASE("CNN residual: hand-counted ResNet", "[cost]") {
  std::vector<std::string> v = {"residual", "1", "4", "32", "10", "2"};
  Cost infer = CostOf("CNN", v, Mode::kInfer);
  // stem 588+8; groups 328, 944, 3680, 14528; dense 330
  CHECK(infer.params == 20406);
  // MACs per image: stem 16·16·588, groups 19456 + 3 x 14336, dense 320
  CHECK(infer.flops == 2 * 2 * 213312);
  // training: no input gradient for the stem convolution
  CHECK(CostOf("CNN", v, Mode::kTrain).flops == 3 * 853248 - 2 * 2 * 150528);
}

TEST_CASE("CNN bottleneck: hand-counted ResNet", "[cost]") {
  std::vector<std::string> v = {"bottleneck", "1", "4", "32", "10", "2"};
  // stem 596; groups 368, 1632, 6208, 24192; dense 128·10+10
  CHECK(CostOf("CNN", v, Mode::kInfer).params == 34286);
}

TEST_CASE("CNN with a block count per group: ResNet-50 v1.5", "[cost]") {
  // blocks:3-4-6-3 is ResNet-50 (stride in the 3x3 conv: v1.5).
  // torchvision's resnet50 has 25,557,032 parameters (its documentation).
  Cost infer = CostOf(
      "CNN", {"bottleneck", "3-4-6-3", "64", "224", "1000", "1"}, Mode::kInfer);
  CHECK(infer.params == 25557032);
  // Multiply-adds counted conv by conv: k^2 x in x out x output pixels.
  int64_t macs = 7 * 7 * 3 * 64 * 112 * 112;  // stem, to 112x112
  int64_t in = 64, side = 56;                 // after the max-pool
  const int blocks[4] = {3, 4, 6, 3};
  for (int g = 0; g < 4; ++g) {
    const int64_t f = 64 << g, out_side = g == 0 ? side : side / 2;
    for (int b = 0; b < blocks[g]; ++b) {
      const int64_t s = b == 0 ? out_side : side;       // side after this block
      macs += in * f * (b == 0 ? side * side : s * s);  // 1x1, before stride
      macs += 9 * f * f * s * s;                        // 3x3, strided
      macs += f * 4 * f * s * s;                        // 1x1 out
      if (b == 0) macs += in * 4 * f * s * s;           // projection
      in = 4 * f;
      side = s;
    }
  }
  macs += 2048 * 1000;
  CHECK(macs == 4089184256);  // fvcore's count for torchvision's resnet50
  CHECK(infer.flops == 2 * macs);
  // The same as writing one count for all four groups where they agree.
  CHECK(ModelSpec::Make("CNN", {"bottleneck", "2-2-2-2", "16", "64", "10", "1"})
            .Name() ==
        ModelSpec::Make("CNN", {"bottleneck", "2", "16", "64", "10", "1"})
            .Name());
  CHECK_THROWS_WITH(
      ModelSpec::Make("CNN", {"bottleneck", "3-4-6", "64", "224", "1000", "1"}),
      "'3-4-6' is not a valid blocks: expected a positive integer, or 4 of "
      "them joined by '-', one per group");
  CHECK_THROWS_WITH(ModelSpec::Make("FC", {"4-4", "64", "100", "10", "1"}),
                    "'4-4' is not a valid layers: expected a positive integer");
}

TEST_CASE("RNN: cells, embedding and per-step dense", "[cost]") {
  // vocab 32, embed 16, 2 layers, length 5, batch 4 -> 20 rows
  Cost lstm = CostOf("RNN", {"lstm", "2", "16", "32", "5", "4"}, Mode::kInfer);
  CHECK(lstm.params == 32 * 16 + 2 * (4 * 16 * 32 + 2 * 4 * 16) + 16 * 32 + 32);
  CHECK(lstm.flops == 2 * (2 * 20 * 4 * 16 * 32) + 2 * 20 * 16 * 32);
  // Training: every product's weight gradient; the input gradients of the
  // dense layer and of both LSTMs (the embedding trains), and the gradient
  // through time of each LSTM for steps 1..4 only: not into h0, which is
  // zero and constant.
  const int64_t lstm_fwd = 2 * 20 * 4 * 16 * 32;  // per layer
  const int64_t dense_fwd = 2 * 20 * 16 * 32;
  const int64_t lstm_input_grad = 2 * 20 * 4 * 16 * 16;       // into x, 5 steps
  const int64_t lstm_through_time = 2 * 4 * 4 * 4 * 16 * 16;  // 4 steps of 5
  const int64_t train =
      CostOf("RNN", {"lstm", "2", "16", "32", "5", "4"}, Mode::kTrain).flops;
  CHECK(train == 3 * dense_fwd +
                     2 * (2 * lstm_fwd + lstm_input_grad + lstm_through_time));
  // Three times the forward pass, less each layer's gradient into h0.
  CHECK(train == 3 * lstm.flops - 2 * (2 * 4 * 4 * 16 * 16));
}

TEST_CASE("RNN training FLOPs follow the rule PyTorch's profiler counts",
          "[cost]") {
  // PyTorch 1.13's profiler on this model's training step (LSTM forward
  // and backward, per-step dense, embedding): 4,798,283,776 FLOPs. The
  // gradient into h0 (2 x batch x 4H x H = 33,554,432) is not among them.
  CHECK(CostOf("RNN", {"lstm", "1", "256", "1024", "16", "64"}, Mode::kTrain)
            .flops == 4798283776);
  CHECK(
      CostOf("RNN", {"gru", "2", "16", "32", "5", "4"}, Mode::kInfer).params ==
      512 + 2 * (3 * 16 * 32 + 6 * 16) + 544);
  CHECK(
      CostOf("RNN", {"rnn", "2", "16", "32", "5", "4"}, Mode::kInfer).params ==
      512 + 2 * (16 * 32 + 2 * 16) + 544);
}

TEST_CASE("Transformer: projections, attention, feed-forward", "[cost]") {
  // layers 2, d 16, heads 2, ffn 32, length 6, vocab 32, batch 3
  const std::vector<std::string> v = {"2", "16", "2",    "32",
                                      "6", "32", "true", "3"};
  Cost infer = CostOf("TRANSFORMER", v, Mode::kInfer);
  // token table 32·16, positions 6·16; per layer Q, K, V, out 4·(16·16+16),
  // two layer norms 2·2·16, feed-forward 16·32+32 and 32·16+16; output
  // 16·32+32
  CHECK(infer.params ==
        32 * 16 + 6 * 16 + 2 * (4 * 272 + 64 + 544 + 528) + 544);
  // Per sequence and layer: projections 4·2·L·d², attention 2·2·L²·d,
  // feed-forward 2·2·L·d·ffn; then the output 2·L·d·vocab. L = 6, d = 16.
  const int64_t layer = 4 * 2 * 6 * 256 + 2 * 2 * 36 * 16 + 2 * 2 * 6 * 16 * 32;
  CHECK(layer == 26880);
  CHECK(infer.flops == 3 * (2 * layer + 2 * 6 * 16 * 32));
  // Training: every product also gives its input's and weights' gradient
  // (the embedding trains), attention's backward is four products.
  CHECK(CostOf("TRANSFORMER", v, Mode::kTrain).flops == 3 * infer.flops);
  // Causal attention computes the same products.
  std::vector<std::string> full = v;
  full[6] = "false";
  CHECK(CostOf("TRANSFORMER", full, Mode::kInfer).flops == infer.flops);
  // The quadratic term: doubling the length doubles everything but the
  // attention products, which quadruple.
  std::vector<std::string> longer = v;
  longer[4] = "12";
  CHECK(CostOf("TRANSFORMER", longer, Mode::kInfer).flops ==
        2 * infer.flops + 2 * 3 * 2 * (2 * 2 * 36 * 16));
  // Elementwise work, per element: N = batch x L = 18 tokens; positions
  // N·d; per layer the Q, K, V and output biases 4·N·d, the scores'
  // softmax batch·heads·L² = 216, two adds and two layer norms 4·N·d, the
  // feed-forward's biases N·ffn + N·d and its GELU N·ffn; the output's bias
  // N·vocab (inference computes no loss).
  const int64_t n = 18, d = 16;
  CHECK(infer.elementwise ==
        n * d + 2 * (4 * n * d + 216 + 4 * n * d + 2 * n * 32 + n * d) +
            n * 32);
  CHECK(infer.elementwise == 8784);
}

TEST_CASE("LLM: a decoder small enough to count every number", "[cost]") {
  // layers 2, d 16, heads 4 (head size 4), kv_heads 2 (keys and values of
  // 8), ffn 24, vocab 50, context 8, batch 3
  auto llm = [](const char* phase) {
    return CostOf("LLM", {"2", "16", "4", "2", "24", "50", "8", "3", phase},
                  Mode::kInfer);
  };
  const Cost decode = llm("decode"), prefill = llm("prefill");
  // Embedding 50·16; per layer two RMSNorm scales 2·16, Q and O 16·16
  // each, K and V 16·8 each, gate and up 16·24 each, down 24·16; the final
  // RMSNorm 16; the output 16·50. No biases.
  CHECK(decode.params ==
        800 + 2 * (32 + 2 * 256 + 2 * 128 + 3 * 384) + 16 + 800);
  CHECK(decode.params == 5520);
  // Per token and layer: projections 2·d·d·(2 + 2·kv_heads/heads) = 1536,
  // SwiGLU 6·d·ffn = 2304; attention 4·d per allowed (query, key) pair;
  // the output 2·d·vocab = 1600 once per sequence.
  // Decode: one token seeing 8 positions.
  CHECK(decode.flops == 3 * (2 * (1536 + 2304 + 4 * 16 * 8) + 1600));
  // Prefill: 8 tokens, the t-th seeing t + 1 positions: 36 pairs.
  CHECK(prefill.flops == 3 * (2 * (8 * (1536 + 2304) + 4 * 16 * 36) + 1600));
  // Keys and values of 8 positions x 8, per layer and sequence, in fp32.
  CHECK(decode.kv_cache_bytes == 2 * 2 * 3 * 8 * 8 * 4);
  CHECK(prefill.kv_cache_bytes == decode.kv_cache_bytes);
  // A decode step's bytes: the weights once; every layer's output (3
  // tokens; ids at 8 bytes, the rest fp32); each attention reads its
  // layer's cache (1536) and writes one position's keys and values (192).
  const int64_t layer = 8 * 3 * 16 * 4    // norms, Q, its rotation, O,
                                          // adds, down: 3 x 16 each
                        + 3 * 3 * 8 * 4   // K, its rotation, V
                        + 3 * 24 * 4 * 3  // gate, up, SwiGLU
                        + 3 * 16 * 4 + 1536 + 192;  // attention
  CHECK(decode.bytes == 5520 * 4 + 3 * 8 + 3 * 16 * 4 + 2 * layer +
                            2 * 3 * 16 * 4 + 3 * 50 * 4);
  // Of which read: the weights, both caches and the ids.
  CHECK(decode.read_bytes == 5520 * 4 + 2 * 1536 + 3 * 8);
  // Elementwise: per layer two RMSNorms and two adds (48 each), the
  // rotations of Q (48) and K (24), SwiGLU (72), the softmax over
  // batch·heads·8 scores (96); the final RMSNorm.
  CHECK(decode.elementwise == 2 * (4 * 48 + 48 + 24 + 72 + 96) + 48);
  // Freed after its last reader (LibTorch), the most alive at once is at
  // the second attention: the weights, both caches, the residual stream,
  // the rotated Q (48 values) and K (24), V (24), the attention's output
  // (48) and its scores and their softmax (2 x batch·heads·8); and while
  // the weights are made, the largest (the embedding's or the output's
  // 800 values) in fp32.
  CHECK(decode.streaming_memory == 5520 * 4 + 2 * 1536 +
                                       4 * (48 + 48 + 24 + 24 + 48) +
                                       2 * 96 * 4 + 800 * 4);
}

TEST_CASE("LLM: Llama 3.1 8B's shape has its 8.03 billion parameters",
          "[cost]") {
  const Cost c = CostOf(
      "LLM",
      {"32", "4096", "32", "8", "14336", "128256", "2048", "1", "decode"},
      Mode::kInfer, DType::kBf16);
  // Embedding and output 128256·4096 each; per layer Q and O 4096², K and
  // V 4096·1024, three SwiGLU matrices 4096·14336, two norms; a final norm.
  CHECK(c.params == 2 * 525336576LL + 32 * 218112000LL + 4096);
  CHECK(c.params == Approx(8.03e9).epsilon(0.005));
  // The cache: 32 layers x 2 x 2048 positions x 1024 x 2 bytes.
  CHECK(c.kv_cache_bytes == 32LL * 2 * 2048 * 1024 * 2);
}

TEST_CASE("the paper's grids span about 10k to beyond 1B parameters",
          "[cost]") {
  CHECK(CostOf("FC", {"4", "32", "2000", "200", "64"}, Mode::kTrain).params <
        100000);
  CHECK(
      CostOf("FC", {"128", "8192", "8000", "1000", "64"}, Mode::kTrain).params >
      1000000000);
}

}  // namespace
}  // namespace paradnn
