// A training loop written by hand against LibTorch, next to paradnn's case of
// the same model in the same binary and run: what paradnn's step adds over the
// library.
//   torch_loop_bench --paradnn_case=FC/layers:4/nodes:32/input:64/output:10/
//       batch:8/torch/fp32/train --paradnn_threads=2
//       --benchmark_enable_random_interleaving=true
#include <benchmark/benchmark.h>
#include <paradnn/paradnn.h>
#include <torch/torch.h>

// FC/layers:L/nodes:N/input:I/output:O/batch:B in fp32: L dense layers of N
// units with ReLU, a dense output layer, softmax cross-entropy, SGD.
static void BM_TorchLoop(benchmark::State& state) {
  const int64_t layers = state.range(0), nodes = state.range(1),
                input = state.range(2), output = state.range(3),
                batch = state.range(4);
  // Only where it changes, as paradnn's backend does: every call of
  // set_num_threads starts a thread that spins for ~20 ms (docs/bricks.md at
  // 23ff8d0, "A thread pool built again"), and Google Benchmark calls this
  // function several times a case.
  const int threads = static_cast<int>(state.range(5));
  if (torch::get_num_threads() != threads) torch::set_num_threads(threads);
  torch::nn::Sequential model;
  int64_t width = input;
  for (int64_t i = 0; i < layers; ++i) {
    model->push_back(torch::nn::Linear(width, nodes));
    model->push_back(torch::nn::ReLU());
    width = nodes;
  }
  model->push_back(torch::nn::Linear(width, output));
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.01));
  const torch::Tensor x = torch::rand({batch, input}) * 2 - 1;
  const torch::Tensor y = torch::randint(output, {batch});
  std::vector<torch::Tensor> params = model->parameters();
  for (auto _ : state) {
    // Released rather than zeroed (LibTorch 1.13's zero_grad() fills), as
    // paradnn's step does: the leanest loop is the reference.
    for (torch::Tensor& p : params) p.mutable_grad().reset();
    torch::Tensor loss =
        torch::nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    sgd.step();
  }
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_TorchLoop)
    ->ArgNames({"layers", "nodes", "input", "output", "batch", "threads"})
    ->Args({4, 32, 64, 10, 8, 2})
    ->Args({4, 32, 64, 10, 8, 1})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) {
  paradnn_register(&argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  return paradnn::Finish();
}
