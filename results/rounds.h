// The statistics of rounds (--paradnn_rounds, docs/running.md "Rounds"):
// a case measured once in each of several fresh processes. The process is
// the unit of variance on a shared machine, so a case's figure is the
// median of its rounds, its interval is where a re-run's median is
// expected, and two cases (or two files) differ for real only where the
// interval of their ratio excludes 1.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace paradnn {

// The probability a case's interval is meant to hold a re-run's median
// with, and a comparison's interval the true ratio: 90%, the most three
// rounds a side can give a distribution-free ratio interval (1 - 2/20).
inline constexpr double kRoundsConfidence = 0.90;

// A case's rounds and what they say.
struct RoundSummary {
  int rounds = 0;
  double median = 0;  // the case's figure
  double low = 0;     // its interval: a re-run's median lands in it with
  double high = 0;    // kRoundsConfidence, by the group's rounds (Shift)
  double least = 0;   // the rounds' own range
  double most = 0;
  double spread = 0;      // (most - least) / median
  bool unstable = false;  // spread over kUnstableSpread
};

// Rounds whose range is over a fifth of their median are flagged unstable:
// about pyperf's warning at a standard deviation of 10% of the mean, as the
// expected range of 3 to 5 normal draws is 1.7 to 2.3 standard deviations.
inline constexpr double kUnstableSpread = 0.2;

// How far a re-run's median may land from this one's, by a group's cases
// (of one backend: its threads and runtime make the noise): the 5th and
// 95th percentile of log(re-run / this) over 2,000 draws, each from one
// case chosen at random, both medians of `rounds` rounds drawn from that
// case's own rounds. A case's level cancels in the ratio, and so each draw
// keeps how that case's processes vary (one slow round in three, say),
// which pooling rounds across cases would smear. Seeded from the rounds
// themselves: the same rounds give the same interval. Cases of one round
// say nothing: {0, 0}.
struct Shift {
  double low = 0, high = 0;  // natural logs
};
Shift ReRunShift(const std::vector<std::vector<double>>& cases, int rounds);

// A case's summary: its median, and as interval the wider of its own
// rounds' range and median x exp(shift). One round: no interval.
RoundSummary Summarize(const std::vector<double>& rounds, const Shift& shift);

// Summaries of many cases at once (by name), each with the shift of the
// first of its groups (`groups`: name -> groups, the most specific first:
// its backend and family, then its backend) that holds kMinGroupCases
// cases of two rounds or more, else of its last group. A family's kernels
// meet the machine their own way (a recurrent step is many small
// products, each a wake-up of the threads), so its cases say most about
// each other.
inline constexpr int kMinGroupCases = 3;  // 9 rounds at the default: more
                                          // than the 7 whose own range holds
                                          // a re-run's median 90% of times
std::map<std::string, RoundSummary> SummarizeAll(
    const std::map<std::string, std::vector<double>>& rounds,
    const std::map<std::string, std::vector<std::string>>& groups);

// The ratio of B's step time over A's (above 1: A is faster) from their
// rounds: the Hodges-Lehmann estimate (the median of every round-by-round
// ratio) and the distribution-free interval of the Mann-Whitney test
// (Moses), at kRoundsConfidence or the nearest above it the round counts
// allow. `bounded` is false when they allow none (fewer than three rounds
// a side): then low = 0 and high = infinity.
struct Ratio {
  double value = 0;
  double low = 0, high = 0;
  double confidence = 0;  // what the interval holds, exactly
  bool bounded = false;
  bool Real() const { return bounded && (low > 1 || high < 1); }
};
Ratio CompareRounds(const std::vector<double>& a, const std::vector<double>& b);

// How many of the C(m + n, m) orders of m rounds of one side and n of the
// other give each Mann-Whitney U (the pairs where A's round is the larger):
// element u for U = u, 0..m*n.
std::vector<double> MannWhitneyCounts(int m, int n);

// A group's ratio: each round of a side as one figure, the geometric mean
// of the group's cases in that round, and those figures compared as one
// case's rounds are (CompareRounds). A round is a process per case, and
// the machine's mood in it slows or speeds the group's cases together,
// which resampling each case's rounds on its own would average away (and
// the median of a few resampled rounds leans to a side's slow ones).
// Rounds beyond the fewest any case has are left out. `bounded` as in
// Ratio (low = high = 0 without an interval).
struct GroupRatio {
  double value = 0, low = 0, high = 0;
  bool bounded = false;
  int cases = 0, faster = 0, slower = 0, within_noise = 0;  // by Ratio::Real
};
GroupRatio CompareGroup(
    const std::vector<std::pair<std::vector<double>, std::vector<double>>>&
        cases);

}  // namespace paradnn
