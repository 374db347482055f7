// paradnn's cases in a Google Benchmark JSON results file: the one reader
// that reports, comparisons and the MLPerf side-by-side table share.
#pragma once

#include <array>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backends/profile.h"
#include "generators/spec.h"
#include "records/stack.h"

namespace paradnn {

struct CaseResult {
  Case c;
  std::string name;  // canonical
  double params = 0;
  double flop_per_step = 0;
  double flop_per_sample = 0;
  double bytes_per_step = 0;
  double intensity = 0;
  double step_ms = 0;  // median over rounds (or repetitions)
  // --paradnn_rounds: each round's step time, in order, the interval of
  // step_ms and the rounds' spread (records/rounds.h). Without rounds (or
  // repetitions in one process) one entry, step_ms, and no interval.
  std::vector<double> rounds_ms;
  double step_ms_low = 0, step_ms_high = 0, round_spread = 0;
  bool unstable = false;
  double samples_per_second = 0;  // over all ranks of a data-parallel run
  double flops = 0;               // FLOP/s, per rank
  double allreduce_frac = 0;      // time_allreduce_frac, where reported
  // Shares of step time per operation class, where run with
  // --paradnn_profile (counters time_<class>_frac).
  bool profiled = false;
  std::array<double, kOpClasses> time_frac{};
};

struct Results {
  std::string path;
  int world_size = 1;             // the context's paradnn_world_size
  Stack stack;                    // what the context says it ran on
  std::vector<CaseResult> cases;  // sorted by name
  // Cases that reported an error, each once (a round or repetition reports
  // it again), with its message.
  std::map<std::string, std::string> failed;
};

// Reads a results file; per case the median aggregate where Google Benchmark
// reported one, else the median of its repetitions. Throws
// std::runtime_error naming the file when it is not Google Benchmark JSON,
// is empty, or has no paradnn counters.
Results ReadResults(const std::string& path);

// The JSON in a file; std::runtime_error "<path>: cannot open the <what>"
// or "<path>: not JSON: ..." otherwise.
nlohmann::json ReadJsonFile(const std::string& path, const std::string& what);

// Parses JSON as Google Benchmark writes it: its bare NaN, -NaN, Infinity
// and -Infinity (a counter's cv over repetitions where the counter is 0,
// for one) are not JSON; they become null. Throws nlohmann's parse_error.
nlohmann::json ParseBenchmarkJson(const std::string& text);

// v with `precision` significant digits, as tables and plot titles show it.
std::string Num(double v, int precision = 4);

// A run's step time in milliseconds: paradnn's step_ms, the time its rates
// divide by; in other results (and paradnn's from before it), Google
// Benchmark's real_time, per iteration, in time_unit.
double StepMs(const nlohmann::json& run);

double Median(std::vector<double> v);
// The mean (0 for none).
double Mean(const std::vector<double>& v);
// The p-th percentile (0..100), linear between order statistics.
double Percentile(std::vector<double> v, double p);

}  // namespace paradnn
