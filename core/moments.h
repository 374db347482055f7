// The machine's speed over a run's moments. On a shared machine every case
// runs slower for stretches of seconds to minutes (docs/bricks.md,
// "Timing"); with repetitions interleaved, the cases share those stretches.
// Not all alike, though: while the machine's two vCPUs sit where threads
// meet fast, small steps that meet at many barriers run faster and long
// ones that compute do not. So each step's log time is fit as its case's
// level, plus its moment's effect, plus its case's sensitivity times its
// moment's contrast (bins of 15 s): how much slower each moment was than
// the run's median one, for each case.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace paradnn {

struct Moments {
  double bin_s = 15;
  // Per bin (start / bin_s): how much slower a case of sensitivity 0 ran
  // than in the median moment, and the log of how much more each unit of
  // sensitivity made it. Bins the fit could not tell (too few cases in
  // them) are left out.
  std::map<int64_t, double> factor;
  std::map<int64_t, double> contrast;

  // The factor of the moment a step started in, for a case of that
  // sensitivity: 1 where none was fit.
  double At(double at_s, double sensitivity) const;
  // Whether a step started in a moment of a state the run met rarely: its
  // contrast far from the median moment's.
  bool Rare(double at_s) const;
};

// Steps of one case and kind, as (start in seconds of the run, ms).
using StepSeries = std::vector<std::pair<double, double>>;

struct MomentsFit {
  Moments moments;
  // Per series given, how strongly it follows the contrast: 0 for a series
  // that took no part. Over those that did, of mean 0 and deviation 1.
  std::vector<double> sensitivity;
};

// Fits the series' log times: first Tukey's median polish (levels and
// effects), then rounds that fit the contrasts and sensitivities on what
// the polish left. A series within one bin says nothing of the moments (its
// level and its moment are one) and takes no part; a bin needs
// kMinSeriesPerBin series that do to be fit.
MomentsFit FitMoments(const std::vector<StepSeries>& series);
constexpr int kMinSeriesPerBin = 8;

// The 20th percentile (linearly interpolated) of steps, each divided by
// its moment's factor for the series' sensitivity (steps not empty): a
// case's time in a quiet stretch of the run's usual speed. Steps in rare
// moments (Moments::Rare) are left out while half of them remain: scaled
// by a sensitivity fit on few steps, they would be the ones that set a
// 20th percentile. docs/bricks.md, "Timing", says why neither the least
// step nor the median.
double QuietMs(const StepSeries& steps, const Moments& moments,
               double sensitivity);

// How a run takes a case's time from its steps: its quiet time (QuietMs),
// its least step as measured, or midway between the two (their geometric
// mean). On a calm machine the moments take out the slow stretches and the
// quiet time is the closer; on a busy one a moment's steps are not slowed
// alike, and the least step or the midway is (docs/bricks.md, "Least steps
// on a busy machine"). A run takes the one its cases' own calls reproduce
// best.
enum class CaseTime { kQuiet, kLeast, kMidway };
constexpr int kCaseTimes = 3;
const char* ToString(CaseTime how);

// A case's time from its steps (not empty), taken `how`.
double CaseMs(CaseTime how, const StepSeries& steps, const Moments& moments,
              double sensitivity);

}  // namespace paradnn
