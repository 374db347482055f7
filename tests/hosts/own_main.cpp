// A host with its own main: paradnn_register() and paradnn's reporter.
#include <benchmark/benchmark.h>
#include <paradnn/paradnn.h>

#include <numeric>
#include <vector>

static void BM_Host(benchmark::State& state) {
  std::vector<int> v(1024, 1);
  for (auto _ : state) {
    benchmark::DoNotOptimize(std::accumulate(v.begin(), v.end(), 0));
  }
}
BENCHMARK(BM_Host);

int main(int argc, char** argv) {
  paradnn_register(&argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks(paradnn::DisplayReporter());
  benchmark::Shutdown();
  return paradnn::Finish();
}
