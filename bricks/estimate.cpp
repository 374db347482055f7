#include "bricks/estimate.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace paradnn {
namespace {

double Median(std::vector<double> v) {
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  return (*std::max_element(v.begin(), v.begin() + mid) + upper) / 2;
}

}  // namespace

std::optional<BrickTime> TimeOfSteps(std::vector<double> steps_ms) {
  if (steps_ms.empty()) return std::nullopt;
  const double median = Median(steps_ms);
  std::vector<double> deviations;
  for (double ms : steps_ms) deviations.push_back(std::abs(ms - median));
  // 1.4826 MAD estimates a normal sigma; 1.2533 sigma / sqrt(n) is the
  // standard error of a normal sample's median.
  const double sigma = 1.4826 * Median(std::move(deviations));
  return BrickTime{median, 1.2533 * sigma / std::sqrt(steps_ms.size())};
}

bool ModelIsCold(int64_t bytes, int64_t l2_bytes, int threads,
                 int64_t l3_bytes) {
  return bytes > l3_bytes + static_cast<int64_t>(threads) * l2_bytes;
}

std::vector<double> ColdParts(const std::vector<int>& layers,
                              const std::vector<ModelBricks::Stack>& stacks,
                              const std::vector<Cost>& brick_costs,
                              bool recycles, Mode mode, DType dtype) {
  std::vector<double> parts(layers.size(), 1);
  if (!recycles) return parts;
  // A run's chains recycle within their own steps as the run does.
  std::vector<bool> in_stack(layers.size(), false);
  for (const ModelBricks::Stack& s : stacks) {
    std::fill_n(in_stack.begin() + s.first, s.layers, true);
  }
  std::set<int> ran;
  for (size_t k = 0; k < layers.size(); ++k) {
    if (ran.insert(layers[k]).second || in_stack[k]) continue;
    const Cost& c = brick_costs[k];
    const int64_t recycled = mode == Mode::kTrain
                                 ? c.gradient_bytes
                                 : c.bytes - c.params * ElementSize(dtype);
    parts[k] = c.bytes > 0 ? 1 - static_cast<double>(recycled) / c.bytes : 1;
  }
  return parts;
}

double StepCostMs(const ModelBricks& model,
                  const std::vector<std::optional<BrickTimes>>& times) {
  if (model.step_cost.size() != 2) return 0;
  const auto& one = times[model.step_cost[0]];
  const auto& two = times[model.step_cost[1]];
  if (!one || !two) return 0;
  return std::clamp(2 * one->warm.ms - two->warm.ms, 0.0, one->warm.ms);
}

std::optional<BrickTime> EstimateModel(
    const ModelBricks& model,
    const std::vector<std::optional<BrickTimes>>& times) {
  std::vector<int> all = model.layers;
  for (const ModelBricks::Stack& s : model.stacks) all.push_back(s.chain);
  for (int b : all) {
    if (!times[b]) return std::nullopt;
  }
  const double fixed = StepCostMs(model, times);
  // A brick's time beyond the fixed cost, warm or (where the model is cold
  // and the brick has cold steps) cold.
  auto own = [&](int brick, bool cold) {
    const BrickTimes& t = *times[brick];
    return (cold && t.cold ? t.cold->ms : t.warm.ms) - fixed;
  };
  BrickTime estimate{fixed, 0};
  auto add = [&](auto ms, double part, double spread) {
    const double warm = ms(false);
    estimate.ms += std::max(0.0, warm);
    if (model.cold) estimate.ms += part * std::max(0.0, ms(true) - warm);
    estimate.spread_ms += spread;
  };
  auto stack = model.stacks.begin();
  for (size_t k = 0; k < model.layers.size(); ++k) {
    const int brick = model.layers[k];
    const double part = k < model.cold_parts.size() ? model.cold_parts[k] : 1;
    if (stack != model.stacks.end() && stack->first == k) {
      const int chain = stack->chain;
      const int n = stack->layers;
      add(
          [&](bool cold) {
            return StackMs(own(brick, cold), own(chain, cold), n);
          },
          part,
          times[chain]->warm.spread_ms * n / std::min(n, kStackChainLayers));
      k += n - 1;
      ++stack;
      continue;
    }
    add([&](bool cold) { return own(brick, cold); }, part,
        times[brick]->warm.spread_ms);
  }
  return estimate;
}

std::vector<Factor> Calibrate(const std::vector<CalibrationPoint>& points) {
  // The log ratios (measured over estimated) of the measured models, by
  // family and context, and by context.
  std::map<std::string, std::vector<std::pair<size_t, double>>> by_group,
      by_context;
  for (size_t i = 0; i < points.size(); ++i) {
    const CalibrationPoint& p = points[i];
    if (!p.measured_ms || *p.measured_ms <= 0 || p.estimate_ms <= 0) continue;
    const double r = std::log(*p.measured_ms / p.estimate_ms);
    by_group[p.family + "/" + p.context].emplace_back(i, r);
    by_context[p.context].emplace_back(i, r);
  }
  // The factor from a set's ratios other than model i's, if enough remain.
  auto fit = [](const std::vector<std::pair<size_t, double>>& ratios, size_t i,
                const std::string& scope) -> std::optional<Factor> {
    std::vector<double> r;
    for (const auto& [j, ratio] : ratios) {
      if (j != i) r.push_back(ratio);
    }
    if (static_cast<int>(r.size()) < kMinCalibrationModels) return std::nullopt;
    double sum = 0;
    for (double x : r) sum += x;
    const double mean = sum / r.size();
    double squares = 0;
    for (double x : r) squares += (x - mean) * (x - mean);
    const double n = static_cast<double>(r.size());
    const double sd = std::sqrt(squares / (n - 1));
    return Factor{std::exp(mean), sd * std::sqrt(1 + 1 / n),
                  static_cast<int>(r.size()), scope};
  };
  std::vector<Factor> factors(points.size());
  for (size_t i = 0; i < points.size(); ++i) {
    const CalibrationPoint& p = points[i];
    const std::string group = p.family + "/" + p.context;
    if (auto f = fit(by_group[group], i, group)) {
      factors[i] = *f;
    } else if (auto g = fit(by_context[p.context], i, p.context)) {
      factors[i] = *g;
    }
  }
  return factors;
}

CalibrationCheck CheckCalibration(const std::vector<CalibrationPoint>& points,
                                  const std::vector<Factor>& factors) {
  CalibrationCheck check;
  for (size_t i = 0; i < points.size(); ++i) {
    const CalibrationPoint& p = points[i];
    if (!p.measured_ms || *p.measured_ms <= 0) continue;
    ++check.models;
    check.calibrated_error +=
        std::abs(p.estimate_ms * factors[i].value / *p.measured_ms - 1);
    check.uncalibrated_error += std::abs(p.estimate_ms / *p.measured_ms - 1);
  }
  if (check.models == 0) return check;
  check.calibrated_error /= check.models;
  check.uncalibrated_error /= check.models;
  check.applied = check.calibrated_error < check.uncalibrated_error;
  return check;
}

std::vector<Factor> Uncalibrated(const std::vector<CalibrationPoint>& points) {
  double squares = 0;
  int n = 0;
  for (const CalibrationPoint& p : points) {
    if (!p.measured_ms || *p.measured_ms <= 0 || p.estimate_ms <= 0) continue;
    const double r = std::log(p.estimate_ms / *p.measured_ms);
    squares += r * r;
    ++n;
  }
  const double spread = n > 0 ? std::sqrt(squares / n) : 0;
  return std::vector<Factor>(points.size(), Factor{1, spread, n, "none"});
}

}  // namespace paradnn
