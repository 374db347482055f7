// The paradnn runner: a ready Google Benchmark binary with paradnn's flags.
#include <benchmark/benchmark.h>

#include "paradnn/paradnn.h"

int main(int argc, char** argv) {
  paradnn_register(&argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return paradnn::Finish();
}
