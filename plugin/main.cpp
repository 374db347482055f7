// The paradnn runner: a ready Google Benchmark binary with paradnn's flags,
// and the subcommands that work on results.
//   paradnn [--paradnn_* flags] [--benchmark_* flags]
//   paradnn mlperf-summary DIR [--format=json|csv]
#include <benchmark/benchmark.h>

#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>

#include "adapters/mlperf/reader.h"
#include "paradnn/paradnn.h"

namespace {

int MlperfSummary(int argc, char** argv) {
  std::string dir, format = "json";
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--format=", 0) == 0) {
      format = arg.substr(9);
    } else if (dir.empty()) {
      dir = arg;
    } else {
      std::cerr << "paradnn mlperf-summary: unexpected argument '" << arg
                << "'\n";
      return 2;
    }
  }
  if (dir.empty() || (format != "json" && format != "csv")) {
    std::cerr << "usage: paradnn mlperf-summary DIR [--format=json|csv]\n";
    return 2;
  }
  if (!std::filesystem::is_directory(dir)) {
    std::cerr << "paradnn mlperf-summary: " << dir << ": not a folder\n";
    return 2;
  }
  const auto results = paradnn::SummarizeMlperf(dir);
  for (const auto& b : results) {
    if (!b.system_problem.empty()) std::cerr << b.system_problem << "\n";
    for (const auto& r : b.runs) {
      for (const std::string& p : r.problems) std::cerr << p << "\n";
    }
  }
  std::cout << (format == "json" ? paradnn::MlperfSummaryJson(results)
                                 : paradnn::MlperfSummaryCsv(results));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "mlperf-summary") == 0) {
    return MlperfSummary(argc, argv);
  }
  paradnn_register(&argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks(paradnn::DisplayReporter());
  benchmark::Shutdown();
  return paradnn::Finish();
}
