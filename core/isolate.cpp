// --paradnn_isolate: every call of a case's benchmark function runs its
// steps in a child process, this binary again, on this case alone with the
// same paradnn settings through the environment and exactly the steps Google
// Benchmark asked this call for. The child writes how it ended and each
// step's time to a file; the parent reports those times as its own, so every
// probe and every repetition is a measurement of its own, and a child's
// skip, failure or death becomes the case's.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/run.h"

namespace paradnn {
namespace {

void SetChildEnvironment(const Run& run, const Entry& e, int64_t steps,
                         bool profile, const std::string& out) {
  for (const auto& [name, value] : ChildEnvironment(run.flags)) {
    if (value) {
      setenv(name.c_str(), value->c_str(), 1);
    } else {
      unsetenv(name.c_str());
    }
  }
  // The case, and what the parent resolved (the config's threads and seed,
  // the memory it found, its steps for this call), not re-derived.
  setenv("PARADNN_ISOLATED_OUT", out.c_str(), 1);
  setenv("PARADNN_CASE", e.name.c_str(), 1);
  setenv("PARADNN_STEPS", std::to_string(steps).c_str(), 1);
  setenv("PARADNN_PROGRESS", "false", 1);
  setenv("PARADNN_THREADS", std::to_string(run.options.threads).c_str(), 1);
  setenv("PARADNN_SEED", std::to_string(run.options.seed).c_str(), 1);
  setenv("PARADNN_MAX_MEMORY", std::to_string(run.max_memory).c_str(), 1);
  // The parent's (RunIsolated found it before the fork).
  if (e.brick) setenv("PARADNN_L3_BYTES", std::to_string(L3Bytes()).c_str(), 1);
  if (!profile) setenv("PARADNN_PROFILE", "false", 1);
  // --paradnn_pin: each OpenMP thread (LibTorch's and oneDNN's) on a core
  // of its own, unless the environment already places them. Set here, as
  // the OpenMP runtime reads it when it loads.
  if (run.flags.pin) {
    setenv("OMP_PROC_BIND", "close", 0);
    setenv("OMP_PLACES", "cores", 0);
  }
}

// The case's name as a filter that matches it alone: names hold regular
// expression characters ('+' in brick chains).
std::string ExactFilter(const std::string& name) {
  std::string filter = "^";
  for (char c : name) {
    if (std::strchr(".+*?()[]{}|^$\\", c) != nullptr) filter += '\\';
    filter += c;
  }
  return filter + "(/|$)";
}

}  // namespace

void WriteIsolatedResult(const Entry& e, const core::Status& status) {
  nlohmann::json out;
  out["status"] = status.code == core::Status::kOk        ? "ok"
                  : status.code == core::Status::kSkipped ? "skipped"
                                                          : "failed";
  out["message"] = status.message;
  out["steps_ms"] = e.log.LastCall();
  out["cold_ms"] = e.log.Of(Caches::kCold);
  for (const core::Counter& c : ProfileCounters(e)) {
    out["counters"][c.name] = c.value;
  }
  std::ofstream(std::getenv("PARADNN_ISOLATED_OUT")) << out.dump() << "\n";
}

ChildResult RunIsolated(Run& run, const Entry& e, int64_t steps, bool profile) {
  ChildResult r;
  r.start_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
  r.at_s = std::chrono::duration<double>(
               std::chrono::steady_clock::now().time_since_epoch())
               .count();
  auto done = [&](core::Status status) {
    r.status = std::move(status);
    r.stop_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
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
  if (e.brick) L3Bytes();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    SetChildEnvironment(run, e, steps, profile, out);
    // What it measured comes through the file; its console would interleave.
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    const std::string filter = "--benchmark_filter=" + ExactFilter(e.name);
    execl("/proc/self/exe", "/proc/self/exe", filter.c_str(),
          "--benchmark_repetitions=1", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  nlohmann::json result;
  {
    std::ifstream in(out);
    result = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  }
  std::remove(out.c_str());
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
  if (static_cast<int64_t>(r.warm_ms.size()) != steps) {
    return done(core::Status::Failed("its isolated process ran " +
                                     std::to_string(r.warm_ms.size()) +
                                     " steps, not " + std::to_string(steps)));
  }
  for (const auto& [key, value] : result["counters"].items()) {
    r.counters[key] = value;
  }
  return done({});
}

}  // namespace paradnn
