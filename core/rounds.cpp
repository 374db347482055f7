// --paradnn_rounds: every selected case once per round, each round in a new
// random order, each case in a fresh process; the machine's state around
// the run; what this machine's rounds spread by, remembered for runs of
// one round.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "core/run.h"
#include "machine/host.h"
#include "machine/load.h"
#include "records/results.h"

namespace paradnn {
namespace {

// Where this machine's last spread of rounds is remembered.
std::string SpreadFile() {
  const char* cache = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (cache != nullptr && *cache != '\0') {
    return std::string(cache) + "/paradnn/rounds.json";
  }
  return home != nullptr ? std::string(home) + "/.cache/paradnn/rounds.json"
                         : "";
}

void RememberSpread(const Run& run, const std::vector<double>& spreads) {
  const std::string path = SpreadFile();
  if (path.empty() || spreads.empty()) return;
  nlohmann::json j;
  j["cpu"] = CpuName();
  j["threads"] = run.settings.flags.threads;
  j["rounds"] = run.settings.flags.rounds;
  j["cases"] = spreads.size();
  j["median_spread"] = Median(spreads);
  j["p90_spread"] = Percentile(spreads, 90);
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M", std::localtime(&now));
  j["date"] = date;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(),
                                      ec);
  std::ofstream(path) << j.dump(2) << "\n";
}

// The machine's CPU times when the run started (StartRun).
CpuTimes& RunStart() {
  static CpuTimes start;
  return start;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> StartRun(Run& run) {
  if (run.machine_sampled) return {};
  run.machine_sampled = true;
  RunStart() = ReadCpuTimes();
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  const MachineSample start = Sample(RunStart(), ReadCpuTimes(), "over 0.25 s");
  // Another process's work slows every case and moves it between
  // processes: a quarter of a CPU of it, or 5% of the time stolen.
  if (run.settings.Reports() &&
      (start.busy_cpus >= 0.25 || start.steal >= 0.05)) {
    std::fprintf(stderr,
                 "paradnn: the machine is busy before the sweep: %.2f CPUs' "
                 "worth of other work, %.1f%% of CPU time stolen: figures "
                 "will be slower and move more between processes\n",
                 start.busy_cpus, 100 * start.steal);
  }
  std::vector<std::pair<std::string, std::string>> context;
  for (const auto& [key, value] : start.fields) {
    context.emplace_back("paradnn_machine_start_" + key, value);
  }
  return context;
}

std::vector<int> RoundOrder(std::vector<int> cases, uint64_t seed, int round) {
  std::mt19937_64 random(seed * 1000003 + round);
  std::shuffle(cases.begin(), cases.end(), random);
  return cases;
}

std::vector<std::pair<std::string, std::string>> MeasureRounds(Run& run) {
  if (run.settings.flags.rounds < 2 || run.rounds_measured) return {};
  run.rounds_measured = true;
  const auto selected = Selector(run.progress.filter);
  std::vector<int> cases;
  for (size_t i = 0; i < run.cases.entries.size(); ++i) {
    if (run.cases.entries[i].info.registered &&
        selected(run.cases.entries[i].name)) {
      cases.push_back(static_cast<int>(i));
    }
  }
  for (int round = 0; round < run.settings.flags.rounds; ++round) {
    for (int i : RoundOrder(cases, run.settings.seed(), round)) {
      Entry& e = run.cases.entries[i];
      // A case that could not run in a round is not run again: its skip
      // or failure is the case's.
      if (!e.rounds.empty() && !e.rounds.back().status.ok()) continue;
      NoteProgress(run, "round " + std::to_string(round + 1) + "/" +
                            std::to_string(run.settings.flags.rounds) + " " +
                            e.name);
      // The profile once, in the first round that ran.
      const bool profiled =
          std::any_of(e.rounds.begin(), e.rounds.end(),
                      [](const ChildResult& c) { return !c.counters.empty(); });
      e.rounds.push_back(
          RunIsolated(run, e, run.settings.flags.steps, !profiled));
    }
  }
  // Each case's rounds, its figure per round the mean of its steps (as
  // step_ms of one call), pooled per backend and family for the process
  // noise.
  std::map<std::string, std::vector<double>> times;
  std::map<std::string, std::vector<std::string>> groups;
  for (int i : cases) {
    const Entry& e = run.cases.entries[i];
    std::vector<double> per_round;
    for (const ChildResult& c : e.rounds) {
      if (!c.status.ok() || c.warm_ms.empty()) break;
      per_round.push_back(Mean(c.warm_ms));
    }
    if (per_round.size() != e.rounds.size() || per_round.empty()) continue;
    times[e.name] = per_round;
    const std::string family =
        e.model ? e.model->model.family : std::string("BRICK");
    groups[e.name] = {e.backend + "/" + family, e.backend};
  }
  const std::map<std::string, RoundSummary> summaries =
      SummarizeAll(times, groups);
  std::vector<double> spreads;
  for (int i : cases) {
    Entry& e = run.cases.entries[i];
    const auto it = summaries.find(e.name);
    if (it == summaries.end()) continue;
    e.summary = it->second;
    spreads.push_back(it->second.spread);
  }
  RememberSpread(run, spreads);
  const MachineSample end = Sample(RunStart(), ReadCpuTimes(), "over the run");
  std::vector<std::pair<std::string, std::string>> context;
  for (const auto& [key, value] : end.fields) {
    context.emplace_back("paradnn_machine_end_" + key, value);
    if (key == "cpu_use") run.machine_use = value;
  }
  return context;
}

std::vector<std::string> RoundsNotes(const Run& run) {
  std::vector<std::string> notes;
  if (run.settings.flags.rounds > 1) {
    std::vector<double> widths;
    int unstable = 0;
    for (const Entry& e : run.cases.entries) {
      if (!e.summary || e.summary->median <= 0) continue;
      widths.push_back((e.summary->high - e.summary->low) / e.summary->median);
      unstable += e.summary->unstable;
    }
    if (!widths.empty()) {
      char line[320];
      std::snprintf(line, sizeof(line),
                    "%zu cases in %d rounds: intervals %.0f%% of the median "
                    "wide (median; 90th percentile %.0f%%), %d unstable; "
                    "the machine: %s",
                    widths.size(), run.settings.flags.rounds,
                    100 * Median(widths), 100 * Percentile(widths, 90),
                    unstable, run.machine_use.c_str());
      notes.push_back(line);
    }
    for (const Entry& e : run.cases.entries) {
      if (!e.summary || !e.summary->unstable) continue;
      char line[128];
      std::snprintf(line, sizeof(line),
                    ": rounds %.4g-%.4g ms (median %.4g ms, %d rounds)",
                    e.summary->least, e.summary->most, e.summary->median,
                    e.summary->rounds);
      notes.push_back("unstable: " + e.name + line);
    }
    return notes;
  }
  std::string note =
      "one round: every figure is one process's, and a re-run in another "
      "process may move it";
  std::ifstream in(SpreadFile());
  const nlohmann::json last =
      nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (last.is_object() && last.value("cpu", "") == CpuName() &&
      last["median_spread"].is_number()) {
    char line[256];
    std::snprintf(line, sizeof(line),
                  "; on this CPU (%s, %d cases, %d rounds) rounds spread by "
                  "%.0f%% of their median (90th percentile %.0f%%)",
                  last.value("date", "?").c_str(), last.value("cases", 0),
                  last.value("rounds", 0),
                  100 * last["median_spread"].get<double>(),
                  100 * last.value("p90_spread", 0.0));
    note += line;
  } else {
    note += " (--paradnn_rounds=3 or more measures by how much)";
  }
  notes.push_back(note);
  return notes;
}

}  // namespace paradnn
