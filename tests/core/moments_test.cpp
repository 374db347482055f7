#include "core/moments.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

namespace paradnn {
namespace {

constexpr int kCases = 20;

// Case c's level: 1 + c ms.
double Level(int c) { return 1.0 + c; }

// Cases of levels 1, 2, ... ms, each with a step in every bin of 15 s that
// took its level times the bin's effect, times e to the case's sensitivity
// times the bin's contrast, exactly.
std::vector<StepSeries> Synthetic(const std::vector<double>& effects,
                                  const std::vector<double>& contrasts,
                                  const std::vector<double>& sensitivities) {
  std::vector<StepSeries> series(sensitivities.size());
  for (size_t c = 0; c < series.size(); ++c) {
    for (size_t b = 0; b < effects.size(); ++b) {
      // Somewhere inside the bin, a different place for each case.
      const double at = 15.0 * b + 0.5 + 0.6 * c;
      series[c].emplace_back(at, Level(c) * effects[b] *
                                     std::exp(sensitivities[c] * contrasts[b]));
    }
  }
  return series;
}

// Mean 0 and deviation 1 over the cases, as the fit leaves them.
std::vector<double> Standardized(std::vector<double> s) {
  double mean = 0, sum2 = 0;
  for (double x : s) mean += x / s.size();
  for (double x : s) sum2 += (x - mean) * (x - mean);
  for (double& x : s) x = (x - mean) / std::sqrt(sum2 / s.size());
  return s;
}

// Each case's log level, negated: the smaller a case, the more it follows
// the contrast, as on a machine whose vCPUs sometimes meet fast.
std::vector<double> BySize() {
  std::vector<double> s(kCases);
  for (int c = 0; c < kCases; ++c) s[c] = -std::log(Level(c));
  return s;
}

TEST_CASE("moments: each bin's factor over the median moment, recovered",
          "[moments]") {
  // Six moments; the median of their logs is that of 1.0 and 1.0.
  const std::vector<double> effects = {1.0, 1.3, 1.0, 0.9, 1.5, 1.0};
  std::vector<StepSeries> series = Synthetic(
      effects, std::vector<double>(6, 0.0), std::vector<double>(kCases, 0.0));
  // A case within one bin says nothing of the moments, however it ran.
  series.push_back({{16, 100.0}, {17, 0.001}});
  const MomentsFit fit = FitMoments(series);
  const Moments& m = fit.moments;
  CHECK(m.bin_s == 15);
  REQUIRE(m.factor.size() == effects.size());
  REQUIRE(m.contrast.size() == effects.size());
  for (size_t b = 0; b < effects.size(); ++b) {
    INFO(b);
    CHECK(m.factor.at(static_cast<int64_t>(b)) == Approx(effects[b]));
    // Every case follows the effect alike: nothing left to contrast.
    CHECK(m.contrast.at(static_cast<int64_t>(b)) == 0);
    CHECK(m.At(15.0 * b + 7, 0) == Approx(effects[b]));
  }
  CHECK(fit.sensitivity == std::vector<double>(kCases + 1, 0.0));
  CHECK(m.At(-1, 0) == 1);
  CHECK(m.At(15.0 * effects.size(), 0) == 1);
  // Each case's steps scaled to the usual moment are its level.
  for (int c : {0, 5, 19}) {
    INFO(c);
    CHECK(QuietMs(series[c], m, 0) == Approx(Level(c)));
  }
}

TEST_CASE(
    "moments: small cases that follow a contrast of their own are scaled "
    "by it, and one preempted step does not move the fit",
    "[moments]") {
  // Seven moments: in the third and fourth small cases ran faster while
  // large ones did not (the vCPUs met fast), in the sixth the reverse.
  const std::vector<double> effects = {1.0, 1.2, 0.95, 1.0, 1.1, 0.9, 1.0};
  const std::vector<double> contrasts = {0, 0, -0.15, -0.1, 0, 0.12, 0};
  const std::vector<double> sensitivities = Standardized(BySize());
  std::vector<StepSeries> series = Synthetic(effects, contrasts, sensitivities);
  // A step a preemption made 10 times as long: it counts as its fit.
  series[7][4].second *= 10;
  const MomentsFit fit = FitMoments(series);
  REQUIRE(fit.sensitivity.size() == sensitivities.size());
  for (int c = 0; c < kCases; ++c) {
    INFO(c);
    CHECK(fit.sensitivity[c] == Approx(sensitivities[c]).margin(0.02));
    // Each step over its moment's factor for the case: its level (the
    // preempted one aside), and so is the case's quiet time.
    for (size_t b = 0; b < effects.size(); ++b) {
      if (c == 7 && b == 4) continue;
      INFO(b);
      const auto& [at, ms] = series[c][b];
      CHECK(ms / fit.moments.At(at, fit.sensitivity[c]) ==
            Approx(Level(c)).epsilon(0.005));
    }
    CHECK(QuietMs(series[c], fit.moments, fit.sensitivity[c]) ==
          Approx(Level(c)).epsilon(0.005));
  }
  // Without the contrast, the small cases' quiet times would be the faster
  // moments': the effect alone does not take them out.
  CHECK(QuietMs(series[0], fit.moments, 0) < 0.9 * Level(0));
}

TEST_CASE(
    "moments: a case that follows the contrast far past the clip is fit "
    "whole, in whichever state most of its steps ran",
    "[moments]") {
  // Twelve moments, three of them in a state of the machine where small
  // steps ran faster; the median moment is of the other state.
  const std::vector<double> effects(12, 1.0);
  std::vector<double> contrasts(12, 0.0);
  contrasts[2] = contrasts[6] = contrasts[9] = 0.2;
  // Case 0 follows it about four times as strongly as a case of
  // sensitivity 1: e^(3.9 x 0.2), 2.2 times as fast there, as a small
  // oneDNN RNN did.
  std::vector<double> raw = BySize();
  raw[0] = -8;
  const std::vector<double> sensitivities = Standardized(raw);
  REQUIRE(sensitivities[0] < -3.5);
  const std::vector<StepSeries> series =
      Synthetic(effects, contrasts, sensitivities);
  const MomentsFit fit = FitMoments(series);
  for (int c = 0; c < kCases; ++c) {
    INFO(c);
    CHECK(fit.sensitivity[c] == Approx(sensitivities[c]).margin(0.05));
    CHECK(QuietMs(series[c], fit.moments, fit.sensitivity[c]) ==
          Approx(Level(c)).epsilon(0.01));
  }
}

TEST_CASE(
    "moments: a large case whose steps mostly met the fast state, one of "
    "them slow, follows the contrast with its own sign",
    "[moments]") {
  // Moments of two states, the fast one a third of them; the cases each
  // step in every bin, as in the tests above.
  const int bins = 15;
  std::vector<double> contrasts(bins, 0.0);
  for (int b = 0; b < bins; b += 3) contrasts[b] = 0.2;
  const std::vector<double> sensitivities = Standardized(BySize());
  std::vector<StepSeries> series =
      Synthetic(std::vector<double>(bins, 1.0), contrasts, sensitivities);
  // A model of 30 ms that follows the contrast as strongly as the
  // smallest case (sensitivity -2: 1.5 times as fast in the fast state),
  // two steps in each of the five fast moments and one in each of three
  // others; its last step in a fast moment ran at the other state's speed.
  const double s = -2;
  StepSeries model;
  for (int b : {0, 3, 6, 9, 12}) {
    for (double at : {15.0 * b + 2, 15.0 * b + 9}) {
      const bool slow = b == 12 && at > 15.0 * b + 2;
      model.emplace_back(at, slow ? 30.0 : 30 * std::exp(s * 0.2));
    }
  }
  for (int b : {1, 5, 10}) model.emplace_back(15.0 * b + 2, 30.0);
  series.push_back(model);
  const MomentsFit fit = FitMoments(series);
  CHECK(fit.sensitivity.back() < -1.5);
  // Taken to the usual moment's state, its quiet time is its 30 ms, where
  // its fast steps alone would say 20.1 ms.
  CHECK(QuietMs(model, fit.moments, fit.sensitivity.back()) ==
        Approx(30).epsilon(0.05));
}

TEST_CASE(
    "moments: a quiet time leaves out the steps of moments the run met "
    "rarely while half of the case's steps remain",
    "[moments]") {
  // Ten moments of the usual state, one far from it.
  Moments m;
  for (int b = 0; b < 11; ++b) {
    m.factor[b] = 1.0;
    m.contrast[b] = b == 10 ? 0.5 : 0.0;
  }
  CHECK_FALSE(m.Rare(149));
  CHECK(m.Rare(151));
  CHECK_FALSE(m.Rare(170));  // beyond the fit bins
  // A case whose sensitivity the fit got wrong (it ran 2.7 times as fast
  // in the rare moment, scaled as if 1.65 times): its three rare steps
  // would set the 20th percentile.
  StepSeries steps;
  for (int b = 0; b < 10; ++b) steps.emplace_back(15.0 * b + 1, 1.0 + b / 10.0);
  for (int i = 0; i < 3; ++i) steps.emplace_back(151 + i, 1 / std::exp(1.0));
  CHECK(QuietMs(steps, m, -1) == Approx(1.18));
  // With fewer than half of its steps in usual moments, all of them count.
  const StepSeries few = {{1, 2.0}, {151, 1.0}, {152, 1.0}};
  CHECK(QuietMs(few, m, 0) == Approx(1.0));
  CHECK(QuietMs(few, m, -1) == Approx(std::exp(0.5)));
}

TEST_CASE(
    "moments: a bin with fewer than 8 cases, or a run within one bin, "
    "is not fit",
    "[moments]") {
  std::vector<StepSeries> series =
      Synthetic({1.0, 2.0, 1.0}, {0, 0, 0}, std::vector<double>(8, 0.0));
  // A fourth bin only 7 of them reach.
  for (int c = 0; c < 7; ++c) series[c].emplace_back(50, 3.0 * Level(c));
  const Moments m = FitMoments(series).moments;
  CHECK(m.factor.size() == 3);
  CHECK(m.factor.count(3) == 0);
  CHECK(m.At(50, 1) == 1);
  CHECK(m.At(20, 0) == Approx(2.0));
  // One bin fit alone says nothing: no factors at all.
  const MomentsFit one =
      FitMoments(Synthetic({1.0}, {0}, std::vector<double>(kCases, 0.0)));
  CHECK(one.moments.factor.empty());
  CHECK(one.sensitivity == std::vector<double>(kCases, 0.0));
  CHECK(FitMoments({}).moments.factor.empty());
  // Cases all of one level have no step size to start a contrast from:
  // their effects alone.
  std::vector<StepSeries> alike(kCases, {{1, 2.0}, {16, 3.0}, {31, 2.0}});
  const MomentsFit flat = FitMoments(alike);
  CHECK(flat.moments.factor.size() == 3);
  CHECK(flat.moments.At(20, 0) == Approx(1.5));
  CHECK(flat.moments.contrast.at(1) == 0);
  CHECK(flat.sensitivity == std::vector<double>(kCases, 0.0));
}

TEST_CASE("moments: a quiet time is the 20th percentile, interpolated",
          "[moments]") {
  const Moments none;
  // Sorted 1 to 5: a fifth of the way from the first to the last step is
  // 0.8 of the way from 1 to 2.
  CHECK(QuietMs({{0, 5}, {1, 1}, {2, 4}, {3, 2}, {4, 3}}, none, 0) ==
        Approx(1.8));
  CHECK(QuietMs({{0, 7}}, none, 0) == 7);
  CHECK(QuietMs({{0, 2}, {1, 4}}, none, 0) == Approx(2.4));
  // Steps of a moment twice as slow count half; with a contrast of 0.2, a
  // case of sensitivity log 2 / 0.2 counts them a quarter, one of minus
  // that as they are.
  Moments slow;
  slow.factor = {{0, 1.0}, {1, 2.0}};
  CHECK(QuietMs({{1, 5}, {16, 8}}, slow, 0) == Approx(4.2));
  slow.contrast = {{0, 0.0}, {1, 0.2}};
  const double s = std::log(2.0) / 0.2;
  CHECK(QuietMs({{1, 5}, {16, 8}}, slow, s) == Approx(2.0 + 0.2 * 3));
  CHECK(QuietMs({{1, 5}, {16, 8}}, slow, -s) == Approx(5.0 + 0.2 * 3));
}

TEST_CASE(
    "moments: a case's least step is taken as measured, midway "
    "is the geometric mean of it and the quiet time",
    "[moments]") {
  // Moments that would halve the second step's time: the least step is
  // the first, as it ran, however the moments scale the others.
  Moments slow;
  slow.factor = {{0, 1.0}, {1, 2.0}};
  const StepSeries steps = {{1, 5}, {16, 8}, {2, 6}};
  CHECK(CaseMs(CaseTime::kLeast, steps, slow, 0) == 5);
  CHECK(CaseMs(CaseTime::kQuiet, steps, slow, 0) == Approx(4.4));
  CHECK(CaseMs(CaseTime::kLeast, {{0, 7}}, Moments(), 1) == 7);
  // Midway: the geometric mean of the two.
  CHECK(CaseMs(CaseTime::kMidway, steps, slow, 0) ==
        Approx(std::sqrt(5 * 4.4)));
  CHECK(std::string(ToString(CaseTime::kLeast)) == "least");
  CHECK(std::string(ToString(CaseTime::kQuiet)) == "quiet");
  CHECK(std::string(ToString(CaseTime::kMidway)) == "midway");
}

}  // namespace
}  // namespace paradnn
