#include "analysis/stats.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "results/rounds.h"
#include "tests/catch.h"

namespace paradnn {
namespace {

TEST_CASE("least squares recovers known coefficients", "[analysis]") {
  // y = 0.5 + 2 a - 0.75 b, exactly, on a grid.
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (double a = 0; a < 5; ++a) {
    for (double b = 0; b < 4; ++b) {
      x.push_back({a, b * b + a});
      y.push_back(0.5 + 2 * a - 0.75 * (b * b + a));
    }
  }
  Regression r = FitLeastSquares(x, y, {"a", "b"});
  REQUIRE(r.weights.size() == 3);
  CHECK(r.terms == std::vector<std::string>{"intercept", "a", "b"});
  CHECK(r.weights[0] == Approx(0.5));
  CHECK(r.weights[1] == Approx(2.0));
  CHECK(r.weights[2] == Approx(-0.75));
  CHECK(r.r2 == Approx(1.0));
  CHECK(r.samples == 20);
  // With noise the fit explains part of the variance: R² below 1.
  y[3] += 1;
  y[7] -= 1;
  CHECK(FitLeastSquares(x, y, {"a", "b"}).r2 < 0.999);
}

CaseResult Result(const std::string& name, double step_ms,
                  double samples_per_second) {
  CaseResult r;
  r.c = ParseCaseName(name);
  r.name = name;
  r.step_ms = step_ms;
  r.samples_per_second = samples_per_second;
  return r;
}

TEST_CASE("family regression: throughput as a power of each parameter",
          "[analysis]") {
  // samples/s = 1000 * batch^0.5 / nodes^1.25; layers fixed, so not a term.
  std::vector<CaseResult> cases;
  for (int batch : {64, 128, 256, 512}) {
    for (int nodes : {256, 1024, 4096}) {
      const std::string name =
          "FC/layers:4/nodes:" + std::to_string(nodes) +
          "/input:2000/output:1000/batch:" + std::to_string(batch) +
          "/torch/fp32/train";
      cases.push_back(
          Result(name, 1, 1000 * std::pow(batch, 0.5) / std::pow(nodes, 1.25)));
    }
  }
  Regression r = FitFamily(cases, "FC");
  REQUIRE(r.terms == std::vector<std::string>{"intercept", "nodes", "batch"});
  CHECK(r.weights[1] == Approx(-1.25));
  CHECK(r.weights[2] == Approx(0.5));
  CHECK(r.weights[0] == Approx(std::log(1000.0)));
  CHECK(r.r2 == Approx(1.0));
}

TEST_CASE("ParaDnn's box: 2nd, 9th, 50th, 91st and 98th percentiles",
          "[analysis]") {
  std::vector<double> v;
  for (int i = 100; i >= 0; --i) v.push_back(i);  // 0..100, unsorted
  Box b = BoxOf(v);
  CHECK(b.n == 101);
  CHECK(b.p2 == Approx(2));
  CHECK(b.p9 == Approx(9));
  CHECK(b.median == Approx(50));
  CHECK(b.p91 == Approx(91));
  CHECK(b.p98 == Approx(98));
  // Linear between order statistics: the 50th of {1, 2, 3, 10} is 2.5.
  CHECK(Percentile({10, 1, 3, 2}, 50) == Approx(2.5));
  CHECK(Percentile({10, 1, 3, 2}, 100) == Approx(10));
}

TEST_CASE("matching by canonical name, unmatched cases listed", "[analysis]") {
  const std::string fc = "FC/layers:1/nodes:8/input:8/output:2/batch:4/";
  const std::string cnn =
      "CNN/block:residual/blocks:1/filters:4/image:32/output:10/batch:2/";
  std::vector<CaseResult> one = {Result(fc + "onednn/fp32/train", 2, 1),
                                 Result(fc + "torch/fp32/train", 5, 1),
                                 Result(cnn + "onednn/fp32/infer", 1, 1),
                                 Result(cnn + "torch/fp32/train", 3, 1)};
  // Two backends in one file.
  Matching m = Match(one, "/onednn/", one, "/torch/");
  REQUIRE(m.matched.size() == 1);
  CHECK(m.matched[0].key == fc + "fp32/train");
  CHECK(m.matched[0].value == Approx(2.5));  // torch 5 ms / oneDNN 2 ms
  CHECK(m.only_a == std::vector<std::string>{cnn + "onednn/fp32/infer"});
  CHECK(m.only_b == std::vector<std::string>{cnn + "torch/fp32/train"});
  // The same cases in two files.
  std::vector<CaseResult> other = {Result(fc + "torch/fp32/train", 10, 1)};
  m = Match(one, "", other, "");
  REQUIRE(m.matched.size() == 1);
  CHECK(m.matched[0].value == Approx(2.0));
  CHECK(m.only_a.size() == 3);
  CHECK(m.only_b.empty());
  // Nothing in common.
  m = Match(one, "/bf16/", one, "/fp32/");
  CHECK(m.matched.empty());
}

// The statistics of rounds (results/rounds.h).
TEST_CASE("Mann-Whitney U's null distribution, counted", "[analysis][rounds]") {
  // Every order of 3 and 3 rounds (20) and of 4 and 4 (70), by U: the
  // published tables' counts.
  CHECK(MannWhitneyCounts(3, 3) ==
        std::vector<double>{1, 1, 2, 3, 3, 3, 3, 2, 1, 1});
  CHECK(MannWhitneyCounts(4, 4) ==
        std::vector<double>{1, 1, 2, 3, 5, 5, 7, 7, 8, 7, 7, 5, 5, 3, 2, 1, 1});
  CHECK(MannWhitneyCounts(2, 5).size() == 11);
}

TEST_CASE("a ratio's interval from rounds: the Mann-Whitney test's",
          "[analysis][rounds]") {
  // 3 rounds a side: 90% exactly (1 - 2/20), the least and most of the 9
  // round-by-round ratios.
  Ratio r = CompareRounds({1, 1.1, 1.2}, {2, 2.2, 2.4});
  CHECK(r.bounded);
  CHECK(r.confidence == Approx(0.9));
  CHECK(r.low == Approx(2 / 1.2));
  CHECK(r.high == Approx(2.4 / 1));
  CHECK(r.value == Approx(2.0));  // the median of the 9 ratios
  CHECK(r.Real());
  // 2 rounds a side cannot reach 90% (1 - 2/6): no interval.
  r = CompareRounds({1, 1.1}, {1.5, 1.6});
  CHECK_FALSE(r.bounded);
  CHECK_FALSE(r.Real());
  // 9 a side: the tables' critical U at 0.10 two-sided is 21, so the
  // interval runs from the 22nd to the 60th of the 81 sorted ratios.
  std::vector<double> a, b, ratios;
  for (int i = 1; i <= 9; ++i) {
    a.push_back(10 + i * i * 0.1);
    b.push_back(11 + std::sqrt(i) + (i % 3) * 0.7);
  }
  for (double x : a) {
    for (double y : b) ratios.push_back(y / x);
  }
  std::sort(ratios.begin(), ratios.end());
  r = CompareRounds(a, b);
  CHECK(r.low == Approx(ratios[21]));
  CHECK(r.high == Approx(ratios[59]));
  CHECK(r.value == Approx(ratios[40]));
  // Equal sides: within noise.
  CHECK_FALSE(CompareRounds(a, a).Real());
}

TEST_CASE(
    "a group's ratio takes each round as one figure, so a round that slows "
    "every case moves the interval, not the estimate",
    "[analysis][rounds]") {
  // Ten cases of different sizes; B is 1.2 times A, and two of B's five
  // rounds ran twice as slow for every case (a busy machine).
  std::vector<std::pair<std::vector<double>, std::vector<double>>> cases;
  for (int k = 1; k <= 10; ++k) {
    const double base = k * 0.7;
    const std::vector<double> a(5, base);
    std::vector<double> b;
    for (double mood : {1.0, 1.0, 1.0, 2.0, 2.0})
      b.push_back(base * 1.2 * mood);
    cases.emplace_back(a, b);
  }
  const GroupRatio g = CompareGroup(cases);
  CHECK(g.cases == 10);
  // The 25 round-by-round ratios: 15 of 1.2 and 10 of 2.4. Their median is
  // 1.2; 5 rounds a side put the 90% interval at the 5th and 21st.
  CHECK(g.value == Approx(1.2));
  CHECK(g.bounded);
  CHECK(g.low == Approx(1.2));
  CHECK(g.high == Approx(2.4));
  // Each case alone: the same 25 ratios, B slower (A faster) for all ten.
  CHECK(g.faster == 10);
  // With one round a side, no interval.
  const GroupRatio one = CompareGroup({{{1.0}, {1.5}}, {{2.0}, {3.0}}});
  CHECK(one.value == Approx(1.5));
  CHECK_FALSE(one.bounded);
}

TEST_CASE(
    "a case's interval holds a re-run's median as often as it says, on a "
    "machine whose processes are sometimes slow",
    "[analysis][rounds]") {
  // 400 cases of different times on a machine where a process is 1.0 to
  // 1.1 times the truth, and one in four 1.4 to 1.8 times: 3 rounds each,
  // then a re-run of 3 rounds.
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> u(0, 1);
  auto process = [&](double truth) {
    const double slow = u(random) < 0.25 ? 1.4 + 0.4 * u(random) : 1.0;
    return truth * slow * (1 + 0.1 * u(random));
  };
  std::map<std::string, std::vector<double>> first, again;
  std::map<std::string, std::vector<std::string>> group;
  for (int i = 0; i < 400; ++i) {
    const std::string name = "case" + std::to_string(i);
    const double truth = 0.1 * std::pow(1.05, i % 100);
    for (int r = 0; r < 3; ++r) {
      first[name].push_back(process(truth));
      again[name].push_back(process(truth));
    }
    group[name] = {"cpu"};
  }
  const auto summaries = SummarizeAll(first, group);
  int covered = 0;
  for (const auto& [name, s] : summaries) {
    CHECK(s.low <= s.median);
    CHECK(s.high >= s.median);
    const double rerun = Median(again[name]);
    covered += s.low <= rerun && rerun <= s.high;
  }
  const double coverage = covered / 400.0;
  CHECK(coverage >= 0.88);
  CHECK(coverage <= 0.99);  // not wider than it needs to be
  // Its own three rounds' range alone holds a re-run far less often (60%
  // for exchangeable rounds).
  int in_range = 0;
  for (const auto& [name, s] : summaries) {
    const double rerun = Median(again[name]);
    in_range += s.least <= rerun && rerun <= s.most;
  }
  CHECK(in_range / 400.0 < 0.75);
}

}  // namespace
}  // namespace paradnn
