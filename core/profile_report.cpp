#include "core/profile_report.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "bricks/bricks.h"
#include "generators/cost.h"

namespace paradnn {
namespace {

using nlohmann::ordered_json;

// Each layer's brick case name (it runs the layer on its own), where
// bricks cover the model; else empty names.
std::vector<std::string> BrickNames(const Graph& g, const Entry& e) {
  std::vector<std::string> names(g.size());
  if (!UncoveredLayers(g).empty()) return names;
  const std::vector<Brick> bricks = BricksOf(g, e.mode);
  size_t k = 0;
  for (int i = 0; i < g.size() && k < bricks.size(); ++i) {
    const Op op = g.layer(i).op;
    if (op == Op::kInput || op == Op::kTokens) continue;
    if (op == Op::kSoftmaxCrossEntropy && e.mode == Mode::kInfer) continue;
    names[i] = BrickCase{bricks[k++], e.backend, e.dtype, e.mode}.Name();
  }
  return names;
}

// The layers of a profiled case: each one's time per step in its forward
// and backward passes and its parameters' update, its kernels, and its
// work (the cost model's FLOPs and bytes) against the roofs: the share of
// the peak or of the bandwidth it reaches, and of the roof at its
// intensity (min(peak, bandwidth x intensity)), the bandwidth that of the
// cache its passes' bytes fit in (else the memory's) at its mix of reads
// and writes; furthest below its roof first where roofs are known, else
// the slowest first.
ordered_json Layers(const Run& run, const Entry& e, const StepProfile& p) {
  const Graph g = e.BuildGraph();
  const Backend* backend = FindBackend(e.backend);
  const Roofs roofs = backend == nullptr
                          ? Roofs{}
                          : RoofsOf(run.settings, backend->Device(), e.dtype);
  const std::vector<std::string> bricks = BrickNames(g, e);
  // A fused group is one unit, at its anchor: its layers' FLOPs, the bytes
  // it moves (its intermediates never written), its member layers named.
  const FusionPlan plan = PlanOf(g, e.backend, e.mode, run.settings);
  const double steps = p.steps();
  struct Row {
    double roof_util = -1, ms = 0;
    ordered_json json;
  };
  // What a group's other layers still ran on their own (LibTorch's scope
  // around a folded batch norm) is the group's.
  std::map<int, LayerProfile> units;
  for (const auto& [i, lp] : p.layers()) {
    if (i < 0 || i >= g.size()) continue;
    LayerProfile& u = units[plan.UnitOf(i)];
    u.forward_s += lp.forward_s;
    u.backward_s += lp.backward_s;
    u.update_s += lp.update_s;
    for (const auto& [name, s] : lp.kernels) u.kernels[name] += s;
  }
  std::vector<Row> rows;
  double layers_ms = 0;
  for (const auto& [i, lp] : units) {
    const Layer& l = g.layer(i);
    const FusedGroup* group = plan.AnchoredAt(i);
    const LayerCost c = group ? ComputeGroupCost(g, *group, e.dtype)
                              : ComputeLayerCost(g, i, e.mode, e.dtype);
    const double ms = lp.total_s() * 1e3 / steps;
    layers_ms += ms;
    const double flops =
        static_cast<double>(c.forward_flops + c.backward_flops);
    const double bytes = static_cast<double>(c.bytes());
    const double s = ms / 1e3;
    Row row;
    row.ms = ms;
    row.json = {{"layer", i},
                {"op", ToString(l.op)},
                {"shape", l.shape},
                // No brick runs a fused group (its anchor's is the
                // anchor alone).
                {"brick", group ? std::string() : bricks[i]},
                {"forward_ms", lp.forward_s * 1e3 / steps},
                {"backward_ms", lp.backward_s * 1e3 / steps},
                {"update_ms", lp.update_s * 1e3 / steps},
                {"share", p.step_s() > 0 ? s / p.step_s() : 0.0},
                {"flops", flops},
                {"bytes", bytes},
                {"read_bytes", c.read_bytes},
                {"intensity", bytes > 0 ? flops / bytes : 0.0},
                {"flop_per_s", s > 0 ? flops / s : 0.0},
                {"bytes_per_s", s > 0 ? bytes / s : 0.0}};
    if (group) {
      ordered_json members = ordered_json::array();
      for (int m : group->Members()) {
        members.push_back({{"layer", m}, {"op", ToString(g.layer(m).op)}});
      }
      row.json["fused"] = members;
    }
    const int64_t working_set =
        std::max({c.forward_bytes, c.backward_bytes, c.update_bytes});
    const std::optional<double> bandwidth =
        roofs.BandwidthFor(working_set, bytes > 0 ? c.read_bytes / bytes : 1.0);
    if (roofs.peak && s > 0) row.json["flops_util"] = flops / s / *roofs.peak;
    if (bandwidth && s > 0) {
      row.json["bandwidth_roof"] = *bandwidth;
      row.json["bandwidth_util"] = bytes / s / *bandwidth;
    }
    if (roofs.peak && bandwidth && s > 0 && bytes > 0) {
      const double intensity = flops / bytes;
      const double ridge = *roofs.peak / *bandwidth;
      const double roof = std::min(*roofs.peak, *bandwidth * intensity);
      row.json["bound"] = intensity < ridge ? "memory" : "compute";
      // Against its roof: FLOP/s for a compute-bound layer, bytes/s (the
      // same fraction) for a memory-bound one.
      row.roof_util =
          intensity < ridge ? bytes / s / *bandwidth : flops / s / roof;
      row.json["roof_util"] = row.roof_util;
    }
    std::vector<std::pair<std::string, double>> kernels(lp.kernels.begin(),
                                                        lp.kernels.end());
    std::sort(kernels.begin(), kernels.end(),
              [](const auto& a, const auto& b) { return a.second > b.second; });
    ordered_json list = ordered_json::array();
    for (const auto& [name, seconds] : kernels) {
      list.push_back({{"name", name}, {"ms", seconds * 1e3 / steps}});
    }
    row.json["kernels"] = list;
    rows.push_back(std::move(row));
  }
  const bool by_roof = roofs.peak && roofs.memory;
  std::stable_sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    if (by_roof && (a.roof_util >= 0) != (b.roof_util >= 0)) {
      return a.roof_util >= 0;
    }
    return by_roof && a.roof_util >= 0 ? a.roof_util < b.roof_util
                                       : a.ms > b.ms;
  });
  ordered_json list = ordered_json::array();
  for (Row& r : rows) list.push_back(std::move(r.json));
  // The rest by name: each operation's time outside every layer (the
  // autograd engine's own, the loss's), slowest first.
  std::map<std::string, double> rest;
  for (const auto& [name, op] : p.ops()) rest[name] = op.seconds;
  for (const auto& [i, lp] : p.layers()) {
    for (const auto& [name, seconds] : lp.kernels) rest[name] -= seconds;
  }
  std::vector<std::pair<std::string, double>> outside(rest.begin(), rest.end());
  std::sort(outside.begin(), outside.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  ordered_json unattributed = ordered_json::array();
  for (const auto& [name, seconds] : outside) {
    if (seconds * 1e3 / steps < 1e-4) break;
    unattributed.push_back({{"name", name}, {"ms", seconds * 1e3 / steps}});
  }
  return {{"layers_ms", layers_ms},
          {"unattributed_ms", p.step_s() * 1e3 - layers_ms},
          {"unattributed", unattributed},
          {"list", list}};
}

}  // namespace

void WriteProfiles(const Run& run) {
  if (run.settings.flags.profile_out.empty()) return;
  ordered_json cases = ordered_json::array();
  for (const Entry& e : run.cases.entries) {
    if (!e.profile) continue;
    const StepProfile& p = *e.profile;
    ordered_json shares = ordered_json::object();
    const auto s = p.Shares();
    for (int c = 0; c < kOpClasses; ++c) {
      shares[ToString(static_cast<OpClass>(c))] = s[c];
    }
    std::vector<std::pair<std::string, StepProfile::Op>> ops(p.ops().begin(),
                                                             p.ops().end());
    std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) {
      return a.second.seconds > b.second.seconds;
    });
    const double steps = p.steps();
    ordered_json list = ordered_json::array();
    for (const auto& [name, op] : ops) {
      list.push_back({{"name", name},
                      {"class", ToString(op.cls)},
                      {"ms_per_step", op.seconds * 1e3 / steps},
                      {"calls_per_step", op.calls / steps}});
    }
    ordered_json c = {{"name", e.name},
                      {"profiled_steps", p.steps()},
                      {"profiled_step_ms", p.step_s() * 1e3},
                      {"timed_step_ms", e.step_ms},
                      {"shares", shares},
                      {"ops", list}};
    if (e.model && !p.layers().empty()) c["layers"] = Layers(run, e, p);
    cases.push_back(std::move(c));
  }
  std::ofstream(run.settings.flags.profile_out)
      << ordered_json{{"cases", cases}}.dump(2) << "\n";
}

}  // namespace paradnn
