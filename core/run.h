// The run this process loaded, as the core's files pass it to each other:
// its settings (read-only once loaded), its table of cases, and the state
// that changes as it runs (the case running now, progress, rounds, the
// journal, the communicator). One Run per process, reached only by the
// core's API (core/api.cpp); everything below it takes the Run, or the part
// of it it needs, as an argument.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "core/case_table.h"
#include "core/journal.h"
#include "core/settings.h"
#include "paradnn/core.h"

namespace paradnn {

// The current call of a case's benchmark function: the model prepared for
// it (Google Benchmark calls a case's function several times, and a model
// is built once per case), why its last step failed, when the call began,
// and the communicator's totals around its timed steps.
struct Execution {
  // The graph of entry `graph_of`, built once for all of its calls: the
  // checks and the preparation read the same one.
  int graph_of = -1;
  std::optional<Graph> graph;
  int prepared = -1;  // the entry whose model `runner` runs
  std::unique_ptr<Runner> runner;
  std::string step_error;
  // An isolated call's steps, as its child timed them (milliseconds).
  std::vector<double> child_ms;
  std::chrono::steady_clock::time_point call_start;
  // The communicator's totals when the timed steps began, and what they
  // added to them.
  double comm_seconds0 = 0, comm_seconds = 0;
  int64_t comm_bytes0 = 0, comm_bytes = 0;
};

// Progress over the cases Google Benchmark's filter selects.
struct Progress {
  std::string filter;  // Google Benchmark's, for progress and rounds
  int to_run = -1;     // counted at the first case
  int started = 0;
  std::chrono::steady_clock::time_point start;
};

struct Run {
  std::optional<core::Loaded> loaded;  // the first Load's result
  Settings settings;
  CaseTable cases;
  // --paradnn_bricks_db: its records as read, and the context bricks are
  // measured in, per backend, once described (core/bricks_db.cpp).
  std::vector<nlohmann::json> bricks_db;
  std::map<std::string, nlohmann::json> brick_context;
  int64_t l3_bytes = 0;  // L3Bytes(), once found
  std::string l3_source;
  Journal journal;                        // --paradnn_resume
  std::set<std::string> system_backends;  // in the MLPerf package's system
  // Data-parallel runs: the communicator, joined on the first case
  // (connect_error: why it could not be).
  std::unique_ptr<Communicator> comm;
  std::string connect_error;
  Execution current;
  Progress progress;
  // --paradnn_rounds, in the parent: every selected case once per round,
  // each time in a child, measured when the run starts (MeasureRounds).
  bool rounds_measured = false;
  bool machine_sampled = false;        // by StartRun
  std::string machine_use;             // CPUs busy and stolen over the rounds
  bool isolated_child = false;         // this process runs a case for a parent
  bool counters_missing_said = false;  // SayCountersMissing, once a run
  std::string child_out;               // where such a child writes its result
};

// The run's life, as the API (paradnn/core.h) drives it; each of these is
// that API's function of the same name on `run`.
core::Loaded Load(Run& run, int* argc, char** argv);
std::vector<std::pair<std::string, std::string>> Context(const Run& run);
std::vector<std::pair<std::string, std::string>> BackendContext(
    const Run& run, const std::string& filter);
std::vector<std::pair<std::string, std::string>> Measure(
    Run& run, const std::string& filter);
core::Status BeginCase(Run& run, int index, const std::string& filter,
                       int64_t max_steps);
bool Step(Run& run);
double IsolatedStepSeconds(const Run& run, int index, int64_t step);
// `all_timed`: this call timed every step the case will time
// (--paradnn_steps, or an isolated child's call), so it is profiled now.
core::Status EndCase(Run& run, int index, int64_t iterations, bool all_timed,
                     std::vector<core::Counter>* counters);
void Reported(Run& run, const core::ReportedRun& reported);
int Finish(Run& run);

// Whether Google Benchmark's filter selects a case, matched as it matches;
// the filter is compiled once.
std::function<bool(const std::string&)> Selector(const std::string& filter);

// The L3 a core reads, in bytes, found on first use: --paradnn_l3_bytes,
// else the kernel's, else the one a bricks database of this CPU was
// measured with, else measured (MeasureL3Bytes). Layer bricks' cold steps
// and estimates take it; L3Source() says where it came from.
int64_t L3Bytes(Run& run);
const std::string& L3Source(Run& run);

// A case's profile as counters (time_<class>_frac), from its own profile or
// from the one its isolated child measured; the communication class only
// where ranks communicate (`world_size` > 1).
std::vector<core::Counter> ProfileCounters(const Entry& e, int world_size);

// Every counter of a case's row, from its timed steps' mean (step_ms): its
// rates, its shares of the platform's roofs, its rounds, its profile and
// counts (ProfileCounters), its all-reduces.
void AddCounters(const Run& run, const Entry& e,
                 std::vector<core::Counter>* counters);

// Runs the case's steps in a child process (a fork of this one) and gives
// each step's time as the child measured it; a crash fails the case only,
// a skip there is a skip here. `steps`: exactly that many, or (0) as a
// round without --paradnn_steps: after a warm-up until its steps settle,
// at least a tenth of a second of them.
// `profile`: the child profiles too, if the run does.
ChildResult RunIsolated(Run& run, const Entry& e, int64_t steps, bool profile);

// In such a child: writes how its call of the case ended, its steps' times
// and its profile to run.child_out, for the parent.
void WriteIsolatedResult(const Run& run, const Entry& e,
                         const core::Status& status);

// --paradnn_rounds: runs every case the filter selects once per round, each
// round in a new random order (RoundOrder), each case in a child; then each
// case's summary. Once per run: when the run starts (the reporter's
// context) or at its first case. Returns the context to add: the machine
// at the end.
std::vector<std::pair<std::string, std::string>> MeasureRounds(Run& run);

// The order round `round` (from 0) runs `cases` in: a permutation drawn
// from the run's seed and the round, a new one each round.
std::vector<int> RoundOrder(std::vector<int> cases, uint64_t seed, int round);

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

// Progress: the line for the next of the selected cases starting.
void NoteProgress(Run& run, const std::string& what);

}  // namespace paradnn
