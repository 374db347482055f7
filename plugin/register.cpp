// Registration of a sweep with Google Benchmark, and what runs per case.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "adapters/mlperf/package.h"
#include "analysis/calibrate.h"
#include "backends/backend.h"
#include "generators/cost.h"
#include "generators/shard.h"
#include "generators/sweep.h"
#include "paradnn/paradnn.h"
#include "plugin/bricks_report.h"
#include "plugin/default_config.h"
#include "plugin/flags.h"
#include "plugin/profile_report.h"
#include "plugin/run.h"

namespace paradnn {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t AvailableMemory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

std::string Gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f GiB", bytes / 1073741824.0);
  return buf;
}

std::string Duration(double seconds) {
  char buf[32];
  const int s = static_cast<int>(seconds + 0.5);
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%dh%02dm", s / 3600, s / 60 % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%dm%02ds", s / 60, s % 60);
  }
  return buf;
}

// How many registered cases Google Benchmark's filter selects, matched as
// Google Benchmark matches them.
int CountSelected(const Run& run) {
  std::string filter = benchmark::GetBenchmarkFilter();
  bool negate = !filter.empty() && filter[0] == '-';
  if (negate) filter = filter.substr(1);
  if (filter.empty() || filter == "all") filter = ".";
  try {
    const std::regex re(filter, std::regex::extended);
    return static_cast<int>(std::count_if(
        run.entries.begin(), run.entries.end(), [&](const Entry& e) {
          return std::regex_search(e.name, re) != negate;
        }));
  } catch (const std::regex_error&) {
    return static_cast<int>(run.entries.size());
  }
}

void NoteStart(Run& run, int index) {
  Entry& e = run.entries[index];
  if (e.status != Status::kNotRun || !run.progress) return;
  if (run.to_run < 0) {
    run.to_run = CountSelected(run);
    run.start = std::chrono::steady_clock::now();
  }
  ++run.started;
  const double elapsed = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - run.start)
                             .count();
  std::string left = "?";
  if (run.started > 1) {
    left = Duration(elapsed / (run.started - 1) *
                    std::max(0, run.to_run - run.started + 1));
  }
  std::fprintf(stderr, "paradnn: [%d/%d] %s (elapsed %s, ~%s left)\n",
               run.started, std::max(run.to_run, run.started), e.name.c_str(),
               Duration(elapsed).c_str(), left.c_str());
}

void End(benchmark::State& state, Entry& e, Status status,
         const std::string& why) {
  e.status = status;
  state.SkipWithError(why.c_str());
}

Runner* Prepared(Run& run, int index, const Graph& g, bool* fresh) {
  *fresh = run.prepared != index;
  if (!*fresh) return run.runner.get();
  run.runner.reset();  // free the previous model first
  run.prepared = -1;
  Entry& e = run.entries[index];
  e.init_start_ms = NowMs();
  run.runner =
      FindBackend(e.backend)->Prepare({g, e.dtype, e.mode}, run.options);
  e.init_stop_ms = NowMs();
  run.prepared = index;
  return run.runner.get();
}

// The steps right after the first are still slow (the allocator, caches and
// worker threads settle): up to 10 more before timing, in at most 50 ms
// beyond the first of them. Without them a short case timed for a fixed
// number of steps (--paradnn_steps) measured up to twice its settled time.
void Settle(Runner& runner) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) {
    runner.Step();
    if (std::chrono::steady_clock::now() - start >
        std::chrono::milliseconds(50)) {
      break;
    }
  }
}

// Times everything Google Benchmark spends in a case, for --paradnn_bricks.
class CallTimer {
 public:
  explicit CallTimer(double* total) : total_(total) {}
  ~CallTimer() {
    *total_ +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
            .count();
  }

 private:
  double* total_;
  std::chrono::steady_clock::time_point start_ =
      std::chrono::steady_clock::now();
};

void Counters(benchmark::State& state, Run& run, Entry& e);

// --paradnn_isolate: this binary again, on this case alone, with the same
// paradnn flags through the environment; the child's result or its death
// becomes this case's.
void RunIsolated(benchmark::State& state, Run& run, Entry& e) {
  if (e.isolated_step_s <= 0 && e.status == Status::kNotRun) {
    const std::string out =
        "/tmp/paradnn_isolate_" + std::to_string(getpid()) + ".json";
    const pid_t pid = fork();
    if (pid == 0) {
      setenv("PARADNN_ISOLATED_CHILD", "1", 1);
      setenv("PARADNN_CASE", e.name.c_str(), 1);
      setenv("PARADNN_PROGRESS", "false", 1);
      setenv("PARADNN_THREADS", std::to_string(run.options.threads).c_str(), 1);
      setenv("PARADNN_SEED", std::to_string(run.options.seed).c_str(), 1);
      setenv("PARADNN_MAX_MEMORY", std::to_string(run.max_memory).c_str(), 1);
      const Options& f = run.flags;
      if (f.steps > 0)
        setenv("PARADNN_STEPS", std::to_string(f.steps).c_str(), 1);
      if (f.case_timeout > 0) {
        setenv("PARADNN_CASE_TIMEOUT", std::to_string(f.case_timeout).c_str(),
               1);
      }
      if (!f.platform.empty())
        setenv("PARADNN_PLATFORM", f.platform.c_str(), 1);
      if (f.profile) setenv("PARADNN_PROFILE", "true", 1);
      for (const char* unused :
           {"PARADNN_CONFIG", "PARADNN_RESUME", "PARADNN_SHARD",
            "PARADNN_MLLOG", "PARADNN_MLPERF_PACKAGE", "PARADNN_BRICKS_OUT",
            "PARADNN_PROFILE_OUT"}) {
        unsetenv(unused);
      }
      // Its output is read from the file; its console would interleave.
      const int null = open("/dev/null", O_WRONLY);
      dup2(null, 1);
      dup2(null, 2);
      const std::string filter = "--benchmark_filter=^" + e.name + "/";
      const std::string file = "--benchmark_out=" + out;
      execl("/proc/self/exe", "/proc/self/exe", filter.c_str(), file.c_str(),
            "--benchmark_out_format=json", "--benchmark_format=json",
            static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) {
      return End(state, e, Status::kFailed,
                 std::string("crashed in its isolated process: ") +
                     strsignal(WTERMSIG(status)));
    }
    std::ifstream in(out);
    std::stringstream text;
    text << in.rdbuf();
    std::remove(out.c_str());
    // The child's one run: its error, or its time per step.
    const std::string json = text.str();
    const size_t err = json.find("\"error_message\": \"");
    if (err != std::string::npos) {
      const size_t start = err + 18;
      return End(state, e, Status::kFailed,
                 "in its isolated process: " +
                     json.substr(start, json.find('"', start) - start));
    }
    const size_t rt = json.find("\"real_time\": ");
    if (rt == std::string::npos) {
      return End(state, e, Status::kFailed,
                 "its isolated process exited with status " +
                     std::to_string(WEXITSTATUS(status)) + " and no result");
    }
    e.isolated_step_s = std::stod(json.substr(rt + 13)) / 1e3;  // ms
    if (run.flags.profile) {
      const nlohmann::json child = nlohmann::json::parse(json)["benchmarks"][0];
      for (const auto& [key, value] : child.items()) {
        // time_<class>_frac (not time_unit)
        if (key.rfind("time_", 0) == 0 && value.is_number()) {
          e.child_counters[key] = value;
        }
      }
    }
  }
  if (e.isolated_step_s <= 0) return End(state, e, e.status, "failed before");
  for (const auto& [key, value] : e.child_counters) state.counters[key] = value;
  for (auto _ : state) state.SetIterationTime(e.isolated_step_s);
  e.step_ms = e.isolated_step_s * 1e3;
  e.step_times_ms = {e.step_ms};
}

void RunCase(benchmark::State& state, int index) {
  Run& run = TheRun();
  Entry& e = run.entries[index];
  CallTimer timer(&e.benchmark_s);
  NoteStart(run, index);
  const Graph g = e.BuildGraph();
  const Backend* backend = FindBackend(e.backend);
  const std::string unsupported = backend->Unsupported({g, e.dtype, e.mode});
  if (!unsupported.empty()) return End(state, e, Status::kSkipped, unsupported);
  if (e.cost.memory > run.max_memory) {
    return End(state, e, Status::kSkipped,
               "needs about " + Gib(e.cost.memory) +
                   " by the cost model, over the " + Gib(run.max_memory) +
                   " limit (--paradnn_max_memory)");
  }
  if (run.isolate) {
    RunIsolated(state, run, e);
    if (e.status == Status::kFailed) return;
    return Counters(state, run, e);
  }
  Runner* runner = nullptr;
  bool fresh = false;
  try {
    runner = Prepared(run, index, g, &fresh);
  } catch (const std::exception& ex) {
    return End(state, e, Status::kFailed,
               std::string("preparing the model failed: ") + ex.what());
  }
  // Preparation ends with a warm-up step: a case that slow would hold the
  // sweep for its whole timing. (It cannot be interrupted, only skipped.)
  const double prepare_s = (e.init_stop_ms - e.init_start_ms) / 1e3;
  if (run.flags.case_timeout > 0 && prepare_s > run.flags.case_timeout) {
    char why[160];
    std::snprintf(why, sizeof(why),
                  "preparing and one warm-up step took %.3g s, over the "
                  "%.3g s of --paradnn_case_timeout",
                  prepare_s, run.flags.case_timeout);
    return End(state, e, Status::kSkipped, why);
  }
  double loss = 0;
  try {
    if (fresh) Settle(*runner);
    // Each step timed on its own too: the median resists the odd step a
    // shared machine stretches, which a mean of a few steps does not.
    std::vector<double>& steps = e.step_times_ms;
    steps.clear();
    steps.reserve(state.max_iterations);
    const auto start = std::chrono::steady_clock::now();
    for (auto _ : state) {
      const auto step_start = std::chrono::steady_clock::now();
      runner->Step();
      steps.push_back(std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - step_start)
                          .count());
    }
    e.step_ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count() /
                std::max<int64_t>(1, state.iterations());
    loss = runner->Loss();
    if (run.flags.profile) {
      // As many steps as were timed, at most 20 and about 0.2 s, but 3
      // where 3 were timed: enough to average, short next to the timing.
      const int64_t timed = state.iterations();
      const int64_t steps = std::clamp<int64_t>(
          static_cast<int64_t>(std::ceil(200 / e.step_ms)),
          std::min<int64_t>(3, timed), std::min<int64_t>(20, timed));
      e.profile =
          runner->Profile(static_cast<int>(std::max<int64_t>(1, steps)));
      const auto shares = e.profile->Shares();
      for (int c = 0; c < kOpClasses; ++c) {
        state.counters[std::string("time_") +
                       ToString(static_cast<OpClass>(c)) + "_frac"] = shares[c];
      }
    }
  } catch (const std::exception& ex) {
    return End(state, e, Status::kFailed,
               std::string("step failed: ") + ex.what());
  }
  if (!std::isfinite(loss)) {
    return End(state, e, Status::kFailed,
               "the loss is not finite (" + std::to_string(loss) + ")");
  }
  Counters(state, run, e);
}

void Counters(benchmark::State& state, Run& run, Entry& e) {
  using benchmark::Counter;
  const double flops = static_cast<double>(e.cost.flops);
  state.SetItemsProcessed(state.iterations() * e.batch);
  state.counters["examples_per_second"] =
      Counter(static_cast<double>(e.batch), Counter::kIsIterationInvariantRate);
  state.counters["FLOPS"] = Counter(flops, Counter::kIsIterationInvariantRate);
  state.counters["flop_per_step"] = flops;
  state.counters["params"] = static_cast<double>(e.cost.params);
  state.counters["bytes_per_step"] = static_cast<double>(e.cost.bytes);
  state.counters["intensity"] = e.cost.intensity;
  const auto peak = run.peak_flops.find(ToString(e.dtype));
  if (peak != run.peak_flops.end()) {
    state.counters["flops_util"] =
        Counter(flops / peak->second, Counter::kIsIterationInvariantRate);
  }
  e.status = Status::kPassed;
}

// The cases to run: --paradnn_case names, else the config (or the default).
Sweep LoadCases(const Options& o) {
  const std::vector<std::string> backends = BackendNames();
  if (o.cases.empty()) {
    return o.config.empty()
               ? ParseSweep(DefaultConfigText(), kDefaultConfigName, backends)
               : LoadSweep(o.config, backends);
  }
  Sweep sweep;
  for (const std::string& given : o.cases) {
    // Accept names as Google Benchmark reports them too.
    const std::string name = CaseNameOf(given);
    Case c = ParseCaseName(name);
    if (FindBackend(c.backend) == nullptr) {
      throw SpecError("--paradnn_case='" + name + "': '" + c.backend +
                      "' is not a backend");
    }
    sweep.cases.push_back(std::move(c));
  }
  return sweep;
}

// Replaces the backends, dtypes or modes of every case with the flags'.
std::vector<Case> Override(const std::vector<Case>& cases, const Options& o) {
  for (const std::string& b : o.backends) {
    if (FindBackend(b) == nullptr) {
      throw FlagError("--paradnn_backends: '" + b + "' is not a backend");
    }
  }
  std::vector<DType> dtypes;
  for (const std::string& d : o.dtypes) dtypes.push_back(ParseDType(d));
  std::vector<Mode> modes;
  for (const std::string& m : o.modes) modes.push_back(ParseMode(m));
  std::vector<Case> out;
  std::set<std::string> seen;
  for (const Case& c : cases) {
    for (const std::string& b : o.backends.empty()
                                    ? std::vector<std::string>{c.backend}
                                    : o.backends) {
      for (DType d : dtypes.empty() ? std::vector<DType>{c.dtype} : dtypes) {
        for (Mode m : modes.empty() ? std::vector<Mode>{c.mode} : modes) {
          Case v{c.model, b, d, m};
          if (seen.insert(v.Name()).second) out.push_back(std::move(v));
        }
      }
    }
  }
  return out;
}

// The names of the cases a journal records (a torn last line is skipped).
std::set<std::string> ReadJournal(const std::string& path) {
  std::set<std::string> names;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const size_t at = line.find("\"name\": \"");
    if (at == std::string::npos) continue;
    const size_t start = at + 9, end = line.find('"', start);
    if (end != std::string::npos && line.back() == '}') {
      names.insert(line.substr(start, end - start));
    }
  }
  return names;
}

// This process's shard of the cases, without those a journal records.
std::vector<Case> Select(std::vector<Case> cases, const Options& o) {
  Run& run = TheRun();
  const std::optional<Shard> shard = o.shard.empty()
                                         ? ShardFromEnvironment(o.shard_count)
                                         : ParseShard(o.shard);
  if (shard && shard->count > 1) {
    std::vector<double> seconds;
    for (const Case& c : cases) {
      seconds.push_back(
          EstimatedSeconds(ComputeCost(c.model.BuildGraph(), c.mode, c.dtype)));
    }
    const std::vector<int> assigned = AssignShards(seconds, shard->count);
    std::vector<Case> mine;
    for (size_t i = 0; i < cases.size(); ++i) {
      if (assigned[i] == shard->index) mine.push_back(std::move(cases[i]));
    }
    cases = std::move(mine);
    benchmark::AddCustomContext(
        "paradnn_shard",
        std::to_string(shard->index) + "/" + std::to_string(shard->count));
  }
  if (!o.resume.empty()) {
    const std::set<std::string> done = ReadJournal(o.resume);
    cases.erase(
        std::remove_if(cases.begin(), cases.end(),
                       [&](const Case& c) { return done.count(c.Name()) > 0; }),
        cases.end());
    run.journal.open(o.resume, std::ios::app);
    if (!run.journal) {
      throw FlagError("--paradnn_resume=" + o.resume + ": cannot write it");
    }
    if (!done.empty()) {
      std::fprintf(stderr, "paradnn: resuming: %zu cases already done in %s\n",
                   done.size(), o.resume.c_str());
    }
  }
  return cases;
}

Benchmarks RegisterWith(int* argc, char** argv) {
  Run& run = TheRun();
  Options o;
  Sweep sweep;
  try {
    o = ParseFlags(argc, argv);
    if (o.help) {
      std::cout << FlagsHelp();
      std::exit(0);
    }
    sweep = LoadCases(o);
    sweep.cases = Override(sweep.cases, o);
    sweep.cases = Select(sweep.cases, o);
    if (!o.platform.empty())
      run.peak_flops = LoadPlatform(o.platform).peak_flops;
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "paradnn: %s\n", ex.what());
    std::exit(2);
  }
  for (const std::string& why : sweep.invalid) {
    std::fprintf(stderr, "paradnn: %s\n", why.c_str());
  }
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  run.options.threads = o.threads > 0       ? o.threads
                        : sweep.threads > 0 ? sweep.threads
                                            : cores;
  run.options.seed = o.seed >= 0 ? static_cast<uint64_t>(o.seed) : sweep.seed;
  run.max_memory = o.max_memory > 0
                       ? o.max_memory
                       : static_cast<int64_t>(0.8 * AvailableMemory());
  run.progress = o.progress;
  run.flags = o;
  run.isolate = o.isolate && std::getenv("PARADNN_ISOLATED_CHILD") == nullptr;
  // MLPerf names: the flag, else the config, else the default.
  auto pick = [](std::string& flag, const std::string& config,
                 std::string fallback) {
    if (flag.empty()) flag = config.empty() ? fallback : config;
  };
  pick(run.flags.mlperf_org, sweep.mlperf_org, "paradnn");
  pick(run.flags.mlperf_system, sweep.mlperf_system, HostName());
  pick(run.flags.mlperf_status, sweep.mlperf_status, "onprem");

  benchmark::AddCustomContext(
      "paradnn_config",
      o.config.empty() && o.cases.empty() ? kDefaultConfigName : o.config);
  benchmark::AddCustomContext("paradnn_version", PARADNN_VERSION);
  benchmark::AddCustomContext("paradnn_threads",
                              std::to_string(run.options.threads));
  benchmark::AddCustomContext("paradnn_seed", std::to_string(run.options.seed));
  std::set<std::string> used;
  for (const Case& c : sweep.cases) used.insert(c.backend);
  for (const std::string& b : used) {
    benchmark::AddCustomContext("paradnn_backend_" + b,
                                FindBackend(b)->Describe());
  }

  Benchmarks registered;
  // Adds an entry (once per name) and returns its index.
  auto add = [&](Entry e, const Graph& g) {
    auto it = run.index.find(e.name);
    if (it != run.index.end()) return it->second;
    e.cost = ComputeCost(g, e.mode, e.dtype);
    e.batch = g.batch();
    const int index = static_cast<int>(run.entries.size());
    run.index[e.name] = index;
    run.entries.push_back(std::move(e));
    benchmark::internal::Benchmark* b = benchmark::RegisterBenchmark(
        run.entries.back().name.c_str(),
        [index](benchmark::State& state) { RunCase(state, index); });
    b->Unit(benchmark::kMillisecond);
    // Isolated cases report the time their child process measured.
    if (run.isolate) {
      b->UseManualTime();
    } else {
      b->UseRealTime();
    }
    if (o.steps > 0) b->Iterations(o.steps);
    registered.push_back(b);
    return index;
  };
  for (Case& c : sweep.cases) {
    const Graph g = c.model.BuildGraph();
    Entry e;
    e.name = c.Name();
    e.backend = c.backend;
    e.dtype = c.dtype;
    e.mode = c.mode;
    std::vector<int> layers;
    if (o.bricks) {
      // Single layers are counted whatever the bricks' granularity.
      std::vector<Brick> single = BricksOf(g, c.mode);
      for (const Brick& b : single) {
        run.unique_layers.insert(
            BrickCase{b, c.backend, c.dtype, c.mode}.Name());
      }
      for (Brick& b : o.bricks_granularity == 1
                          ? std::move(single)
                          : BricksOf(g, c.mode, o.bricks_granularity)) {
        Entry brick;
        brick.name = BrickCase{b, c.backend, c.dtype, c.mode}.Name();
        brick.backend = c.backend;
        brick.dtype = c.dtype;
        brick.mode = c.mode;
        const Graph bg = b.BuildGraph(c.mode);
        brick.brick = std::move(b);
        layers.push_back(add(std::move(brick), bg));
      }
    }
    e.model = std::move(c);
    const int index = add(std::move(e), g);
    run.entries[index].layer_bricks = std::move(layers);
  }
  return registered;
}

void PrintSummaryAtExit() { Finish(); }

}  // namespace

Run& TheRun() {
  static Run* run = new Run();
  return *run;
}

Benchmarks Register(int* argc, char** argv) { return RegisterWith(argc, argv); }

int RegisterFromEnvironment() {
  const int n = static_cast<int>(RegisterWith(nullptr, nullptr).size());
  std::atexit(PrintSummaryAtExit);
  return n;
}

int Finish() {
  Run& run = TheRun();
  run.runner.reset();
  run.prepared = -1;
  ReportBricks(run);
  WriteProfiles(run);
  int passed = 0, skipped = 0, failed = 0;
  for (const Entry& e : run.entries) {
    passed += e.status == Status::kPassed;
    skipped += e.status == Status::kSkipped;
    failed += e.status == Status::kFailed;
  }
  std::fprintf(stderr, "paradnn: %d passed, %d skipped, %d failed\n", passed,
               skipped, failed);
  return failed > 0 ? 1 : 0;
}

}  // namespace paradnn
