// A binary built on BENCHMARK_MAIN(): one line at file scope adds paradnn's
// models, configured through the environment since main is not ours:
//
//   PARADNN_CONFIG=configs/smoke.yaml ./benchmark_main_example
#include <benchmark/benchmark.h>
#include <paradnn/paradnn.h>

#include <string>

static void BM_StringCopy(benchmark::State& state) {
  const std::string s(state.range(0), 'x');
  for (auto _ : state) {
    std::string copy(s);
    benchmark::DoNotOptimize(copy);
  }
}
BENCHMARK(BM_StringCopy)->Arg(1024);

PARADNN_REGISTER_STATIC();

BENCHMARK_MAIN();
