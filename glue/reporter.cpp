// Host glue: the host's display reporter, as --benchmark_format chose it,
// wrapped so that every run it reports reaches the core (the journal, the
// MLPerf outputs) and the context names the backends that will run.
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
    if (internal::Core().reports()) inner_->ReportRuns(runs);
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
  benchmark::BenchmarkReporter* inner_;
};

}  // namespace

benchmark::BenchmarkReporter* DisplayReporter() {
  static Reporter* reporter =
      new Reporter(Keep(benchmark::CreateDefaultDisplayReporter()));
  return reporter;
}

}  // namespace paradnn
