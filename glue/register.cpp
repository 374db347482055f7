// Host glue: paradnn's cases registered with the host's own Google
// Benchmark, and the timing loop that drives the core. Compiled inside the
// host's target (the paradnn::paradnn CMake target adds it), so it uses the
// host's Google Benchmark, whatever version (1.7 to main) and flags
// (-fno-exceptions, -fno-rtti) the host builds with: public API only, no
// try, no typeid.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "paradnn/paradnn.h"

namespace paradnn {
namespace {

// Where the build put libparadnn, and its soname (the paradnn::paradnn
// target sets both).
#ifndef PARADNN_CORE_LIBRARY
#define PARADNN_CORE_LIBRARY "libparadnn.so"
#endif
#ifndef PARADNN_CORE_SONAME
#define PARADNN_CORE_SONAME "libparadnn.so"
#endif

}  // namespace

// libparadnn's table, opened on first use: PARADNN_LIBRARY's path if set;
// else the copy already loaded, if the binary links libparadnn itself
// (paradnn's runner), not a second one; else where the build put it; else
// by soname, where the dynamic loader looks. RTLD_LOCAL: its dependencies
// (yaml-cpp, Boost, OpenMP) stay out of the host's namespace, so a host
// with its own copies of them keeps resolving to those. Exits with status
// 2, naming every place tried, when none has it.
const core::Api& internal::Core() {
  static const core::Api* api = [] {
    std::vector<std::string> places;
    if (const char* env = std::getenv("PARADNN_LIBRARY"); env && *env) {
      places = {env};
    } else {
      if (dlopen(PARADNN_CORE_SONAME, RTLD_NOW | RTLD_NOLOAD) != nullptr) {
        places.push_back(PARADNN_CORE_SONAME);
      }
      places.push_back(PARADNN_CORE_LIBRARY);
      places.push_back(PARADNN_CORE_SONAME);
    }
    std::string tried;
    for (const std::string& place : places) {
      void* library = dlopen(place.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (library == nullptr) {
        tried += std::string("\n  ") + dlerror();
        continue;
      }
      using Entry = const core::Api* (*)(int);
      auto entry = reinterpret_cast<Entry>(dlsym(library, "paradnn_core_api"));
      const core::Api* found = entry ? entry(core::kApiVersion) : nullptr;
      if (found != nullptr) return found;
      tried += "\n  " + place + ": older than this glue (no paradnn API " +
               std::to_string(core::kApiVersion) + ")";
    }
    std::fprintf(stderr,
                 "paradnn: cannot load libparadnn (PARADNN_LIBRARY=PATH "
                 "names it):%s\n",
                 tried.c_str());
    std::exit(2);
    return static_cast<const core::Api*>(nullptr);
  }();
  return *api;
}

namespace {
using internal::Core;

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
  core::Status s = Core().begin_case(index, benchmark::GetBenchmarkFilter(),
                                     state.max_iterations);
  std::vector<core::Counter> counters;
  if (s.ok()) {
    if (Core().case_info(index).manual_time) {
      int64_t step = 0;
      for (auto _ : state) {
        state.SetIterationTime(Core().isolated_step_seconds(index, step++));
      }
    } else {
      for (auto _ : state) {
        if (!Core().step()) break;
      }
    }
    s = Core().end_case(index, state.iterations(), &counters);
  }
  if (!s.ok()) {
    state.SkipWithError(s.message.c_str());
    return;
  }
  for (const core::Counter& c : counters) {
    state.counters[c.name] = benchmark::Counter(c.value);
  }
}

Benchmarks RegisterCases() {
  CheckOneBenchmarkLibrary();
  for (const auto& [key, value] : Core().context()) {
    benchmark::AddCustomContext(key, value);
  }
  Benchmarks registered;
  for (int i = 0; i < Core().case_count(); ++i) {
    const core::CaseInfo& info = Core().case_info(i);
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
    if (info.repetitions > 1) {
      b->Repetitions(static_cast<int>(info.repetitions));
    }
    registered.push_back(b);
  }
  return registered;
}

// Loads the run; on bad input prints why and exits 2, on --paradnn_help
// prints the flags and exits 0.
void LoadOrExit(int* argc, char** argv, const char* note) {
  const core::Loaded loaded = Core().load(argc, argv);
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

void PrintSummaryAtExit() { Core().finish(); }

// Whether PARADNN_CONFIG or PARADNN_CASE asks for cases: without, the
// static registration registers nothing and loads nothing.
bool EnvironmentAsks() {
  for (const char* name : {"PARADNN_CONFIG", "PARADNN_CASE"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') return true;
  }
  return false;
}

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
  if (!EnvironmentAsks()) return 0;
  LoadOrExit(nullptr, nullptr, kNote);
  const int n = static_cast<int>(RegisterCases().size());
  std::atexit(PrintSummaryAtExit);
  return n;
}

int Finish() { return Core().finish(); }

}  // namespace paradnn
