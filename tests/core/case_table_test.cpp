// The run's table of cases, as the sweep and the settings make it.
#include "core/case_table.h"

#include <algorithm>
#include <string>
#include <vector>

#include "generators/cost.h"
#include "generators/spec.h"
#include "tests/catch.h"

namespace paradnn {
namespace {

Case Fc(int nodes, int output) {
  return ParseCaseName("FC/layers:2/nodes:" + std::to_string(nodes) +
                       "/input:64/output:" + std::to_string(output) +
                       "/batch:16/torch/fp32/train");
}

Settings WithRounds(int rounds) {
  Options o;
  o.rounds = rounds;
  o.threads = 1;
  return ResolveSettings(o, World{}, Sweep{}, MachineDefaults{});
}

TEST_CASE("case table: each case once, registered as the settings say",
          "[core][case_table]") {
  const std::vector<Case> cases = {Fc(32, 10), Fc(48, 10), Fc(32, 10)};
  CaseTable t = MakeCaseTable(cases, {}, WithRounds(3));
  REQUIRE(t.size() == 2);
  CHECK(t.entries[0].name == cases[0].Name());
  CHECK(t.entries[1].name == cases[1].Name());
  for (int i = 0; i < t.size(); ++i) {
    const Entry& e = t.entries[i];
    CHECK(t.index.at(e.name) == i);
    CHECK(t.Find(e.name) == &e);
    CHECK(e.info.name == e.name);
    // A round is one iteration, one repetition a round, in a child.
    CHECK(e.info.steps == 1);
    CHECK(e.info.repetitions == 3);
    CHECK(e.info.manual_time);
    CHECK(e.info.one_row);
    CHECK(e.info.registered);
    CHECK(e.status == CaseStatus::kNotRun);
    CHECK(e.batch == 16);
    // The cost model's, of the case's own graph.
    const Cost cost =
        ComputeCost(cases[i].model.BuildGraph(), Mode::kTrain, DType::kFp32);
    CHECK(e.cost.flops == cost.flops);
    CHECK(e.cost.bytes == cost.bytes);
  }
  CHECK(t.Find("FC/none") == nullptr);
  Options o;
  o.rounds = 1;
  o.steps = 7;
  o.isolate = false;
  const CaseTable one =
      MakeCaseTable({cases[0]}, {}, ResolveSettings(o, World{}, Sweep{}, {}));
  CHECK(one.entries[0].info.steps == 7);
  CHECK(one.entries[0].info.repetitions == 1);
  CHECK_FALSE(one.entries[0].info.manual_time);
  CHECK_FALSE(one.entries[0].info.one_row);
}

TEST_CASE("case table: bricks first, each once, sized by their largest model",
          "[core][case_table]") {
  Options o;
  o.rounds = 1;
  o.bricks = true;
  const Settings settings = ResolveSettings(o, World{}, Sweep{}, {});
  // The same first dense layer (64 -> 32, batch 16); the second model's
  // last layer is wider.
  const std::vector<Case> cases = {Fc(32, 10), Fc(32, 1000)};
  CaseTable t = MakeCaseTable(cases, {}, settings);
  std::vector<int> models;
  for (int i = 0; i < t.size(); ++i) {
    if (t.entries[i].model) models.push_back(i);
  }
  REQUIRE(models.size() == 2);
  // Models last, in the sweep's order.
  CHECK(models[0] == t.size() - 2);
  CHECK(t.entries[models[0]].name == cases[0].Name());
  CHECK(t.entries[models[1]].name == cases[1].Name());
  const int64_t bytes0 = t.entries[models[0]].cost.bytes;
  const int64_t bytes1 = t.entries[models[1]].cost.bytes;
  std::vector<int> shared;
  for (int b : t.entries[models[0]].bricks.layers) {
    REQUIRE(b < models[0]);
    const Entry& brick = t.entries[b];
    REQUIRE(brick.brick);
    CHECK(brick.name.rfind("BRICK/", 0) == 0);
    const auto& other = t.entries[models[1]].bricks.layers;
    if (std::find(other.begin(), other.end(), b) != other.end()) {
      shared.push_back(b);
      CHECK(brick.model_bytes == std::max(bytes0, bytes1));
    } else {
      CHECK(brick.model_bytes == bytes0);
    }
  }
  // At least the input and the first dense layer are the same bricks.
  CHECK(shared.size() >= 2);
  // Every brick is some model's, and named once.
  for (int i = 0; i < models[0]; ++i) {
    CHECK(t.index.at(t.entries[i].name) == i);
  }
}

TEST_CASE("case table: a bricks check keeps N models, chosen by the seed",
          "[core][case_table]") {
  std::vector<Case> cases;
  for (int nodes = 8; nodes <= 48; nodes += 8) cases.push_back(Fc(nodes, 10));
  const Settings settings = WithRounds(1);
  CaseTable a = MakeCaseTable(cases, {}, settings);
  CaseTable b = MakeCaseTable(cases, {}, settings);
  KeepCheckedModels(2, 11, &a);
  KeepCheckedModels(2, 11, &b);
  int kept = 0;
  for (int i = 0; i < a.size(); ++i) {
    kept += a.entries[i].info.registered;
    CHECK(a.entries[i].info.registered == b.entries[i].info.registered);
  }
  CHECK(kept == 2);
}

}  // namespace
}  // namespace paradnn
