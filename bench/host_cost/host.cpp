// The host of bench/host_cost.sh: one benchmark of its own, and paradnn
// linked in as the README says (or not at all).
#include <benchmark/benchmark.h>

#include <numeric>
#include <vector>

#if defined(HOST_STATIC) || defined(HOST_OWN)
#include <paradnn/paradnn.h>
#endif

static void BM_Host(benchmark::State& state) {
  std::vector<int> v(1024, 1);
  for (auto _ : state) {
    benchmark::DoNotOptimize(std::accumulate(v.begin(), v.end(), 0));
  }
}
BENCHMARK(BM_Host);

#if defined(HOST_OWN)
int main(int argc, char** argv) {
  paradnn_register(&argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks(paradnn::DisplayReporter());
  benchmark::Shutdown();
  return paradnn::Finish();
}
#else
#if defined(HOST_STATIC)
PARADNN_REGISTER_STATIC();
#endif
BENCHMARK_MAIN();
#endif
