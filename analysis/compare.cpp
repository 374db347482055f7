#include "analysis/compare.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "analysis/stats.h"
#include "generators/spec.h"
#include "records/results.h"
#include "records/rounds.h"
#include "records/stack.h"

namespace paradnn {
using nlohmann::json;

namespace {

// The benchmarks of a file, each case's rows in order of repetition.
std::map<std::string, std::vector<json>> RowsByCase(const json& j,
                                                    const std::string& path) {
  if (!j.is_object() || !j.contains("benchmarks") ||
      !j["benchmarks"].is_array()) {
    throw std::runtime_error(path +
                             ": not Google Benchmark JSON (no 'benchmarks')");
  }
  std::map<std::string, std::vector<json>> rows;
  for (const json& b : j["benchmarks"]) {
    if (!b.is_object() || b.value("run_type", "") == "aggregate" ||
        b.value("error_occurred", false) || !b.contains("real_time")) {
      continue;
    }
    const std::string name =
        CaseNameOf(b.value("run_name", b.value("name", "")));
    rows[name].push_back(b);
  }
  for (auto& [name, list] : rows) {
    std::stable_sort(list.begin(), list.end(),
                     [](const json& x, const json& y) {
                       return x.value("repetition_index", 0) <
                              y.value("repetition_index", 0);
                     });
  }
  return rows;
}

std::vector<double> RoundsOf(const std::vector<json>& rows) {
  std::vector<double> ms;
  for (const json& row : rows) ms.push_back(StepMs(row));
  if (rows.front().value("rounds", 0.0) > 1) return ms;
  return {Median(ms)};
}

// "FC torch fp32 train": the family and the parts of a case's name that are
// no parameter (backend, data type, mode), for the summaries.
std::string GroupOf(const std::string& key) {
  std::string group;
  size_t at = 0;
  while (at <= key.size()) {
    size_t slash = key.find('/', at);
    if (slash == std::string::npos) slash = key.size();
    const std::string part = key.substr(at, slash - at);
    if (at == 0 || (!part.empty() && part.find(':') == std::string::npos)) {
      group += (group.empty() ? "" : " ") + part;
    }
    at = slash + 1;
  }
  return group;
}

std::string Fixed(double v, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

// "1.234 (1.100-1.380)": a figure and its interval, or the figure alone.
std::string WithInterval(double value, double low, double high, bool bounded,
                         int decimals) {
  return Fixed(value, decimals) + (bounded ? " (" + Fixed(low, decimals) + "-" +
                                                 Fixed(high, decimals) + ")"
                                           : std::string());
}

// An extended regular expression that matches `name` literally.
std::string Literal(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (std::string(".*+?(){}|$").find(c) != std::string::npos) {
      out += std::string("[") + c + "]";
    } else if (std::string("[]\\^").find(c) != std::string::npos) {
      out += std::string("\\") + c;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::map<std::string, std::vector<double>> ReadRounds(const std::string& path) {
  std::map<std::string, std::vector<double>> out;
  for (const auto& [name, rows] :
       RowsByCase(ReadJsonFile(path, "results file"), path)) {
    out[name] = RoundsOf(rows);
  }
  if (out.empty()) throw std::runtime_error(path + ": no benchmark ran");
  return out;
}

json MergeRounds(const std::vector<std::string>& files,
                 const std::string& how) {
  if (files.empty()) throw std::runtime_error("no rounds to merge");
  json merged;
  std::map<std::string, std::vector<json>> rows;  // per case, per round
  for (const std::string& file : files) {
    const json j = ReadJsonFile(file, "results file");
    if (merged.is_null()) merged = j;
    for (const auto& [name, list] : RowsByCase(j, file)) {
      json row = list.front();
      row["step_ms"] = Median(RoundsOf(list));
      rows[name].push_back(row);
    }
  }
  std::map<std::string, std::vector<double>> times;
  for (const auto& [name, list] : rows) {
    for (const json& row : list) times[name].push_back(StepMs(row));
  }
  const std::map<std::string, RoundSummary> summaries = SummarizeByName(times);
  json benchmarks = json::array();
  for (auto& [name, list] : rows) {
    const RoundSummary& s = summaries.at(name);
    for (size_t r = 0; r < list.size(); ++r) {
      json& row = list[r];
      row["repetition_index"] = r;
      row["repetitions"] = list.size();
      if (list.size() > 1) {
        row["rounds"] = list.size();
        row["step_ms_low"] = s.low;
        row["step_ms_high"] = s.high;
        row["round_spread"] = s.spread;
        row["unstable"] = s.unstable ? 1 : 0;
      }
      benchmarks.push_back(row);
    }
  }
  merged["benchmarks"] = benchmarks;
  merged["context"]["paradnn_rounds"] = how;
  merged["context"]["paradnn_merged_from"] = files;
  return merged;
}

std::vector<ComparedCase> Pair(
    const std::map<std::string, std::vector<double>>& a,
    const std::string& a_sel,
    const std::map<std::string, std::vector<double>>& b,
    const std::string& b_sel) {
  const auto a_summaries = SummarizeByName(a);
  const auto b_summaries = SummarizeByName(b);
  std::map<std::string, std::string> in_b;  // key -> B's name
  for (const auto& [name, rounds] : b) {
    const std::string key = SelectorKey(name, b_sel);
    if (!key.empty()) in_b[key] = name;
  }
  std::vector<ComparedCase> out;
  for (const auto& [name, rounds] : a) {
    const std::string key = SelectorKey(name, a_sel);
    const auto it = key.empty() ? in_b.end() : in_b.find(key);
    if (it == in_b.end()) continue;
    out.push_back({key, name, it->second, a_summaries.at(name),
                   b_summaries.at(it->second)});
  }
  return out;
}

std::pair<std::string, std::string> StackLabels(const std::string& a_file,
                                                const std::string& b_file,
                                                const std::string& a_label,
                                                const std::string& b_label) {
  auto stack = [](const std::string& path) {
    const nlohmann::json j = ReadJsonFile(path, "results file");
    return StackOf(j.contains("context") ? j["context"] : nlohmann::json());
  };
  const auto own = StackContrast(stack(a_file), stack(b_file));
  if (!own) return {a_label, b_label};
  return {WithStack(a_label, own->first), WithStack(b_label, own->second)};
}

std::string CompareText(const std::vector<ComparedCase>& cases,
                        const std::string& a_label, const std::string& b_label,
                        double margin, double confidence) {
  std::ostringstream out;
  const std::string level = Fixed(100 * confidence, 0) + "%";
  out << "B/A: B's step time over A's (below 1: B is faster); A = " << a_label
      << ", B = " << b_label << "\n"
      << "ms: a side's median of rounds (its 90% interval); B/A: the medians' "
         "ratio (its "
      << level
      << " interval, from both sides' rounds and the spread of their groups' "
         "rounds"
      << (confidence == kTurnsConfidence
              ? "; 98% at each look, as rounds were added until decided"
              : "")
      << "); B is faster or slower where that interval leaves out 1, "
         "equivalent where it lies inside 1 +- "
      << Fixed(100 * margin, 1) << "%, else undecided\n\n";
  std::map<std::string, std::vector<std::pair<RoundSummary, RoundSummary>>>
      groups;
  size_t width = 4;
  for (const ComparedCase& c : cases) width = std::max(width, c.key.size());
  out << "case" << std::string(width - 4, ' ')
      << "  A ms (interval)        B ms (interval)        rounds  B/A "
         "(interval)"
         "       verdict\n";
  auto padded = [](std::string s, size_t n) {
    s.resize(std::max(s.size(), n), ' ');
    return s;
  };
  for (const ComparedCase& c : cases) {
    groups[GroupOf(c.key)].emplace_back(c.a, c.b);
    const Ratio r = CompareRounds(c.a, c.b, confidence);
    const std::string rounds =
        std::to_string(c.a.rounds) + "+" + std::to_string(c.b.rounds);
    out << padded(c.key, width) << "  "
        << padded(WithInterval(c.a.median, c.a.low, c.a.high,
                               c.a.high > c.a.low, 3),
                  22)
        << " "
        << padded(WithInterval(c.b.median, c.b.low, c.b.high,
                               c.b.high > c.b.low, 3),
                  22)
        << " " << padded(rounds, 7) << " "
        << padded(WithInterval(r.value, r.low, r.high, r.bounded, 3), 20) << " "
        << ToString(Decide(r, margin)) << "\n";
  }
  size_t group_width = 5;
  for (const auto& [name, list] : groups) {
    group_width = std::max(group_width, name.size());
  }
  out << "\ngroup" << std::string(group_width - 5, ' ')
      << "  cases  B/A (" << level << " interval)    faster  slower  equivalent  "
         "undecided\n";
  std::vector<std::pair<RoundSummary, RoundSummary>> all;
  auto line = [&](const std::string& name, const GroupRatio& g) {
    char buf[256];
    std::snprintf(buf, sizeof(buf), "%-*s  %5d  %-20s  %6d  %6d  %10d  %9d\n",
                  static_cast<int>(group_width), name.c_str(), g.cases,
                  WithInterval(g.value, g.low, g.high, g.bounded, 3).c_str(),
                  g.faster, g.slower, g.equivalent, g.undecided);
    out << buf;
  };
  for (const auto& [name, list] : groups) {
    line(name, CompareGroup(list, margin, confidence));
    all.insert(all.end(), list.begin(), list.end());
  }
  line("all", CompareGroup(all, margin, confidence));
  return out.str();
}

namespace {

// Runs a side's command for one round, its Google Benchmark JSON into
// `json` and its console into `log`, the cases `filter` selects (Google
// Benchmark's BENCHMARK_FILTER; empty: all); false (said on stderr) when
// it wrote no results.
bool RunRound(const std::string& command, int round, const std::string& filter,
              const std::string& json, const std::string& log) {
  setenv("PARADNN_ROUNDS", "1", 1);
  setenv("COMPARE_ROUND", std::to_string(round).c_str(), 1);
  setenv("BENCHMARK_OUT", json.c_str(), 1);
  setenv("BENCHMARK_OUT_FORMAT", "json", 1);
  if (!filter.empty()) setenv("BENCHMARK_FILTER", filter.c_str(), 1);
  std::filesystem::remove(json);
  const std::string shell = "(" + command + ") >'" + log + "' 2>&1";
  const int status = std::system(shell.c_str());
  for (const char* name :
       {"BENCHMARK_OUT", "BENCHMARK_OUT_FORMAT", "PARADNN_ROUNDS",
        "COMPARE_ROUND", "BENCHMARK_FILTER"}) {
    unsetenv(name);
  }
  if (!std::filesystem::exists(json)) {
    std::cerr << "compare: '" << command << "' wrote no results (exit status "
              << status << ", see " << log << ")\n";
    return false;
  }
  return true;
}

// A filter that selects exactly these cases (and their suffixes).
std::string FilterOf(const std::set<std::string>& names) {
  std::string alternatives;
  for (const std::string& n : names) {
    alternatives += (alternatives.empty() ? "" : "|") + Literal(n);
  }
  return "^(" + alternatives + ")(/|$)";
}

}  // namespace

TurnsResult MeasureInTurns(const Turns& t) {
  std::filesystem::create_directories(t.out);
  TurnsResult result;
  std::vector<std::string> files[2];
  double seconds[2] = {0, 0};
  std::set<std::string> undecided[2];  // each side's names still in play
  const std::string how =
      "one process a round, the sides taking turns "
      "until each case is decided (paradnn compare)";
  auto merge = [&](int side) {
    const std::string path = t.out + (side == 0 ? "/a.json" : "/b.json");
    std::ofstream(path) << MergeRounds(files[side], how).dump(2) << "\n";
    return path;
  };
  const auto started = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         started)
        .count();
  };
  double budget = t.budget_s;
  for (int r = 1; r <= t.max_rounds; ++r) {
    if (r > t.rounds) {
      if (files[0].empty() || files[1].empty()) break;
      // What the rounds so far decide: the undecided cases run again.
      const auto pairs =
          Pair(ReadRounds(merge(0)), t.a_sel, ReadRounds(merge(1)), t.b_sel);
      undecided[0].clear();
      undecided[1].clear();
      for (const ComparedCase& c : pairs) {
        if (Decide(CompareRounds(c.a, c.b, kTurnsConfidence), t.margin) ==
            Verdict::kUndecided) {
          undecided[0].insert(c.a_name);
          undecided[1].insert(c.b_name);
        }
      }
      // By default, twice as long again as the first rounds took.
      if (budget < 0) budget = 3 * elapsed();
      if (undecided[0].empty()) break;
      if (elapsed() >= budget) {
        result.budget_spent = true;
        break;
      }
    }
    // A B, B A, A B, ...: neither side always meets what the other leaves
    // behind, and a slow phase of the machine meets both.
    const bool a_first = r % 2 == 1;
    for (int k = 0; k < 2; ++k) {
      const int side = (k == 0) == a_first ? 0 : 1;
      const std::string& command = side == 0 ? t.run_a : t.run_b;
      const std::string base =
          t.out + (side == 0 ? "/a" : "/b") + ".round" + std::to_string(r);
      std::cerr << "compare: round " << r << ": " << command
                << (r > t.rounds
                        ? " (" + std::to_string(undecided[side].size()) +
                              " undecided cases)"
                        : std::string())
                << "\n";
      const auto start = std::chrono::steady_clock::now();
      const std::string filter =
          r > t.rounds ? FilterOf(undecided[side]) : std::string();
      if (RunRound(command, r, filter, base + ".json", base + ".log")) {
        files[side].push_back(base + ".json");
      }
      seconds[side] += std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count();
    }
    result.rounds = r;
  }
  std::cerr << "compare: A took " << seconds[0] << " s, B " << seconds[1]
            << " s over " << result.rounds << " rounds\n";
  if (files[0].empty() || files[1].empty()) return result;
  result.a_file = merge(0);
  result.b_file = merge(1);
  return result;
}

}  // namespace paradnn
