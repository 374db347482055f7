#include "core/moments.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace paradnn {
namespace {

// Rounds of the polish: each takes the series' levels, then the bins'
// effects, given the other. On a bricks.sh run's steps four leave every
// factor within 0.7% of where sixteen do.
constexpr int kPolishRounds = 4;
constexpr double kQuietQuantile = 0.2;

double Median(std::vector<double> v) {
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  if (v.size() % 2 == 1) return v[mid];
  return (v[mid] + *std::max_element(v.begin(), v.begin() + mid)) / 2;
}

}  // namespace

double Moments::At(double at_s) const {
  const auto it = factor.find(static_cast<int64_t>(std::floor(at_s / bin_s)));
  return it == factor.end() ? 1.0 : it->second;
}

Moments FitMoments(const std::vector<StepSeries>& series) {
  Moments moments;
  // Each series' steps as (bin, log ms), for those that span bins.
  std::vector<std::vector<std::pair<int64_t, double>>> rows;
  std::map<int64_t, int> series_in_bin;
  for (const StepSeries& s : series) {
    std::vector<std::pair<int64_t, double>> row;
    std::set<int64_t> bins;
    for (const auto& [at_s, ms] : s) {
      if (!(ms > 0)) continue;
      const auto bin = static_cast<int64_t>(std::floor(at_s / moments.bin_s));
      row.emplace_back(bin, std::log(ms));
      bins.insert(bin);
    }
    if (bins.size() < 2) continue;
    for (int64_t bin : bins) ++series_in_bin[bin];
    rows.push_back(std::move(row));
  }
  std::map<int64_t, double> effect;  // log factor per fit bin
  for (const auto& [bin, n] : series_in_bin) {
    if (n >= kMinSeriesPerBin) effect[bin] = 0;
  }
  if (effect.size() < 2) return moments;
  auto effect_of = [&](int64_t bin) {
    const auto it = effect.find(bin);
    return it == effect.end() ? 0.0 : it->second;
  };
  std::vector<double> level(rows.size());
  for (int round = 0; round < kPolishRounds; ++round) {
    for (size_t r = 0; r < rows.size(); ++r) {
      std::vector<double> v;
      for (const auto& [bin, y] : rows[r]) v.push_back(y - effect_of(bin));
      level[r] = Median(std::move(v));
    }
    std::map<int64_t, std::vector<double>> residuals;
    for (size_t r = 0; r < rows.size(); ++r) {
      for (const auto& [bin, y] : rows[r]) {
        if (effect.count(bin)) residuals[bin].push_back(y - level[r]);
      }
    }
    std::vector<double> effects;
    for (auto& [bin, v] : residuals) {
      effect[bin] = Median(std::move(v));
      effects.push_back(effect[bin]);
    }
    // Relative to the median moment, which is the run's usual speed.
    const double center = Median(std::move(effects));
    for (auto& [bin, e] : effect) e -= center;
  }
  for (const auto& [bin, e] : effect) moments.factor[bin] = std::exp(e);
  return moments;
}

double QuietMs(const StepSeries& steps, const Moments& moments) {
  std::vector<double> ms;
  ms.reserve(steps.size());
  for (const auto& [at_s, t] : steps) ms.push_back(t / moments.At(at_s));
  std::sort(ms.begin(), ms.end());
  const double x = kQuietQuantile * static_cast<double>(ms.size() - 1);
  const auto i = static_cast<size_t>(x);
  if (i + 1 >= ms.size()) return ms[i];
  return ms[i] + (x - static_cast<double>(i)) * (ms[i + 1] - ms[i]);
}

}  // namespace paradnn
