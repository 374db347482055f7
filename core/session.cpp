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
#include "importers/onnx.h"
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

// This process's shard of the cases, without those a journal records
// (which it then appends to).
std::vector<Case> Select(std::vector<Case> cases, Run& run) {
  const Settings& settings = run.settings;
  const std::optional<Shard>& shard = settings.shard;
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
  }
  const std::string& resume = settings.flags.resume;
  if (!resume.empty()) {
    const std::set<std::string> done = ReadJournal(resume);
    cases.erase(
        std::remove_if(cases.begin(), cases.end(),
                       [&](const Case& c) { return done.count(c.Name()) > 0; }),
        cases.end());
    run.journal.Open(resume);
    if (!done.empty()) {
      run.loaded->notes.push_back("resuming: " + std::to_string(done.size()) +
                                  " cases already done in " + resume);
    }
  }
  return cases;
}

// An argument put into argv, which Google Benchmark reads after LoadRun
// returns: kept for the process's life (a deque never moves what it holds).
char* KeptArg(std::string arg) {
  static std::deque<std::string>* const kept = new std::deque<std::string>;
  return kept->emplace_back(std::move(arg)).data();
}

// A data-parallel run's rank other than 0 stays silent unless
// --paradnn_all_ranks: its stdout goes nowhere and Google Benchmark's
// --benchmark_out is not written; with it, a rank R > 0 writes its own,
// suffixed .rankR (paradnn's own files: ForRank).
void SilenceRank(const Options& o, const World& w, int* argc, char** argv) {
  if (w.rank == 0) return;
  const std::string suffix = ".rank" + std::to_string(w.rank);
  if (!o.all_ranks) {
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
  std::vector<Case> cases;
  std::vector<BrickCase> bricks;
  std::vector<std::string> invalid;  // grid points that are no model
  try {
    Options o = ParseFlags(argc, argv);
    UseOnnxFamilies(o.onnx_weights);
    if (o.help) {
      loaded.help = FlagsHelp();
      return;
    }
    const World world = WorldFromEnvironment();
    if (world.size > 1) {
      o = ForRank(std::move(o), world);
      SilenceRank(o, world, argc, argv);
    }
    Sweep sweep = LoadCases(o, &bricks);
    run.settings = ResolveSettings(std::move(o), world, sweep, ThisMachine());
    invalid = std::move(sweep.invalid);
    cases = Select(Override(sweep.cases, run.settings.flags), run);
    if (!run.settings.flags.platform.empty()) {
      UsePlatform(LoadPlatform(run.settings.flags.platform), &run.settings);
    }
  } catch (const std::exception& ex) {
    loaded.status = {core::Status::kFailed, ex.what()};
    return;
  }
  for (const std::string& why : invalid) loaded.notes.push_back(why);
  const Options& o = run.settings.flags;
  if (o.bricks) {
    // Layer bricks cover the layers of FC, CNN, RNN and Transformer, not a
    // decoder's or a recommendation model's: models with those are left
    // out of a bricks run, said per family.
    std::map<std::string, std::pair<int, std::string>> left_out;
    const auto uncovered =
        std::remove_if(cases.begin(), cases.end(), [&](const Case& c) {
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
    cases.erase(uncovered, cases.end());
    for (const auto& [family, why] : left_out) {
      loaded.notes.push_back("skipped " + std::to_string(why.first) + " " +
                             family + " cases: layer bricks do not cover " +
                             why.second);
    }
  }
  run.cases = MakeCaseTable(std::move(cases), std::move(bricks), run.settings);
  if (o.bricks_estimate_only) {
    KeepCheckedModels(o.bricks_check, run.settings.seed(), &run.cases);
  }
  if (!o.bricks_db.empty()) {
    try {
      UseBricksDb(run);
    } catch (const std::exception& ex) {
      loaded.status = {core::Status::kFailed, ex.what()};
    }
  }
}

}  // namespace

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

core::Loaded Load(Run& run, int* argc, char** argv) {
  if (!run.loaded) {
    run.loaded.emplace();
    LoadRun(run, argc, argv);
  }
  return *run.loaded;
}

std::vector<std::pair<std::string, std::string>> Context(const Run& run) {
  const Settings& settings = run.settings;
  std::vector<std::pair<std::string, std::string>> context = {
      {"paradnn_config", settings.config},
      {"paradnn_version", PARADNN_VERSION},
      {"paradnn_threads", std::to_string(settings.flags.threads)},
      {"paradnn_seed", std::to_string(settings.seed())},
      // The stack, with each backend's own description (BLAS and its
      // kernel among them): what a comparison of two stacks labels.
      {"paradnn_distribution", ThisDistribution()},
      {"paradnn_compiler", ThisCompiler()},
      // Debian's libbenchmark is a debug build, and Google Benchmark warns
      // of it; its timing loop around paradnn's steps is all it adds.
      {"paradnn_timing",
       "steps are paradnn's release code; Google Benchmark's build type "
       "(library_build_type) is that of the loop around them"}};
  if (!settings.ShardName().empty()) {
    context.emplace_back("paradnn_shard", settings.ShardName());
  }
  // Where the families of its cases are declared, so that a report reads
  // them as this run did (records/results.cpp).
  const std::string files = FamilyFiles();
  if (!files.empty()) context.emplace_back("paradnn_families", files);
  context.emplace_back(
      "paradnn_rounds",
      settings.flags.rounds > 1
          ? std::to_string(settings.flags.rounds) + " rounds of " +
                (settings.flags.steps > 0
                     ? std::to_string(settings.flags.steps) + " steps"
                     : std::string("at least a tenth of a second of steps, "
                                   "after a warm-up until they settle")) +
                ", each case in a fresh process each round, the cases in a "
                "new random order each round: step_ms is a round's, the "
                "median row the case's; step_ms_low-step_ms_high its 90% "
                "interval"
          : std::string("1: each case once") +
                (settings.Isolates() ? ", in a process of its own"
                                     : ", in this process"));
  context.emplace_back(
      "paradnn_fuse",
      settings.flags.fuse
          ? "inference's convolutions and dense layers with their batch "
            "norm, activations and residual add as one unit, where the "
            "backend fuses"
          : "no (every layer on its own)");
  context.emplace_back("paradnn_pin",
                       settings.flags.pin
                           ? "each OpenMP thread on a CPU of its own"
                           : "no (threads where the OS puts them)");
  const World& w = settings.world;
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
    const Run& run, const std::string& filter) {
  std::set<std::string> used;
  const auto selected = Selector(filter);
  for (const Entry& e : run.cases.entries) {
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
    Run& run, const std::string& filter) {
  if (run.progress.to_run < 0) run.progress.filter = filter;
  std::vector<std::pair<std::string, std::string>> context = StartRun(run);
  for (auto& field : MeasureRounds(run)) context.push_back(std::move(field));
  return context;
}

int Finish(Run& run) {
  run.current = Execution();
  ReportBricks(run);
  if (!run.settings.flags.bricks_db.empty() && run.settings.world.rank == 0) {
    SaveBricksDb(run);
  }
  WriteProfiles(run);
  int passed = 0, skipped = 0, failed = 0;
  for (const Entry& e : run.cases.entries) {
    passed += e.status == CaseStatus::kPassed;
    skipped += e.status == CaseStatus::kSkipped;
    failed += e.status == CaseStatus::kFailed;
  }
  if (passed > 0 && run.settings.Reports()) {
    for (const std::string& note : RoundsNotes(run)) {
      std::fprintf(stderr, "paradnn: %s\n", note.c_str());
    }
  }
  std::fprintf(stderr, "paradnn: %d passed, %d skipped, %d failed\n", passed,
               skipped, failed);
  return failed > 0 ? 1 : 0;
}

}  // namespace paradnn
