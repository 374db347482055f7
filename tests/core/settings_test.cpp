// A run's settings resolved from its flags, world, sweep and machine.
#include "core/settings.h"

#include <string>
#include <utility>

#include "core/default_config.h"
#include "tests/catch.h"

namespace paradnn {
namespace {

const MachineDefaults kMachine{/*cpus=*/7,
                               /*available_memory=*/int64_t{10} << 30,
                               /*host=*/"box1"};

TEST_CASE(
    "settings: threads, seed and memory from the flag, else the "
    "config, else the machine",
    "[core][settings]") {
  Sweep sweep;
  sweep.threads = 5;
  sweep.seed = 42;
  Options o;
  Settings s = ResolveSettings(o, World{}, sweep, kMachine);
  CHECK(s.flags.threads == 5);
  CHECK(s.seed() == 42);
  // 80% of 10 GiB.
  CHECK(s.flags.max_memory == 8589934592);
  CHECK_FALSE(s.max_memory_given);
  sweep.threads = 0;
  CHECK(ResolveSettings(o, World{}, sweep, kMachine).flags.threads == 7);
  o.threads = 3;
  o.seed = 9;
  o.max_memory = int64_t{1} << 30;
  s = ResolveSettings(o, World{}, sweep, kMachine);
  CHECK(s.flags.threads == 3);
  CHECK(s.seed() == 9);
  CHECK(s.flags.max_memory == 1073741824);
  CHECK(s.max_memory_given);
  const RunOptions backend = s.BackendOptions();
  CHECK(backend.threads == 3);
  CHECK(backend.seed == 9);
}

TEST_CASE("settings: MLPerf names and the config's name", "[core][settings]") {
  Sweep sweep;
  sweep.mlperf_org = "acme";
  Options o;
  Settings s = ResolveSettings(o, World{}, sweep, kMachine);
  CHECK(s.flags.mlperf_org == "acme");
  CHECK(s.flags.mlperf_system == "box1");
  CHECK(s.flags.mlperf_status == "onprem");
  CHECK(s.config == kDefaultConfigName);
  o.mlperf_org = "given";
  o.config = "sweeps/mine.yaml";
  s = ResolveSettings(o, World{}, sweep, kMachine);
  CHECK(s.flags.mlperf_org == "given");
  CHECK(s.config == "sweeps/mine.yaml");
  // Cases by name: no config at all.
  o.config.clear();
  o.cases = {"FC/layers:2/nodes:8/input:8/output:2/batch:4/torch/fp32/train"};
  CHECK(ResolveSettings(o, World{}, sweep, kMachine).config.empty());
}

TEST_CASE("settings: rounds isolate every call, and a shard names itself",
          "[core][settings]") {
  Options o;
  o.rounds = 3;
  Settings s = ResolveSettings(o, World{}, Sweep{}, kMachine);
  CHECK(s.Isolates());
  o.rounds = 1;
  s = ResolveSettings(o, World{}, Sweep{}, kMachine);
  CHECK_FALSE(s.Isolates());
  o.isolate = true;
  o.shard = "1/3";
  s = ResolveSettings(o, World{}, Sweep{}, kMachine);
  CHECK(s.Isolates());
  CHECK(s.ShardName() == "1/3");
  o.shard = "3/3";
  CHECK_THROWS(ResolveSettings(o, World{}, Sweep{}, kMachine));
}

TEST_CASE("settings: a child runs its call in place, quietly, profiled once",
          "[core][settings]") {
  Options o;
  o.rounds = 5;
  o.profile = true;
  const Settings parent = ResolveSettings(o, World{}, Sweep{}, kMachine);
  const Settings child = parent.ForChild(/*profile=*/false);
  CHECK_FALSE(child.Isolates());
  CHECK_FALSE(child.flags.progress);
  CHECK_FALSE(child.flags.profile);
  CHECK(parent.ForChild(/*profile=*/true).flags.profile);
  CHECK(child.flags.threads == parent.flags.threads);
  CHECK(child.seed() == parent.seed());
}

TEST_CASE("settings: a data-parallel rank's flags", "[core][settings]") {
  World w;
  w.size = 2;
  w.rank = 1;
  Options o;
  o.mllog = "logs";
  o.bricks_out = "bricks.json";
  o = ForRank(o, w);
  CHECK(o.steps == 10);
  CHECK(o.rounds == 1);  // the default three, not asked for
  CHECK(o.mllog.empty());
  CHECK(o.bricks_out.empty());
  CHECK_FALSE(o.progress);
  Options all;
  all.mllog = "logs";
  all.all_ranks = true;
  all.steps = 4;
  all = ForRank(all, w);
  CHECK(all.mllog == "logs.rank1");
  CHECK(all.steps == 4);
  CHECK(all.progress);
  w.rank = 0;
  Options first;
  first.mllog = "logs";
  CHECK(ForRank(first, w).mllog == "logs");
  Options isolated;
  isolated.isolate = true;
  CHECK_THROWS_AS(ForRank(isolated, w), FlagError);
  Options resumed;
  resumed.resume = "j";
  CHECK_THROWS_AS(ForRank(resumed, w), FlagError);
  Options rounds;
  rounds.rounds = 3;
  rounds.given = {{"paradnn_rounds", "3"}};
  CHECK_THROWS_AS(ForRank(rounds, w), FlagError);
}

}  // namespace
}  // namespace paradnn
