// The run's cases: flags, the sweep, this process's selection of it, the
// context, and the summary at the end.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <tuple>

#include "adapters/mlperf/package.h"
#include "backends/backend.h"
#include "core/bricks_db.h"
#include "core/bricks_report.h"
#include "core/default_config.h"
#include "core/flags.h"
#include "core/profile_report.h"
#include "core/run.h"
#include "generators/cost.h"
#include "generators/declared.h"
#include "generators/shard.h"
#include "generators/sweep.h"
#include "machine/host.h"
#include "machine/platform.h"
#include "records/stack.h"

namespace paradnn {
namespace {

bool IsBackend(const std::string& name) {
  const std::vector<std::string> names = BackendNames();
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The cases to run: --paradnn_case names (models, or single bricks by their
// BRICK/ names, as a bricks run prints them), else the config (or the
// default).
Sweep LoadCases(const Options& o, std::vector<BrickCase>* bricks) {
  const std::vector<std::string> backends = BackendNames();
  for (const std::string& file : o.families) LoadFamilyFile(file);
  if (o.cases.empty()) {
    return o.config.empty()
               ? ParseSweep(DefaultConfigText(), kDefaultConfigName, backends)
               : LoadSweep(o.config, backends);
  }
  Sweep sweep;
  for (const std::string& given : o.cases) {
    // Accept names as Google Benchmark reports them too.
    const std::string name = CaseNameOf(given);
    std::string backend;
    if (name.rfind("BRICK/", 0) == 0) {
      bricks->push_back(ParseBrickName(name));
      backend = bricks->back().backend;
    } else {
      sweep.cases.push_back(ParseCaseName(name));
      backend = sweep.cases.back().backend;
    }
    if (!IsBackend(backend)) {
      throw SpecError("--paradnn_case='" + name + "': '" + backend +
                      "' is not a backend");
    }
  }
  return sweep;
}

// Replaces the backends, dtypes or modes of every case with the flags'.
std::vector<Case> Override(const std::vector<Case>& cases, const Options& o) {
  for (const std::string& b : o.backends) {
    if (!IsBackend(b)) {
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
    run.shard =
        std::to_string(shard->index) + "/" + std::to_string(shard->count);
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
      run.loaded->notes.push_back("resuming: " + std::to_string(done.size()) +
                                  " cases already done in " + o.resume);
    }
  }
  return cases;
}

// The run's entries: each case of the sweep and, with --paradnn_bricks, its
// unique layers, each once, with its cost from the cost model. Bricks come
// first, so that the models after them run as in a sweep without bricks.
void MakeEntries(Run& run, std::vector<Case>& cases,
                 std::vector<BrickCase>& bricks, const Options& o) {
  auto add = [&](Entry e) {
    const int index = static_cast<int>(run.entries.size());
    run.index[e.name] = index;
    core::CaseInfo info;
    info.name = e.name;
    // A round is one iteration of Google Benchmark's, its steps' mean.
    info.steps = run.rounds > 1 ? 1 : o.steps;
    info.manual_time = run.isolate;
    info.repetitions = run.rounds;
    info.one_row = run.rounds > 1 && o.display == "cases";
    run.infos.push_back(std::move(info));
    run.entries.push_back(std::move(e));
    return index;
  };
  // A brick by its name (each name is built once: a sweep of thousands of
  // models names tens of thousands of bricks, most of them already added),
  // noting the bytes of the largest model it is in.
  auto add_brick = [&](Brick b, std::string name, const std::string& backend,
                       DType dtype, Mode mode, int64_t model_bytes) {
    const auto it = run.index.find(name);
    if (it != run.index.end()) {
      Entry& known = run.entries[it->second];
      known.model_bytes = std::max(known.model_bytes, model_bytes);
      return it->second;
    }
    Entry e;
    e.name = std::move(name);
    e.backend = backend;
    e.dtype = dtype;
    e.mode = mode;
    const Graph g = b.BuildGraph(mode);
    e.cost = ComputeCost(g, e.mode, e.dtype);
    e.batch = g.batch();
    e.brick = std::move(b);
    e.model_bytes = model_bytes;
    return add(std::move(e));
  };
  std::vector<Entry> models;
  std::set<std::string> model_names;
  std::map<std::tuple<std::string, DType, Mode>, std::vector<int>> step_costs;
  for (Case& c : cases) {
    Entry e;
    e.name = c.Name();
    if (!model_names.insert(e.name).second) continue;
    const Graph g = c.model.BuildGraph();
    e.backend = c.backend;
    e.dtype = c.dtype;
    e.mode = c.mode;
    e.cost = ComputeCost(g, e.mode, e.dtype);
    e.batch = g.batch();
    if (o.bricks) {
      auto name = [&](const Brick& b) {
        return BrickCase{b, c.backend, c.dtype, c.mode}.Name();
      };
      const int64_t bytes = e.cost.bytes;
      // Single layers are counted whatever the bricks' granularity.
      const bool join = ActivationsJoinProducer(c.backend);
      const bool one = o.bricks_granularity == 1 && !join;
      std::vector<Brick> single = BricksOf(g, c.mode, 1);
      std::vector<std::string> single_names;
      for (const Brick& b : single) {
        single_names.push_back(name(b));
        run.unique_layers.insert(single_names.back());
      }
      std::vector<Brick> layer_bricks =
          one ? std::move(single)
              : BricksOf(g, c.mode, o.bricks_granularity, join);
      // A brick of one layer is that layer's: named once (names are most
      // of the time a bricks sweep takes to list).
      std::vector<std::string> names;
      size_t first = 0;  // the brick's first layer, in single_names
      for (const Brick& b : layer_bricks) {
        e.layers += b.layers();
        names.push_back(b.layers() == 1 ? std::move(single_names[first])
                                        : name(b));
        first += b.layers();
      }
      for (Brick& b : GradientSumsOf(g, c.mode)) {
        names.push_back(name(b));
        layer_bricks.push_back(std::move(b));
      }
      for (size_t k = 0; k < layer_bricks.size(); ++k) {
        e.bricks.layers.push_back(add_brick(std::move(layer_bricks[k]),
                                            std::move(names[k]), c.backend,
                                            c.dtype, c.mode, bytes));
      }
      // Recurrent layers in a run of their kind, timed as chains too.
      if (o.bricks_granularity == 1) {
        for (BrickStack& s : StacksOf(g, c.mode, join)) {
          std::string n = name(s.chain);
          e.bricks.stacks.push_back(
              {s.first, s.layers,
               add_brick(std::move(s.chain), std::move(n), c.backend, c.dtype,
                         c.mode, bytes)});
        }
      }
      // What each of them pays once more than the model, once per backend,
      // data type and mode.
      std::vector<int>& step_cost =
          step_costs[std::make_tuple(c.backend, c.dtype, c.mode)];
      if (step_cost.empty()) {
        for (Brick& b : StepCostBricks()) {
          std::string n = name(b);
          step_cost.push_back(add_brick(std::move(b), std::move(n), c.backend,
                                        c.dtype, c.mode, 0));
        }
      }
      e.bricks.step_cost = step_cost;
    }
    e.model = std::move(c);
    models.push_back(std::move(e));
  }
  for (BrickCase& b : bricks) {
    std::string n = b.Name();
    add_brick(std::move(b.brick), std::move(n), b.backend, b.dtype, b.mode, 0);
  }
  for (Entry& m : models) add(std::move(m));
}

// --paradnn_bricks_check=N: N of the run's models, chosen at random from
// the seed, stay registered to run plainly; every other model is estimated
// only.
void KeepCheckedModels(Run& run, int checked) {
  std::vector<size_t> models;
  for (size_t i = 0; i < run.entries.size(); ++i) {
    if (run.entries[i].model) models.push_back(i);
  }
  std::mt19937_64 random(run.options.seed);
  std::shuffle(models.begin(), models.end(), random);
  for (size_t k = 0; k < models.size(); ++k) {
    run.infos[models[k]].registered = static_cast<int>(k) < checked;
  }
}

// Every rank of a data-parallel run steps each case the same number of
// times (each step is a collective): --paradnn_steps, else this many.
constexpr int64_t kDataParallelSteps = 10;

// An argument put into argv, which Google Benchmark reads after LoadRun
// returns: kept for the process's life (a deque never moves what it holds).
char* KeptArg(std::string arg) {
  static std::deque<std::string>* const kept = new std::deque<std::string>;
  return kept->emplace_back(std::move(arg)).data();
}

// A data-parallel run: the flags that cannot work there are refused, and
// ranks other than 0 stay silent unless --paradnn_all_ranks: their stdout
// goes nowhere and their files (Google Benchmark's --benchmark_out and
// paradnn's outputs) are not written; with it, a rank R > 0 writes its own,
// suffixed .rankR.
void SetUpRank(Run& run, Options& o, int* argc, char** argv) {
  const World& w = run.world;
  if (o.isolate) {
    throw FlagError(
        "--paradnn_isolate runs cases in child processes, which cannot join "
        "the " +
        std::to_string(w.size) + " ranks of this data-parallel run");
  }
  if (!o.resume.empty()) {
    throw FlagError(
        "--paradnn_resume: ranks of a data-parallel run would each resume "
        "from their own journal and could run different cases; rerun the "
        "sweep without it");
  }
  if (o.steps == 0) o.steps = kDataParallelSteps;
  // Ranks step together, in one process each: a round is the run.
  if (o.rounds > 1 && std::any_of(o.given.begin(), o.given.end(), [](auto& g) {
        return g.first == "paradnn_rounds";
      })) {
    throw FlagError(
        "--paradnn_rounds runs cases in child processes, which cannot join "
        "the " +
        std::to_string(w.size) +
        " ranks of this data-parallel run: run it again for another round");
  }
  o.rounds = 1;
  if (w.rank == 0) return;
  const std::string suffix = ".rank" + std::to_string(w.rank);
  // Every rank reads the bricks database (they must skip the same bricks);
  // rank 0 alone adds to it.
  for (std::string* file :
       {&o.mllog, &o.mlperf_package, &o.bricks_out, &o.profile_out}) {
    if (!file->empty()) *file = o.all_ranks ? *file + suffix : "";
  }
  if (!o.all_ranks) {
    o.progress = false;
    std::fflush(stdout);
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, STDOUT_FILENO);
  }
  if (argc == nullptr) return;
  int out = 1;
  for (int i = 1; i < *argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--benchmark_out", 0) == 0) {
      if (!o.all_ranks) continue;
      if (arg.rfind("--benchmark_out=", 0) == 0) {
        argv[i] = KeptArg(arg + suffix);
      }
    }
    argv[out++] = argv[i];
  }
  *argc = out;
  argv[out] = nullptr;
}

void LoadRun(Run& run, int* argc, char** argv) {
  core::Loaded& loaded = *run.loaded;
  Options o;
  Sweep sweep;
  std::vector<BrickCase> bricks;
  try {
    o = ParseFlags(argc, argv);
    if (o.help) {
      loaded.help = FlagsHelp();
      return;
    }
    run.world = WorldFromEnvironment();
    if (run.world.size > 1) SetUpRank(run, o, argc, argv);
    sweep = LoadCases(o, &bricks);
    sweep.cases = Override(sweep.cases, o);
    sweep.cases = Select(sweep.cases, o);
    if (!o.platform.empty()) {
      const Platform platform = LoadPlatform(o.platform);
      run.device_peaks = platform.devices;
      run.device_bandwidth = platform.device_bandwidth;
      run.device_bandwidth["cpu"] = platform.memory_bandwidth;
    }
  } catch (const std::exception& ex) {
    loaded.status = {core::Status::kFailed, ex.what()};
    return;
  }
  for (const std::string& why : sweep.invalid) loaded.notes.push_back(why);
  if (o.bricks) {
    // Layer bricks cover the layers of FC, CNN, RNN and Transformer, not a
    // decoder's or a recommendation model's: models with those are left
    // out of a bricks run, said per family.
    std::map<std::string, std::pair<int, std::string>> left_out;
    const auto uncovered = std::remove_if(
        sweep.cases.begin(), sweep.cases.end(), [&](const Case& c) {
          const std::vector<Op> ops = UncoveredLayers(c.model.BuildGraph());
          if (ops.empty()) return false;
          auto& [count, names] = left_out[c.model.family];
          ++count;
          for (Op op : ops) {
            const std::string name = ToString(op);
            if (names.find(name) == std::string::npos) {
              names += (names.empty() ? "" : ", ") + name;
            }
          }
          return true;
        });
    sweep.cases.erase(uncovered, sweep.cases.end());
    for (const auto& [family, why] : left_out) {
      loaded.notes.push_back("skipped " + std::to_string(why.first) + " " +
                             family + " cases: layer bricks do not cover " +
                             why.second);
    }
  }
  run.options.threads = o.threads > 0       ? o.threads
                        : sweep.threads > 0 ? sweep.threads
                                            : UsableCpus();
  run.options.seed = o.seed >= 0 ? static_cast<uint64_t>(o.seed) : sweep.seed;
  run.max_memory = o.max_memory > 0
                       ? o.max_memory
                       : static_cast<int64_t>(0.8 * AvailableMemory());
  run.progress = o.progress;
  run.rounds = o.rounds;
  run.isolate = o.isolate || run.rounds > 1;  // a process per case's round
  run.flags = o;
  run.config =
      o.config.empty() && o.cases.empty() ? kDefaultConfigName : o.config;
  // MLPerf names: the flag, else the config, else the default.
  auto pick = [](std::string& flag, const std::string& config,
                 std::string fallback) {
    if (flag.empty()) flag = config.empty() ? fallback : config;
  };
  pick(run.flags.mlperf_org, sweep.mlperf_org, "paradnn");
  pick(run.flags.mlperf_system, sweep.mlperf_system, HostName());
  pick(run.flags.mlperf_status, sweep.mlperf_status, "onprem");
  MakeEntries(run, sweep.cases, bricks, o);
  if (o.bricks_estimate_only) KeepCheckedModels(run, o.bricks_check);
  if (!o.bricks_db.empty()) {
    try {
      UseBricksDb(run);
    } catch (const std::exception& ex) {
      loaded.status = {core::Status::kFailed, ex.what()};
    }
  }
}

}  // namespace

Run& TheRun() {
  static Run* run = new Run();
  return *run;
}

std::function<bool(const std::string&)> Selector(const std::string& filter) {
  std::string f = filter;
  const bool negate = !f.empty() && f[0] == '-';
  if (negate) f = f.substr(1);
  if (f.empty() || f == "all") f = ".";
  try {
    return [re = std::regex(f, std::regex::extended),
            negate](const std::string& name) {
      return std::regex_search(name, re) != negate;
    };
  } catch (const std::regex_error&) {
    return [](const std::string&) { return true; };
  }
}

std::vector<core::Counter> ProfileCounters(const Entry& e) {
  std::vector<core::Counter> counters;
  if (e.profile) {
    const auto shares = e.profile->Shares();
    for (int c = 0; c < kOpClasses; ++c) {
      // Communication only where ranks communicate.
      if (c == static_cast<int>(OpClass::kCommunication) &&
          TheRun().world.size == 1) {
        continue;
      }
      counters.push_back({ShareCounter(static_cast<OpClass>(c)), shares[c]});
    }
  }
  for (const auto& [key, value] : e.child_counters) {
    counters.push_back({key, value});
  }
  return counters;
}

namespace core {

Loaded Load(int* argc, char** argv) {
  Run& run = TheRun();
  if (!run.loaded) {
    run.loaded.emplace();
    LoadRun(run, argc, argv);
  }
  return *run.loaded;
}

int CaseCount() { return static_cast<int>(TheRun().infos.size()); }

const CaseInfo& Case(int index) { return TheRun().infos.at(index); }

bool Reports() {
  const Run& run = TheRun();
  return run.world.rank == 0 || run.flags.all_ranks;
}

std::vector<std::pair<std::string, std::string>> Context() {
  const Run& run = TheRun();
  std::vector<std::pair<std::string, std::string>> context = {
      {"paradnn_config", run.config},
      {"paradnn_version", PARADNN_VERSION},
      {"paradnn_threads", std::to_string(run.options.threads)},
      {"paradnn_seed", std::to_string(run.options.seed)},
      // The stack, with each backend's own description (BLAS and its
      // kernel among them): what a comparison of two stacks labels.
      {"paradnn_distribution", ThisDistribution()},
      {"paradnn_compiler", ThisCompiler()},
      // Debian's libbenchmark is a debug build, and Google Benchmark warns
      // of it; its timing loop around paradnn's steps is all it adds.
      {"paradnn_timing",
       "steps are paradnn's release code; Google Benchmark's build type "
       "(library_build_type) is that of the loop around them"}};
  if (!run.shard.empty()) context.emplace_back("paradnn_shard", run.shard);
  // Where the families of its cases are declared, so that a report reads
  // them as this run did (records/results.cpp).
  const std::string files = FamilyFiles();
  if (!files.empty()) context.emplace_back("paradnn_families", files);
  context.emplace_back(
      "paradnn_rounds",
      run.rounds > 1
          ? std::to_string(run.rounds) + " rounds of " +
                (run.flags.steps > 0
                     ? std::to_string(run.flags.steps) + " steps"
                     : std::string("at least a tenth of a second of steps, "
                                   "after a warm-up until they settle")) +
                ", each case in a fresh process each round, the cases in a "
                "new random order each round: step_ms is a round's, the "
                "median row the case's; step_ms_low-step_ms_high its 90% "
                "interval"
          : std::string("1: each case once") +
                (run.isolate ? ", in a process of its own"
                             : ", in this process"));
  context.emplace_back("paradnn_pin",
                       run.flags.pin ? "each OpenMP thread on a CPU of its own"
                                     : "no (threads where the OS puts them)");
  const World& w = run.world;
  context.emplace_back("paradnn_world_size", std::to_string(w.size));
  if (w.size > 1) {
    context.emplace_back("paradnn_rank", std::to_string(w.rank));
    context.emplace_back(
        "paradnn_rendezvous",
        w.addr + ":" + std::to_string(w.port) + " (" + w.launcher + ")");
  }
  return context;
}

std::vector<std::pair<std::string, std::string>> BackendContext(
    const std::string& filter) {
  std::set<std::string> used;
  const auto selected = Selector(filter);
  for (const Entry& e : TheRun().entries) {
    if (!used.count(e.backend) && selected(e.name)) {
      used.insert(e.backend);
    }
  }
  std::vector<std::pair<std::string, std::string>> context;
  for (const std::string& b : used) {
    std::string description;
    const Backend* backend = FindBackend(b, &description);
    try {
      if (backend != nullptr) description = backend->Describe();
    } catch (const std::exception& ex) {
      description = std::string("not available: ") + ex.what();
    }
    context.emplace_back("paradnn_backend_" + b, description);
  }
  return context;
}

std::vector<std::pair<std::string, std::string>> Measure(
    const std::string& filter) {
  Run& run = TheRun();
  if (run.to_run < 0) run.filter = filter;
  std::vector<std::pair<std::string, std::string>> context = StartRun(run);
  for (auto& field : MeasureRounds(run)) context.push_back(std::move(field));
  return context;
}

int Finish() {
  Run& run = TheRun();
  run.runner.reset();
  run.prepared = -1;
  ReportBricks(run);
  if (!run.flags.bricks_db.empty() && run.world.rank == 0) {
    SaveBricksDb(run);
  }
  WriteProfiles(run);
  int passed = 0, skipped = 0, failed = 0;
  for (const Entry& e : run.entries) {
    passed += e.status == CaseStatus::kPassed;
    skipped += e.status == CaseStatus::kSkipped;
    failed += e.status == CaseStatus::kFailed;
  }
  if (passed > 0 && Reports()) {
    for (const std::string& note : RoundsNotes(run)) {
      std::fprintf(stderr, "paradnn: %s\n", note.c_str());
    }
  }
  std::fprintf(stderr, "paradnn: %d passed, %d skipped, %d failed\n", passed,
               skipped, failed);
  return failed > 0 ? 1 : 0;
}

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
