// The run's cases: one Entry per case from the sweep to its result (its
// model or brick, its cost, how the glue registers it, its steps and
// rounds), made once when the run loads.
#pragma once

#include <array>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "bricks/bricks.h"
#include "bricks/estimate.h"
#include "core/settings.h"
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
  std::string counters_missing;        // Entry::counters_missing, its own
  int64_t start_ms = 0, stop_ms = 0;   // wall clock around the child
  double at_s = 0;                     // its start, on the steady clock
  std::optional<StepProfile> profile;  // where the child profiled
};

// One case of the run, from the sweep to its result: a model of the sweep,
// or (--paradnn_bricks) one of their unique layers on its own; what it is,
// how the glue registers it, and what it measured.
struct Entry {
  std::string name;     // canonical
  core::CaseInfo info;  // as the glue registers it
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
  // --paradnn_counters: perf events per step ("cycles_per_step", ...), and
  // why hardware events were not counted where they were not.
  std::map<std::string, double> perf;
  std::string counters_missing;
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

struct CaseTable {
  std::vector<Entry> entries;           // in registration order
  std::map<std::string, int> index;     // canonical name -> entries
  std::set<std::string> unique_layers;  // --paradnn_bricks: single layers

  int size() const { return static_cast<int>(entries.size()); }
  // The entry of a canonical name, or nullptr.
  const Entry* Find(const std::string& name) const;
};

// The groups a case's backend runs fused (generators/fusion.h): its
// inference on a backend that fuses, unless --paradnn_fuse=false; none
// else.
FusionPlan PlanOf(const Graph& g, const std::string& backend, Mode mode,
                  const Settings& settings);

// The table of a run's models and, with --paradnn_bricks, their unique
// layers, each once, with its cost from the cost model, registered as the
// settings say (steps, rounds, isolation, display); bricks named on their
// own (`bricks`) join them. Bricks come first, so that the models after
// them run as in a sweep without bricks.
CaseTable MakeCaseTable(std::vector<Case> cases, std::vector<BrickCase> bricks,
                        const Settings& settings);

// --paradnn_bricks_check=N: N of the table's models, chosen at random from
// `seed`, stay registered to run plainly; every other model is estimated
// only.
void KeepCheckedModels(int checked, uint64_t seed, CaseTable* table);

}  // namespace paradnn
