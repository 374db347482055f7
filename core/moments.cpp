#include "core/moments.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

namespace paradnn {
namespace {

// Rounds of the polish: each takes the series' levels, then the bins'
// effects, given the other. On a bricks.sh run's steps four leave every
// factor within 0.7% of where sixteen do.
constexpr int kPolishRounds = 4;
// Rounds of the contrast's fit after it. Started from the sensitivities
// that step size alone suggests, ten reach what forty do (docs/bricks.md,
// "Two kinds of moments").
constexpr int kContrastRounds = 10;
// A step counts no farther from its fit than this (in log, 1.5 times):
// one step a preemption stretched must not tilt a least-squares fit.
constexpr double kLogClip = 0.4;
constexpr double kQuietQuantile = 0.2;

double Median(std::vector<double> v) {
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  if (v.size() % 2 == 1) return v[mid];
  return (v[mid] + *std::max_element(v.begin(), v.begin() + mid)) / 2;
}

// Each series' steps as (bin, log ms), for those that span bins.
struct Row {
  size_t series;
  std::vector<std::pair<int64_t, double>> steps;
};

}  // namespace

double Moments::At(double at_s, double sensitivity) const {
  const auto bin = static_cast<int64_t>(std::floor(at_s / bin_s));
  const auto f = factor.find(bin);
  if (f == factor.end()) return 1.0;
  const auto c = contrast.find(bin);
  return f->second *
         std::exp(c == contrast.end() ? 0.0 : sensitivity * c->second);
}

MomentsFit FitMoments(const std::vector<StepSeries>& series) {
  MomentsFit fit;
  fit.sensitivity.assign(series.size(), 0.0);
  const double bin_s = fit.moments.bin_s;
  std::vector<Row> rows;
  std::map<int64_t, int> series_in_bin;
  for (size_t s = 0; s < series.size(); ++s) {
    Row row{s, {}};
    std::set<int64_t> bins;
    for (const auto& [at_s, ms] : series[s]) {
      if (!(ms > 0)) continue;
      const auto bin = static_cast<int64_t>(std::floor(at_s / bin_s));
      row.steps.emplace_back(bin, std::log(ms));
      bins.insert(bin);
    }
    if (bins.size() < 2) continue;
    for (int64_t bin : bins) ++series_in_bin[bin];
    rows.push_back(std::move(row));
  }
  // Per fit bin, in log: the effect, and the contrast per unit sensitivity.
  std::map<int64_t, double> effect, contrast;
  for (const auto& [bin, n] : series_in_bin) {
    if (n >= kMinSeriesPerBin) effect[bin] = contrast[bin] = 0;
  }
  if (effect.size() < 2) return fit;
  auto of = [](const std::map<int64_t, double>& m, int64_t bin) {
    const auto it = m.find(bin);
    return it == m.end() ? 0.0 : it->second;
  };
  const size_t n = rows.size();
  std::vector<double> level(n), sensitivity(n, 0.0);
  auto fit_levels = [&] {
    for (size_t r = 0; r < n; ++r) {
      std::vector<double> v;
      for (const auto& [bin, y] : rows[r].steps) {
        v.push_back(y - of(effect, bin) - sensitivity[r] * of(contrast, bin));
      }
      level[r] = Median(std::move(v));
    }
  };
  // Relative to the median moment, which is the run's usual speed: the
  // shift a series' sensitivity makes of a constant contrast, its level
  // takes in the next round.
  auto center = [](std::map<int64_t, double>& m) {
    std::vector<double> v;
    for (const auto& [bin, x] : m) v.push_back(x);
    const double c = Median(std::move(v));
    for (auto& [bin, x] : m) x -= c;
  };
  for (int round = 0; round < kPolishRounds; ++round) {
    fit_levels();
    std::map<int64_t, std::vector<double>> residuals;
    for (size_t r = 0; r < n; ++r) {
      for (const auto& [bin, y] : rows[r].steps) {
        if (effect.count(bin)) residuals[bin].push_back(y - level[r]);
      }
    }
    for (auto& [bin, v] : residuals) effect[bin] = Median(std::move(v));
    center(effect);
  }
  // Sets v to mean 0 and deviation 1, returning (mean, deviation); all
  // equal (deviation 0) leaves it as it is.
  auto standardize = [n](std::vector<double>& v) {
    const double mean = std::accumulate(v.begin(), v.end(), 0.0) / n;
    double sum2 = 0;
    for (double x : v) sum2 += (x - mean) * (x - mean);
    const double deviation = std::sqrt(sum2 / n);
    if (deviation > 0) {
      for (double& x : v) x = (x - mean) / deviation;
    }
    return std::make_pair(mean, deviation);
  };
  // Start where step size points: the smaller a case's steps, the more
  // barriers per millisecond, the more it follows the contrast.
  for (size_t r = 0; r < n; ++r) sensitivity[r] = -level[r];
  if (standardize(sensitivity).second == 0) return fit;
  for (int round = 0; round < kContrastRounds; ++round) {
    fit_levels();
    // What the effect leaves of a step, clipped.
    auto left = [&](size_t r, int64_t bin, double y) {
      return std::clamp(y - level[r] - effect[bin], -kLogClip, kLogClip);
    };
    // Each bin: the contrast as the least-squares slope of its steps over
    // their series' sensitivities, the effect as the median intercept.
    std::map<int64_t, std::vector<std::pair<double, double>>> points;
    for (size_t r = 0; r < n; ++r) {
      for (const auto& [bin, y] : rows[r].steps) {
        if (effect.count(bin)) {
          points[bin].emplace_back(sensitivity[r],
                                   effect[bin] + left(r, bin, y));
        }
      }
    }
    for (const auto& [bin, p] : points) {
      double mx = 0, my = 0;
      for (const auto& [x, y] : p) {
        mx += x / p.size();
        my += y / p.size();
      }
      double sxx = 0, sxy = 0;
      for (const auto& [x, y] : p) {
        sxx += (x - mx) * (x - mx);
        sxy += (x - mx) * (y - my);
      }
      contrast[bin] = sxx > 0 ? sxy / sxx : 0;
      std::vector<double> intercepts;
      for (const auto& [x, y] : p) intercepts.push_back(y - contrast[bin] * x);
      effect[bin] = Median(std::move(intercepts));
    }
    // Each series: its sensitivity as the least-squares slope, through
    // zero, of what the effect leaves of its steps over their contrasts.
    for (size_t r = 0; r < n; ++r) {
      double num = 0, den = 0;
      for (const auto& [bin, y] : rows[r].steps) {
        if (!effect.count(bin)) continue;
        num += contrast[bin] * left(r, bin, y);
        den += contrast[bin] * contrast[bin];
      }
      sensitivity[r] = den > 0 ? num / den : 0;
    }
    const auto [mean, deviation] = standardize(sensitivity);
    for (auto& [bin, e] : effect) {
      e += mean * contrast[bin];
      contrast[bin] *= deviation;
    }
    center(effect);
    center(contrast);
  }
  // Contrasts below a part per million are rounding, not the machine.
  if (std::all_of(contrast.begin(), contrast.end(),
                  [](const auto& c) { return std::abs(c.second) < 1e-6; })) {
    std::fill(sensitivity.begin(), sensitivity.end(), 0.0);
    for (auto& [bin, c] : contrast) c = 0;
  }
  for (const auto& [bin, e] : effect) {
    fit.moments.factor[bin] = std::exp(e);
    fit.moments.contrast[bin] = contrast[bin];
  }
  for (size_t r = 0; r < n; ++r) {
    fit.sensitivity[rows[r].series] = sensitivity[r];
  }
  return fit;
}

double QuietMs(const StepSeries& steps, const Moments& moments,
               double sensitivity) {
  std::vector<double> ms;
  ms.reserve(steps.size());
  for (const auto& [at_s, t] : steps) {
    ms.push_back(t / moments.At(at_s, sensitivity));
  }
  std::sort(ms.begin(), ms.end());
  const double x = kQuietQuantile * static_cast<double>(ms.size() - 1);
  const auto i = static_cast<size_t>(x);
  if (i + 1 >= ms.size()) return ms[i];
  return ms[i] + (x - static_cast<double>(i)) * (ms[i + 1] - ms[i]);
}

}  // namespace paradnn
