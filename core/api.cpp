// The core's API (paradnn/core.h) on this process's one Run. Google
// Benchmark calls a case's benchmark function, and the glue's reporter,
// with no state of paradnn's: the glue reaches the run through these free
// functions, which are the only code that names the Run's one instance
// (docs/architecture.md, "The run's state"). Everything they call takes
// the Run as an argument.
#include "core/run.h"

namespace paradnn {
namespace {

Run& TheRun() {
  // Never destroyed, as a static of a type with a destructor should not
  // be: the host's exit order is its own.
  static Run* run = new Run();
  return *run;
}

}  // namespace

namespace core {

Loaded Load(int* argc, char** argv) {
  return paradnn::Load(TheRun(), argc, argv);
}

int CaseCount() { return TheRun().cases.size(); }

const CaseInfo& Case(int index) {
  return TheRun().cases.entries.at(index).info;
}

bool Reports() { return TheRun().settings.Reports(); }

std::vector<std::pair<std::string, std::string>> Context() {
  return paradnn::Context(TheRun());
}

std::vector<std::pair<std::string, std::string>> BackendContext(
    const std::string& filter) {
  return paradnn::BackendContext(TheRun(), filter);
}

Status BeginCase(int index, const std::string& filter, int64_t max_steps) {
  return paradnn::BeginCase(TheRun(), index, filter, max_steps);
}

bool Step() { return paradnn::Step(TheRun()); }

double IsolatedStepSeconds(int index, int64_t step) {
  return paradnn::IsolatedStepSeconds(TheRun(), index, step);
}

Status EndCase(int index, int64_t iterations, std::vector<Counter>* counters) {
  Run& run = TheRun();
  return paradnn::EndCase(run, index, iterations,
                          /*all_timed=*/run.settings.flags.steps > 0, counters);
}

void Reported(const ReportedRun& run) { paradnn::Reported(TheRun(), run); }

std::vector<std::pair<std::string, std::string>> Measure(
    const std::string& filter) {
  return paradnn::Measure(TheRun(), filter);
}

int Finish() { return paradnn::Finish(TheRun()); }

}  // namespace core
}  // namespace paradnn

extern "C" __attribute__((visibility("default"))) const paradnn::core::Api*
paradnn_core_api(int version) {
  namespace c = paradnn::core;
  static const c::Api api = {c::kApiVersion,    c::Load,
                             c::CaseCount,      c::Case,
                             c::Reports,        c::Context,
                             c::BackendContext, c::BeginCase,
                             c::Step,           c::IsolatedStepSeconds,
                             c::EndCase,        c::Reported,
                             c::Finish,         c::Measure};
  return version <= c::kApiVersion ? &api : nullptr;
}
