#include "core/moments.h"

#include <catch2/catch.hpp>
#include <vector>

namespace paradnn {
namespace {

// Cases of levels 1, 2, ... ms, each with a step in every bin of 15 s,
// taking the bin's factor of its level exactly.
std::vector<StepSeries> Synthetic(const std::vector<double>& factors,
                                  int cases) {
  std::vector<StepSeries> series(cases);
  for (int c = 0; c < cases; ++c) {
    for (size_t b = 0; b < factors.size(); ++b) {
      // Somewhere inside the bin, a different place for each case.
      const double at = 15.0 * b + 0.5 + 0.6 * c;
      series[c].emplace_back(at, (1 + c) * factors[b]);
    }
  }
  return series;
}

TEST_CASE("moments: each bin's factor over the median moment, recovered",
          "[moments]") {
  // Six moments; the median of their logs is that of 1.0 and 1.0.
  const std::vector<double> factors = {1.0, 1.3, 1.0, 0.9, 1.5, 1.0};
  std::vector<StepSeries> series = Synthetic(factors, 20);
  // One case's step a busy moment of its own made 10 times as long: the
  // medians do not follow it.
  series[7][4].second *= 10;
  // A case within one bin says nothing of the moments, however it ran.
  series.push_back({{16, 100.0}, {17, 0.001}});
  const Moments m = FitMoments(series);
  CHECK(m.bin_s == 15);
  REQUIRE(m.factor.size() == factors.size());
  for (size_t b = 0; b < factors.size(); ++b) {
    INFO(b);
    CHECK(m.factor.at(static_cast<int64_t>(b)) == Approx(factors[b]));
    CHECK(m.At(15.0 * b + 7) == Approx(factors[b]));
  }
  CHECK(m.At(-1) == 1);
  CHECK(m.At(15.0 * factors.size()) == 1);
  // Each case's steps scaled to the usual moment are its level.
  for (int c : {0, 5, 19}) {
    INFO(c);
    CHECK(QuietMs(series[c], m) == Approx(1 + c));
  }
}

TEST_CASE(
    "moments: a bin with fewer than 8 cases, or a run within one bin, "
    "is not fit",
    "[moments]") {
  std::vector<StepSeries> series = Synthetic({1.0, 2.0, 1.0}, 8);
  // A fourth bin only 7 of them reach.
  for (int c = 0; c < 7; ++c) series[c].emplace_back(50, 3.0 * (1 + c));
  Moments m = FitMoments(series);
  CHECK(m.factor.size() == 3);
  CHECK(m.factor.count(3) == 0);
  CHECK(m.At(50) == 1);
  CHECK(m.At(20) == Approx(2.0));
  // One bin fit alone says nothing: no factors at all.
  CHECK(FitMoments(Synthetic({1.0}, 20)).factor.empty());
  CHECK(FitMoments({}).factor.empty());
}

TEST_CASE("moments: a quiet time is the 20th percentile, interpolated",
          "[moments]") {
  const Moments none;
  // Sorted 1 to 5: a fifth of the way from the first to the last step is
  // 0.8 of the way from 1 to 2.
  CHECK(QuietMs({{0, 5}, {1, 1}, {2, 4}, {3, 2}, {4, 3}}, none) == Approx(1.8));
  CHECK(QuietMs({{0, 7}}, none) == 7);
  CHECK(QuietMs({{0, 2}, {1, 4}}, none) == Approx(2.4));
  // Steps of a moment twice as slow count half.
  Moments slow;
  slow.factor = {{0, 1.0}, {1, 2.0}};
  CHECK(QuietMs({{1, 5}, {16, 8}}, slow) == Approx(4.2));
}

}  // namespace
}  // namespace paradnn
