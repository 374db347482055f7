// Host glue: paradnn's cases registered with the host's own Google
// Benchmark, and the timing loop that drives the core. Compiled inside the
// host's target (the paradnn::paradnn CMake target adds it), so it uses the
// host's Google Benchmark, whatever version (1.7 to 1.9) and flags
// (-fno-exceptions, -fno-rtti) the host builds with: public API only, no
// try, no typeid.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "paradnn/paradnn.h"

namespace paradnn {
namespace {

// Registering into one Google Benchmark while the host runs another would
// lose every case silently. The copy this file was linked with is the one
// it registers into; when the process exports another one (a shared
// libbenchmark beside a static copy), code elsewhere may run that one:
// refuse, naming both.
void CheckOneBenchmarkLibrary() {
  const auto ours = reinterpret_cast<void*>(
      static_cast<size_t (*)()>(&benchmark::RunSpecifiedBenchmarks));
  void* other = dlsym(RTLD_DEFAULT, "_ZN9benchmark22RunSpecifiedBenchmarksEv");
  if (other == nullptr || other == ours) return;
  Dl_info a{}, b{};
  dladdr(ours, &a);
  dladdr(other, &b);
  std::fprintf(stderr,
               "paradnn: two Google Benchmark libraries in this process: "
               "%s (compiled with paradnn's registration) and %s; link one\n",
               a.dli_fname ? a.dli_fname : "?",
               b.dli_fname ? b.dli_fname : "?");
  std::exit(2);
}

void RunCase(benchmark::State& state, int index) {
  core::Status s = core::BeginCase(index, benchmark::GetBenchmarkFilter(),
                                   state.max_iterations);
  std::vector<core::Counter> counters;
  if (s.ok()) {
    if (core::Case(index).manual_time) {
      int64_t step = 0;
      for (auto _ : state) {
        state.SetIterationTime(core::IsolatedStepSeconds(index, step++));
      }
    } else {
      for (auto _ : state) {
        if (!core::Step()) break;
      }
    }
    s = core::EndCase(index, state.iterations(), &counters);
  }
  if (!s.ok()) {
    state.SkipWithError(s.message.c_str());
    return;
  }
  state.SetItemsProcessed(state.iterations() * core::Case(index).batch);
  for (const core::Counter& c : counters) {
    state.counters[c.name] =
        c.per_second
            ? benchmark::Counter(c.value,
                                 benchmark::Counter::kIsIterationInvariantRate)
            : benchmark::Counter(c.value);
  }
}

Benchmarks RegisterCases() {
  CheckOneBenchmarkLibrary();
  for (const auto& [key, value] : core::Context()) {
    benchmark::AddCustomContext(key, value);
  }
  Benchmarks registered;
  for (int i = 0; i < core::CaseCount(); ++i) {
    const core::CaseInfo& info = core::Case(i);
    if (!info.registered) continue;
    auto* b = benchmark::RegisterBenchmark(
        info.name.c_str(), [i](benchmark::State& state) { RunCase(state, i); });
    b->Unit(benchmark::kMillisecond);
    // Backends run many threads: wall-clock time. Isolated cases report
    // the time their child process measured.
    if (info.manual_time) {
      b->UseManualTime();
    } else {
      b->UseRealTime();
    }
    if (info.steps > 0) b->Iterations(info.steps);
    registered.push_back(b);
  }
  return registered;
}

// Loads the run; on bad input prints why and exits 2, on --paradnn_help
// prints the flags and exits 0.
void LoadOrExit(int* argc, char** argv, const char* note) {
  const core::Loaded loaded = core::Load(argc, argv);
  if (!loaded.help.empty()) {
    std::fputs(loaded.help.c_str(), stdout);
    if (note != nullptr) std::fputs(note, stdout);
    std::exit(0);
  }
  if (!loaded.status.ok()) {
    std::fprintf(stderr, "paradnn: %s\n", loaded.status.message.c_str());
    std::exit(2);
  }
  for (const std::string& n : loaded.notes) {
    std::fprintf(stderr, "paradnn: %s\n", n.c_str());
  }
}

// Whether this process was started with --paradnn_help: a binary whose main
// is Google Benchmark's cannot take the flag, but can be asked.
bool AskedForHelp() {
  std::ifstream in("/proc/self/cmdline");
  std::string arg;
  while (std::getline(in, arg, '\0')) {
    if (arg == "--paradnn_help") return true;
  }
  return false;
}

void PrintSummaryAtExit() { core::Finish(); }

}  // namespace

Benchmarks Register(int* argc, char** argv) {
  LoadOrExit(argc, argv, nullptr);
  // Google Benchmark (1.7 to 1.9 at least) grows its list of cases one
  // family at a time when the filter is its match-all "." (also what an
  // empty filter and "all" become): quadratic in cases, 2.4 s to list
  // 9,720 of them. "^" selects the same cases in linear time, matching at
  // each name's start (".*" did too, but std::regex recursed once per
  // character: a name of 20 KB overflowed the stack). Not from
  // RegisterFromEnvironment: during static initialization the flag may not
  // exist yet.
  const std::string filter = benchmark::GetBenchmarkFilter();
  if (filter.empty() || filter == "all" || filter == ".") {
    benchmark::SetBenchmarkFilter("^");
  }
  return RegisterCases();
}

int RegisterFromEnvironment() {
  constexpr char kNote[] =
      "\nThis binary uses BENCHMARK_MAIN(): it takes paradnn's flags from the "
      "environment only,\nand registers paradnn's cases only when "
      "PARADNN_CONFIG or PARADNN_CASE is set.\n";
  if (AskedForHelp()) {
    char program[] = "paradnn", help[] = "--paradnn_help";
    char* args[] = {program, help, nullptr};
    int count = 2;
    LoadOrExit(&count, args, kNote);  // prints the flags and exits
  }
  if (!core::EnvironmentAsks()) return 0;
  LoadOrExit(nullptr, nullptr, kNote);
  const int n = static_cast<int>(RegisterCases().size());
  std::atexit(PrintSummaryAtExit);
  return n;
}

}  // namespace paradnn
