// Real MLPerf results and paradnn's synthetic cases in one table, with the
// synthetic cases nearest to each real model in params and FLOPs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "adapters/mlperf/reader.h"
#include "generators/cost.h"
#include "generators/spec.h"
#include "records/results.h"

namespace paradnn {

// Published sizes of MLPerf models (training, and llama3.1-8b of MLPerf
// Inference), for benchmark folder names,
// and each one's synthetic twin: the paradnn model built from the same
// published architecture figures, as far as a family can express it.
struct ReferenceModel {
  std::string benchmark;  // as in submission_benchmark
  std::string model;
  double params = 0;
  std::optional<double> train_flop_per_sample;  // forward + backward
  std::string source;
  // The twin's canonical model name at batch 1 ("" : no family expresses
  // the model; `differences` says why), and what it leaves out or does
  // differently.
  std::string twin;
  std::string differences;
  // The twin's params and training FLOPs per sample, by the cost model,
  // are within this fraction of the published ones.
  double tolerance = 0;
  // The batch per accelerator the reference implementation runs at, for a
  // twin beside no submission (0: none published).
  int64_t reference_batch = 0;
  // Where the twin is too large for one machine, the model run here
  // instead (canonical, at batch 1) and what it changes; "": the twin.
  std::string runs_as;
  std::string runs_as_why;
};
const std::vector<ReferenceModel>& ReferenceModels();
// Makes `model` (a canonical model name at batch 1 of a family this process
// knows: an ONNX file's, "resnet50.onnx/batch:1") the twin of `benchmark`
// in place of the built-in one, its differences naming `source` (the file)
// and the twin it replaced, its tolerance the distance of its sizes from
// the published ones. Throws SpecError for a benchmark not in the table.
void UseTwin(const std::string& benchmark, const std::string& model,
             const std::string& source);
// The model of a benchmark (submission_benchmark), or nullptr.
const ReferenceModel* FindReference(const std::string& benchmark);

// The twin at a batch, e.g. the submission's per accelerator.
ModelSpec TwinModel(const ReferenceModel& m, int64_t batch);
// The model run here for it at a batch: `runs_as`, else the twin.
ModelSpec RunModel(const ReferenceModel& m, int64_t batch);

// An MLPerf result beside its model's twin at the submission's batch per
// accelerator, and the twin's training cases in paradnn's results. A twin
// of a model with no result given (real: nullptr) is at the reference
// implementation's batch per accelerator, where it is published.
struct TwinComparison {
  const MlperfBenchmark* real = nullptr;
  const ReferenceModel* model = nullptr;
  int64_t global_batch = 0;  // of the first passing run; 0: not logged
  ModelSpec twin;            // at the batch per accelerator, else 1
  Cost cost;                 // the twin's, by the cost model
  ModelSpec run;             // what runs here (RunModel), at twin's batch
  double flop_per_sample = 0;
  double accelerator_rate = 0;  // median samples/s over accelerators; 0
  std::vector<const CaseResult*> here;

  // Whether the twin's batch is the submission's per accelerator (global
  // batch and accelerators known), not 1.
  bool batch_known() const {
    return real != nullptr && global_batch > 0 && real->accelerators > 0;
  }
};
// One per result whose benchmark has a twin, in the order of `real`; then
// one per twin of a model with no result in `real`.
std::vector<TwinComparison> CompareTwins(
    const std::vector<MlperfBenchmark>& real,
    const std::vector<CaseResult>& synthetic);

struct SideBySide {
  std::string markdown, csv;
};

SideBySide MakeSideBySide(const std::vector<MlperfBenchmark>& real,
                          const std::vector<CaseResult>& synthetic,
                          int nearest = 3);

}  // namespace paradnn
