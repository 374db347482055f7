#include "records/results.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "generators/declared.h"

namespace paradnn {
using nlohmann::json;

std::string Num(double v, int precision) {
  std::ostringstream s;
  s.precision(precision);
  s << v;
  return s.str();
}

double Median(std::vector<double> v) { return Percentile(std::move(v), 50); }

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / v.size();
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const double at = p / 100.0 * (v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(at));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (at - lo) * (v[hi] - v[lo]);
}

double StepMs(const json& run) {
  if (run.contains("step_ms") && run["step_ms"].is_number()) {
    return run["step_ms"].get<double>();
  }
  const std::string unit = run.value("time_unit", "ns");
  const double scale = unit == "s"    ? 1e3
                       : unit == "ms" ? 1
                       : unit == "us" ? 1e-3
                                      : 1e-6;
  return run.at("real_time").get<double>() * scale;
}

json ParseBenchmarkJson(const std::string& text) {
  std::string clean;
  clean.reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      clean += c;
      if (c == '\\' && i + 1 < text.size()) {
        clean += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    const size_t at = c == '-' ? i + 1 : i;
    bool replaced = false;
    for (const std::string_view word : {"NaN", "Infinity"}) {
      if (text.compare(at, word.size(), word) == 0) {
        clean += "null";
        i = at + word.size() - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) clean += c;
  }
  return json::parse(clean);
}

json ReadJsonFile(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open the " + what);
  try {
    std::stringstream text;
    text << in.rdbuf();
    return ParseBenchmarkJson(text.str());
  } catch (const json::exception& e) {
    throw std::runtime_error(path + ": not JSON: " + e.what());
  }
}

namespace {

Results ResultsOf(const json& j, const std::string& path) {
  if (!j.is_object() || !j.contains("benchmarks") ||
      !j["benchmarks"].is_array()) {
    throw std::runtime_error(path +
                             ": not Google Benchmark JSON (no 'benchmarks')");
  }
  if (j["benchmarks"].empty()) {
    throw std::runtime_error(path + ": no benchmarks in the file");
  }
  Results results;
  results.path = path;
  if (j.contains("context")) results.stack = StackOf(j["context"]);
  // The family files its cases were declared in, where they still are; a
  // case of a family none declares is skipped below, as another
  // benchmark's.
  if (j.contains("context") && j["context"].contains("paradnn_families") &&
      j["context"]["paradnn_families"].is_string()) {
    for (const std::string& file :
         Split(j["context"]["paradnn_families"].get<std::string>(), ',')) {
      if (!std::filesystem::exists(file)) continue;
      try {
        LoadFamilyFile(file);
      } catch (const SpecError&) {
      }
    }
  }
  if (j.contains("context") && j["context"].contains("paradnn_world_size")) {
    const json& v = j["context"]["paradnn_world_size"];
    try {
      results.world_size = std::stoi(v.get<std::string>());
    } catch (const std::exception&) {
      throw std::runtime_error(path + ": context paradnn_world_size is " +
                               v.dump() + ": expected a rank count");
    }
  }
  std::map<std::string, std::vector<json>> runs;
  std::map<std::string, json> medians;
  for (const json& b : j["benchmarks"]) {
    if (!b.contains("run_name") || !b["run_name"].is_string()) continue;
    const std::string name = CaseNameOf(b["run_name"]);
    if (b.value("error_occurred", false)) {
      results.failed.emplace(name, b.value("error_message", ""));
      continue;
    }
    if (!b.contains("params") || !b.contains("flop_per_step") ||
        !b.contains("real_time")) {
      continue;
    }
    if (b.value("run_type", "") == "aggregate") {
      if (b.value("aggregate_name", "") == "median") medians[name] = b;
    } else {
      runs[name].push_back(b);
    }
  }
  for (const auto& [name, list] : runs) {
    CaseResult r;
    try {
      r.c = ParseCaseName(name);
    } catch (const SpecError&) {
      continue;  // counters of these names from another benchmark
    }
    r.name = name;
    const json& first = list[0];
    r.params = first["params"];
    r.flop_per_step = first["flop_per_step"];
    r.bytes_per_step = first.value("bytes_per_step", 0.0);
    r.intensity = first.value("intensity", 0.0);
    const double batch = static_cast<double>(r.c.model.Int("batch"));
    r.flop_per_sample = r.flop_per_step / batch;
    std::vector<double> ms;
    for (const json& run : list) ms.push_back(StepMs(run));
    r.step_ms = medians.count(name) ? StepMs(medians.at(name)) : Median(ms);
    r.step_ms_low = r.step_ms_high = r.step_ms;
    r.rounds_ms = {r.step_ms};
    // Rounds: each row one round's (in the order of its repetition), every
    // row the case's interval.
    auto number = [](const json& run, const char* key, double otherwise) {
      const auto it = run.find(key);
      return it != run.end() && it->is_number() ? it->get<double>() : otherwise;
    };
    if (number(first, "rounds", 0) > 1 && first.contains("step_ms_low")) {
      std::vector<std::pair<double, double>> ordered;
      for (const json& run : list) {
        ordered.emplace_back(number(run, "repetition_index", 0), StepMs(run));
      }
      std::sort(ordered.begin(), ordered.end());
      r.rounds_ms.clear();
      for (const auto& [index, t] : ordered) r.rounds_ms.push_back(t);
      r.step_ms = Median(r.rounds_ms);
      r.step_ms_low = number(first, "step_ms_low", r.step_ms);
      r.step_ms_high = number(first, "step_ms_high", r.step_ms);
      r.round_spread = number(first, "round_spread", 0);
      r.unstable = number(first, "unstable", 0) > 0;
    }
    r.samples_per_second = batch * results.world_size / (r.step_ms / 1e3);
    r.flops = r.flop_per_step / (r.step_ms / 1e3);
    const json& shares = medians.count(name) ? medians.at(name) : first;
    r.allreduce_frac = shares.value("time_allreduce_frac", 0.0);
    // Results from before communication was a class have none: 0.
    constexpr int kBefore = static_cast<int>(OpClass::kCommunication);
    for (int k = 0; k < kOpClasses; ++k) {
      const std::string key = ShareCounter(static_cast<OpClass>(k));
      if (!shares.contains(key)) break;
      r.time_frac[k] = shares[key];
      r.profiled = k + 1 >= kBefore;
    }
    results.cases.push_back(std::move(r));
  }
  if (results.cases.empty()) {
    throw std::runtime_error(
        path +
        ": no paradnn cases (no benchmark has paradnn's counters "
        "params and flop_per_step" +
        (results.failed.empty() ? "" : ", or every case failed") + ")");
  }
  return results;
}

}  // namespace

Results ReadResults(const std::string& path) {
  const json j = ReadJsonFile(path, "results file");
  // A value of the wrong type anywhere ("time_unit": 119.6) is the file's
  // fault, said with its name like every other.
  try {
    return ResultsOf(j, path);
  } catch (const json::exception& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

}  // namespace paradnn
