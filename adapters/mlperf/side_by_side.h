// Real MLPerf results and paradnn's synthetic cases in one table, with the
// synthetic cases nearest to each real model in params and FLOPs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "adapters/mlperf/reader.h"

namespace paradnn {

// Published sizes of MLPerf training models, for benchmark folder names.
struct ReferenceModel {
  std::string benchmark;  // as in submission_benchmark
  std::string model;
  double params = 0;
  std::optional<double> train_flop_per_sample;  // forward + backward
  std::string source;
};
const std::vector<ReferenceModel>& ReferenceModels();

struct SyntheticResult {
  std::string name;  // canonical case name
  std::string mode;
  double params = 0;
  double flop_per_sample = 0;
  double samples_per_second = 0;
  double step_ms = 0;
};

// The paradnn cases of a Google Benchmark JSON file: medians of repetitions
// where Google Benchmark reported them. Throws std::runtime_error naming the
// file when it is not Google Benchmark JSON with paradnn counters.
std::vector<SyntheticResult> ReadSyntheticResults(const std::string& path);

struct SideBySide {
  std::string markdown, csv;
};

SideBySide MakeSideBySide(const std::vector<MlperfBenchmark>& real,
                          const std::vector<SyntheticResult>& synthetic,
                          int nearest = 3);

}  // namespace paradnn
