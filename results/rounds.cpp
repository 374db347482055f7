#include "results/rounds.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "results/results.h"

namespace paradnn {
namespace {

// A seed from the values themselves: the same rounds, the same interval.
uint64_t SeedOf(const std::vector<double>& v) {
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  for (double x : v) seed = seed * 31 + std::hash<double>()(x);
  return seed;
}

double MedianOfDraws(const std::vector<double>& from, size_t n,
                     std::mt19937_64& random, std::vector<double>& scratch) {
  std::uniform_int_distribution<size_t> pick(0, from.size() - 1);
  scratch.resize(n);
  for (double& x : scratch) x = from[pick(random)];
  return Median(scratch);
}

}  // namespace

Shift ReRunShift(const std::vector<std::vector<double>>& cases, int rounds) {
  std::vector<std::vector<double>> logs;
  std::vector<double> all;
  for (const std::vector<double>& c : cases) {
    if (c.size() < 2) continue;
    logs.emplace_back();
    for (double x : c) logs.back().push_back(std::log(x));
    all.insert(all.end(), c.begin(), c.end());
  }
  if (logs.empty() || rounds < 1) return {};
  constexpr int kDraws = 2000;
  std::mt19937_64 random(SeedOf(all));
  std::uniform_int_distribution<size_t> pick(0, logs.size() - 1);
  std::vector<double> shifts, scratch;
  shifts.reserve(kDraws);
  for (int i = 0; i < kDraws; ++i) {
    const std::vector<double>& c = logs[pick(random)];
    const double here = MedianOfDraws(c, rounds, random, scratch);
    shifts.push_back(MedianOfDraws(c, rounds, random, scratch) - here);
  }
  const double tail = 100 * (1 - kRoundsConfidence) / 2;
  return {Percentile(shifts, tail), Percentile(shifts, 100 - tail)};
}

RoundSummary Summarize(const std::vector<double>& rounds, const Shift& shift) {
  RoundSummary s;
  s.rounds = static_cast<int>(rounds.size());
  if (rounds.empty()) return s;
  s.median = Median(rounds);
  s.least = *std::min_element(rounds.begin(), rounds.end());
  s.most = *std::max_element(rounds.begin(), rounds.end());
  s.spread = (s.most - s.least) / s.median;
  s.unstable = s.spread > kUnstableSpread;
  s.low = std::min(s.least, s.median * std::exp(shift.low));
  s.high = std::max(s.most, s.median * std::exp(shift.high));
  if (rounds.size() < 2) s.low = s.high = s.median;
  return s;
}

std::map<std::string, RoundSummary> SummarizeAll(
    const std::map<std::string, std::vector<double>>& rounds,
    const std::map<std::string, std::vector<std::string>>& groups) {
  auto groups_of = [&](const std::string& name) {
    const auto g = groups.find(name);
    return g == groups.end() || g->second.empty() ? std::vector<std::string>{""}
                                                  : g->second;
  };
  std::map<std::string, std::vector<std::vector<double>>> members;
  for (const auto& [name, r] : rounds) {
    for (const std::string& g : groups_of(name)) members[g].push_back(r);
  }
  auto measured = [](const std::vector<std::vector<double>>& cases) {
    return std::count_if(cases.begin(), cases.end(),
                         [](const auto& r) { return r.size() > 1; });
  };
  std::map<std::pair<std::string, size_t>, Shift> shifts;
  std::map<std::string, RoundSummary> out;
  for (const auto& [name, r] : rounds) {
    const std::vector<std::string> mine = groups_of(name);
    std::string group = mine.back();
    for (const std::string& g : mine) {
      if (measured(members[g]) >= kMinGroupCases) {
        group = g;
        break;
      }
    }
    const auto key = std::make_pair(group, r.size());
    if (!shifts.count(key)) {
      shifts[key] = ReRunShift(members[group], static_cast<int>(r.size()));
    }
    out[name] = Summarize(r, shifts[key]);
  }
  return out;
}

std::vector<double> MannWhitneyCounts(int m, int n) {
  // For i rounds of one side (rows, i = 0..m) and j of the other: the
  // arrangements with U = k, by the side of the largest round (the classic
  // recurrence): A's beats all j of B's.
  const int top = m * n;
  std::vector<std::vector<double>> before(n + 1), row(n + 1);
  for (int j = 0; j <= n; ++j) before[j] = {1};  // no round of A: U = 0
  for (int i = 1; i <= m; ++i) {
    row[0] = {1};
    for (int j = 1; j <= n; ++j) {
      row[j].assign(i * j + 1, 0);
      for (int k = 0; k <= i * j; ++k) {
        const double a_last =
            k >= j && k - j < static_cast<int>(before[j].size())
                ? before[j][k - j]
                : 0;
        const double b_last =
            k < static_cast<int>(row[j - 1].size()) ? row[j - 1][k] : 0;
        row[j][k] = a_last + b_last;
      }
    }
    std::swap(before, row);
  }
  std::vector<double> counts = before[n];
  counts.resize(top + 1, 0);
  return counts;
}

Ratio CompareRounds(const std::vector<double>& a,
                    const std::vector<double>& b) {
  Ratio r;
  if (a.empty() || b.empty()) return r;
  std::vector<double> logs;
  logs.reserve(a.size() * b.size());
  for (double x : a) {
    for (double y : b) logs.push_back(std::log(y / x));
  }
  std::sort(logs.begin(), logs.end());
  r.value = std::exp(Median(logs));
  r.high = std::numeric_limits<double>::infinity();
  const int m = static_cast<int>(a.size()), n = static_cast<int>(b.size());
  // The interval [D(c), D(mn + 1 - c)] leaves out P(U <= c - 1) on each
  // side: the largest c that keeps kRoundsConfidence. Exact up to 50
  // rounds a side; beyond, U's normal approximation.
  int c = 0;
  if (m <= 50 && n <= 50) {
    const std::vector<double> counts = MannWhitneyCounts(m, n);
    double total = 0;
    for (double x : counts) total += x;
    double below = 0;  // arrangements with U <= c - 1
    while (c + 1 <= m * n / 2 &&
           1 - 2 * (below + counts[c]) / total >= kRoundsConfidence - 1e-12) {
      below += counts[c++];
    }
    r.confidence = 1 - 2 * below / total;
  } else {
    const double z = 1.6448536269514722;  // the normal's 95th percentile
    c = static_cast<int>(
        std::floor(m * n / 2.0 - z * std::sqrt(m * n * (m + n + 1) / 12.0)));
    r.confidence = kRoundsConfidence;
  }
  if (c <= 0) {
    r.confidence = 0;
    return r;
  }
  r.bounded = true;
  r.low = std::exp(logs[c - 1]);
  r.high = std::exp(logs[logs.size() - c]);
  return r;
}

GroupRatio CompareGroup(
    const std::vector<std::pair<std::vector<double>, std::vector<double>>>&
        cases) {
  GroupRatio g;
  g.cases = static_cast<int>(cases.size());
  if (cases.empty()) return g;
  size_t rounds_a = cases.front().first.size();
  size_t rounds_b = cases.front().second.size();
  for (const auto& [a, b] : cases) {
    const Ratio r = CompareRounds(a, b);
    g.faster += r.Real() && r.value > 1;
    g.slower += r.Real() && r.value < 1;
    g.within_noise += !r.Real();
    rounds_a = std::min(rounds_a, a.size());
    rounds_b = std::min(rounds_b, b.size());
  }
  // Round i of a side as one figure: the geometric mean of the group's
  // cases in that round.
  auto per_round = [&cases](size_t rounds, bool b_side) {
    std::vector<double> figures(rounds);
    for (size_t i = 0; i < rounds; ++i) {
      double sum = 0;
      for (const auto& [a, b] : cases) sum += std::log((b_side ? b : a)[i]);
      figures[i] = std::exp(sum / cases.size());
    }
    return figures;
  };
  const Ratio r =
      CompareRounds(per_round(rounds_a, false), per_round(rounds_b, true));
  g.value = r.value;
  g.bounded = r.bounded;
  g.low = r.bounded ? r.low : 0;
  g.high = r.bounded ? r.high : 0;
  return g;
}

}  // namespace paradnn
