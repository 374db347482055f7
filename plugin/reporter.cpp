// Google Benchmark's display reporter, plus the MLPerf logs and results
// package that the flags ask for, written from the runs it reports.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include "adapters/mlperf/package.h"
#include "paradnn/paradnn.h"
#include "plugin/run.h"

namespace paradnn {
namespace {

class Reporter : public benchmark::BenchmarkReporter {
 public:
  explicit Reporter(benchmark::BenchmarkReporter* inner) : inner_(inner) {}

  bool ReportContext(const Context& context) override {
    inner_->SetOutputStream(&GetOutputStream());
    inner_->SetErrorStream(&GetErrorStream());
    return inner_->ReportContext(context);
  }

  void ReportRuns(const std::vector<Run>& runs) override {
    inner_->ReportRuns(runs);
    Journal(runs);
    const Options& flags = TheRun().flags;
    if (flags.mllog.empty() && flags.mlperf_package.empty()) return;
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration) continue;
      try {
        Write(run, flags);
      } catch (const std::exception& e) {
        std::cerr << "paradnn: " << e.what() << "\n";
      }
    }
  }

  void Finalize() override { inner_->Finalize(); }

  // One line per finished case, flushed: a killed sweep loses at most the
  // case in flight.
  static void Journal(const std::vector<Run>& runs) {
    std::ofstream& journal = TheRun().journal;
    if (!journal.is_open()) return;
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration) continue;
      const std::string name = CaseNameOf(run.benchmark_name());
      if (!TheRun().index.count(name)) continue;
      journal << "{\"name\": \"" << name << "\", \"error\": "
              << (run.error_occurred ? "true" : "false")
              << ", \"real_time_ms\": "
              << run.GetAdjustedRealTime() << "}" << std::endl;
    }
  }

 private:
  void Write(const Run& run, const Options& flags) {
    const std::string name = CaseNameOf(run.benchmark_name());
    auto it = TheRun().index.find(name);
    if (it == TheRun().index.end()) return;  // not a paradnn case
    const Entry& e = TheRun().entries[it->second];
    if (!e.model) return;  // bricks are not MLPerf runs
    const std::string& system = flags.mlperf_system;
    CaseRun r;
    r.case_name = name;
    r.family = e.model->model.family;
    r.backend = e.backend;
    r.dtype = ToString(e.dtype);
    r.mode = ToString(e.mode);
    r.batch = e.batch;
    r.params = e.cost.params;
    r.flop_per_step = e.cost.flops;
    r.seed = TheRun().options.seed;
    r.iterations = run.iterations;
    r.seconds = run.real_accumulated_time;
    r.init_start_ms = e.init_start_ms;
    r.init_stop_ms = e.init_stop_ms;
    r.run_stop_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
    r.success = !run.error_occurred;
    r.org = flags.mlperf_org;
    r.platform = system;
    r.status = flags.mlperf_status;
    const std::vector<MllogEvent> events = MllogEvents(r);
    const std::string result =
        "result_" + std::to_string(run.repetition_index) + ".txt";
    if (!flags.mllog.empty()) {
      WriteMllog(flags.mllog + "/" + SafeName(name) + "/" + result, events);
    }
    if (!flags.mlperf_package.empty()) {
      const std::string org = flags.mlperf_package + "/" + flags.mlperf_org;
      WriteMllog(org + "/results/" + system + "/" + SafeName(name) + "/" + result,
                 events);
      if (systems_written_.insert(org).second) {
        std::vector<std::string> frameworks;
        std::set<std::string> backends;
        for (const Entry& x : TheRun().entries) backends.insert(x.backend);
        for (const std::string& b : backends) {
          frameworks.push_back(FindBackend(b)->Describe());
        }
        std::filesystem::create_directories(org + "/systems");
        std::ofstream(org + "/systems/" + system + ".json")
            << SystemDescription(flags.mlperf_org, system,
                                 flags.mlperf_status, frameworks)
                   .dump(4)
            << "\n";
      }
    }
  }

  benchmark::BenchmarkReporter* inner_;
  std::set<std::string> systems_written_;
};

}  // namespace

benchmark::BenchmarkReporter* DisplayReporter() {
  static benchmark::BenchmarkReporter* inner =
      benchmark::CreateDefaultDisplayReporter();
  static Reporter* reporter = new Reporter(inner);
  return reporter;
}

}  // namespace paradnn
