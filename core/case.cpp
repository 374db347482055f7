// One case from its benchmark function: progress, the checks before it
// runs, its model prepared once and settled, its steps timed, its profile
// and counters.

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <map>

#include "backends/backend.h"
#include "core/run.h"
#include "machine/caches.h"
#include "machine/host.h"
#include "machine/perf_counters.h"
#include "records/results.h"

namespace paradnn {
using Clock = std::chrono::steady_clock;

namespace {

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start)
      .count();
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

void NoteStart(Run& run, int index) {
  Entry& e = run.cases.entries[index];
  if (e.status != CaseStatus::kNotRun || run.settings.flags.rounds > 1) return;
  NoteProgress(run, e.name);
}

// Ends a call of the case's benchmark function: its time counts towards the
// case's benchmark time (--paradnn_bricks), and a status other than ok is
// the case's.
core::Status EndCall(Run& run, Entry& e, core::Status status) {
  e.benchmark_s +=
      std::chrono::duration<double>(Clock::now() - run.current.call_start)
          .count();
  if (status.code == core::Status::kSkipped) e.status = CaseStatus::kSkipped;
  if (status.code == core::Status::kFailed) e.status = CaseStatus::kFailed;
  if (!status.ok()) e.why = status.message;
  // Data-parallel, every rank says why on stderr: the reporter prints on
  // rank 0 only.
  if (!status.ok() && run.settings.world.size > 1) {
    std::fprintf(stderr, "paradnn: rank %d: %s %s: %s\n",
                 run.settings.world.rank, e.name.c_str(),
                 status.code == core::Status::kSkipped ? "skipped" : "failed",
                 status.message.c_str());
  }
  if (run.isolated_child) WriteIsolatedResult(run, e, status);
  return status;
}

// --paradnn_pin: every thread of the OpenMP team the backends step on
// (LibTorch's, OpenBLAS's and oneDNN's: one libgomp) on a CPU of its own,
// the CPUs this process may use in order, the calling thread on the first.
// Where the OS would place and move two unpinned threads, a process's
// threads may share a core's caches or not, by chance (docs/running.md,
// "What moves a case between processes").
void PinThreads(int threads) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return;
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
  }
  if (cpus.empty()) return;
#pragma omp parallel num_threads(threads)
  {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus[omp_get_thread_num() % cpus.size()], &one);
    sched_setaffinity(0, sizeof(one), &one);
  }
}

// The graph of entry `index`, built on its first call (GraphError where its
// sizes do not make one) and kept for the next ones.
const Graph& GraphOf(Run& run, int index) {
  Execution& now = run.current;
  if (now.graph_of != index) {
    now.graph.reset();
    now.graph_of = -1;
    now.graph = run.cases.entries[index].BuildGraph();
    now.graph_of = index;
  }
  return *now.graph;
}

// The case's model, prepared on its first call and kept for the next ones:
// Google Benchmark calls a case's function several times.
core::Status Prepare(Run& run, int index, bool* fresh) {
  *fresh = run.current.prepared != index;
  if (!*fresh) return {};
  run.current.runner.reset();  // free the previous model first
  run.current.prepared = -1;
  Entry& e = run.cases.entries[index];
  e.init_start_ms = NowMs();
  RunOptions options = run.settings.BackendOptions();
  if (run.comm) {
    // Each rank its own examples; the warm-up steps (collectives) follow
    // once every rank has prepared.
    options.first_example = run.settings.world.rank * e.batch;
    options.comm = run.comm.get();  // used by training steps only
    options.warmup = 0;
  }
  // Only bricks cool the caches: a sweep without them never measures.
  if (e.brick) options.l3_bytes = L3Bytes(run);
  if (run.settings.flags.pin) PinThreads(options.threads);
  try {
    run.current.runner = FindBackend(e.backend)->Prepare(
        {GraphOf(run, index), e.dtype, e.mode}, options);
  } catch (const std::exception& ex) {
    return core::Status::Failed(std::string("preparing the model failed: ") +
                                ex.what());
  }
  e.init_stop_ms = NowMs();
  run.current.prepared = index;
  return {};
}

// The steps right after the first are still slow (the allocator, caches and
// worker threads settle): 3 more before timing, in at most 50 ms beyond the
// first of them unless every rank must step as often as the others
// (data-parallel). Measured over the 226 LibTorch bricks of
// bench/bricks_grid.yaml, each step's least time over 10 calls against the
// least timed one (geometric mean): 1.38x for the second step, 1.05x the
// third, 1.02x the fourth, 1.00x from the fifth on. Up to 10 settling
// steps, as before, took 40% of the bricks' benchmark time (that grid's
// bricks at --paradnn_steps=20: 137.4 s with them, 115.9 s with 3).
void Settle(Runner& runner, bool fixed) {
  const auto start = Clock::now();
  for (int i = 0; i < 3; ++i) {
    runner.Step();
    if (!fixed && Clock::now() - start > std::chrono::milliseconds(50)) break;
  }
}

// Data-parallel: every rank is at the same case (the same sweep, filter
// and flags), and runs it only where every rank can; the communicator is
// joined on the first case. Alone: `local` as it is.
core::Status Agree(Run& run, const Entry& e, const core::Status& local) {
  if (run.settings.world.size == 1) return local;
  if (!run.comm && run.connect_error.empty()) {
    try {
      run.comm = Connect(run.settings.world, run.settings.flags.dist_timeout);
    } catch (const std::exception& ex) {
      run.connect_error = ex.what();
    }
  }
  if (!run.comm) {
    return core::Status::Failed("joining the data-parallel run failed: " +
                                run.connect_error);
  }
  const int64_t id = static_cast<int64_t>(
      StableHash(e.name + "@" + std::to_string(run.settings.flags.steps)) >> 2);
  // Which rank cannot run it, and whether that is a failure (odd).
  const int64_t mine = local.ok() ? 0
                                  : 2 * (run.settings.world.rank + 1) +
                                        (local.code == core::Status::kFailed);
  std::vector<int64_t> all;
  try {
    all = run.comm->Max({id, -id, mine});
  } catch (const std::exception& ex) {
    return core::Status::Failed(ex.what());
  }
  if (all[0] != -all[1]) {
    return core::Status::Failed(
        "the ranks are at different cases (this rank, " +
        std::to_string(run.settings.world.rank) + ", at " + e.name +
        "): start every rank with the same sweep, filter and flags");
  }
  if (!local.ok() || all[2] == 0) return local;
  const std::string why = "rank " + std::to_string(all[2] / 2 - 1) +
                          " cannot run it (its stderr says why)";
  return all[2] % 2 ? core::Status::Failed(why) : core::Status::Skipped(why);
}

// A brick in a model that outgrows the caches (ModelIsCold) also takes
// kColdSteps steps from cold caches (Runner::Cool), once per case, after
// its timed loop: Google Benchmark's time of a BRICK row is its warm steps
// alone, and no flush comes between two warm steps.
constexpr int kColdSteps = 3;

void ColdSteps(Run& run, Entry& e) {
  if (!ModelIsCold(e.model_bytes, L2Bytes(), run.settings.flags.threads,
                   L3Bytes(run))) {
    return;
  }
  for (size_t n = e.log.Of(Caches::kCold).size(); n < kColdSteps; ++n) {
    run.current.runner->Cool();
    const auto start = Clock::now();
    run.current.runner->Step();
    e.log.Add(SteadySeconds(start), MsSince(start), Caches::kCold);
  }
}

// --paradnn_counters: `steps` more steps under the process's perf events,
// their counts per step, and why no hardware events were counted if none
// were.
void CountSteps(Runner& runner, int64_t steps, Entry* e) {
  PerfCounters counters;
  counters.Start();
  for (int64_t s = 0; s < steps; ++s) runner.Step();
  const std::map<std::string, double> counts = counters.Stop();
  e->counters_missing = counters.hardware_missing();
  for (const auto& [name, count] : counts) {
    if (name == "cpu_seconds") {
      e->perf["cpu_ms_per_step"] = count * 1e3 / steps;
    } else {
      e->perf[name + "_per_step"] = count / steps;
    }
  }
  const auto cycles = counts.find("cycles");
  const auto instructions = counts.find("instructions");
  if (cycles != counts.end() && instructions != counts.end() &&
      cycles->second > 0) {
    e->perf["ipc"] = instructions->second / cycles->second;
  }
}

// Said once a run, by the process the user watches (a child's console goes
// nowhere): the first case whose counting found no hardware events.
void SayCountersMissing(Run& run, const Entry& e) {
  if (e.counters_missing.empty() || run.counters_missing_said ||
      run.isolated_child) {
    return;
  }
  run.counters_missing_said = true;
  std::cerr << "paradnn: --paradnn_counters: this machine exposes no "
               "hardware counters ("
            << e.counters_missing << "); counting CPU time only\n";
}

}  // namespace

void NoteProgress(Run& run, const std::string& what) {
  if (!run.settings.flags.progress) return;
  if (run.progress.to_run < 0) {
    const auto selected = Selector(run.progress.filter);
    run.progress.to_run = 0;
    for (size_t i = 0; i < run.cases.entries.size(); ++i)
      run.progress.to_run += run.cases.entries[i].info.registered &&
                             selected(run.cases.entries[i].name);
    run.progress.to_run *= run.settings.flags.rounds;
    run.progress.start = Clock::now();
  }
  ++run.progress.started;
  const double elapsed =
      std::chrono::duration<double>(Clock::now() - run.progress.start).count();
  std::string left = "?";
  if (run.progress.started > 1) {
    left =
        Duration(elapsed / (run.progress.started - 1) *
                 std::max(0, run.progress.to_run - run.progress.started + 1));
  }
  std::fprintf(stderr, "paradnn: [%d/%d] %s (elapsed %s, ~%s left)\n",
               run.progress.started,
               std::max(run.progress.to_run, run.progress.started),
               what.c_str(), Duration(elapsed).c_str(), left.c_str());
}

namespace {

// The memory a case of this backend may take: --paradnn_max_memory, else
// 80% of what its device had free when this process first asked (a
// device's allocator keeps the blocks of cases before, and hands them to
// the next); the host's limit for the CPU's cases. 0: no limit known.
int64_t MemoryLimit(const Run& run, const Backend& backend) {
  if (backend.Device() == "cpu" || run.settings.max_memory_given) {
    return run.settings.flags.max_memory;
  }
  static std::map<std::string, int64_t> limits;
  const auto [it, added] = limits.try_emplace(backend.name(), 0);
  if (added)
    it->second = static_cast<int64_t>(0.8 * backend.DeviceMemoryFree());
  return it->second;
}

// What keeps a case from running here, or ok: its backend, the backend's
// support for it, the memory it needs; the same reason for every call
// after a call that could not run it.
core::Status Check(Run& run, int index) {
  const Entry& e = run.cases.entries[index];
  if (e.status == CaseStatus::kSkipped) return core::Status::Skipped(e.why);
  if (e.status == CaseStatus::kFailed) return core::Status::Failed(e.why);
  std::string unsupported;
  const Backend* backend = FindBackend(e.backend, &unsupported);
  if (backend == nullptr) return core::Status::Skipped(unsupported);
  try {
    const Graph& g = GraphOf(run, index);
    unsupported = backend->Unsupported({g, e.dtype, e.mode});
    // A table's gradient holds the rows its rank looked up: averaging
    // needs a sparse all-reduce (DLRMs train their tables model-parallel).
    if (unsupported.empty() && run.settings.world.size > 1 &&
        e.mode == Mode::kTrain && g.Has(Op::kEmbeddingBag)) {
      unsupported =
          "data-parallel training does not average embedding bags' sparse "
          "gradients";
    }
  } catch (const std::exception& ex) {
    return core::Status::Failed(ex.what());
  }
  if (!unsupported.empty()) return core::Status::Skipped(unsupported);
  const int64_t memory =
      backend->RecyclesWithinStep() ? e.cost.streaming_memory : e.cost.memory;
  const int64_t limit = MemoryLimit(run, *backend);
  if (limit > 0 && memory > limit) {
    return core::Status::Skipped(
        "needs about " + Gib(memory) + " by the cost model, over the " +
        Gib(limit) + " limit" +
        (backend->Device() == "cpu" ? "" : " of the " + backend->Device()) +
        " (--paradnn_max_memory)");
  }
  return {};
}

}  // namespace

namespace {

// The L3 the bricks of a database were measured with on this CPU, if any
// were: its entries then stay comparable from run to run, where a
// measurement's figure would move with the machine's neighbours.
int64_t DatabaseL3Bytes(const Run& run) {
  const std::string cpu = CpuName();
  for (const nlohmann::json& record : run.bricks_db) {
    const nlohmann::json& context = record["context"];
    if (context.value("cpu", "") == cpu && context.contains("l3_bytes") &&
        context["l3_bytes"].is_number_integer() &&
        context["l3_bytes"].get<int64_t>() > 0) {
      return context["l3_bytes"].get<int64_t>();
    }
  }
  return 0;
}

}  // namespace

int64_t L3Bytes(Run& run) {
  if (run.l3_bytes > 0) return run.l3_bytes;
  if (run.settings.flags.l3_bytes > 0) {
    run.l3_bytes = run.settings.flags.l3_bytes;
    run.l3_source = "--paradnn_l3_bytes";
  } else if (const size_t kernel = KernelCacheBytes(3); kernel > 0) {
    run.l3_bytes = kernel;
    run.l3_source = "kernel";
  } else if (const int64_t db = DatabaseL3Bytes(run); db > 0) {
    run.l3_bytes = db;
    run.l3_source = "bricks database";
  } else {
    // CPUID's figure caps it: on AMD all of the package's L3s, on Intel
    // the L3 its cores share (256 MB where it does not say).
    const size_t cpuid = CpuidCacheBytes(3);
    run.l3_bytes = MeasureL3Bytes(
        L2Bytes(), std::min(cpuid > 0 ? cpuid : SIZE_MAX, size_t{256} << 20));
    run.l3_source = "measured";
  }
  return run.l3_bytes;
}

const std::string& L3Source(Run& run) {
  L3Bytes(run);
  return run.l3_source;
}

core::Status BeginCase(Run& run, int index, const std::string& filter,
                       int64_t max_steps) {
  using core::Status;
  Entry& e = run.cases.entries.at(index);
  StartRun(run);  // where no reporter asked
  run.current.call_start = Clock::now();
  if (run.progress.to_run < 0) run.progress.filter = filter;
  NoteStart(run, index);
  if (run.settings.Isolates()) {
    // The child checks the case, prepares and steps it: this process
    // touches no device (a GPU driver started here is lost to a fork) and
    // starts no OpenMP team (one would not survive it either).
    if (e.status == CaseStatus::kSkipped) {
      return EndCall(run, e, Status::Skipped(e.why));
    }
    if (e.status == CaseStatus::kFailed) {
      return EndCall(run, e, Status::Failed(e.why));
    }
    ChildResult child;
    if (run.settings.flags.rounds > 1) {
      MeasureRounds(run);  // at its first case where no reporter asked
      // Google Benchmark calls a case once per repetition, one per round.
      const size_t round = e.log.calls.size();
      if (round >= e.rounds.size()) {
        return EndCall(run, e,
                       core::Status::Failed("called for round " +
                                            std::to_string(round + 1) + " of " +
                                            std::to_string(e.rounds.size())));
      }
      child = e.rounds[round];
    } else {
      child = RunIsolated(run, e, max_steps, /*profile=*/true);
    }
    if (!child.status.ok()) return EndCall(run, e, child.status);
    // The child's steps, as it measured them, all at its start.
    e.log.BeginCall(child.start_ms);
    e.log.calls.back().second = child.stop_ms;
    for (double ms : child.warm_ms) e.log.Add(child.at_s, ms, Caches::kWarm);
    run.current.child_ms = child.warm_ms;
    for (double ms : child.cold_ms) e.log.Add(child.at_s, ms, Caches::kCold);
    if (!child.counters.empty()) e.child_counters = child.counters;
    if (!child.counters_missing.empty()) {
      e.counters_missing = child.counters_missing;
      SayCountersMissing(run, e);
    }
    if (child.profile && !e.profile) e.profile = child.profile;
    return {};
  }
  Status s = Agree(run, e, Check(run, index));
  if (!s.ok()) return EndCall(run, e, s);
  bool fresh = false;
  s = Prepare(run, index, &fresh);
  // Preparation ends with a warm-up step: a case that slow would hold the
  // sweep for its whole timing. (It cannot be interrupted, only skipped.)
  const double prepare_s = (e.init_stop_ms - e.init_start_ms) / 1e3;
  if (s.ok() && fresh && run.settings.flags.case_timeout > 0 &&
      prepare_s > run.settings.flags.case_timeout) {
    char why[160];
    std::snprintf(why, sizeof(why),
                  "preparing and one warm-up step took %.3g s, over the "
                  "%.3g s of --paradnn_case_timeout",
                  prepare_s, run.settings.flags.case_timeout);
    s = core::Status::Skipped(why);
  }
  if (fresh) s = Agree(run, e, s);
  if (!s.ok()) return EndCall(run, e, s);
  try {
    if (fresh) Settle(*run.current.runner, run.comm != nullptr);
  } catch (const std::exception& ex) {
    return EndCall(
        run, e, core::Status::Failed(std::string("step failed: ") + ex.what()));
  }
  if (run.comm) {
    run.current.comm_seconds0 = run.comm->gradient_seconds();
    run.current.comm_bytes0 = run.comm->gradient_bytes();
  }
  run.current.step_error.clear();
  e.log.steps.reserve(e.log.steps.size() + max_steps);
  e.log.BeginCall(NowMs());
  return {};
}

// Each step is timed on its own too: a brick's time is the median of its
// steps, which resists the odd step a shared machine stretches.
bool Step(Run& run) {
  Entry& e = run.cases.entries[run.current.prepared];
  Clock::time_point start;
  try {
    start = Clock::now();
    run.current.runner->Step();
  } catch (const std::exception& ex) {
    run.current.step_error = std::string("step failed: ") + ex.what();
    return false;
  }
  // --paradnn_test_stretch: the step made F times as long by a spin on
  // this thread, inside the step's time (and Google Benchmark's).
  if (run.settings.flags.test_stretch > 1) {
    const auto until =
        start + (Clock::now() - start) * run.settings.flags.test_stretch;
    while (Clock::now() < until) {
    }
  }
  e.log.Add(SteadySeconds(start), MsSince(start), Caches::kWarm);
  return true;
}

double IsolatedStepSeconds(const Run& run, int /*index*/, int64_t step) {
  // Google Benchmark asks once per step: the call's steps are kept apart
  // from the case's log, which holds every call's.
  const std::vector<double>& steps = run.current.child_ms;
  // A round is one iteration: the mean of its steps.
  if (run.settings.flags.rounds > 1) return Mean(steps) / 1e3;
  return steps.at(step) / 1e3;
}

core::Status EndCase(Run& run, int index, int64_t iterations, bool all_timed,
                     std::vector<core::Counter>* counters) {
  Entry& e = run.cases.entries.at(index);
  if (!run.settings.Isolates() && !e.log.calls.empty()) {
    e.log.calls.back().second = NowMs();
  }
  if (run.comm) {
    run.current.comm_seconds =
        run.comm->gradient_seconds() - run.current.comm_seconds0;
    run.current.comm_bytes =
        run.comm->gradient_bytes() - run.current.comm_bytes0;
  }
  if (!run.settings.Isolates() && !run.current.step_error.empty()) {
    return EndCall(run, e, core::Status::Failed(run.current.step_error));
  }
  e.step_ms = Mean(e.log.LastCall());
  if (!run.settings.Isolates() && e.brick) {
    try {
      ColdSteps(run, e);
    } catch (const std::exception& ex) {
      return EndCall(
          run, e,
          core::Status::Failed(std::string("step failed: ") + ex.what()));
    }
  }
  if (!run.settings.Isolates()) {
    double loss = 0;
    try {
      loss = run.current.runner->Loss();
      // Once per case, in the first call that timed as many steps as the
      // profile wants (about 0.2 s, 1 to 20 steps), or timed all it will
      // (--paradnn_steps): not in Google Benchmark's probes, and not again
      // for every repetition, which all report this one profile.
      // The same for the perf counters' run, after the profile's.
      const int64_t wanted = std::clamp<int64_t>(
          static_cast<int64_t>(std::ceil(200 / e.step_ms)), 1, 20);
      if (iterations >= wanted || all_timed) {
        // As many steps as were timed, at most 20 and about 0.2 s, but 3
        // where 3 were timed: enough to average, short next to the timing.
        int64_t steps =
            std::clamp<int64_t>(wanted, std::min<int64_t>(3, iterations),
                                std::min<int64_t>(20, iterations));
        // Every rank profiles as many steps: the slowest one's choice.
        if (run.comm) steps = run.comm->Max({steps})[0];
        steps = std::max<int64_t>(1, steps);
        if (run.settings.flags.profile && !e.profile) {
          e.profile = run.current.runner->Profile(static_cast<int>(steps));
        }
        if (run.settings.flags.counters && e.perf.empty()) {
          CountSteps(*run.current.runner, steps, &e);
          SayCountersMissing(run, e);
        }
      }
    } catch (const std::exception& ex) {
      return EndCall(
          run, e,
          core::Status::Failed(std::string("step failed: ") + ex.what()));
    }
    if (!std::isfinite(loss)) {
      return EndCall(run, e,
                     core::Status::Failed("the loss is not finite (" +
                                          std::to_string(loss) + ")"));
    }
  }
  AddCounters(run, e, counters);
  e.status = CaseStatus::kPassed;
  return EndCall(run, e, {});
}

}  // namespace paradnn
