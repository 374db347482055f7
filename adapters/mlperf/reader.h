// A reader for real MLPerf training result logs and the MLPerf score of a
// results folder.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace paradnn {

struct MlperfRun {
  std::string file;
  std::string benchmark;  // submission_benchmark
  std::string status;     // run_stop's status; "" when there is no run_stop
  std::optional<double> time_to_train_min;  // (run_stop - run_start) / 60 s
  std::optional<int64_t> global_batch_size;
  std::optional<double> samples_per_second;
  // Where samples_per_second comes from: "tracked_stats" (the mean
  // throughput the submitter logged), "train_samples" (samples logged at
  // the end over the run time) or "epochs" (epochs x train_samples over the
  // run time).
  std::string samples_per_second_source;
  // "file:line: what" for each line or key that could not be used.
  std::vector<std::string> problems;

  bool passed() const { return status == "success" && time_to_train_min; }
};

// Reads the ":::MLLOG " lines of a log, wherever they start on a line; lines
// without event_type (older logs) are read too.
MlperfRun ReadMlperfLog(const std::string& path);

struct MlperfBenchmark {
  std::string dir;  // the folder holding result_*.txt
  std::string benchmark;
  // From <org>/systems/<system>.json beside <org>/results/<system>/.
  std::string system_name;
  std::string system_problem;  // names the file and field when unusable
  // number_of_nodes x accelerators_per_node, and their model (0 and "" where
  // the description does not say).
  int accelerators = 0;
  std::string accelerator;
  std::vector<MlperfRun> runs;  // in file name order
  double scaling_factor = 1;    // scaling.json, else 1
  std::optional<double> score_min;
  std::string score_note;  // why there is no score
};

// MLPerf's score: sort the passing runs' times, drop the fastest and the
// slowest (a failed run is the dropped slowest; more than one failed run
// gives no score), average the rest, multiply by the scaling factor.
std::optional<double> MlperfScore(const std::vector<MlperfRun>& runs,
                                  double scaling_factor, std::string* note);

// Every folder under root that holds result_*.txt files, sorted by path.
std::vector<MlperfBenchmark> SummarizeMlperf(const std::string& root);

std::string MlperfSummaryJson(const std::vector<MlperfBenchmark>& results);
std::string MlperfSummaryCsv(const std::vector<MlperfBenchmark>& results);

}  // namespace paradnn
