#include "analysis/stats.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <random>

#include "analysis/compare.h"
#include "records/rounds.h"
#include "tests/analysis/results_json.h"
#include "tests/catch.h"
#include "tests/scratch.h"

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

// The statistics of rounds (records/rounds.h).
TEST_CASE("the median's standard deviation, against drawn medians",
          "[analysis][rounds]") {
  // Exact for one and two draws (a draw; the mean of two); for the others,
  // 200,000 medians of standard normal draws (standard error of a standard
  // deviation so estimated: 0.16%).
  CHECK(MedianSdFactor(1) == Approx(1));
  CHECK(MedianSdFactor(2) == Approx(std::sqrt(0.5)).epsilon(1e-4));
  std::mt19937_64 random(11);
  std::normal_distribution<double> normal;
  for (int n : {3, 4, 5, 8, 9}) {
    double squares = 0;
    std::vector<double> draws(n);
    constexpr int kMedians = 200000;
    for (int i = 0; i < kMedians; ++i) {
      for (double& x : draws) x = normal(random);
      const double m = Median(draws);
      squares += m * m;
    }
    INFO("rounds: " << n);
    CHECK(MedianSdFactor(n) ==
          Approx(std::sqrt(squares / kMedians)).epsilon(0.01));
  }
  // The asymptote pi / 2n, where it takes over.
  CHECK(MedianSdFactor(1001) == Approx(std::sqrt(M_PI / 2002)).epsilon(0.002));
  CHECK(MedianSdFactor(999) == Approx(std::sqrt(M_PI / 1998)).epsilon(0.002));
}

TEST_CASE("a ratio's interval from both sides' spreads, by hand",
          "[analysis][rounds]") {
  // Both sides quiet in a group of spread 0.1 with 20 degrees of freedom:
  // the log ratio's standard error is c(3) 0.1 sqrt(2), c(3)^2 = 0.4487
  // (the variance of the median of three standard normals, tabulated),
  // with Welch's 40 degrees of freedom: t = 1.684 (tables).
  const Dispersion group{0.1, 20};
  const RoundSummary a = Summarize({1.0, 1.02, 0.98}, group);
  const RoundSummary b = Summarize({2.2, 2.0, 2.1}, group);
  const Ratio r = CompareRounds(a, b);
  const double half = 1.684 * std::sqrt(0.4487 * 0.01 * 2);
  CHECK(r.bounded);
  CHECK(r.value == Approx(2.1));
  CHECK(r.low == Approx(2.1 * std::exp(-half)).epsilon(1e-3));
  CHECK(r.high == Approx(2.1 * std::exp(half)).epsilon(1e-3));
  CHECK(Decide(r, kDefaultMargin) == Verdict::kSlower);
  CHECK(Decide(CompareRounds(b, a), kDefaultMargin) == Verdict::kFaster);
  // A case's own interval: a re-run's median, sqrt(2) c(3) 0.1 at t(20) =
  // 1.725 either side.
  const double rerun = 1.725 * std::sqrt(2 * 0.4487) * 0.1;
  CHECK(a.low == Approx(std::exp(-rerun)).epsilon(1e-3));
  CHECK(a.high == Approx(std::exp(rerun)).epsilon(1e-3));
  // No spread known (a file of one process's repetitions, one round a
  // case): no interval, undecided.
  const RoundSummary one = Summarize({1.0}, Dispersion{});
  CHECK(one.low == one.median);
  CHECK_FALSE(CompareRounds(one, b).bounded);
  CHECK(Decide(CompareRounds(one, b), kDefaultMargin) == Verdict::kUndecided);
}

TEST_CASE("what a ratio decides", "[analysis][rounds]") {
  auto ratio = [](double low, double high) {
    Ratio r;
    r.value = std::sqrt(low * high);
    r.low = low;
    r.high = high;
    r.bounded = true;
    return r;
  };
  CHECK(Decide(ratio(1.02, 1.08), 0.05) == Verdict::kSlower);
  CHECK(Decide(ratio(0.90, 0.97), 0.05) == Verdict::kFaster);
  // Inside the margin, even where 1 is left out: a negligible difference.
  CHECK(Decide(ratio(0.96, 1.04), 0.05) == Verdict::kEquivalent);
  CHECK(Decide(ratio(1.01, 1.04), 0.05) == Verdict::kEquivalent);
  CHECK(Decide(ratio(1.01, 1.04), 0) == Verdict::kSlower);
  CHECK(Decide(ratio(0.93, 1.04), 0.05) == Verdict::kUndecided);
  CHECK(Decide(Ratio{}, 0.05) == Verdict::kUndecided);
}

TEST_CASE(
    "a group's ratio: the geometric mean over the rounds all its cases "
    "have, its interval from the rounds, each case decided on its own",
    "[analysis][rounds]") {
  // Four cases of ratios 1.2, 1.5, 0.8 and 1.0; every B round k slowed by
  // the machine's mood m = 1, 1.02, 0.98 for all cases at once. Case 1's B
  // has a fourth round twice as slow, case 2's A five rounds: the group
  // takes each side's first three.
  const std::vector<double> mood = {1, 1.02, 0.98};
  auto moody = [&](double x) {
    return std::vector<double>{x * mood[0], x * mood[1], x * mood[2]};
  };
  std::vector<double> b1 = moody(1.2);
  b1.push_back(2.4);
  const Dispersion quiet{0.02, 30};
  std::vector<std::pair<RoundSummary, RoundSummary>> cases = {
      {Summarize({1, 1, 1}, quiet), Summarize(b1, quiet)},
      {Summarize({2, 2, 2, 2.02, 1.98}, quiet), Summarize(moody(3), quiet)},
      {Summarize({4, 4, 4}, quiet), Summarize(moody(3.2), quiet)},
      {Summarize({5, 5, 5}, quiet), Summarize(moody(5), quiet)}};
  const GroupRatio g = CompareGroup(cases, kDefaultMargin);
  CHECK(g.cases == 4);
  // By hand: (1.2 1.5 0.8 1.0)^(1/4) times the moods' geometric mean
  // exp((log 1.02 + log 0.98) / 3). (Their arithmetic mean is 1.125, the
  // median 1.1, the first case's 1.2.)
  const double value =
      std::pow(1.44, 0.25) * std::exp((std::log(1.02) + std::log(0.98)) / 3);
  CHECK(g.value == Approx(value));
  // A's rounds agree (no variance); B's per-round figures vary by the
  // moods' logs: the variance of their mean s^2 / 3 with 2 degrees of
  // freedom (t = 2.919986, tables).
  const double l1 = 0, l2 = std::log(1.02), l3 = std::log(0.98);
  const double mean = (l1 + l2 + l3) / 3;
  const double s2 = ((l1 - mean) * (l1 - mean) + (l2 - mean) * (l2 - mean) +
                     (l3 - mean) * (l3 - mean)) /
                    2;
  const double half = 2.919986 * std::sqrt(s2 / 3);
  CHECK(g.bounded);
  CHECK(g.low == Approx(value * std::exp(-half)).epsilon(1e-4));
  CHECK(g.high == Approx(value * std::exp(half)).epsilon(1e-4));
  // Case 1's B rounds disagree far beyond the group's 2%: unstable, its
  // own spread, undecided; case 2 slower, case 3 faster; case 4 inside
  // 1 +- 5% (its half width t(60) c(3) 0.02 sqrt(2) = 3.2%).
  CHECK(cases[0].second.unstable);
  CHECK(g.undecided == 1);
  CHECK(g.slower == 1);
  CHECK(g.faster == 1);
  CHECK(g.equivalent == 1);
  // One round a side: an estimate, no interval.
  const GroupRatio one =
      CompareGroup({{Summarize({1.0}, {}), Summarize({1.5}, {})},
                    {Summarize({2.0}, {}), Summarize({3.0}, {})}},
                   kDefaultMargin);
  CHECK(one.value == Approx(1.5));
  CHECK_FALSE(one.bounded);
  CHECK(one.undecided == 2);
}

TEST_CASE(
    "rounds added until decided: 98% at each look keeps an equal pair's "
    "false calls near one in ten, and still decides a 10% difference",
    "[analysis][rounds]") {
  // compare --run-a/--run-b's procedure on simulated pairs: 3 rounds a
  // side, then one more a side while undecided, at most 20; lognormal
  // noise of 5% a round, its spread known to the pool (200 degrees of
  // freedom).
  std::mt19937_64 random(5);
  std::normal_distribution<double> normal;
  const Dispersion pool{0.05, 200};
  auto procedure = [&](double truth, double confidence) {
    std::vector<double> a, b;
    auto round = [&] {
      a.push_back(std::exp(0.05 * normal(random)));
      b.push_back(truth * std::exp(0.05 * normal(random)));
    };
    for (int r = 0; r < 3; ++r) round();
    for (;;) {
      const Verdict v = Decide(
          CompareRounds(Summarize(a, pool), Summarize(b, pool), confidence),
          kDefaultMargin);
      if (v != Verdict::kUndecided || a.size() >= 20) return v;
      round();
    }
  };
  int called = 0, called90 = 0, slower = 0;
  constexpr int kPairs = 2000;
  for (int i = 0; i < kPairs; ++i) {
    const Verdict v = procedure(1.0, kTurnsConfidence);
    called += v == Verdict::kFaster || v == Verdict::kSlower;
    const Verdict v90 = procedure(1.0, kRoundsConfidence);
    called90 += v90 == Verdict::kFaster || v90 == Verdict::kSlower;
    slower += procedure(1.10, kTurnsConfidence) == Verdict::kSlower;
  }
  INFO("equal pairs called: " << called << " at 98%, " << called90
                              << " at 90%; 10% slower found: " << slower);
  CHECK(called < 0.13 * kPairs);
  CHECK(called90 > 0.2 * kPairs);
  CHECK(slower > 0.95 * kPairs);
}

TEST_CASE("unstable: a case whose rounds disagree beyond its group's",
          "[analysis][rounds]") {
  // Twelve quiet cases (rounds within 1% of their level) and two more: one
  // whose rounds span 10%, one 40%.
  std::map<std::string, std::vector<double>> rounds;
  std::map<std::string, std::vector<std::string>> groups;
  for (int i = 0; i < 12; ++i) {
    const double level = 1 + i;
    rounds["quiet" + std::to_string(i)] = {level * 0.99, level,
                                           level * (1.005 + 0.0005 * i)};
  }
  rounds["ten"] = {1.0, 1.05, 1.1};
  rounds["forty"] = {1.0, 1.2, 1.4};
  for (const auto& [name, r] : rounds) groups[name] = {"cpu"};
  const auto s = SummarizeAll(rounds, groups);
  for (int i = 0; i < 12; ++i)
    CHECK_FALSE(s.at("quiet" + std::to_string(i)).unstable);
  // 10%: not over kUnstableFloor, however quiet the group.
  CHECK_FALSE(s.at("ten").unstable);
  const RoundSummary& forty = s.at("forty");
  CHECK(forty.unstable);
  // Its interval is its own: at least its range, wider than a quiet
  // case's, and the quiet cases' intervals are not widened by it (their
  // spread is pooled without it: a quiet case's half width is under 3%).
  CHECK(forty.low <= 1.0);
  CHECK(forty.high >= 1.4);
  const RoundSummary& q = s.at("quiet5");
  CHECK((q.high - q.low) / q.median < 0.06);
  CHECK((q.high - q.low) / q.median > 0);
}

TEST_CASE(
    "a case's interval holds a re-run's median 90% of the time, on "
    "machines of several kinds of noise",
    "[analysis][rounds]") {
  // Groups of cases of different levels, 3 rounds each and a re-run of 3:
  // lognormal noise of 3% and of 12%; heavy tails (Student's t with 3
  // degrees of freedom, scale 5%); a group of two cases (lognormal 5%) too
  // small to pool alone, which falls back to all of its backend's; and a
  // machine where one process in four is 1.3 to 1.6 times as slow. 30 runs
  // of the whole machine (seeds 1-30).
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> normal;
  std::student_t_distribution<double> heavy(3);
  std::map<std::string, int> covered, total, covered95;
  for (int seed = 1; seed <= 30; ++seed) {
    std::mt19937_64 random(seed);
    auto process = [&](const std::string& group, double level) {
      if (group == "slow") {
        const double slow = u(random) < 0.25 ? 1.3 + 0.3 * u(random) : 1.0;
        return level * slow * std::exp(0.02 * normal(random));
      }
      if (group == "heavy") return level * std::exp(0.05 * heavy(random));
      const double sigma = group == "quiet"  ? 0.03
                           : group == "loud" ? 0.12
                                             : 0.05;
      return level * std::exp(sigma * normal(random));
    };
    std::map<std::string, std::vector<double>> first, again;
    std::map<std::string, std::vector<std::string>> groups;
    for (const std::string group :
         {"quiet", "loud", "heavy", "small", "slow"}) {
      const int cases = group == "small" ? 2 : 30;
      for (int i = 0; i < cases; ++i) {
        const std::string name = group + std::to_string(i);
        const double level = 0.1 * std::pow(1.2, i);
        for (int r = 0; r < 3; ++r) {
          first[name].push_back(process(group, level));
          again[name].push_back(process(group, level));
        }
        groups[name] = {"cpu/" + group, "cpu"};
      }
    }
    for (const auto& [name, s] : SummarizeAll(first, groups)) {
      const double rerun = Median(again.at(name));
      const std::string group =
          name.substr(0, name.find_first_of("0123456789"));
      covered[group] += s.low <= rerun && rerun <= s.high;
      ++total[group];
      // The same interval at 95% (1.960 / 1.645 as wide on the log scale)
      // holds more than the window allows.
      const double wider = std::pow(s.high / s.median, 1.960 / 1.645);
      covered95[group] +=
          s.median / wider <= rerun && rerun <= s.median * wider;
    }
  }
  auto share = [&](std::map<std::string, int>& of, const std::string& group) {
    return static_cast<double>(of[group]) / total[group];
  };
  int in = 0, in95 = 0, all = 0;
  for (const std::string group : {"quiet", "loud", "heavy", "small"}) {
    INFO(group << ": " << covered[group] << " of " << total[group]);
    CHECK(share(covered, group) >= 0.85);
    // The small group borrows its backend's spread, louder than its own.
    if (group != "small") CHECK(share(covered, group) <= 0.95);
    in += covered[group];
    in95 += covered95[group];
    all += total[group];
  }
  INFO("coverage " << in << " of " << all << ", at 95% " << in95);
  CHECK(static_cast<double>(in) / all >= 0.87);
  CHECK(static_cast<double>(in) / all <= 0.93);
  CHECK(static_cast<double>(in95) / all > 0.93);
  // A machine of two speeds is the method's known limit (docs/running.md):
  // the median of three jumps to the slow speed one time in six, which the
  // pooled spread of three rounds a case understates.
  INFO("slow: " << covered["slow"] << " of " << total["slow"]);
  CHECK(share(covered, "slow") >= 0.7);
}

// `cases` written as a results file (test::RoundsJson) in the scratch
// folder.
std::string ResultsFile(
    const std::string& name,
    const std::vector<std::pair<std::string, std::vector<double>>>& cases,
    bool rounds) {
  const std::string path = test::Scratch(name).string();
  std::ofstream(path) << test::RoundsJson(cases, rounds);
  return path;
}

TEST_CASE(
    "compare's inputs: one process's repetitions are one round, rounds of "
    "separate runs merge into one file, and the table counts verdicts",
    "[analysis][rounds]") {
  const std::string fc = "FC/layers:2/nodes:32/input:64/output:10/batch:8";
  // Repetitions in one process: one round, their median.
  const auto one = ReadRounds(
      ResultsFile("repetitions.json",
                  {{fc + "/torch/fp32/train", {1.0, 3.0, 1.2}}}, false));
  CHECK(one.at(fc + "/torch/fp32/train") == std::vector<double>{1.2});
  const auto three = ReadRounds(ResultsFile(
      "rounds.json", {{fc + "/torch/fp32/train", {1.0, 3.0, 1.2}}}, true));
  CHECK(three.at(fc + "/torch/fp32/train") ==
        std::vector<double>{1.0, 3.0, 1.2});
  // Three runs of one round each (compare --run-a), a case missing from
  // the last: a row per round, the case's interval on each.
  std::vector<std::string> files;
  for (int r = 0; r < 3; ++r) {
    std::vector<std::pair<std::string, std::vector<double>>> cases;
    for (int k = 1; k <= 4; ++k) {
      cases.push_back({"FC/layers:2/nodes:" + std::to_string(32 * k) +
                           "/input:64/output:10/batch:8/torch/fp32/train",
                       {k * (1 + 0.01 * r)}});
    }
    if (r < 2) cases.push_back({fc + "/onednn/fp32/train", {2.0 + r}});
    files.push_back(
        ResultsFile("round" + std::to_string(r) + ".json", cases, false));
  }
  const nlohmann::json merged = MergeRounds(files, "3 runs");
  const std::string merged_path = test::Scratch("merged.json").string();
  std::ofstream(merged_path) << merged.dump();
  const auto rounds = ReadRounds(merged_path);
  REQUIRE(rounds.size() == 5);
  const std::string k2 =
      "FC/layers:2/nodes:64/input:64/output:10/batch:8/torch/fp32/train";
  CHECK(rounds.at(k2) == std::vector<double>{2.0, 2.02, 2.04});
  CHECK(rounds.at(fc + "/onednn/fp32/train") == std::vector<double>{2.0, 3.0});
  int rows = 0;
  for (const nlohmann::json& row : merged["benchmarks"]) {
    if (row["name"] != k2) continue;
    ++rows;
    CHECK(row["rounds"] == 3);
    // The four LibTorch cases' spread pooled: every round 1% above the
    // last, by hand s = 0.009902 with 8 degrees of freedom, t(8) = 1.860,
    // c(3)^2 = 0.4487: half width 1.860 sqrt(2 0.4487) 0.009902 = 1.745%.
    CHECK(row["step_ms_low"].get<double>() ==
          Approx(2.02 * std::exp(-0.01745)).epsilon(2e-4));
    CHECK(row["step_ms_high"].get<double>() ==
          Approx(2.02 * std::exp(0.01745)).epsilon(2e-4));
  }
  CHECK(rows == 3);
  // The table: each case's verdict and rounds, each group's counts.
  std::map<std::string, std::vector<double>> b = rounds;
  for (auto& [name, r] : b) {
    for (double& x : r)
      x *= name.find("nodes:128") != std::string::npos ? 1.5 : 1;
  }
  const std::string text =
      CompareText(Pair(rounds, "", b, ""), "a", "b", kDefaultMargin);
  CHECK_THAT(text,
             Catch::Matchers::ContainsSubstring("B/A: B's step time over A's"));
  CHECK_THAT(text, Catch::Matchers::ContainsSubstring("3+3"));
  CHECK_THAT(text, Catch::Matchers::ContainsSubstring("2+2"));
  // FC torch: one case 1.5 times as slow, three equal.
  const size_t group = text.find("\nFC torch fp32 train ");
  REQUIRE(group != std::string::npos);
  const std::string line =
      text.substr(group + 1, text.find('\n', group + 1) - group - 1);
  // faster, slower, equivalent, undecided
  const std::string counts = "       0       1           3          0";
  REQUIRE(line.size() > counts.size());
  CHECK(line.substr(line.size() - counts.size()) == counts);
}

}  // namespace
}  // namespace paradnn
