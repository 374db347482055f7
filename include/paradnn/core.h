// paradnn's core, as the host glue (paradnn.h) drives it: a sweep expanded
// into cases, each prepared, stepped and counted on its backend. No Google
// Benchmark in it, and no exception crosses it: every call that can fail
// returns a Status, so a host built with -fno-exceptions -fno-rtti can call
// it. Cases are numbered 0..CaseCount()-1 in registration order.
//
// The glue reaches these functions through one table, paradnn_core_api(),
// which it finds with dlopen when a case is first asked for: a host that
// asks for none loads neither libparadnn nor its dependencies, and a host
// that does keeps them in their own namespace (RTLD_LOCAL).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace paradnn::core {

struct Status {
  enum Code { kOk, kSkipped, kFailed };
  Code code = kOk;
  std::string message;
  bool ok() const { return code == kOk; }
  static Status Skipped(std::string why) { return {kSkipped, std::move(why)}; }
  static Status Failed(std::string why) { return {kFailed, std::move(why)}; }
};

// What Load found; the glue prints and exits where it says so.
struct Loaded {
  Status status;     // kFailed: bad input (file, line, value, expectation)
  std::string help;  // --paradnn_help: the flags' help, to print
  std::vector<std::string> notes;  // grid points skipped, resume notes
};

// Takes the --paradnn_* flags out of argv (argc == nullptr: the environment
// only), loads the sweep (the built-in quickstart when none is given) and
// makes the cases. Loads nothing twice: later calls return the first result.
Loaded Load(int* argc, char** argv);

struct CaseInfo {
  std::string name;  // canonical, the benchmark's name
  // Google Benchmark's iterations per call: the timed steps --paradnn_steps
  // fixes, 1 with rounds (a round, its steps' mean), 0: any.
  int64_t steps = 0;
  bool manual_time = false;  // timed in a child process (--paradnn_isolate)
  // Google Benchmark's repetitions: one per round (--paradnn_rounds), each
  // reporting its round; 1 leaves them to --benchmark_repetitions.
  int64_t repetitions = 1;
  // False for what the run knows without running it (bricks from the
  // bricks database, models with --paradnn_bricks_estimate_only).
  bool registered = true;
  // With rounds, the console shows one row for the case: its median with
  // its interval and rates (--paradnn_display=cases); the other outputs
  // get every round's row.
  bool one_row = false;
};
int CaseCount();
const CaseInfo& Case(int index);

// False on a data-parallel run's ranks other than 0 (unless
// --paradnn_all_ranks): rank 0 reports for all, the others only print why a
// case failed.
bool Reports();

// Key-value pairs for the run's context (config, version, threads, seed).
std::vector<std::pair<std::string, std::string>> Context();
// The backends of the cases the filter (Google Benchmark's) selects, each
// described by its library and settings; loads those backends only.
std::vector<std::pair<std::string, std::string>> BackendContext(
    const std::string& filter);

// Running one case, from its benchmark function, which Google Benchmark may
// call several times:
//   Status s = BeginCase(i, filter, max_steps);  // checks, model prepared
//   if (s.ok()) { for each timed step: if (!Step()) break; }
//   if (s.ok()) s = EndCase(i, iterations, &counters);
// A non-ok Status ends the case: kSkipped when it cannot run here (the
// reason says why), kFailed when it broke. `filter` is Google Benchmark's
// (for the progress count); at most `max_steps` steps follow.
Status BeginCase(int index, const std::string& filter, int64_t max_steps);
// One step of the prepared case; false when it failed (EndCase says why).
bool Step();
// With manual_time: the seconds of step `step` of this call, as the child
// process that ran this call's steps measured them.
double IsolatedStepSeconds(int index, int64_t step);

// A value the case reports beside its time; rates and shares are the
// core's, over its own mean step (step_ms), one clock for all.
struct Counter {
  std::string name;
  double value = 0;
};
Status EndCase(int index, int64_t iterations, std::vector<Counter>* counters);

// A run as the benchmark library reported it, for the journal
// (--paradnn_resume) and the MLPerf outputs.
struct ReportedRun {
  std::string name;        // as reported, suffixes and all
  bool aggregate = false;  // mean, median, ...
  bool error = false;
  int64_t repetition_index = 0;
  int64_t repetitions = 1;
  int64_t iterations = 0;
  double seconds = 0;  // real time accumulated over the iterations
  double time_ms = 0;  // per iteration, as reported
};
void Reported(const ReportedRun& run);

// --paradnn_rounds: measures every case the filter selects in all its rounds
// now, before Google Benchmark calls any (whose calls then report the
// rounds), and returns the context to add: the machine at the end of the
// run. Nothing to do for one round; BeginCase measures them where no
// reporter called this first.
std::vector<std::pair<std::string, std::string>> Measure(
    const std::string& filter);

// Releases the last prepared model, writes the bricks and profile outputs,
// prints "paradnn: N passed, M skipped, K failed" on stderr and returns the
// exit status: 1 when a case failed, else 0.
int Finish();

// The functions above, for the glue. A new member goes at the end and
// raises kApiVersion: a glue compiled against an older header reads only
// the members it knows. A struct that crosses grows at its end and raises
// it too (3: CaseInfo::one_row).
struct Api {
  int version;
  Loaded (*load)(int* argc, char** argv);
  int (*case_count)();
  const CaseInfo& (*case_info)(int index);
  bool (*reports)();
  std::vector<std::pair<std::string, std::string>> (*context)();
  std::vector<std::pair<std::string, std::string>> (*backend_context)(
      const std::string& filter);
  Status (*begin_case)(int index, const std::string& filter, int64_t max_steps);
  bool (*step)();
  double (*isolated_step_seconds)(int index, int64_t step);
  Status (*end_case)(int index, int64_t iterations,
                     std::vector<Counter>* counters);
  void (*reported)(const ReportedRun& run);
  int (*finish)();
  std::vector<std::pair<std::string, std::string>> (*measure)(
      const std::string& filter);
};
inline constexpr int kApiVersion = 3;

}  // namespace paradnn::core

// libparadnn's one entry point for the glue: the table, or null when the
// library is older than `version` asks (its members would be missing).
extern "C" const paradnn::core::Api* paradnn_core_api(int version);
