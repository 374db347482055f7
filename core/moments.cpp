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
// that step size alone suggests, ten estimate as well as twenty
// (docs/bricks.md, "Two kinds of moments").
constexpr int kContrastRounds = 10;
// A step counts no farther from its fit than this (in log, 1.5 times):
// one slow step must not tilt a least-squares fit.
constexpr double kLogClip = 0.4;
// A step this much slower than its fit (in log, 5 times) was preempted and
// says nothing of the moment it ran in: it counts as its fit. The two
// states of the machine are 2.4 times apart at most (docs/bricks.md, "Two
// states of the machine"); a neighbour on the same cores stretched single
// steps of a LibTorch LSTM brick 5 to 50 times, and clipped, three such
// steps in ten drove its sensitivity to -10.
constexpr double kLogPreempted = 1.6;
constexpr double kQuietQuantile = 0.2;
// Moments whose contrast is beyond this (e^0.25 = 1.28 times for a case of
// sensitivity 1) hold a state of the machine the run met rarely; a quiet
// time leaves their steps out while half of a case's steps remain
// (docs/bricks.md, "Two states of the machine").
constexpr double kRareContrast = 0.25;

// The bin of 15 s (bin_s) a step that started at_s into the run fell in.
int64_t BinOf(double at_s, double bin_s) {
  return static_cast<int64_t>(std::floor(at_s / bin_s));
}

double Median(std::vector<double> v) {
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  if (v.size() % 2 == 1) return v[mid];
  return (v[mid] + *std::max_element(v.begin(), v.begin() + mid)) / 2;
}

double Mean(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / v.size();
}

// Sets v to mean 0 and deviation 1, returning (mean, deviation); all
// equal (deviation 0) leaves it as it is.
std::pair<double, double> Standardize(std::vector<double>& v) {
  const double mean = Mean(v);
  double sum2 = 0;
  for (double x : v) sum2 += (x - mean) * (x - mean);
  const double deviation = std::sqrt(sum2 / v.size());
  if (deviation > 0) {
    for (double& x : v) x = (x - mean) / deviation;
  }
  return {mean, deviation};
}

// The least-squares slope of y over x, with an intercept: 0 where the x
// are all alike.
double Slope(const std::vector<std::pair<double, double>>& p) {
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
  return sxx > 0 ? sxy / sxx : 0;
}

// Shifts m's values so that their median is 0: relative to the median
// moment, which is the run's usual speed. The shift a series' sensitivity
// makes of a constant contrast, its level takes in the next round.
void Center(std::map<int64_t, double>& m) {
  std::vector<double> v;
  for (const auto& [bin, x] : m) v.push_back(x);
  const double c = Median(std::move(v));
  for (auto& [bin, x] : m) x -= c;
}

// The fit over the series that span bins, in logs: each one's steps, level
// and sensitivity; each fit bin's effect and contrast.
class Fit {
 public:
  explicit Fit(const std::vector<StepSeries>& series, double bin_s) {
    std::map<int64_t, int> series_in_bin;
    for (size_t s = 0; s < series.size(); ++s) {
      Row row{s, {}};
      std::set<int64_t> bins;
      for (const auto& [at_s, ms] : series[s]) {
        if (!(ms > 0)) continue;
        const int64_t bin = BinOf(at_s, bin_s);
        row.steps.emplace_back(bin, std::log(ms));
        bins.insert(bin);
      }
      if (bins.size() < 2) continue;
      for (int64_t bin : bins) ++series_in_bin[bin];
      rows_.push_back(std::move(row));
    }
    for (const auto& [bin, n] : series_in_bin) {
      if (n >= kMinSeriesPerBin) effect_[bin] = contrast_[bin] = 0;
    }
    level_.assign(rows_.size(), 0.0);
    sensitivity_.assign(rows_.size(), 0.0);
  }

  // Two bins or more to tell apart.
  bool Fits() const { return effect_.size() >= 2; }

  // A round of Tukey's median polish: the levels, then the effects.
  void PolishRound() {
    FitLevels();
    std::map<int64_t, std::vector<double>> residuals;
    for (size_t r = 0; r < rows_.size(); ++r) {
      for (const auto& [bin, y] : rows_[r].steps) {
        if (effect_.count(bin)) residuals[bin].push_back(y - level_[r]);
      }
    }
    for (auto& [bin, v] : residuals) effect_[bin] = Median(std::move(v));
    Center(effect_);
  }

  // Starts where step size points: the smaller a case's steps, the more
  // barriers per millisecond, the more it follows the contrast. False
  // where all levels are alike and there is nothing to start from.
  bool StartContrast() {
    for (size_t r = 0; r < rows_.size(); ++r) sensitivity_[r] = -level_[r];
    return Standardize(sensitivity_).second > 0;
  }

  // A round of least squares: the levels; each bin's contrast (the slope
  // of its steps over their series' sensitivities) and effect (the median
  // intercept); then each series' sensitivity (the slope of what the
  // effect leaves of its steps over their contrasts). That slope has an
  // intercept: a level is a median, which sits in the state most of a
  // series' steps met, not where the contrast is 0, and a slope through
  // zero from there can settle on the wrong sign.
  void ContrastRound() {
    FitLevels();
    std::map<int64_t, std::vector<std::pair<double, double>>> points;
    for (size_t r = 0; r < rows_.size(); ++r) {
      for (const auto& [bin, y] : rows_[r].steps) {
        if (effect_.count(bin)) {
          points[bin].emplace_back(sensitivity_[r],
                                   effect_[bin] + Left(r, bin, y));
        }
      }
    }
    for (const auto& [bin, p] : points) {
      contrast_[bin] = Slope(p);
      std::vector<double> intercepts;
      for (const auto& [x, y] : p) intercepts.push_back(y - contrast_[bin] * x);
      effect_[bin] = Median(std::move(intercepts));
    }
    for (size_t r = 0; r < rows_.size(); ++r) {
      std::vector<std::pair<double, double>> p;  // (contrast, left)
      for (const auto& [bin, y] : rows_[r].steps) {
        if (effect_.count(bin)) p.emplace_back(contrast_[bin], Left(r, bin, y));
      }
      sensitivity_[r] = Slope(p);
    }
    const auto [mean, deviation] = Standardize(sensitivity_);
    for (auto& [bin, e] : effect_) {
      e += mean * contrast_[bin];
      contrast_[bin] *= deviation;
    }
    Center(effect_);
    Center(contrast_);
  }

  MomentsFit Result(size_t series, double bin_s) const {
    MomentsFit fit;
    fit.moments.bin_s = bin_s;
    fit.sensitivity.assign(series, 0.0);
    if (!Fits()) return fit;
    // Contrasts below a part per million are rounding, not the machine.
    const bool contrasted =
        std::any_of(contrast_.begin(), contrast_.end(),
                    [](const auto& c) { return std::abs(c.second) >= 1e-6; });
    for (const auto& [bin, e] : effect_) {
      fit.moments.factor[bin] = std::exp(e);
      fit.moments.contrast[bin] = contrasted ? contrast_.at(bin) : 0;
    }
    if (contrasted) {
      for (size_t r = 0; r < rows_.size(); ++r) {
        fit.sensitivity[rows_[r].series] = sensitivity_[r];
      }
    }
    return fit;
  }

 private:
  struct Row {
    size_t series;
    std::vector<std::pair<int64_t, double>> steps;  // (bin, log ms)
  };

  double Of(const std::map<int64_t, double>& m, int64_t bin) const {
    const auto it = m.find(bin);
    return it == m.end() ? 0.0 : it->second;
  }

  void FitLevels() {
    for (size_t r = 0; r < rows_.size(); ++r) {
      std::vector<double> v;
      for (const auto& [bin, y] : rows_[r].steps) {
        v.push_back(y - Of(effect_, bin) -
                    sensitivity_[r] * Of(contrast_, bin));
      }
      level_[r] = Median(std::move(v));
    }
  }

  // What the level and the effect leave of a step: the series' contrast
  // term, and the residual past it clipped. Clipped before the contrast
  // term, a series that follows the contrast strongly (a small oneDNN RNN,
  // 2.4 times as fast in one state of the machine as in the other) could
  // never be fit more than the clip's worth of it.
  double Left(size_t r, int64_t bin, double y) const {
    const double fit = sensitivity_[r] * Of(contrast_, bin);
    const double residual = y - level_[r] - effect_.at(bin) - fit;
    if (residual > kLogPreempted) return fit;
    return fit + std::clamp(residual, -kLogClip, kLogClip);
  }

  std::vector<Row> rows_;
  std::vector<double> level_, sensitivity_;
  std::map<int64_t, double> effect_, contrast_;
};

}  // namespace

double Moments::At(double at_s, double sensitivity) const {
  const int64_t bin = BinOf(at_s, bin_s);
  const auto f = factor.find(bin);
  if (f == factor.end()) return 1.0;
  const auto c = contrast.find(bin);
  return f->second *
         std::exp(c == contrast.end() ? 0.0 : sensitivity * c->second);
}

bool Moments::Rare(double at_s) const {
  const auto c = contrast.find(BinOf(at_s, bin_s));
  return c != contrast.end() && std::abs(c->second) > kRareContrast;
}

MomentsFit FitMoments(const std::vector<StepSeries>& series) {
  const double bin_s = Moments().bin_s;
  Fit fit(series, bin_s);
  if (fit.Fits()) {
    for (int round = 0; round < kPolishRounds; ++round) fit.PolishRound();
    if (fit.StartContrast()) {
      for (int round = 0; round < kContrastRounds; ++round) {
        fit.ContrastRound();
      }
    }
  }
  return fit.Result(series.size(), bin_s);
}

double QuietMs(const StepSeries& steps, const Moments& moments,
               double sensitivity) {
  std::vector<double> ms;
  auto scale = [&](bool usual_only) {
    ms.clear();
    for (const auto& [at_s, t] : steps) {
      if (usual_only && moments.Rare(at_s)) continue;
      ms.push_back(t / moments.At(at_s, sensitivity));
    }
  };
  scale(true);
  if (2 * ms.size() < steps.size()) scale(false);
  std::sort(ms.begin(), ms.end());
  const double x = kQuietQuantile * static_cast<double>(ms.size() - 1);
  const auto i = static_cast<size_t>(x);
  if (i + 1 >= ms.size()) return ms[i];
  return ms[i] + (x - static_cast<double>(i)) * (ms[i + 1] - ms[i]);
}

const char* ToString(CaseTime how) {
  switch (how) {
    case CaseTime::kQuiet:
      return "quiet";
    case CaseTime::kLeast:
      return "least";
    case CaseTime::kMidway:
      return "midway";
  }
  return "";
}

double CaseMs(CaseTime how, const StepSeries& steps, const Moments& moments,
              double sensitivity) {
  const double least = std::min_element(steps.begin(), steps.end(),
                                        [](const auto& a, const auto& b) {
                                          return a.second < b.second;
                                        })
                           ->second;
  switch (how) {
    case CaseTime::kQuiet:
      return QuietMs(steps, moments, sensitivity);
    case CaseTime::kLeast:
      return least;
    case CaseTime::kMidway:
      return std::sqrt(least * QuietMs(steps, moments, sensitivity));
  }
  return least;
}

}  // namespace paradnn
