#include "generators/fusion.h"

#include <algorithm>

namespace paradnn {

std::vector<int> FusedGroup::Members() const {
  std::vector<int> out;
  if (batch_norm >= 0) out.push_back(batch_norm);
  out.insert(out.end(), before_sum.begin(), before_sum.end());
  if (add >= 0) out.push_back(add);
  out.insert(out.end(), after_sum.begin(), after_sum.end());
  return out;
}

int FusedGroup::Output() const {
  const std::vector<int> m = Members();
  return m.empty() ? anchor : m.back();
}

const FusedGroup* FusionPlan::GroupOf(int i) const {
  return i >= 0 && i < static_cast<int>(group_of.size()) && group_of[i] >= 0
             ? &groups[group_of[i]]
             : nullptr;
}

const FusedGroup* FusionPlan::AnchoredAt(int i) const {
  const FusedGroup* g = GroupOf(i);
  return g != nullptr && g->anchor == i ? g : nullptr;
}

bool FusionPlan::Absorbed(int i) const {
  const FusedGroup* g = GroupOf(i);
  return g != nullptr && g->anchor != i;
}

int FusionPlan::UnitOf(int i) const {
  const FusedGroup* g = GroupOf(i);
  return g != nullptr ? g->anchor : i;
}

bool FusionPlan::Hidden(int i) const {
  const FusedGroup* g = GroupOf(i);
  return g != nullptr && g->Output() != i;
}

bool FusibleActivation(Op op) {
  switch (op) {
    case Op::kReLU:
    case Op::kRelu6:
    case Op::kSilu:
    case Op::kHardSwish:
    case Op::kHardSigmoid:
    case Op::kSigmoid:
    case Op::kGelu:
      return true;
    default:
      return false;
  }
}

FusionPlan PlanFusion(const Graph& g, Mode mode, Fusion fusion) {
  FusionPlan plan;
  plan.group_of.assign(g.size(), -1);
  if (mode != Mode::kInfer || fusion == Fusion::kNone) return plan;
  const bool full = fusion == Fusion::kFull;
  // Who reads each layer: a layer is absorbed only as its input's one
  // reader.
  std::vector<std::vector<int>> readers(g.size());
  for (int i = 0; i < g.size(); ++i) {
    for (int x : g.layer(i).inputs) readers[x].push_back(i);
  }
  const int output = g.logits();
  // The one layer that reads `x` and nothing else of `x`'s, where `x` may
  // be hidden inside a group (it is not the graph's output).
  auto only_reader = [&](int x) {
    if (x == output || readers[x].size() != 1) return -1;
    const int r = readers[x][0];
    const std::vector<int>& in = g.layer(r).inputs;
    return std::count(in.begin(), in.end(), x) == 1 && plan.group_of[r] < 0
               ? r
               : -1;
  };
  for (int i = 0; i < g.size(); ++i) {
    if (plan.group_of[i] >= 0) continue;
    const Op op = g.layer(i).op;
    const bool conv = op == Op::kConv2d || op == Op::kConv3d;
    if (!conv && op != Op::kDense && op != Op::kBatchNorm) {
      continue;
    }
    FusedGroup group;
    group.anchor = i;
    int last = i;
    int next = only_reader(last);
    if (op == Op::kBatchNorm) {
      // oneDNN's batch norm applies a ReLU, nothing else.
      if (full && next >= 0 && g.layer(next).op == Op::kReLU) {
        group.before_sum.push_back(next);
      }
    } else {
      // A weight-normed convolution's weights are made each step: no batch
      // norm is folded into them.
      if (conv && g.layer(i).weight_norm < 0 && next >= 0 &&
          g.layer(next).op == Op::kBatchNorm) {
        group.batch_norm = next;
        last = next;
        next = only_reader(last);
      }
      if (!full) next = -1;
      while (next >= 0 && FusibleActivation(g.layer(next).op)) {
        group.before_sum.push_back(next);
        last = next;
        next = only_reader(last);
      }
      // The shortcut must be ready when the group's product runs, at the
      // anchor's place in the step.
      const bool add = next >= 0 && g.layer(next).op == Op::kAdd;
      const std::vector<int> operands =
          add ? g.layer(next).inputs : std::vector<int>{};
      const int shortcut =
          add ? (operands[0] == last ? operands[1] : operands[0]) : -1;
      if (add && shortcut < i) {
        group.add = next;
        group.shortcut = shortcut;
        last = next;
        next = only_reader(last);
        while (next >= 0 && FusibleActivation(g.layer(next).op)) {
          group.after_sum.push_back(next);
          last = next;
          next = only_reader(last);
        }
      }
    }
    if (group.Members().empty()) continue;
    const int index = static_cast<int>(plan.groups.size());
    plan.group_of[i] = index;
    for (int m : group.Members()) plan.group_of[m] = index;
    plan.groups.push_back(std::move(group));
  }
  return plan;
}

}  // namespace paradnn
