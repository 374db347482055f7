#include "generators/fusion.h"

#include "generators/cost.h"
#include "tests/catch.h"
#include "tests/generators/fused_graph.h"

namespace paradnn {
namespace {

TEST_CASE("the fusion plan groups what inference engines fuse", "[fusion]") {
  const test::FusedGraph f = test::MakeFusedGraph();
  const FusionPlan plan = PlanFusion(f.g, Mode::kInfer);
  REQUIRE(plan.groups.size() == 9);
  auto group = [&](int anchor) {
    const FusedGroup* g = plan.AnchoredAt(anchor);
    REQUIRE(g != nullptr);
    return *g;
  };
  FusedGroup g = group(f.conv1);
  CHECK(g.batch_norm == f.bn1);
  CHECK(g.before_sum == std::vector<int>{f.relu1});
  CHECK(g.add == -1);
  CHECK(g.Output() == f.relu1);
  g = group(f.conv2);
  CHECK(g.Members() == std::vector<int>{f.bn2, f.add2, f.relu6});
  CHECK(g.shortcut == f.relu1);
  CHECK(g.after_sum == std::vector<int>{f.relu6});
  // The pool is no product: its batch norm anchors a group of its own.
  CHECK(plan.group_of[f.pool] == -1);
  CHECK(group(f.bn3).Members() == std::vector<int>{f.relu3});
  CHECK(group(f.conv4).Members() == std::vector<int>{f.swish4});
  g = group(f.conv5);
  CHECK(g.Members() == std::vector<int>{f.silu5, f.add5});
  CHECK(g.shortcut == f.relu3);
  // add6's output is read twice (add7): nothing joins after it; add7 reads
  // two sums, neither a product's.
  g = group(f.conv6);
  CHECK(g.Members() == std::vector<int>{f.add6});
  CHECK(plan.group_of[f.add7] == -1);
  CHECK(group(f.dense8).Members() == std::vector<int>{f.gelu8});
  g = group(f.dense9);
  CHECK(g.Members() == std::vector<int>{f.add9});
  CHECK(g.shortcut == f.gap);
  // The graph's output may end a group.
  CHECK(group(f.dense10).Output() == f.sigmoid10);
  for (int i : {f.image, f.conv1, f.pool, f.add7, f.gap}) {
    CHECK_FALSE(plan.Absorbed(i));
  }
  for (int i : {f.bn1, f.relu1, f.add2, f.relu3, f.gelu8, f.sigmoid10}) {
    CHECK(plan.Absorbed(i));
  }
  // What is written: each group's last layer, and the layers of none.
  for (int i : {f.conv1, f.bn1, f.add2, f.dense10}) CHECK(plan.Hidden(i));
  for (int i : {f.relu1, f.relu6, f.pool, f.add7, f.sigmoid10}) {
    CHECK_FALSE(plan.Hidden(i));
  }
  CHECK_FALSE(FusionPlan{}.Hidden(0));
  CHECK(plan.UnitOf(f.relu6) == f.conv2);
  CHECK(plan.UnitOf(f.pool) == f.pool);
}

TEST_CASE("folding batch norms only: each with its convolution", "[fusion]") {
  const test::FusedGraph f = test::MakeFusedGraph();
  const FusionPlan plan =
      PlanFusion(f.g, Mode::kInfer, Fusion::kFoldBatchNorm);
  REQUIRE(plan.groups.size() == 2);
  CHECK(plan.groups[0].anchor == f.conv1);
  CHECK(plan.groups[0].Members() == std::vector<int>{f.bn1});
  CHECK(plan.groups[1].anchor == f.conv2);
  CHECK(plan.groups[1].Members() == std::vector<int>{f.bn2});
  CHECK(PlanFusion(f.g, Mode::kInfer, Fusion::kNone).groups.empty());
}

TEST_CASE("training fuses nothing, and a layer read twice ends its group",
          "[fusion]") {
  const test::FusedGraph f = test::MakeFusedGraph();
  CHECK(PlanFusion(f.g, Mode::kTrain).groups.empty());
  // A ReLU whose input the add reads too cannot hide that input.
  Graph g;
  const int x = g.Input({4, 3});
  const int d = g.Dense(x, 5);
  const int shared = g.Dense(d, 5);
  g.Add(g.ReLU(shared), shared);
  const FusionPlan plan = PlanFusion(g, Mode::kInfer);
  CHECK(plan.groups.empty());
}

TEST_CASE("a fused group's bytes: its output once, no intermediate",
          "[fusion][cost]") {
  // [1, 2, 4, 4] -> 1x1 convolution to 4 channels -> batch norm -> ReLU
  Graph g;
  const int x = g.Input({1, 2, 4, 4});
  g.ReLU(g.BatchNorm(g.Conv2d(x, 4, 1, 1, 0)));
  const FusionPlan plan = PlanFusion(g, Mode::kInfer);
  const Cost plain = ComputeCost(g, Mode::kInfer, DType::kFp32);
  const Cost fused = ComputeCost(g, Mode::kInfer, DType::kFp32, &plan);
  // Unfused: weights 8 + norm 8, the input 32, three outputs of 64.
  CHECK(plain.bytes == 4 * (16 + 32 + 3 * 64));
  // Fused: weights 8 and a folded bias of 4, the input, one output.
  CHECK(fused.bytes == 4 * (12 + 32 + 64));
  CHECK(fused.read_bytes == 4 * (12 + 32));
  CHECK(fused.flops == plain.flops);
  CHECK(fused.params == plain.params);
  const LayerCost unit = ComputeGroupCost(g, plan.groups[0], DType::kFp32);
  CHECK(unit.forward_flops == 2 * 16 * 4 * 2);
  CHECK(unit.read_bytes == 4 * (32 + 8 + 4));
  CHECK(unit.forward_bytes == 4 * (32 + 8 + 4 + 64));
}

}  // namespace
}  // namespace paradnn
