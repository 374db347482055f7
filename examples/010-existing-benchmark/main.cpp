// A benchmark binary as a team already has one, with its own benchmark,
// plus the one line that adds paradnn's synthetic models beside it:
//
//   ./existing_benchmark --paradnn_config=configs/smoke.yaml
//   ./existing_benchmark --benchmark_filter='BM_|FC/'
#include <benchmark/benchmark.h>
#include <paradnn/paradnn.h>

#include <numeric>
#include <vector>

static void BM_Accumulate(benchmark::State& state) {
  std::vector<float> v(state.range(0), 1.0f);
  for (auto _ : state) {
    benchmark::DoNotOptimize(std::accumulate(v.begin(), v.end(), 0.0f));
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Accumulate)->Arg(1 << 16);

int main(int argc, char** argv) {
  paradnn_register(&argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks(paradnn::DisplayReporter());
  benchmark::Shutdown();
  return paradnn::Finish();
}
