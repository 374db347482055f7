// A host built on BENCHMARK_MAIN(): the static macro, and nothing else.
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

PARADNN_REGISTER_STATIC();

BENCHMARK_MAIN();
