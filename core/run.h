// The run this process loaded: its cases and what each measured, shared by
// the core's files (session, case, isolate, outputs, reports).
#pragma once

#include <array>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "core/flags.h"
#include "core/moments.h"
#include "distributed/world.h"
#include "generators/bricks.h"
#include "generators/cost.h"
#include "paradnn/core.h"

namespace paradnn {

enum class CaseStatus { kNotRun, kPassed, kSkipped, kFailed };

// Where a brick's step finds its data (docs/bricks.md, "Warm and cold
// caches"): where its last step left them, or flushed but its input
// (Runner::Cool). A model's steps are all warm.
enum class Caches { kWarm, kCold };
constexpr int kCachesKinds = 2;
const char* ToString(Caches caches);  // "warm", "cold"
// "", "cold_": the prefix of their fields in outputs.
std::string FieldPrefix(Caches caches);

// Which of a case's calls its steps come from: all, or the even or the odd
// ones, whose times set side by side say how far a time moves between
// halves of the calls that made it.
enum class Calls { kAll, kEven, kOdd };

// One registered case: a model of the sweep, or (--paradnn_bricks) one of
// their unique layers on its own.
struct Entry {
  std::string name;  // canonical
  std::string backend;
  DType dtype = DType::kFp32;
  Mode mode = Mode::kTrain;
  std::optional<Case> model;
  std::optional<Brick> brick;
  // A model's layers, as brick entries, and its gradient sums after them
  // (GradientSumsOf): the bricks its step time is constructed from.
  std::vector<int> layer_bricks;
  // Runs of those layers timed as chains too (StacksOf): the run's first
  // layer in layer_bricks, its length, and its chain's brick entry.
  struct Stack {
    size_t first = 0;
    int layers = 0;
    int chain = 0;
  };
  std::vector<Stack> layer_stacks;
  int64_t layers = 0;  // of the model, as many as its layer bricks cover
  Cost cost;
  int64_t batch = 0;
  CaseStatus status = CaseStatus::kNotRun;
  std::string why;  // the reason of a skip or failure
  // Wall-clock milliseconds around the last Prepare, and around the timed
  // steps of each call of the case's benchmark function, for MLPerf logs.
  int64_t init_start_ms = 0, init_stop_ms = 0;
  std::vector<std::pair<int64_t, int64_t>> timed_ms;
  double step_ms = 0;                 // per step, in the last timed loop
  std::vector<double> step_times_ms;  // each step of the last timed loop
  // Which caches each of the last loop's steps started with: a brick's
  // take turns (Caches).
  std::vector<Caches> step_caches;
  // When each of the last loop's steps started, in seconds of the run.
  std::vector<double> step_at_s;
  // Each step of every call that timed some (probes and repetitions
  // pooled), by the caches it started with: with repetitions interleaved
  // across cases, every case meets the machine's quiet and busy moments.
  std::array<std::vector<double>, kCachesKinds> all_step_times_ms;
  // When each of them started, in seconds of the run (an isolated child's
  // steps: when their call started): the machine's moment it met.
  std::array<std::vector<double>, kCachesKinds> all_step_at_s;
  // How many steps of each kind each call that timed some added to them,
  // call by call (Calls).
  std::array<std::vector<size_t>, kCachesKinds> call_steps;
  // How strongly each kind's steps follow the moments' contrast
  // (FitMoments), once the moments are fit: 0 where they were not.
  std::array<double, kCachesKinds> sensitivity{};
  // A brick's step times from the bricks database (--paradnn_bricks_db),
  // taken each way (CaseTime), when it was measured before in this context
  // and is not run again.
  std::array<std::array<std::optional<double>, kCachesKinds>, kCaseTimes>
      known_step_ms;

  // The steps of `calls` that started with `caches`, as (start, ms).
  StepSeries Steps(Caches caches, Calls calls = Calls::kAll) const;
  // The time (CaseMs) of the timed steps of `calls` that started with
  // `caches` or colder ones, which did more work: the least of the kinds'
  // times. Without any, of the nearest warmer kind.
  double StepMs(Caches caches, const Moments& moments, CaseTime how,
                Calls calls = Calls::kAll) const;
  // Whether its times can be taken from the even and the odd calls apart:
  // two calls timed, or times from the bricks database, the same for both.
  bool TimedInHalves() const;
  // |time of the even calls' warm steps / the odd calls' - 1|: how far the
  // measurement itself moves. None with fewer than two calls.
  std::optional<double> HalvesDifference(const Moments& moments,
                                         CaseTime how) const;
  double benchmark_s = 0;  // in all of Google Benchmark's calls
  // --paradnn_isolate: the steps of this call, as its child measured them.
  std::vector<double> isolated_steps_s;
  std::optional<StepProfile> profile;  // --paradnn_profile
  // Counters the isolated child measured beyond its time (the profile's).
  std::map<std::string, double> child_counters;

  Graph BuildGraph() const {
    return model ? model->model.BuildGraph() : brick->BuildGraph(mode);
  }
  // How many kinds of Caches its steps take turns at: a model's all warm,
  // a brick's warm and cold.
  int StepKinds() const { return brick ? kCachesKinds : 1; }
};

// The L2 cache of one core, in bytes: the kernel's, else CPUID's (1 MiB
// where neither says).
int64_t L2Bytes();
// The L3 a core reads, in bytes, found on first use: --paradnn_l3_bytes,
// else the kernel's, else the one a bricks database of this CPU was
// measured with, else measured (MeasureL3Bytes). Layer bricks' cold steps
// and estimates take it; L3Source() says where it came from.
int64_t L3Bytes();
const std::string& L3Source();

struct Run {
  std::optional<core::Loaded> loaded;  // the first Load's result
  std::vector<Entry> entries;
  std::vector<core::CaseInfo> infos;    // entries as the glue sees them
  std::map<std::string, int> index;     // canonical name -> entries
  std::set<std::string> unique_layers;  // --paradnn_bricks: single layers
  // --paradnn_bricks_db: its records as read, and the context bricks are
  // measured in, per backend, once described (core/bricks_db.cpp).
  std::vector<nlohmann::json> bricks_db;
  std::map<std::string, nlohmann::json> brick_context;
  int64_t l3_bytes = 0;  // L3Bytes(), once found
  std::string l3_source;
  // The machine's moments over this run's steps (FitRunMoments), fit once
  // the cases have run, and the way bricks and their models take a case's
  // time from its steps: the one whose mean difference between the halves
  // of each case's calls (case_time_halves, each way's) is the smallest.
  Moments moments;
  CaseTime case_time = CaseTime::kQuiet;
  std::array<std::optional<double>, kCaseTimes> case_time_halves;
  Options flags;
  RunOptions options;
  // Data-parallel runs: this process's rank, and the communicator, joined
  // on the first case (connect_error: why it could not be).
  World world;
  std::unique_ptr<Communicator> comm;
  std::string connect_error;
  // The communicator's totals when the current call's timed steps began,
  // and what its timed steps added to them.
  double comm_seconds0 = 0, comm_seconds = 0;
  int64_t comm_bytes0 = 0, comm_bytes = 0;
  std::string config;  // the sweep's file, or the built-in's name
  std::string shard;   // "I/N" when this process runs a shard
  int64_t max_memory = 0;
  // Peaks per device and data type, from --paradnn_platform.
  std::map<std::string, std::map<std::string, double>> device_peaks;
  std::ofstream journal;                  // --paradnn_resume
  std::set<std::string> system_backends;  // in the MLPerf package's system
  bool progress = true;
  bool isolate = false;         // --paradnn_isolate, in the parent
  bool isolated_child = false;  // this process runs a case for a parent
  // The prepared model of the case running now: Google Benchmark calls a
  // case's function several times, and a model is built once per case.
  int prepared = -1;
  std::unique_ptr<Runner> runner;
  std::string step_error;  // why the last Step failed
  std::string filter;      // Google Benchmark's, for progress and context
  // Start of the current call of a case's benchmark function.
  std::chrono::steady_clock::time_point call_start;
  // What steps' start times count from.
  std::chrono::steady_clock::time_point epoch =
      std::chrono::steady_clock::now();
  // Progress.
  int to_run = -1;
  int started = 0;
  std::chrono::steady_clock::time_point start;
};

Run& TheRun();

// Whether Google Benchmark's filter selects a case, matched as it matches;
// the filter is compiled once.
std::function<bool(const std::string&)> Selector(const std::string& filter);

// A case's profile as counters (time_<class>_frac), from its own profile or
// from the one its isolated child measured.
std::vector<core::Counter> ProfileCounters(const Entry& e);

// --paradnn_isolate: runs this call's `steps` steps of the case in a child
// process (this binary again) and keeps each step's time as the child
// measured it; a crash fails the case only, a skip there is a skip here.
core::Status RunIsolated(Run& run, Entry& e, int64_t steps);

// In such a child (PARADNN_ISOLATED_OUT names the file): writes how its call
// of the case ended, its steps' times and its profile, for the parent.
void WriteIsolatedResult(const Entry& e, const core::Status& status);

}  // namespace paradnn
