// What the runner's end-to-end tests share: the runner run as a user runs
// it, its outputs read back, and the test backends' paths and models.
#pragma once

#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/catch.h"
#include "tests/scratch.h"

namespace paradnn::runner_tests {

using Catch::Matchers::ContainsSubstring;
using nlohmann::json;

struct Result {
  int status = -1;
  std::string out, err;
  double seconds = 0;  // the process's, as it ran
};

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::string Scratch(const std::string& name) {
  return test::Scratch(name).string();
}

// The runner with `args`, started through `prefix` (e.g. "taskset -c 0 ").
inline Result RunRunner(const std::string& args,
                        const std::string& prefix = "") {
  const std::string out = Scratch("out"), err = Scratch("err");
  const std::string cmd =
      prefix + PARADNN_RUNNER + " " + args + " >" + out + " 2>" + err;
  Result r;
  const auto start = std::chrono::steady_clock::now();
  const int raw = std::system(cmd.c_str());
  r.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = Slurp(out);
  r.err = Slurp(err);
  return r;
}

inline std::string Config(const std::string& name) {
  return std::string("--paradnn_config=") + PARADNN_SOURCE_DIR + "/configs/" +
         name;
}

// Google Benchmark appends "/real_time": paradnn times the wall clock.
inline std::string CaseName(const json& b) {
  std::string name = b.at("name");
  const std::string suffix = "/real_time";
  REQUIRE(name.size() > suffix.size());
  CHECK(name.substr(name.size() - suffix.size()) == suffix);
  return name.substr(0, name.size() - suffix.size());
}

inline constexpr char kFast[] =
    " --benchmark_min_time=0.01 --paradnn_threads=1";

// A bricks run's output (--paradnn_bricks_out) and its bricks by name.
inline std::pair<json, std::map<std::string, json>> RunBricksOut(
    const std::string& args, const std::string& file) {
  const std::string out = Scratch(file);
  Result r = RunRunner(args + " --paradnn_bricks_out=" + out +
                       " --paradnn_threads=1 --benchmark_format=json");
  INFO(r.err);
  REQUIRE(r.status == 0);
  std::pair<json, std::map<std::string, json>> o{json::parse(Slurp(out)), {}};
  for (const json& b : o.first["bricks"]) o.second[b["name"]] = b;
  return o;
}

// The median of a brick's steps, by sorting.
inline double MedianOf(std::vector<double> v) {
  REQUIRE(!v.empty());
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The clock backend's cases (tests/backends/clock_module.cpp): steps of a
// known time.
inline std::string ClockPath() {
  return std::string("PARADNN_BACKEND_PATH=") + PARADNN_THIRD_PARTY_BACKENDS +
         " ";
}

// Twenty small FC models for the clock backends' rounds, widths 8 to 160.
inline std::vector<std::string> ClockModels() {
  std::vector<std::string> models;
  for (int nodes = 8; models.size() < 20; nodes += 8) {
    models.push_back("FC/layers:2/nodes:" + std::to_string(nodes) +
                     "/input:128/output:10/batch:16");
  }
  return models;
}

}  // namespace paradnn::runner_tests
