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
#include "bricks/bricks.h"
#include "bricks/estimate.h"
#include "core/flags.h"
#include "distributed/world.h"
#include "generators/cost.h"
#include "paradnn/core.h"
#include "records/rounds.h"

namespace paradnn {

enum class CaseStatus { kNotRun, kPassed, kSkipped, kFailed };

// Where a brick's step finds its data (docs/bricks.md, "Timing"): where its
// last step left them, or flushed but its input (Runner::Cool). A model's steps
// are all warm.
enum class Caches { kWarm, kCold };
constexpr int kCachesKinds = 2;
const char* ToString(Caches caches);  // "warm", "cold"
// "", "cold_": the prefix of their fields in outputs.
std::string FieldPrefix(Caches caches);

// One step a case timed.
struct StepRecord {
  double at_s = 0;  // when it started, on the steady clock, in seconds
  double ms = 0;
  Caches caches = Caches::kWarm;
  int call = 0;  // the call of the case's benchmark function it ran in
};

// Everything a case timed, in order: one record per step, and per call of
// its benchmark function the wall-clock milliseconds around its timed
// steps (for MLPerf logs).
struct StepLog {
  std::vector<StepRecord> steps;
  std::vector<std::pair<int64_t, int64_t>> calls;

  // A call begins at `now_ms`; its steps follow.
  void BeginCall(int64_t now_ms) { calls.emplace_back(now_ms, 0); }
  void Add(double at_s, double ms, Caches caches);
  // The warm steps of the last call, in milliseconds.
  std::vector<double> LastCall() const;
  // Every step of that kind, all calls pooled (probes and repetitions).
  std::vector<double> Of(Caches caches) const;
};

// One call of a case's steps in a child process (a fork of this one): how it
// ended, its steps as the child timed them, and its profile's counters.
struct ChildResult {
  core::Status status;
  std::vector<double> warm_ms, cold_ms;
  std::map<std::string, double> counters;
  int64_t start_ms = 0, stop_ms = 0;  // wall clock around the child
  double at_s = 0;                    // its start, on the steady clock
};

// One registered case: a model of the sweep, or (--paradnn_bricks) one of
// their unique layers on its own: what it is, and the log of its steps.
struct Entry {
  std::string name;  // canonical
  std::string backend;
  DType dtype = DType::kFp32;
  Mode mode = Mode::kTrain;
  std::optional<Case> model;
  std::optional<Brick> brick;
  // A model's bricks (--paradnn_bricks): its layers, its gradient sums,
  // its recurrent runs' chains and its context's step cost, as indices of
  // brick entries.
  ModelBricks bricks;
  // A brick: the most bytes a step of a model it is in moves (the cost
  // model's), which decides whether it needs cold steps (ModelIsCold).
  int64_t model_bytes = 0;
  int64_t layers = 0;  // of the model, as many as its layer bricks cover
  Cost cost;
  int64_t batch = 0;
  CaseStatus status = CaseStatus::kNotRun;
  std::string why;  // the reason of a skip or failure
  // Wall-clock milliseconds around the last Prepare, for MLPerf logs.
  int64_t init_start_ms = 0, init_stop_ms = 0;
  // Every step timed: warm in the timed loops (an isolated case's as its
  // child measured them); a brick's cold steps after its timed loop.
  StepLog log;
  double step_ms = 0;  // the mean of the last call's steps
  // A brick's times from the bricks database (--paradnn_bricks_db), when it
  // was measured before in this context and is not run again.
  std::array<std::optional<BrickTime>, kCachesKinds> known;

  // A brick's time of each kind: from its steps, else from the database.
  std::optional<BrickTime> Time(Caches caches) const;
  double benchmark_s = 0;              // in all of Google Benchmark's calls
  std::optional<StepProfile> profile;  // --paradnn_profile
  // Counters the isolated child measured beyond its time (the profile's).
  std::map<std::string, double> child_counters;
  // --paradnn_rounds: each round's child, in the order of rounds, and
  // what they say together (its median, interval, spread).
  std::vector<ChildResult> rounds;
  std::optional<RoundSummary> summary;

  Graph BuildGraph() const {
    return model ? model->model.BuildGraph() : brick->BuildGraph(mode);
  }
};

// Now on the wall clock, in milliseconds since the epoch (MLPerf logs' and
// calls' spans), and a steady clock's time point in seconds (steps' starts).
int64_t NowMs();
double SteadySeconds(std::chrono::steady_clock::time_point t);

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
  // Peaks per device and data type, and each device's memory bandwidth
  // (bytes/s), from --paradnn_platform.
  std::map<std::string, std::map<std::string, double>> device_peaks;
  std::map<std::string, double> device_bandwidth;
  std::ofstream journal;                  // --paradnn_resume
  std::set<std::string> system_backends;  // in the MLPerf package's system
  bool progress = true;
  bool isolate = false;  // --paradnn_isolate, in the parent
  // --paradnn_rounds in the parent: every selected case once per round,
  // each time in a child, measured when the run starts (MeasureRounds).
  int rounds = 1;
  bool rounds_measured = false;
  bool machine_sampled = false;  // by StartRun
  std::string machine_use;       // CPUs busy and stolen over the rounds
  bool isolated_child = false;   // this process runs a case for a parent
  std::string child_out;         // where such a child writes its result
  // The prepared model of the case running now: Google Benchmark calls a
  // case's function several times, and a model is built once per case.
  int prepared = -1;
  std::unique_ptr<Runner> runner;
  std::string step_error;  // why the last Step failed
  std::string filter;      // Google Benchmark's, for progress and context
  // Start of the current call of a case's benchmark function.
  std::chrono::steady_clock::time_point call_start;
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

// Runs the case's steps in a child process (a fork of this one) and gives
// each step's time as the child measured it; a crash fails the case only,
// a skip there is a skip here. `steps`: exactly that many, or (0) as a
// round without --paradnn_steps: after a warm-up until its steps settle,
// at least a tenth of a second of them.
// `profile`: the child profiles too, if the run does.
ChildResult RunIsolated(Run& run, const Entry& e, int64_t steps, bool profile);

// --paradnn_rounds: runs every case the filter selects once per round, each
// round in a new random order, each case in a child; then each case's
// summary. Once per run: when the run starts (the reporter's context) or at
// its first case. Returns the context to add: the machine at the end.
std::vector<std::pair<std::string, std::string>> MeasureRounds(Run& run);

// The run's cases start: once per run, before the first (the reporter's
// context, else the first case), the machine is sampled for a quarter of a
// second (the CPUs this process may use, SMT, transparent huge pages, the
// load average, how busy the CPUs are and the time stolen) and a busy one
// is warned about; returns the context (paradnn_machine_start_*). Not at
// load: a host that registers paradnn's cases and runs none pays nothing.
std::vector<std::pair<std::string, std::string>> StartRun(Run& run);

// What a run's rounds say at its end: how wide the cases' intervals are,
// how many are unstable and how busy the machine was (a summary line);
// each unstable case, with its rounds;
// with one round, that a re-run may move its figures, and by how much this
// CPU's last run with rounds saw them move.
std::vector<std::string> RoundsNotes(const Run& run);

// Progress: the line for the next of `to_run` cases starting.
void NoteProgress(Run& run, const std::string& what);

// In such a child: writes how its call of the case ended, its steps' times
// and its profile to run.child_out, for the parent.
void WriteIsolatedResult(const Run& run, const Entry& e,
                         const core::Status& status);

}  // namespace paradnn
