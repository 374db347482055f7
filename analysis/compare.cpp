#include "analysis/compare.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "analysis/stats.h"
#include "generators/spec.h"
#include "results/results.h"
#include "results/rounds.h"
#include "results/stack.h"

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

std::string Range(const std::vector<double>& v) {
  const auto [least, most] = std::minmax_element(v.begin(), v.end());
  return v.size() < 2 ? "1 round" : Fixed(*least, 3) + "-" + Fixed(*most, 3);
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
  std::map<std::string, std::vector<std::string>> groups;
  for (const auto& [name, list] : rows) {
    for (const json& row : list) times[name].push_back(StepMs(row));
    try {
      const Case c = ParseCaseName(name);
      groups[name] = {c.backend + "/" + c.model.family, c.backend};
    } catch (const SpecError&) {
      groups[name] = {""};  // another benchmark's cases, pooled together
    }
  }
  const std::map<std::string, RoundSummary> summaries =
      SummarizeAll(times, groups);
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
  std::map<std::string, const std::vector<double>*> in_b;
  for (const auto& [name, rounds] : b) {
    const std::string key = SelectorKey(name, b_sel);
    if (!key.empty()) in_b[key] = &rounds;
  }
  std::vector<ComparedCase> out;
  for (const auto& [name, rounds] : a) {
    const std::string key = SelectorKey(name, a_sel);
    const auto it = key.empty() ? in_b.end() : in_b.find(key);
    if (it != in_b.end()) out.push_back({key, rounds, *it->second});
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
                        const std::string& a_label,
                        const std::string& b_label) {
  std::ostringstream out;
  out << "B over A: B's step time / A's (above 1: A is faster); A = " << a_label
      << ", B = " << b_label << "\n"
      << "ratio: the median of every round-by-round ratio; interval: the "
         "Mann-Whitney test's at 90% (none below 3 rounds a side); "
         "ms: medians of rounds (their range)\n\n";
  std::map<std::string,
           std::vector<std::pair<std::vector<double>, std::vector<double>>>>
      groups;
  size_t width = 4;
  for (const ComparedCase& c : cases) width = std::max(width, c.key.size());
  out << "case" << std::string(width - 4, ' ')
      << "  A ms (rounds)          B ms (rounds)          B/A    interval\n";
  for (const ComparedCase& c : cases) {
    groups[GroupOf(c.key)].emplace_back(c.a, c.b);
    const Ratio r = CompareRounds(c.a, c.b);
    std::string a = Fixed(Median(c.a), 3) + " (" + Range(c.a) + ")";
    std::string b = Fixed(Median(c.b), 3) + " (" + Range(c.b) + ")";
    a.resize(std::max<size_t>(a.size(), 22), ' ');
    b.resize(std::max<size_t>(b.size(), 22), ' ');
    out << c.key << std::string(width - c.key.size(), ' ') << "  " << a << " "
        << b << " " << Fixed(r.value, 3) << "  "
        << (r.bounded ? Fixed(r.low, 3) + "-" + Fixed(r.high, 3)
                      : std::string("none"))
        << (r.Real() ? "" : "  within noise") << "\n";
  }
  size_t group_width = 5;
  for (const auto& [name, list] : groups) {
    group_width = std::max(group_width, name.size());
  }
  out << "\ngroup" << std::string(group_width - 5, ' ')
      << "  cases  ratio  90% interval   A faster  A slower  within noise\n";
  std::vector<std::pair<std::vector<double>, std::vector<double>>> all;
  auto line = [&](const std::string& name, const GroupRatio& g) {
    const std::string interval =
        g.bounded ? Fixed(g.low, 3) + "-" + Fixed(g.high, 3) : "none";
    char buf[200];
    std::snprintf(buf, sizeof(buf), "%-*s  %5d  %5.3f  %-13s  %8d  %8d  %12d\n",
                  static_cast<int>(group_width), name.c_str(), g.cases, g.value,
                  interval.c_str(), g.faster, g.slower, g.within_noise);
    out << buf;
  };
  for (const auto& [name, list] : groups) {
    line(name, CompareGroup(list));
    all.insert(all.end(), list.begin(), list.end());
  }
  line("all", CompareGroup(all));
  return out.str();
}

}  // namespace paradnn
