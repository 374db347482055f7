// The sweep this process registered, shared by registration and reporting.
#pragma once

#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "generators/bricks.h"
#include "generators/cost.h"
#include "plugin/flags.h"

namespace paradnn {

enum class Status { kNotRun, kPassed, kSkipped, kFailed };

// One registered case: a model of the sweep, or (--paradnn_bricks) one of
// their unique layers on its own.
struct Entry {
  std::string name;  // canonical
  std::string backend;
  DType dtype = DType::kFp32;
  Mode mode = Mode::kTrain;
  std::optional<Case> model;
  std::optional<Brick> brick;
  std::vector<int> layer_bricks;  // a model's layers, as brick entries
  Cost cost;
  int64_t batch = 0;
  Status status = Status::kNotRun;
  // Wall-clock milliseconds around the last Prepare, for MLPerf logs.
  int64_t init_start_ms = 0, init_stop_ms = 0;
  double step_ms = 0;                 // per step, in the last timed loop
  std::vector<double> step_times_ms;  // each step of the last timed loop

  double MedianStepMs() const;
  double benchmark_s = 0;      // in all of Google Benchmark's calls
  double isolated_step_s = 0;  // measured by the child, --paradnn_isolate
  std::optional<StepProfile> profile;  // --paradnn_profile
  // Counters the isolated child measured beyond its time (the profile's).
  std::map<std::string, double> child_counters;

  Graph BuildGraph() const {
    return model ? model->model.BuildGraph() : brick->BuildGraph(mode);
  }
};

struct Run {
  std::vector<Entry> entries;
  std::map<std::string, int> index;     // canonical name -> entries
  std::set<std::string> unique_layers;  // --paradnn_bricks: single layers
  Options flags;
  RunOptions options;
  int64_t max_memory = 0;
  std::map<std::string, double> peak_flops;  // from --paradnn_platform
  std::ofstream journal;                     // --paradnn_resume
  bool progress = true;
  bool isolate = false;  // --paradnn_isolate, in the parent
  // The prepared model of the case running now: Google Benchmark calls a
  // case's function several times, and a model is built once per case.
  int prepared = -1;
  std::unique_ptr<Runner> runner;
  // Progress.
  int to_run = -1;
  int started = 0;
  std::chrono::steady_clock::time_point start;
};

Run& TheRun();

}  // namespace paradnn
