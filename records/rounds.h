// The statistics of rounds (--paradnn_rounds, docs/running.md "Rounds"):
// a case measured once in each of several fresh processes. The process is
// the unit of variance on a shared machine, so a case's figure is the
// median of its rounds, its interval is where a re-run's median is
// expected, and a comparison of two sides decides each case: B faster,
// slower, equivalent within a margin, or undecided.
//
// The noise model: a round's step time is the case's level times a
// process's factor, and on the log scale those factors have one spread
// for all the cases of a group (one backend and family: its threads and
// runtime meet the machine alike). Pooling the group's rounds estimates
// that spread with many degrees of freedom, where a case's own three
// rounds give two.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace paradnn {

// The probability a case's interval is meant to hold a re-run's median
// with, and a comparison's interval the true ratio.
inline constexpr double kRoundsConfidence = 0.90;
// A comparison that adds rounds until each case is decided looks at every
// case again after each round, and each look is another chance to call a
// difference that is not there: at 90% a look, an equal pair is called
// faster or slower 20 to 40% of the time over up to 18 looks (normal
// noise of 3 to 8% a round, tests/analysis/stats_test.cpp). The same
// nominal level at every look (Pocock's boundary), 98%, keeps that near
// 10%, as one look at 90% would.
inline constexpr double kTurnsConfidence = 0.98;

// How the logs of a group's rounds spread about their cases' levels: the
// pooled standard deviation and its degrees of freedom (0: unknown), and
// the rounds' deviations from their cases' mean logs, each scaled to one
// round's spread: the shape of the noise.
struct Dispersion {
  double sigma = 0;
  int dof = 0;
  std::vector<double> residuals;
};

// A case's rounds and what they say.
struct RoundSummary {
  std::vector<double> values;  // the rounds, in order
  int rounds = 0;
  double median = 0;  // the case's figure
  double low = 0;     // its interval: a re-run's median lands in it with
  double high = 0;    // kRoundsConfidence (equal to the median: unknown)
  double least = 0;   // the rounds' own range
  double most = 0;
  double spread = 0;      // (most - least) / median
  bool unstable = false;  // its rounds disagree beyond its group's spread
  Dispersion noise;       // the spread its interval and ratios take
};

// A case is unstable when its rounds' variance is beyond its group's at
// 99% (an F test: one case in a hundred of a quiet group is flagged by
// chance) and their range is over kUnstableFloor of the median: within a
// tenth, the case is not erratic in any sense a comparison can act on,
// even in a group so quiet that such a range is improbable. An unstable
// case keeps its own spread (and at least its own range) as its interval.
inline constexpr double kUnstableConfidence = 0.99;
inline constexpr double kUnstableFloor = 0.10;

// The standard deviation of the median of n independent standard normal
// draws (1 for one, 0.670 for three, pi/2n asymptotically), by numerical
// integration over the order statistics' densities.
double MedianSdFactor(int n);

// The group's spread from its cases' rounds (cases of one round give
// none): the cases' log variances pooled, then again without the cases
// that are unstable against that first pool, so that an erratic case
// neither widens its group's intervals nor hides its own.
Dispersion PoolDispersion(const std::vector<std::vector<double>>& cases);

// A case's summary against its group's spread: its median; as interval
// the median x exp(+-t s sqrt(2) c(n)), where a re-run's median minus
// this one has the standard deviation s sqrt(2) c(n) (two independent
// medians of n rounds), t Student's at kRoundsConfidence with the pool's
// degrees of freedom; an unstable case takes its own spread instead. No
// spread known (no group dispersion): the interval is the median alone.
RoundSummary Summarize(const std::vector<double>& rounds,
                       const Dispersion& group);

// Summaries of many cases at once (by name), each against the spread of
// the first of its groups (`groups`: name -> groups, the most specific
// first) that holds kMinGroupCases cases of two rounds or more, else of
// its last group. A family's kernels meet the machine their own way (a
// recurrent step is many small products, each a wake-up of the threads),
// so its cases say most about each other.
inline constexpr int kMinGroupCases = 3;
std::map<std::string, RoundSummary> SummarizeAll(
    const std::map<std::string, std::vector<double>>& rounds,
    const std::map<std::string, std::vector<std::string>>& groups);

// The groups whose noise a case named `name` shares, most specific first,
// for SummarizeAll: paradnn's cases by backend and family, then backend;
// any other benchmark's with all of its file's others.
std::vector<std::string> NoiseGroups(const std::string& name);

// Each case's summary by name, against the spread of its NoiseGroups among
// the same cases (one file's).
std::map<std::string, RoundSummary> SummarizeByName(
    const std::map<std::string, std::vector<double>>& rounds);

// The ratio of B's step time over A's (above 1: B is slower) from their
// summaries: the ratio of their medians, and its interval at `confidence`
// from both sides' spreads (the log ratio's standard
// error sqrt(c(na)^2 sa^2 + c(nb)^2 sb^2), Student's t with Welch's
// degrees of freedom). `bounded` is false where a side's spread is
// unknown: then low = 0 and high = infinity.
struct Ratio {
  double value = 0;
  double low = 0, high = 0;
  bool bounded = false;
};
Ratio CompareRounds(const RoundSummary& a, const RoundSummary& b,
                    double confidence = kRoundsConfidence);

// What a comparison says of B against A, case by case.
enum class Verdict {
  kFaster,      // B's interval below 1
  kSlower,      // above 1
  kEquivalent,  // inside [1 - margin, 1 + margin], whichever side of 1
  kUndecided,   // none of those: more rounds would tell
};
const char* ToString(Verdict v);
// The default margin of equivalence: differences under 5% are below what
// a re-run on another day reproduces, and below what users act on.
inline constexpr double kDefaultMargin = 0.05;
// Equivalence is checked first: a difference the margin calls negligible
// is not reported as faster or slower however narrow its interval.
Verdict Decide(const Ratio& r, double margin);

// A group's ratio: the geometric mean of its cases' ratios, taking each
// round of a side as one figure (the mean log time of the group's cases in
// that round) and those figures compared by Welch's t test. A round of a
// run slows or speeds the group's cases together, which treating the
// cases as independent would average away. Rounds beyond the fewest any
// case has are left out. Per verdict, how many of its cases got it.
struct GroupRatio {
  double value = 0, low = 0, high = 0;
  bool bounded = false;
  int cases = 0, faster = 0, slower = 0, equivalent = 0, undecided = 0;
};
GroupRatio CompareGroup(
    const std::vector<std::pair<RoundSummary, RoundSummary>>& cases,
    double margin, double confidence = kRoundsConfidence);

}  // namespace paradnn
