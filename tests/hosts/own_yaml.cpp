// A host that links its own yaml-cpp (0.8.0, static; paradnn's is Debian
// 12's 0.7.0, shared) and uses it in its own benchmark, with paradnn's
// static registration: both copies serve their own callers in one process.
#include <benchmark/benchmark.h>
#include <paradnn/paradnn.h>
#include <yaml-cpp/yaml.h>

#include <string>

static void BM_OwnYaml(benchmark::State& state) {
  const std::string text = "sizes: [64, 128, 256]\nname: host\n";
  int64_t sum = 0;
  for (auto _ : state) {
    const YAML::Node node = YAML::Load(text);
    sum = 0;
    for (const YAML::Node& n : node["sizes"]) sum += n.as<int64_t>();
    benchmark::DoNotOptimize(sum);
  }
  if (sum != 448) state.SkipWithError("the host's yaml-cpp misread its text");
}
BENCHMARK(BM_OwnYaml);

PARADNN_REGISTER_STATIC();

BENCHMARK_MAIN();
