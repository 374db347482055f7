// Shards, merging and resuming.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <string_view>

#include "adapters/mlperf/reader.h"
#include "analysis/compare.h"
#include "analysis/merge.h"
#include "bricks/bricks.h"
#include "generators/cost.h"
#include "generators/spec.h"
#include "machine/caches.h"
#include "records/results.h"
#include "records/rounds.h"
#include "tests/backends/clock_costs.h"
#include "tests/catch.h"
#include "tests/runner/runner.h"
#include "tests/scratch.h"

namespace paradnn::runner_tests {
namespace {

std::set<std::string> Listed(const std::string& args) {
  Result r = RunRunner(Config("quickstart.yaml") + " " + args +
                       " --benchmark_list_tests");
  REQUIRE(r.status == 0);
  std::set<std::string> names;
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line)) names.insert(line);
  return names;
}

TEST_CASE("three shards list exactly the unsharded cases", "[runner][shard]") {
  const std::set<std::string> all = Listed("");
  std::set<std::string> joined;
  size_t total = 0;
  for (int i = 0; i < 3; ++i) {
    const std::set<std::string> part =
        Listed("--paradnn_shard=" + std::to_string(i) + "/3");
    CHECK_FALSE(part.empty());
    total += part.size();
    joined.insert(part.begin(), part.end());
  }
  CHECK(total == all.size());  // nothing repeated
  CHECK(joined == all);        // nothing lost
}

TEST_CASE("merging shard results gives the unsharded cases, contexts checked",
          "[runner][shard]") {
  std::vector<std::string> files;
  for (int i = 0; i < 3; ++i) {
    files.push_back(Scratch("shard" + std::to_string(i) + ".json"));
    Result r = RunRunner(Config("smoke.yaml") +
                         " --paradnn_shard=" + std::to_string(i) +
                         "/3 --paradnn_steps=1 "
                         "--benchmark_out_format=json --benchmark_out=" +
                         files.back());
    REQUIRE(r.status == 0);
  }
  const std::string config =
      std::string(PARADNN_SOURCE_DIR) + "/configs/smoke.yaml";
  Merged m = MergeResults(files, config);
  CHECK(m.duplicates.empty());
  CHECK(m.missing.empty());
  std::set<std::string> merged;
  for (const json& b : m.results["benchmarks"]) {
    merged.insert(CaseNameOf(b["name"]));
    CHECK(b.contains("host_name"));
  }
  std::set<std::string> expected;
  Result list = RunRunner(Config("smoke.yaml") + " --benchmark_list_tests");
  std::istringstream lines(list.out);
  std::string line;
  while (std::getline(lines, line)) expected.insert(CaseNameOf(line));
  CHECK(merged == expected);
  // A shard of another config is refused.
  json other = json::parse(Slurp(files[1]));
  other["context"]["paradnn_config"] = "configs/other.yaml";
  std::ofstream(files[1]) << other.dump();
  CHECK_THROWS_WITH(
      MergeResults(files),
      ContainsSubstring("context field 'paradnn_config' differs"));
  // The runner's subcommand reports duplicates and refuses mismatches too.
  Result r = RunRunner("merge " + files[0] + " " + files[0] + " -o " +
                       Scratch("dup.json"));
  CHECK(r.status == 0);
  CHECK_THAT(r.err, ContainsSubstring("duplicate"));
  r = RunRunner("merge " + files[0] + " " + files[1] + " -o " +
                Scratch("bad.json"));
  CHECK(r.status == 2);
}

TEST_CASE("a sweep killed midway and resumed runs every case exactly once",
          "[runner][shard]") {
  const std::string journal = Scratch("journal.jsonl");
  std::remove(journal.c_str());
  const std::string args = Config("smoke.yaml") +
                           " --paradnn_resume=" + journal +
                           " --paradnn_steps=300";
  const std::string cmd =
      std::string(PARADNN_RUNNER) + " " + args + " > /dev/null 2>&1";
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", ("exec " + cmd).c_str(), nullptr);
    _exit(127);
  }
  // Kill it once a few cases are in the journal.
  auto lines = [&] {
    std::ifstream in(journal);
    return static_cast<int>(std::count(std::istreambuf_iterator<char>(in),
                                       std::istreambuf_iterator<char>(), '\n'));
  };
  for (int i = 0; i < 600 && lines() < 3; ++i) usleep(50000);
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  REQUIRE(WIFSIGNALED(status));
  const int before = lines();
  REQUIRE(before >= 3);
  REQUIRE(before < 18);  // killed midway
  Result r = RunRunner(args);
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.err, ContainsSubstring("resuming: " + std::to_string(before) +
                                      " cases already done"));
  std::map<std::string, int> count;
  std::ifstream in(journal);
  std::string line;
  while (std::getline(in, line)) count[json::parse(line)["name"]]++;
  CHECK(count.size() == 18);
  for (const auto& [name, n] : count) CHECK(n == 1);
}

}  // namespace
}  // namespace paradnn::runner_tests
