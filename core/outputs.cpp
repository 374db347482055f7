// What happens to each run the benchmark library reports: a line in the
// journal (--paradnn_resume) and the MLPerf outputs (--paradnn_mllog,
// --paradnn_mlperf_package).
#include <filesystem>
#include <iostream>
#include <set>

#include "adapters/mlperf/package.h"
#include "core/run.h"

namespace paradnn {
namespace {

// The system description names every backend that ran so far: written
// again only when a run brings another one.
void WriteSystem(Run& run, const std::string& org_dir) {
  const Options& flags = run.settings.flags;
  std::set<std::string> backends;
  for (const Entry& x : run.cases.entries) {
    if (x.status != CaseStatus::kNotRun) backends.insert(x.backend);
  }
  if (backends == run.system_backends) return;
  run.system_backends = backends;
  std::vector<std::string> frameworks;
  for (const std::string& b : backends) {
    if (const Backend* backend = FindBackend(b)) {
      frameworks.push_back(backend->Describe());
    }
  }
  std::filesystem::create_directories(org_dir + "/systems");
  std::ofstream(org_dir + "/systems/" + flags.mlperf_system + ".json")
      << SystemDescription(flags.mlperf_org, flags.mlperf_system,
                           flags.mlperf_status, frameworks)
             .dump(4)
      << "\n";
}

void WriteMlperf(Run& run, const core::ReportedRun& reported, const Entry& e) {
  const Options& flags = run.settings.flags;
  const std::string& system = flags.mlperf_system;
  CaseRun r;
  r.case_name = e.name;
  r.family = e.model->model.family;
  r.backend = e.backend;
  r.dtype = ToString(e.dtype);
  r.mode = ToString(e.mode);
  r.batch = e.batch;
  r.params = e.cost.params;
  r.flop_per_step = e.cost.flops;
  r.seed = run.settings.seed();
  r.iterations = reported.iterations;
  r.seconds = reported.seconds;
  r.init_start_ms = e.init_start_ms;
  r.init_stop_ms = e.init_stop_ms;
  // Google Benchmark reports a case's repetitions together, after them: the
  // last `repetitions` calls of the case are theirs, in order (the calls
  // before probed the step count).
  const size_t calls = e.log.calls.size();
  const size_t call =
      calls -
      std::min<size_t>(calls, reported.repetitions - reported.repetition_index);
  if (call < calls) {
    r.run_start_ms = e.log.calls[call].first;
    r.run_stop_ms = e.log.calls[call].second;
  }
  r.success = !reported.error;
  r.org = flags.mlperf_org;
  r.platform = system;
  r.status = flags.mlperf_status;
  const std::vector<MllogEvent> events = MllogEvents(r);
  const std::string result =
      "result_" + std::to_string(reported.repetition_index) + ".txt";
  if (!flags.mllog.empty()) {
    WriteMllog(flags.mllog + "/" + SafeName(e.name) + "/" + result, events);
  }
  if (!flags.mlperf_package.empty()) {
    const std::string org = flags.mlperf_package + "/" + flags.mlperf_org;
    WriteMllog(
        org + "/results/" + system + "/" + SafeName(e.name) + "/" + result,
        events);
    WriteSystem(run, org);
  }
}

}  // namespace

void Reported(Run& run, const core::ReportedRun& reported) {
  if (reported.aggregate) return;
  const std::string name = CaseNameOf(reported.name);
  const auto it = run.cases.index.find(name);
  if (it == run.cases.index.end()) return;  // not a paradnn case
  run.journal.Add(name, reported.error, reported.time_ms);
  const Entry& e = run.cases.entries[it->second];
  const Options& flags = run.settings.flags;
  if (!e.model || (flags.mllog.empty() && flags.mlperf_package.empty())) {
    return;  // bricks are not MLPerf runs
  }
  try {
    WriteMlperf(run, reported, e);
  } catch (const std::exception& ex) {
    std::cerr << "paradnn: " << ex.what() << "\n";
  }
}

}  // namespace paradnn
