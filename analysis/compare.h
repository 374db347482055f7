// Comparing two things measured here in rounds: two files (two builds, two
// library versions, PyTorch eager against paradnn), or two selections of
// one file (two backends), each ratio with its interval from both sides'
// rounds (records/rounds.h); and the rounds of separate runs, taken in
// turns, merged into one file per side.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "records/rounds.h"

namespace paradnn {

// Every case of a Google Benchmark JSON file by canonical name, with its
// step time in each round: its rows' where they are rounds (the counter
// `rounds`), else one figure, the median of its rows (repetitions in one
// process are one round). Any benchmark counts, not only paradnn's: a
// case is its name and its time. Throws std::runtime_error naming the file.
std::map<std::string, std::vector<double>> ReadRounds(const std::string& path);

// One side's runs, one round per file (each run with --paradnn_rounds=1),
// as one results file: per case a row per round (the round's own row, its
// rates and all, as repetition `round`) carrying the case's interval as a
// run with rounds would (rounds, step_ms_low, step_ms_high, round_spread,
// unstable). A case missing from a file has fewer rounds.
nlohmann::json MergeRounds(const std::vector<std::string>& files,
                           const std::string& how);

struct ComparedCase {
  std::string key;             // the name with the selectors taken out
  std::string a_name, b_name;  // the names in each side's results
  RoundSummary a, b;
};

// The cases of A whose names contain `a_sel` paired with those of B that
// contain `b_sel`, by the rest of the name (empty selectors: the same
// name), each summarized against its own file's groups.
std::vector<ComparedCase> Pair(
    const std::map<std::string, std::vector<double>>& a,
    const std::string& a_sel,
    const std::map<std::string, std::vector<double>>& b,
    const std::string& b_sel);

// A's and B's labels with, where the two files name different stacks
// (records/stack.h), what each side's stack has that the other's lacks:
// "a.json (Debian GNU/Linux 13 (trixie), GCC 14.2.0, LibTorch 2.6.0)".
std::pair<std::string, std::string> StackLabels(const std::string& a_file,
                                                const std::string& b_file,
                                                const std::string& a_label,
                                                const std::string& b_label);

// The comparison as text: per case A's and B's median with their
// intervals, their rounds, B over A with its interval at `confidence` and
// the verdict (records/rounds.h, Decide); per family, backend, data type
// and mode the geometric mean of the ratios (CompareGroup) with its
// interval and how many cases got each verdict; then all cases. Rounds
// added until decided (MeasureInTurns) are judged at kTurnsConfidence.
std::string CompareText(const std::vector<ComparedCase>& cases,
                        const std::string& a_label, const std::string& b_label,
                        double margin, double confidence = kRoundsConfidence);

// compare --run-a/--run-b: both commands run in turns (A B, B A, ...), one
// process a round with PARADNN_ROUNDS=1, BENCHMARK_OUT and COMPARE_ROUND in
// their environment, `rounds` rounds of every case; then, while a case is
// undecided (by `margin`), another round of the undecided cases only
// (BENCHMARK_FILTER, decided at kTurnsConfidence), until none is,
// `max_rounds` are done or `budget_s`
// seconds have passed since the start (negative: three times what the
// first rounds took). The rounds go into `out` (a.roundN.json, .log),
// merged into out/a.json and out/b.json.
struct Turns {
  std::string run_a, run_b, a_sel, b_sel, out;
  int rounds = 3, max_rounds = 20;
  double budget_s = -1;
  double margin = kDefaultMargin;
};
struct TurnsResult {
  std::string a_file, b_file;  // empty where a side wrote no results
  int rounds = 0;              // the most any case took
  bool budget_spent = false;   // cases were left undecided for it
};
TurnsResult MeasureInTurns(const Turns& t);

}  // namespace paradnn
