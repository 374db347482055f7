// The statistics behind the report: least squares on logs, box-plot
// percentiles, matching two result sets.
#pragma once

#include <string>
#include <vector>

#include "records/results.h"
#include "records/rounds.h"

namespace paradnn {

struct Regression {
  std::vector<std::string> terms;  // "intercept", then the parameters
  std::vector<double> weights;
  double r2 = 0;
  int samples = 0;
};

// Least squares of y on the columns of x plus an intercept (Eigen).
Regression FitLeastSquares(const std::vector<std::vector<double>>& x,
                           const std::vector<double>& y,
                           const std::vector<std::string>& names);

// log(samples per second) on the log of each numeric parameter of a family
// that takes more than one value among the cases.
Regression FitFamily(const std::vector<CaseResult>& cases,
                     const std::string& family);

// log(values[i]) on the log of each numeric parameter that takes more than
// one value among `cases` (one family's): what a speedup grows with.
Regression FitOnParameters(const std::vector<const CaseResult*>& cases,
                           const std::vector<double>& values);

// ParaDnn's box plot: box 9th-91st percentile, whiskers 2nd-98th.
struct Box {
  double p2 = 0, p9 = 0, median = 0, p91 = 0, p98 = 0;
  int n = 0;
};
Box BoxOf(const std::vector<double>& values);

struct Speedup {
  std::string key;  // the name with the A and B selectors taken out
  const CaseResult* a = nullptr;
  const CaseResult* b = nullptr;
  double value = 0;  // B's step time / A's step time: > 1 when B is slower
  // Each side's rounds summarized against its file's groups, and the ratio
  // from them with its interval (records/rounds.h: Decide says what it
  // decides).
  RoundSummary sa, sb;
  Ratio ratio;
};

struct Matching {
  std::vector<Speedup> matched;
  std::vector<std::string> only_a, only_b;
};

// The name with the selector replaced by "/" (the name itself for an empty
// selector), or "" when the name lacks it: what two cases are paired by.
std::string SelectorKey(const std::string& name, const std::string& sel);

// Pairs the cases of A that contain `a_sel` with the cases of B that contain
// `b_sel`, by name with the selector replaced by "/": two backends
// ("/onednn/" vs "/torch/"), two data types, or (empty selectors) the same
// case in two files.
Matching Match(const std::vector<CaseResult>& a, const std::string& a_sel,
               const std::vector<CaseResult>& b, const std::string& b_sel);

}  // namespace paradnn
