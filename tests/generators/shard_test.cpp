#include "generators/shard.h"

#include <map>
#include <numeric>

#include "generators/sweep.h"
#include "tests/catch.h"

namespace paradnn {
namespace {

using Catch::Matchers::ContainsSubstring;

TEST_CASE("shards partition the paper's CNN sweep, balanced by estimate",
          "[shard]") {
  const Sweep sweep = LoadSweep(
      std::string(PARADNN_SOURCE_DIR) + "/configs/paper_cnn.yaml", {"torch"});
  std::vector<double> seconds;
  for (const Case& c : sweep.cases) {
    seconds.push_back(
        EstimatedSeconds(ComputeCost(c.model.BuildGraph(), c.mode, c.dtype)));
  }
  const double total = std::accumulate(seconds.begin(), seconds.end(), 0.0);
  const double largest = *std::max_element(seconds.begin(), seconds.end());
  for (int n : {1, 2, 3, 7, 16}) {
    INFO(n << " shards");
    const std::vector<int> shard = AssignShards(seconds, n);
    REQUIRE(shard.size() == seconds.size());  // every case exactly once
    std::vector<double> load(n, 0);
    for (size_t i = 0; i < shard.size(); ++i) {
      REQUIRE((shard[i] >= 0 && shard[i] < n));
      load[shard[i]] += seconds[i];
    }
    // Longest first onto the least loaded: no shard exceeds the mean by
    // more than the largest case.
    for (double l : load) CHECK(l <= total / n + largest);
    CHECK(AssignShards(seconds, n) == shard);  // the same on every machine
  }
}

TEST_CASE("shards from flags and schedulers", "[shard]") {
  CHECK(ParseShard("2/5").index == 2);
  CHECK(ParseShard("2/5").count == 5);
  CHECK_THROWS_WITH(ParseShard("5/5"),
                    ContainsSubstring("expected 0 <= I < N"));
  CHECK_THROWS_WITH(ParseShard("x/5"),
                    ContainsSubstring("'x/5' is not a shard"));
  CHECK_THROWS_WITH(ParseShard("3"), ContainsSubstring("expected I/N"));

  std::map<std::string, std::string> env;
  auto get = [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  CHECK_FALSE(ShardFromEnvironment(0, get));
  // Slurm arrays may start at any index: --array=1-4.
  env = {{"SLURM_ARRAY_TASK_ID", "3"},
         {"SLURM_ARRAY_TASK_MIN", "1"},
         {"SLURM_ARRAY_TASK_COUNT", "4"}};
  auto s = ShardFromEnvironment(0, get);
  REQUIRE(s);
  CHECK(s->index == 2);
  CHECK(s->count == 4);
  env = {{"JOB_COMPLETION_INDEX", "1"}};
  CHECK_THROWS_WITH(
      ShardFromEnvironment(0, get),
      ContainsSubstring("--paradnn_shard_count or PARADNN_SHARD_COUNT"));
  CHECK(ShardFromEnvironment(3, get)->count == 3);
  env["PARADNN_SHARD_COUNT"] = "2";
  CHECK(ShardFromEnvironment(0, get)->index == 1);
}

}  // namespace
}  // namespace paradnn
