// --paradnn_isolate: a case in a child process, this binary again, on this
// case alone with the same paradnn settings through the environment; the
// child's result, or its death, becomes the case's.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/run.h"

namespace paradnn {
namespace {

void SetChildEnvironment(const Run& run, const Entry& e) {
  setenv("PARADNN_ISOLATED_CHILD", "1", 1);
  setenv("PARADNN_CASE", e.name.c_str(), 1);
  setenv("PARADNN_PROGRESS", "false", 1);
  setenv("PARADNN_THREADS", std::to_string(run.options.threads).c_str(), 1);
  setenv("PARADNN_SEED", std::to_string(run.options.seed).c_str(), 1);
  setenv("PARADNN_MAX_MEMORY", std::to_string(run.max_memory).c_str(), 1);
  const Options& f = run.flags;
  if (f.steps > 0) setenv("PARADNN_STEPS", std::to_string(f.steps).c_str(), 1);
  if (f.case_timeout > 0) {
    setenv("PARADNN_CASE_TIMEOUT", std::to_string(f.case_timeout).c_str(), 1);
  }
  if (!f.platform.empty()) setenv("PARADNN_PLATFORM", f.platform.c_str(), 1);
  if (f.profile) setenv("PARADNN_PROFILE", "true", 1);
  for (const char* unused :
       {"PARADNN_CONFIG", "PARADNN_RESUME", "PARADNN_SHARD", "PARADNN_MLLOG",
        "PARADNN_MLPERF_PACKAGE", "PARADNN_BRICKS_OUT",
        "PARADNN_PROFILE_OUT"}) {
    unsetenv(unused);
  }
}

core::Status Fail(std::string why) {
  return {core::Status::kFailed, std::move(why)};
}

}  // namespace

core::Status RunIsolated(Run& run, Entry& e) {
  if (e.isolated_step_s > 0) return {};  // a later call: measured already
  std::string out =
      (std::filesystem::temp_directory_path() / "paradnn_isolate.XXXXXX")
          .string();
  const int fd = mkstemp(out.data());
  if (fd < 0) return Fail("cannot create a file for the isolated process");
  close(fd);
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    SetChildEnvironment(run, e);
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
  nlohmann::json result;
  {
    std::ifstream in(out);
    result = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  }
  std::remove(out.c_str());
  if (WIFSIGNALED(status)) {
    return Fail(std::string("crashed in its isolated process: ") +
                strsignal(WTERMSIG(status)));
  }
  const nlohmann::json* run_json = nullptr;
  if (result.is_object() && result["benchmarks"].is_array() &&
      !result["benchmarks"].empty()) {
    run_json = &result["benchmarks"][0];
  }
  if (run_json == nullptr || !run_json->contains("real_time")) {
    return Fail("its isolated process exited with status " +
                std::to_string(WEXITSTATUS(status)) + " and no result");
  }
  if (run_json->value("error_occurred", false)) {
    return Fail("in its isolated process: " +
                run_json->value("error_message", std::string("no message")));
  }
  e.isolated_step_s = run_json->at("real_time").get<double>() / 1e3;  // ms
  if (run.flags.profile) {
    for (const auto& [key, value] : run_json->items()) {
      // time_<class>_frac (not time_unit)
      if (key.rfind("time_", 0) == 0 && value.is_number()) {
        e.child_counters[key] = value;
      }
    }
  }
  return {};
}

}  // namespace paradnn
