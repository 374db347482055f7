// paradnn's own flags: --paradnn_*, taken out of argv before Google
// Benchmark sees it, with PARADNN_* environment variables as defaults.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace paradnn {

class FlagError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Rounds a case is measured in by default: three processes, whose median
// a single slow one does not move, and with the spread of their group's
// rounds an interval for a re-run (docs/running.md, "Rounds").
inline constexpr int kDefaultRounds = 3;

struct Options {
  bool help = false;
  std::string config;              // empty: the built-in default
  std::vector<std::string> cases;  // canonical names
  // Family files (generators/declared.h) whose families cases may name.
  std::vector<std::string> families;
  // ONNX cases start from the file's weights, not the seed's values.
  bool onnx_weights = false;
  std::vector<std::string> backends, dtypes, modes;  // empty: the config's
  int threads = 0;         // 0: the config's, else the usable CPUs
  int64_t seed = -1;       // -1: the config's
  int64_t max_memory = 0;  // bytes; 0: 80% of available memory
  bool progress = true;
  std::string platform;  // peaks for flops_util (paradnn calibrate)
  bool bricks = false;   // register each unique layer too (DLBricks)
  int64_t steps = 0;     // fixed steps per case (0: Google Benchmark decides)
  double case_timeout = 0;  // seconds for preparation and warm-up; 0: none
  bool isolate = false;     // each case in a child process
  // Each case once per round, each in a fresh process, the cases in a new
  // random order each round; its figure is the median of its rounds.
  int rounds = kDefaultRounds;
  // The console's rows with rounds: "cases" (one a case: its median and
  // interval) or "rounds" (each round's row and Google Benchmark's
  // aggregates, as the JSON has them).
  std::string display = "cases";
  // Every timed step stretched by this factor (a spin inside the step):
  // a known difference on any backend, for checking comparisons.
  double test_stretch = 1;
  bool fuse = true;         // inference's fused groups as one unit (PlanFusion)
  bool pin = false;         // the cases' OpenMP threads on a core each
  bool profile = false;     // per-operation-class shares of step time
  std::string profile_out;  // per-operation times of every case, as JSON
  bool counters = false;    // perf events per step (PerfCounters)
  std::string shard;        // "I/N"; empty: the scheduler's, else all cases
  int shard_count = 0;      // N for Kubernetes Indexed Jobs
  std::string resume;       // journal of finished cases, read and appended
  int bricks_granularity = 1;  // layers per brick, at most
  std::string bricks_out;      // models' step times constructed from bricks
  std::string bricks_db;       // bricks measured before, reused, extended
  bool bricks_estimate_only = false;  // models from bricks, not run
  int bricks_check = 0;  // models run plainly beside the estimate, at random
  int64_t l3_bytes = 0;  // bytes; 0: the kernel's, else found (L3Bytes)
  double dist_timeout = 60;  // seconds a rank waits for the others
  bool all_ranks = false;    // every rank reports, not only rank 0
  // MLPerf outputs (adapters/mlperf): a log per case run, a results package.
  std::string mllog, mlperf_package;
  // Empty: the config's, else "paradnn", the host name and "onprem".
  std::string mlperf_org, mlperf_system, mlperf_status;
  // The flags given on the command line, by name, as given (a switch:
  // "true"; a repeated flag: its last value).
  std::vector<std::pair<std::string, std::string>> given;
};

// Removes every --paradnn_* argument (and the value of "--paradnn_x value")
// from argv. With argc == nullptr only the environment is read.
Options ParseFlags(int* argc, char** argv);
std::string FlagsHelp();

// "8G", "512M", "1000000" -> bytes.
int64_t ParseSize(const std::string& text);

}  // namespace paradnn
