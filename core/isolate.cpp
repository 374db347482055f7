// A case's steps in a child process (rounds, --paradnn_isolate): a fork of
// this process, which prepares the case, times its steps and writes how it
// ended and each step's time to a file, then exits; the parent reports
// those times as its own. So every round is a process of its own (its own
// threads, thread placement and memory), and a child's crash, skip or
// failure becomes the case's. A fork, not a new program: the libraries the
// parent loaded (LibTorch takes half a second) are not loaded again, and
// the child runs exactly this run's settings.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/run.h"

namespace paradnn {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start)
      .count();
}

// A round without --paradnn_steps times steps until at least a tenth of a
// second of them, however short its step (at least one): long next to the
// clock's resolution and to a time slice the scheduler takes (4 ms), so
// that a sub-millisecond case's figure is its steady step, and short next
// to a process's start, since the process, not the step, is what varies.
constexpr double kRoundMs = 100;

// A fresh process's first steps are slow: its threads start, its memory
// faults in page by page, its allocator's caches fill. After the
// preparation's steps, the round steps on in blocks of at least
// kWarmupBlockMs until two blocks in a row agree within kWarmupAgreement
// once kRoundMs have passed (as long warming as timing), or kWarmupMostMs
// have; a step of over kRoundMs is warm after one (its own length
// amortizes all of that). One process's steps agree within about 2%, so
// blocks that differ by more are still settling.
constexpr double kWarmupBlockMs = 20;
constexpr double kWarmupAgreement = 0.05;
constexpr double kWarmupMostMs = 500;

void WarmUp(Runner& runner) {
  const auto start = Clock::now();
  double before = 0;
  for (;;) {
    const auto block = Clock::now();
    int steps = 0;
    do {
      runner.Step();
      ++steps;
    } while (MsSince(block) < kWarmupBlockMs);
    const double mean = MsSince(block) / steps;
    const double total = MsSince(start);
    if ((steps == 1 && mean >= kRoundMs) || total >= kWarmupMostMs) return;
    if (total >= kRoundMs && before > 0 &&
        std::abs(mean / before - 1) <= kWarmupAgreement) {
      return;
    }
    before = mean;
  }
}

// In the child: the case, from preparation to its result in `out`; never
// returns.
[[noreturn]] void RunChild(Run& run, int index, int64_t steps, bool profile,
                           const std::string& out) {
  // What it measured goes through the file; its console would interleave.
  const int null = open("/dev/null", O_WRONLY);
  dup2(null, 1);
  dup2(null, 2);
  run.isolated_child = true;
  run.child_out = out;
  run.settings = run.settings.ForChild(profile);
  // A case that cannot begin has its result written (EndCall).
  bool ok = BeginCase(run, index, run.progress.filter, steps).ok();
  if (ok) {
    try {
      WarmUp(*run.current.runner);
    } catch (const std::exception& ex) {
      WriteIsolatedResult(
          run, run.cases.entries[index],
          core::Status::Failed(std::string("step failed: ") + ex.what()));
      ok = false;
    }
  }
  if (ok) {
    int64_t timed = 0;
    double ms = 0;
    while (steps > 0 ? timed < steps : timed == 0 || ms < kRoundMs) {
      if (!Step(run)) break;
      ms += run.cases.entries[index].log.steps.back().ms;
      ++timed;
    }
    // Profiled now: it timed all it will. EndCase writes the result.
    std::vector<core::Counter> counters;
    EndCase(run, index, timed, /*all_timed=*/true, &counters);
  }
  std::fflush(nullptr);
  _exit(0);
}

// A profile through the child's result file, operations and layers.
nlohmann::json ProfileJson(const StepProfile& p) {
  nlohmann::json ops = nlohmann::json::object(),
                 layers = nlohmann::json::array();
  for (const auto& [name, op] : p.ops()) {
    ops[name] = {static_cast<int>(op.cls), op.seconds, op.calls};
  }
  for (const auto& [i, l] : p.layers()) {
    layers.push_back({{"layer", i},
                      {"forward_s", l.forward_s},
                      {"backward_s", l.backward_s},
                      {"update_s", l.update_s},
                      {"kernels", l.kernels}});
  }
  return {{"wall_s", p.step_s() * p.steps()},
          {"steps", p.steps()},
          {"ops", ops},
          {"layers", layers}};
}

StepProfile ProfileFrom(const nlohmann::json& j) {
  std::map<std::string, StepProfile::Op> ops;
  for (const auto& [name, op] : j.at("ops").items()) {
    ops[name] = {static_cast<OpClass>(op.at(0).get<int>()), op.at(1), op.at(2)};
  }
  std::map<int, LayerProfile> layers;
  for (const auto& l : j.at("layers")) {
    LayerProfile& lp = layers[l.at("layer").get<int>()];
    lp.forward_s = l.at("forward_s");
    lp.backward_s = l.at("backward_s");
    lp.update_s = l.at("update_s");
    lp.kernels = l.at("kernels").get<std::map<std::string, double>>();
  }
  return StepProfile::FromParts(std::move(ops), std::move(layers),
                                j.at("wall_s"), j.at("steps"));
}

}  // namespace

void WriteIsolatedResult(const Run& run, const Entry& e,
                         const core::Status& status) {
  nlohmann::json out;
  out["status"] = status.code == core::Status::kOk        ? "ok"
                  : status.code == core::Status::kSkipped ? "skipped"
                                                          : "failed";
  out["message"] = status.message;
  out["steps_ms"] = e.log.LastCall();
  out["cold_ms"] = e.log.Of(Caches::kCold);
  for (const core::Counter& c : ProfileCounters(e, run.settings.world.size)) {
    out["counters"][c.name] = c.value;
  }
  if (!e.counters_missing.empty()) {
    out["counters_missing"] = e.counters_missing;
  }
  if (e.profile) out["profile"] = ProfileJson(*e.profile);
  std::ofstream(run.child_out) << out.dump() << "\n";
}

ChildResult RunIsolated(Run& run, const Entry& e, int64_t steps, bool profile) {
  ChildResult r;
  r.start_ms = NowMs();
  r.at_s = SteadySeconds(std::chrono::steady_clock::now());
  auto done = [&](core::Status status) {
    r.status = std::move(status);
    r.stop_ms = NowMs();
    return r;
  };
  std::string out =
      (std::filesystem::temp_directory_path() / "paradnn_isolate.XXXXXX")
          .string();
  const int fd = mkstemp(out.data());
  if (fd < 0) {
    return done(
        core::Status::Failed("cannot create a file for the isolated process"));
  }
  close(fd);
  // Found here, before the fork, so that every child takes the same figure.
  if (e.brick) L3Bytes(run);
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) RunChild(run, run.cases.index.at(e.name), steps, profile, out);
  int status = 0;
  waitpid(pid, &status, 0);
  nlohmann::json result;
  {
    std::ifstream in(out);
    result = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  }
  std::remove(out.c_str());
  if (pid < 0) return done(core::Status::Failed("fork failed"));
  if (WIFSIGNALED(status)) {
    return done(
        core::Status::Failed(std::string("crashed in its isolated process: ") +
                             strsignal(WTERMSIG(status))));
  }
  if (!result.is_object() || !result["status"].is_string() ||
      !result["steps_ms"].is_array()) {
    return done(core::Status::Failed(
        "its isolated process exited with status " +
        std::to_string(WEXITSTATUS(status)) + " and no result"));
  }
  const std::string how = result["status"];
  const std::string message = result.value("message", std::string());
  if (how == "skipped") return done(core::Status::Skipped(message));
  if (how != "ok") {
    return done(core::Status::Failed("in its isolated process: " + message));
  }
  for (const auto& ms : result["steps_ms"]) r.warm_ms.push_back(ms);
  if (result["cold_ms"].is_array()) {
    for (const auto& ms : result["cold_ms"]) r.cold_ms.push_back(ms);
  }
  if (r.warm_ms.empty() ||
      (steps > 0 && static_cast<int64_t>(r.warm_ms.size()) != steps)) {
    return done(core::Status::Failed("its isolated process ran " +
                                     std::to_string(r.warm_ms.size()) +
                                     " steps, not " + std::to_string(steps)));
  }
  for (const auto& [key, value] : result["counters"].items()) {
    r.counters[key] = value;
  }
  if (result.contains("counters_missing")) {
    r.counters_missing = result["counters_missing"];
  }
  if (result.contains("profile")) {
    try {
      r.profile = ProfileFrom(result["profile"]);
    } catch (const nlohmann::json::exception& ex) {
      return done(core::Status::Failed(
          std::string("its isolated process wrote a bad profile: ") +
          ex.what()));
    }
  }
  return done({});
}

}  // namespace paradnn
