// Real MLPerf results and paradnn's synthetic cases in one table, with the
// synthetic cases nearest to each real model in params and FLOPs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "adapters/mlperf/reader.h"
#include "analysis/results.h"

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

struct SideBySide {
  std::string markdown, csv;
};

SideBySide MakeSideBySide(const std::vector<MlperfBenchmark>& real,
                          const std::vector<CaseResult>& synthetic,
                          int nearest = 3);

}  // namespace paradnn
