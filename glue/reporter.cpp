// Host glue: the host's display reporter, as --benchmark_format chose it,
// wrapped so that every run it reports reaches the core (the journal, the
// MLPerf outputs) and the context names the backends that will run.
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <type_traits>
#include <utility>

#include "paradnn/paradnn.h"

namespace paradnn {
namespace {

using Run = benchmark::BenchmarkReporter::Run;

// Google Benchmark 1.8 replaced Run::error_occurred by Run::skipped.
template <typename R, typename = void>
struct HasSkipped : std::false_type {};
template <typename R>
struct HasSkipped<R, std::void_t<decltype(std::declval<R&>().skipped)>>
    : std::true_type {};

template <typename R>
bool Failed(const R& run) {
  if constexpr (HasSkipped<R>::value) {
    return static_cast<int>(run.skipped) != 0;
  } else {
    return run.error_occurred;
  }
}

// Google Benchmark's main returns the default display reporter as a
// std::unique_ptr; up to 1.9 it is a raw pointer the caller owns. Either
// way the wrapper keeps it for the process's life.
benchmark::BenchmarkReporter* Keep(benchmark::BenchmarkReporter* reporter) {
  return reporter;
}
template <typename Owner>
benchmark::BenchmarkReporter* Keep(Owner reporter) {
  return reporter.release();
}

// Whether the display is Google Benchmark's console table (its default):
// --benchmark_format on the command line, else BENCHMARK_FORMAT. JSON and
// CSV on the display keep every row, as files do.
bool ConsoleDisplay() {
  std::string format;
  if (const char* env = std::getenv("BENCHMARK_FORMAT")) format = env;
  std::ifstream in("/proc/self/cmdline");
  std::string arg;
  const std::string flag = "--benchmark_format=";
  while (std::getline(in, arg, '\0')) {
    if (arg.rfind(flag, 0) == 0) format = arg.substr(flag.size());
  }
  return format.empty() || format == "console";
}

// The counters of a case's one row: its interval and rates.
bool OneRowCounter(const std::string& name) {
  for (const char* kept :
       {"step_ms_low", "step_ms_high", "FLOPS", "flops_util", "flops_over_peak",
        "bandwidth_util", "tokens_per_second"}) {
    if (name == kept) return true;
  }
  return false;
}

class Reporter : public benchmark::BenchmarkReporter {
 public:
  explicit Reporter(benchmark::BenchmarkReporter* inner) : inner_(inner) {}

  bool ReportContext(const Context& context) override {
    if (!internal::Core().reports()) return true;
    // Only now is the filter known: describe (and so load) the backends of
    // the selected cases only, and measure their rounds (--paradnn_rounds)
    // before any is reported, so that the context can say what the machine
    // was like at the end.
    const std::string filter = benchmark::GetBenchmarkFilter();
    for (const auto& [key, value] : internal::Core().backend_context(filter)) {
      benchmark::AddCustomContext(key, value);
    }
    for (const auto& [key, value] : internal::Core().measure(filter)) {
      benchmark::AddCustomContext(key, value);
    }
    inner_->SetOutputStream(&GetOutputStream());
    inner_->SetErrorStream(&GetErrorStream());
    return inner_->ReportContext(context);
  }

  void ReportRuns(const std::vector<Run>& runs) override {
    if (internal::Core().reports()) inner_->ReportRuns(Shown(runs));
    for (const Run& run : runs) {
      core::ReportedRun r;
      r.name = run.benchmark_name();
      r.aggregate = run.run_type != Run::RT_Iteration;
      r.error = Failed(run);
      r.repetition_index = run.repetition_index;
      r.repetitions = run.repetitions;
      r.iterations = run.iterations;
      r.seconds = run.real_accumulated_time;
      r.time_ms = run.GetAdjustedRealTime();
      internal::Core().reported(r);
    }
  }

  void Finalize() override {
    if (internal::Core().reports()) inner_->Finalize();
  }

 private:
  // What the display shows of `runs`: a case measured in rounds as one
  // row (core::CaseInfo::one_row), its median's, named by the case, its
  // rounds as iterations, "unstable" in its label where it is; any other
  // benchmark's runs as they are.
  std::vector<Run> Shown(const std::vector<Run>& runs) {
    if (!looked_) {
      looked_ = true;
      for (int i = 0; i < internal::Core().case_count(); ++i) {
        const core::CaseInfo& info = internal::Core().case_info(i);
        if (info.one_row) {
          one_row_[info.name] = static_cast<int>(info.repetitions);
        }
      }
      console_ = ConsoleDisplay();
    }
    if (!console_) return runs;
    std::vector<Run> shown;
    for (const Run& run : runs) {
      const auto it = one_row_.find(run.run_name.function_name);
      if (it == one_row_.end()) {
        shown.push_back(run);
        continue;
      }
      // A case that could not run: its first round's row says why.
      const bool why = Failed(run) && run.run_type == Run::RT_Iteration &&
                       run.repetition_index == 0;
      if (!why && (run.run_type != Run::RT_Aggregate ||
                   run.aggregate_name != "median")) {
        continue;
      }
      Run row = run;
      row.run_type = Run::RT_Iteration;
      row.aggregate_name.clear();
      row.run_name = {};
      row.run_name.function_name = run.run_name.function_name;
      row.iterations = it->second;
      const auto unstable = run.counters.find("unstable");
      const bool erratic =
          unstable != run.counters.end() && unstable->second.value > 0.5;
      row.counters.clear();
      for (const auto& [name, counter] : run.counters) {
        if (OneRowCounter(name)) row.counters[name] = counter;
      }
      if (!why) {
        row.report_label = "median of " + std::to_string(it->second) +
                           " rounds" + (erratic ? ", UNSTABLE" : "");
      }
      shown.push_back(row);
    }
    return shown;
  }

  benchmark::BenchmarkReporter* inner_;
  std::map<std::string, int> one_row_;  // case -> rounds
  bool looked_ = false;                 // one_row_ and console_ are set
  bool console_ = true;
};

}  // namespace

benchmark::BenchmarkReporter* DisplayReporter() {
  static Reporter* reporter =
      new Reporter(Keep(benchmark::CreateDefaultDisplayReporter()));
  return reporter;
}

}  // namespace paradnn
