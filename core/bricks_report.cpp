// After a --paradnn_bricks run: every model's step time constructed as the
// sum of its layers' times, against its measured time.
#include "core/bricks_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

namespace paradnn {
namespace {

using nlohmann::ordered_json;

// Models of up to this many times their threads' L2 caches keep their data
// in L2 and L3 from step to step: their bricks' warm times fit them best.
constexpr int64_t kColdAboveL2s = 8;

// Estimate over measured per model: their geometric mean and range, and
// the error of the estimates, |ratio - 1|, mean and worst.
ordered_json Spread(const std::vector<double>& ratios) {
  if (ratios.empty()) return nullptr;
  double log_sum = 0, lo = ratios[0], hi = ratios[0], error_sum = 0, worst = 0;
  for (double r : ratios) {
    log_sum += std::log(r);
    lo = std::min(lo, r);
    hi = std::max(hi, r);
    error_sum += std::abs(r - 1);
    worst = std::max(worst, std::abs(r - 1));
  }
  return {{"geomean", std::exp(log_sum / ratios.size())},
          {"min", lo},
          {"max", hi},
          {"mean_abs_error", error_sum / ratios.size()},
          {"max_abs_error", worst},
          {"models", ratios.size()}};
}

// Whether a brick has a step time: timed in this run, or from the database.
bool HasStepTime(const Entry& brick) {
  return brick.status == CaseStatus::kPassed || brick.known_step_ms;
}

}  // namespace

double Entry::LeastStepMs(bool cold) const {
  if (cold && known_cold_step_ms) return *known_cold_step_ms;
  auto least = [](const std::vector<double>& v) {
    return *std::min_element(v.begin(), v.end());
  };
  if (cold && !all_cold_step_times_ms.empty()) {
    return least(all_cold_step_times_ms);
  }
  if (known_step_ms) return *known_step_ms;
  return all_step_times_ms.empty() ? step_ms : least(all_step_times_ms);
}

void ReportBricks(const Run& run) {
  int64_t total_layers = 0, total_bricks = 0;
  double bricks_s = 0, models_s = 0;
  bool models_ran = false;
  int unique = 0, from_db = 0;
  for (const Entry& e : run.entries) {
    if (e.brick) {
      ++unique;
      from_db += e.known_step_ms.has_value();
      bricks_s += e.benchmark_s;
    } else {
      total_bricks += static_cast<int64_t>(e.layer_bricks.size());
      total_layers += e.layers;
      models_s += e.benchmark_s;
      models_ran = models_ran || e.status != CaseStatus::kNotRun;
    }
  }
  if (!run.flags.bricks || unique == 0) return;
  std::vector<double> all;
  std::map<std::string, std::vector<double>> by_family, by_group;
  ordered_json models = ordered_json::array();
  for (const Entry& e : run.entries) {
    if (!e.model) continue;
    // A model whose data (the cost model's estimate of what it holds) are
    // more than 8 times the L2 caches of the threads it runs on: its layers
    // take their bricks' cold times (docs/bricks.md says why 8).
    const bool cold =
        e.cost.memory > kColdAboveL2s * run.options.threads * L2Bytes();
    double estimate = 0;
    bool complete = true;
    ordered_json layers = ordered_json::array();
    for (int b : e.layer_bricks) {
      const Entry& brick = run.entries[b];
      complete = complete && HasStepTime(brick);
      estimate += brick.LeastStepMs(cold);
      layers.push_back(brick.name);
    }
    const bool measured = e.status == CaseStatus::kPassed;
    ordered_json m = {
        {"name", e.name},
        {"estimated_ms", complete ? ordered_json(estimate) : nullptr},
        {"measured_ms", measured ? ordered_json(e.LeastStepMs()) : nullptr},
        {"caches", cold ? "cold" : "warm"},
        {"step_times_ms", e.all_step_times_ms}};
    m["layers"] = layers;
    if (complete && measured) {
      const double ratio = estimate / e.LeastStepMs();
      m["estimate_over_measured"] = ratio;
      all.push_back(ratio);
      by_family[e.model->model.family].push_back(ratio);
      by_group[e.model->model.family + "/" + e.backend + "/" +
               ToString(e.dtype) + "/" + ToString(e.mode)]
          .push_back(ratio);
    }
    models.push_back(m);
  }
  ordered_json bricks = ordered_json::array();
  for (const Entry& e : run.entries) {
    if (!e.brick) continue;
    bricks.push_back(
        {{"name", e.name},
         {"step_ms", HasStepTime(e) ? ordered_json(e.LeastStepMs()) : nullptr},
         {"cold_step_ms",
          HasStepTime(e) ? ordered_json(e.LeastStepMs(true)) : nullptr},
         {"from_db", e.known_step_ms.has_value()},
         {"step_times_ms", e.all_step_times_ms},
         {"cold_step_times_ms", e.all_cold_step_times_ms}});
  }
  auto spreads = [](const std::map<std::string, std::vector<double>>& groups) {
    ordered_json out = ordered_json::object();
    for (const auto& [key, ratios] : groups) out[key] = Spread(ratios);
    return out;
  };
  ordered_json out = {
      {"granularity", run.flags.bricks_granularity},
      {"total_layers", total_layers},
      {"unique_layers", run.unique_layers.size()},
      {"total_bricks", total_bricks},
      {"unique_bricks", unique},
      {"bricks_from_db", from_db},
      {"bricks_benchmark_s", bricks_s},
      {"end_to_end_benchmark_s", models_ran ? ordered_json(models_s) : nullptr},
      {"estimate_over_measured",
       {{"all", Spread(all)},
        {"per_family", spreads(by_family)},
        {"per_family_backend_dtype_mode", spreads(by_group)}}},
      {"models", models},
      {"bricks", bricks}};
  std::fprintf(
      stderr,
      "paradnn: bricks: %zu unique of %lld layers (%.0f%%); %d "
      "unique bricks of up to %d layers benchmarked in %.1f s",
      run.unique_layers.size(), static_cast<long long>(total_layers),
      total_layers ? 100.0 * run.unique_layers.size() / total_layers : 0.0,
      unique, run.flags.bricks_granularity, bricks_s);
  if (from_db > 0)
    std::fprintf(stderr, " (%d of them from the database)", from_db);
  if (models_ran)
    std::fprintf(stderr, ", models end to end in %.1f s", models_s);
  if (!all.empty()) {
    const ordered_json s = Spread(all);
    std::fprintf(stderr,
                 "; estimate/measured geomean %.3f (%.3f to %.3f), mean "
                 "error %.1f%%",
                 s["geomean"].get<double>(), s["min"].get<double>(),
                 s["max"].get<double>(),
                 100 * s["mean_abs_error"].get<double>());
  }
  std::fprintf(stderr, "\n");
  if (!run.flags.bricks_out.empty()) {
    std::ofstream(run.flags.bricks_out) << out.dump(2) << "\n";
  }
}

}  // namespace paradnn
