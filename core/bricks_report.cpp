#include "core/bricks_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <vector>

#include "backends/backend.h"
#include "machine/caches.h"
#include "records/results.h"

namespace paradnn {
namespace {

using nlohmann::ordered_json;

// A model's plain time: the median of its rounds (--paradnn_rounds), else
// the mean of its timed steps over every call, as Google Benchmark reports
// a case's time per iteration.
std::optional<double> PlainMs(const Entry& model) {
  const std::vector<double> steps = model.log.Of(Caches::kWarm);
  if (model.status != CaseStatus::kPassed || steps.empty()) return std::nullopt;
  if (model.summary && model.summary->rounds > 1) return model.summary->median;
  return Mean(steps);
}

// The errors |estimate / plain - 1| of a group of models: mean, worst,
// and the geometric mean of the ratios (the group's bias).
ordered_json Errors(const std::vector<double>& ratios) {
  if (ratios.empty()) return nullptr;
  double log_sum = 0, error_sum = 0, worst = 0;
  for (double r : ratios) {
    log_sum += std::log(r);
    error_sum += std::abs(r - 1);
    worst = std::max(worst, std::abs(r - 1));
  }
  return {{"models", ratios.size()},
          {"mean_abs_error", error_sum / ratios.size()},
          {"max_abs_error", worst},
          {"geomean", std::exp(log_sum / ratios.size())}};
}

ordered_json ErrorsByGroup(
    const std::map<std::string, std::vector<double>>& groups) {
  ordered_json out = ordered_json::object();
  for (const auto& [group, ratios] : groups) out[group] = Errors(ratios);
  return out;
}

// A field of a brick's time, null without one.
ordered_json FieldOf(const std::optional<BrickTime>& t,
                     double BrickTime::*field) {
  return t ? ordered_json((*t).*field) : ordered_json(nullptr);
}

}  // namespace

ordered_json BricksResults(Run& run) {
  // Every brick's times, by entry index.
  std::vector<std::optional<BrickTimes>> times(run.cases.entries.size());
  std::set<std::string> step_cost_keys;
  for (const Brick& b : StepCostBricks()) step_cost_keys.insert(b.Key());
  int unique = 0, from_db = 0, longest = 0;
  int64_t total_layers = 0, total_bricks = 0;
  double bricks_s = 0;
  for (size_t i = 0; i < run.cases.entries.size(); ++i) {
    const Entry& e = run.cases.entries[i];
    if (!e.brick) {
      total_layers += e.layers;
      total_bricks += static_cast<int64_t>(e.bricks.layers.size());
      continue;
    }
    if (step_cost_keys.count(e.brick->Key()) == 0) {
      ++unique;
      longest = std::max(longest, e.brick->layers());
    }
    from_db += e.known[0].has_value();
    bricks_s += e.benchmark_s;
    if (const auto warm = e.Time(Caches::kWarm)) {
      times[i] = BrickTimes{*warm, e.Time(Caches::kCold)};
    }
  }
  ordered_json out = {{"granularity", run.settings.flags.bricks_granularity},
                      {"total_layers", total_layers},
                      {"unique_layers", run.cases.unique_layers.size()},
                      {"total_bricks", total_bricks},
                      {"unique_bricks", unique},
                      {"longest_brick", longest},
                      {"bricks_from_db", from_db}};
  if (std::none_of(times.begin(), times.end(),
                   [](const auto& t) { return t.has_value(); })) {
    return out;
  }
  // Raw estimates, then the calibration the plain runs give them.
  struct Model {
    const Entry* entry;
    ModelBricks bricks;
    std::optional<BrickTime> raw;
    std::optional<double> plain;
  };
  std::vector<Model> models;
  std::vector<CalibrationPoint> points;
  ordered_json step_costs = ordered_json::object();
  for (const Entry& e : run.cases.entries) {
    if (!e.model) continue;
    Model m{&e, e.bricks, std::nullopt, PlainMs(e)};
    std::vector<Cost> layer_costs;
    for (int b : m.bricks.layers)
      layer_costs.push_back(run.cases.entries[b].cost);
    const Backend* backend = FindBackend(e.backend);
    m.bricks.cold_parts = ColdParts(
        m.bricks.layers, m.bricks.stacks, layer_costs,
        backend != nullptr && backend->RecyclesWithinStep(), e.mode, e.dtype);
    m.bricks.cold = ModelIsCold(e.cost.bytes, L2Bytes(),
                                run.settings.flags.threads, L3Bytes(run));
    m.raw = EstimateModel(m.bricks, times);
    step_costs[ContextName(e.backend, e.dtype, e.mode)] =
        StepCostMs(m.bricks, times);
    if (m.raw) {
      points.push_back({e.model->model.family,
                        ContextName(e.backend, e.dtype, e.mode), m.raw->ms,
                        m.plain});
    }
    models.push_back(std::move(m));
  }
  std::vector<Factor> factors = Calibrate(points);
  const CalibrationCheck check = CheckCalibration(points, factors);
  if (!check.applied) factors = Uncalibrated(points);
  std::map<std::string, std::vector<double>> raw_by_family, by_family, by_group;
  std::vector<double> raw_all, all;
  double checked_s = 0, checked_estimate = 0, all_estimate = 0;
  int checked = 0;
  // The method's error as the checked models measured it, per family (or
  // over all of them where a family has fewer than two): the 90th
  // percentile of |log(estimate / plain)|. Each estimate's interval holds
  // it beside the bricks' timing noise; without a checked model it is
  // unknown, and the interval is the timing noise alone.
  std::map<std::string, std::vector<double>> log_errors;
  {
    size_t k = 0;
    for (const Model& m : models) {
      if (!m.raw) continue;
      const Factor& f = factors[k++];
      if (!m.plain) continue;
      const double error = std::abs(std::log(m.raw->ms * f.value / *m.plain));
      log_errors[m.entry->model->model.family].push_back(error);
      log_errors[""].push_back(error);
    }
  }
  auto method_error = [&](const std::string& family) -> std::optional<double> {
    auto it = log_errors.find(family);
    if (it == log_errors.end() || it->second.size() < 2)
      it = log_errors.find("");
    if (it == log_errors.end() || it->second.empty()) return std::nullopt;
    return Percentile(it->second, 90);
  };
  ordered_json model_out = ordered_json::array();
  size_t point = 0;
  std::vector<double> spreads, timing_spreads;
  for (const Model& m : models) {
    const Entry& e = *m.entry;
    ordered_json j = {{"name", e.name}};
    ordered_json layers = ordered_json::array();
    for (int b : m.bricks.layers) layers.push_back(run.cases.entries[b].name);
    ordered_json stacks = ordered_json::array();
    for (const ModelBricks::Stack& s : m.bricks.stacks) {
      stacks.push_back({{"first", s.first},
                        {"layers", s.layers},
                        {"chain", run.cases.entries[s.chain].name}});
    }
    if (m.raw) {
      const Factor& f = factors[point++];
      const double estimate = m.raw->ms * f.value;
      const double timing = std::hypot(m.raw->spread_ms / m.raw->ms, f.spread);
      const std::optional<double> method = method_error(e.model->model.family);
      const double spread = method ? std::hypot(timing, *method) : timing;
      j["estimated_ms"] = estimate;
      j["estimated_spread"] = spread;
      j["estimated_low_ms"] = estimate * std::exp(-spread);
      j["estimated_high_ms"] = estimate * std::exp(spread);
      j["timing_spread"] = timing;
      j["method_error"] =
          method ? ordered_json(*method) : ordered_json(nullptr);
      spreads.push_back(spread);
      timing_spreads.push_back(timing);
      j["uncalibrated_ms"] = m.raw->ms;
      j["bricks_spread_ms"] = m.raw->spread_ms;
      j["calibration"] = {{"factor", f.value},
                          {"spread", f.spread},
                          {"models", f.models},
                          {"scope", f.scope}};
      all_estimate += estimate;
      if (m.plain) {
        j["plain_ms"] = *m.plain;
        j["estimate_over_plain"] = estimate / *m.plain;
        const std::string family = e.model->model.family;
        raw_all.push_back(m.raw->ms / *m.plain);
        raw_by_family[family].push_back(raw_all.back());
        all.push_back(estimate / *m.plain);
        by_family[family].push_back(all.back());
        by_group[family + "/" + ContextName(e.backend, e.dtype, e.mode)]
            .push_back(all.back());
        checked_s += e.benchmark_s;
        checked_estimate += estimate;
        ++checked;
      }
    } else {
      j["estimated_ms"] = nullptr;
    }
    j["cold"] = m.bricks.cold;
    j["layers"] = layers;
    j["layer_cold_parts"] = m.bricks.cold_parts;
    j["layer_stacks"] = stacks;
    model_out.push_back(std::move(j));
  }
  ordered_json brick_out = ordered_json::array();
  for (size_t i = 0; i < run.cases.entries.size(); ++i) {
    const Entry& e = run.cases.entries[i];
    if (!e.brick) continue;
    const auto warm = e.Time(Caches::kWarm), cold = e.Time(Caches::kCold);
    brick_out.push_back(
        {{"name", e.name},
         {"from_db", e.known[0].has_value()},
         {"step_cost", step_cost_keys.count(e.brick->Key()) > 0},
         {"step_ms", FieldOf(warm, &BrickTime::ms)},
         {"step_spread_ms", FieldOf(warm, &BrickTime::spread_ms)},
         {"cold_step_ms", FieldOf(cold, &BrickTime::ms)},
         {"cold_step_spread_ms", FieldOf(cold, &BrickTime::spread_ms)},
         {"step_times_ms", e.log.Of(Caches::kWarm)},
         {"cold_step_times_ms", e.log.Of(Caches::kCold)},
         {"benchmark_s", e.benchmark_s}});
  }
  out["bricks_benchmark_s"] = bricks_s;
  out["checked_models"] = checked;
  out["checked_benchmark_s"] = checked_s;
  // What running every model plainly would take, an estimate: the checked
  // models' benchmark time scaled by all models' estimated step time over
  // theirs.
  out["projected_plain_benchmark_s"] =
      checked > 0 && checked_estimate > 0
          ? ordered_json(checked_s * all_estimate / checked_estimate)
          : nullptr;
  // The estimates' typical interval, for the summary line and the report.
  if (!spreads.empty()) {
    out["estimated_models"] = spreads.size();
    out["median_estimated_spread"] = Median(spreads);
    out["median_timing_spread"] = Median(timing_spreads);
    const std::optional<double> method = method_error("");
    out["method_error"] =
        method ? ordered_json(*method) : ordered_json(nullptr);
  }
  out["threads"] = run.settings.flags.threads;
  out["l2_bytes"] = L2Bytes();
  out["l3_bytes"] = L3Bytes(run);
  out["l3_source"] = L3Source(run);
  out["step_cost_ms"] = step_costs;
  out["min_calibration_models"] = kMinCalibrationModels;
  out["calibration"] = {{"applied", check.applied},
                        {"models", check.models},
                        {"calibrated_error", check.calibrated_error},
                        {"uncalibrated_error", check.uncalibrated_error}};
  out["error"] = {{"all", Errors(all)},
                  {"per_family", ErrorsByGroup(by_family)},
                  {"per_family_context", ErrorsByGroup(by_group)}};
  out["uncalibrated_error"] = {{"all", Errors(raw_all)},
                               {"per_family", ErrorsByGroup(raw_by_family)}};
  out["models"] = std::move(model_out);
  out["bricks"] = std::move(brick_out);
  return out;
}

void ReportBricks(Run& run) {
  if (!run.settings.flags.bricks) return;
  const bool any_brick =
      std::any_of(run.cases.entries.begin(), run.cases.entries.end(),
                  [](const Entry& e) { return e.brick.has_value(); });
  if (!any_brick) return;
  const ordered_json b = BricksResults(run);
  if (!run.settings.flags.bricks_out.empty()) {
    std::ofstream(run.settings.flags.bricks_out) << b.dump(2) << "\n";
  }
  const int64_t total = b["total_layers"];
  std::fprintf(stderr,
               "paradnn: bricks: %zu unique of %lld layers (%.0f%%); %d "
               "unique bricks of up to %d layers",
               run.cases.unique_layers.size(), static_cast<long long>(total),
               total ? 100.0 * run.cases.unique_layers.size() / total : 0.0,
               b["unique_bricks"].get<int>(), b["longest_brick"].get<int>());
  if (!b.contains("models")) {  // listed, not timed
    std::fprintf(stderr, "\n");
    return;
  }
  std::fprintf(stderr, ", benchmarked in %.1f s",
               b["bricks_benchmark_s"].get<double>());
  if (b["bricks_from_db"].get<int>() > 0) {
    std::fprintf(stderr, " (%d from the database)",
                 b["bricks_from_db"].get<int>());
  }
  if (b.contains("median_estimated_spread")) {
    std::fprintf(stderr,
                 "; %d model step times estimated (median interval "
                 "+-%.1f%%: ",
                 b["estimated_models"].get<int>(),
                 100 * b["median_estimated_spread"].get<double>());
    if (b["method_error"].is_number()) {
      std::fprintf(stderr,
                   "the bricks' timing +-%.1f%% and the method's error on the "
                   "checked models, +-%.1f%% at the 90th percentile)",
                   100 * b["median_timing_spread"].get<double>(),
                   100 * b["method_error"].get<double>());
    } else {
      std::fprintf(stderr,
                   "the bricks' timing only; the method's error is unknown, "
                   "as no model was run plainly to check it)");
    }
  }
  const int checked = b["checked_models"];
  if (checked > 0) {
    std::fprintf(stderr, "; against %d plain runs, %s:", checked,
                 b["calibration"]["applied"].get<bool>()
                     ? "calibrated on the others"
                     : "uncalibrated (calibrating did not help them)");
    const char* sep = "";
    for (const auto& [family, e] : b["error"]["per_family"].items()) {
      std::fprintf(stderr, "%s %s mean error %.1f%% (worst %.1f%%, %d)", sep,
                   family.c_str(), 100 * e["mean_abs_error"].get<double>(),
                   100 * e["max_abs_error"].get<double>(),
                   e["models"].get<int>());
      sep = ",";
    }
    if (b["projected_plain_benchmark_s"].is_number()) {
      const double plain = b["projected_plain_benchmark_s"];
      std::fprintf(
          stderr,
          "; all models plainly: about %.1f s (projected from the "
          "%d), %.1fx the bricks' time",
          plain, checked,
          plain / std::max(1e-9, b["bricks_benchmark_s"].get<double>()));
    }
  }
  std::fprintf(stderr, "\n");
}

}  // namespace paradnn
