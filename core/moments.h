// The machine's speed over a run's moments. On a shared machine every case
// runs slower for stretches of seconds to minutes (docs/bricks.md,
// "Timing"); with repetitions interleaved, the cases share those stretches,
// so a fit of each step's log time as its case's level plus its moment's
// effect (Tukey's median polish over bins of 15 s) says how much slower
// each moment was than the run's median one.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace paradnn {

struct Moments {
  double bin_s = 15;
  // Per bin (start / bin_s), its steps' time over the median moment's;
  // bins the fit could not tell (too few cases in them) are left out.
  std::map<int64_t, double> factor;

  // The factor of the moment a step started in: 1 where none was fit.
  double At(double at_s) const;
};

// Steps of one case and kind, as (start in seconds of the run, ms).
using StepSeries = std::vector<std::pair<double, double>>;

// The median polish of the series' log times. A series within one bin says
// nothing of the moments (its level and its moment are one) and takes no
// part; a bin needs kMinSeriesPerBin series that do to be fit.
Moments FitMoments(const std::vector<StepSeries>& series);
constexpr int kMinSeriesPerBin = 8;

// The 20th percentile (linearly interpolated) of steps, each divided by
// its moment's factor (steps not empty): a case's time in a quiet stretch of
// the run's usual speed. docs/bricks.md, "Timing", says why neither the least
// step nor the median.
double QuietMs(const StepSeries& steps, const Moments& moments);

}  // namespace paradnn
