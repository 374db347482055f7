#include "adapters/mlperf/side_by_side.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "generators/spec.h"

namespace paradnn {
using nlohmann::json;

const std::vector<ReferenceModel>& ReferenceModels() {
  // Training FLOPs per sample = 3 x forward (forward, input and weight
  // gradients), as paradnn's cost model counts them.
  static const std::vector<ReferenceModel> models = {
      {"resnet", "ResNet-50 v1.5, 224x224", 25.557e6, 3 * 8.18e9,
       "torchvision resnet50 parameter count; 4.09 GMACs forward"},
      {"bert", "BERT-large, sequence 512", 335.1e6, 6 * 335.1e6 * 512,
       "6 x params x tokens (attention products not included)"},
      {"ssd", "RetinaNet, ResNeXt50-32x4d, 800x800", 37.74e6, std::nullopt,
       "MLPerf Training v3.x reference model; FLOPs not stated there"},
  };
  return models;
}

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string Num(double v, int precision = 4) {
  std::ostringstream s;
  s.precision(precision);
  s << v;
  return s.str();
}

// Google Benchmark's real_time is per iteration, in time_unit.
double StepMs(const json& run) {
  const std::string unit = run.value("time_unit", "ns");
  const double scale = unit == "s"    ? 1e3
                       : unit == "ms" ? 1
                       : unit == "us" ? 1e-3
                                      : 1e-6;
  return run.at("real_time").get<double>() * scale;
}

// Distance in log10 space over the dimensions both sides have.
double Distance(const ReferenceModel& m, const SyntheticResult& s) {
  double d = std::pow(std::log10(m.params) - std::log10(s.params), 2);
  if (m.train_flop_per_sample) {
    d += std::pow(std::log10(*m.train_flop_per_sample) -
                      std::log10(s.flop_per_sample),
                  2);
  }
  return std::sqrt(d);
}

}  // namespace

std::vector<SyntheticResult> ReadSyntheticResults(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open the results file");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    throw std::runtime_error(path + ": not JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("benchmarks") ||
      !j["benchmarks"].is_array()) {
    throw std::runtime_error(path +
                             ": not Google Benchmark JSON (no 'benchmarks')");
  }
  // Per case: the median aggregate, else the median of its repetitions.
  std::map<std::string, std::vector<json>> runs;
  std::map<std::string, json> medians;
  for (const json& b : j["benchmarks"]) {
    if (!b.contains("run_name") || !b.contains("params") ||
        !b.contains("flop_per_step") || b.value("error_occurred", false)) {
      continue;
    }
    const std::string name = CaseNameOf(b["run_name"]);
    if (b.value("run_type", "") == "aggregate") {
      if (b.value("aggregate_name", "") == "median") medians[name] = b;
    } else {
      runs[name].push_back(b);
    }
  }
  if (runs.empty() && medians.empty()) {
    throw std::runtime_error(path + ": no paradnn cases (no benchmark has "
                             "the params and flop_per_step counters)");
  }
  std::vector<SyntheticResult> out;
  for (const auto& [name, list] : runs) {
    SyntheticResult s;
    s.name = name;
    Case c;
    try {
      c = ParseCaseName(name);
    } catch (const SpecError&) {
      continue;  // a counter of that name from another benchmark
    }
    s.mode = ToString(c.mode);
    const double batch = static_cast<double>(c.model.Int("batch"));
    s.params = list[0]["params"];
    s.flop_per_sample = list[0]["flop_per_step"].get<double>() / batch;
    std::vector<double> ms;
    for (const json& r : list) ms.push_back(StepMs(r));
    s.step_ms = medians.count(name) ? StepMs(medians[name]) : Median(ms);
    s.samples_per_second = batch / (s.step_ms / 1e3);
    out.push_back(s);
  }
  return out;
}

SideBySide MakeSideBySide(const std::vector<MlperfBenchmark>& real,
                          const std::vector<SyntheticResult>& synthetic,
                          int nearest) {
  std::ostringstream md, csv;
  md << "# MLPerf results and paradnn's synthetic models\n\n"
     << "| system | benchmark or case | params | FLOPs per sample | samples/s "
        "| time to train (min) or step (ms) |\n|---|---|---|---|---|---|\n";
  csv << "kind,system,name,params,flop_per_sample,samples_per_second,"
         "time_to_train_min,step_ms\n";
  for (const MlperfBenchmark& b : real) {
    const ReferenceModel* m = nullptr;
    for (const ReferenceModel& r : ReferenceModels()) {
      if (r.benchmark == b.benchmark) m = &r;
    }
    std::vector<double> rates;
    for (const MlperfRun& r : b.runs) {
      if (r.passed() && r.samples_per_second) rates.push_back(*r.samples_per_second);
    }
    const std::string params = m ? Num(m->params) : "";
    const std::string flops =
        m && m->train_flop_per_sample ? Num(*m->train_flop_per_sample) : "";
    const std::string rate = rates.empty() ? "" : Num(Median(rates), 6);
    const std::string score = b.score_min ? Num(*b.score_min, 6) : "";
    md << "| " << b.system_name << " | MLPerf " << b.benchmark
       << (m ? " (" + m->model + ")" : "") << " | " << params << " | "
       << flops << " | " << rate << " | " << score << " (score) |\n";
    csv << "mlperf," << b.system_name << "," << b.benchmark << "," << params
        << "," << flops << "," << rate << "," << score << ",\n";
  }
  for (const SyntheticResult& s : synthetic) {
    md << "| this machine | `" << s.name << "` | " << Num(s.params) << " | "
       << Num(s.flop_per_sample) << " | " << Num(s.samples_per_second, 6)
       << " | " << Num(s.step_ms, 6) << " (step) |\n";
    csv << "paradnn,," << s.name << "," << s.params << "," << s.flop_per_sample
        << "," << s.samples_per_second << ",," << s.step_ms << "\n";
  }
  md << "\n## Synthetic training cases nearest to each MLPerf model\n\n"
     << "Distance in log10 of params and training FLOPs per sample (params "
        "only where the model's FLOPs are not known).\n";
  for (const MlperfBenchmark& b : real) {
    const ReferenceModel* m = nullptr;
    for (const ReferenceModel& r : ReferenceModels()) {
      if (r.benchmark == b.benchmark) m = &r;
    }
    md << "\n### " << b.benchmark << " on " << b.system_name << "\n\n";
    if (m == nullptr) {
      md << "No published size for this benchmark in paradnn's table.\n";
      continue;
    }
    // One line per distinct size: cases differing only in batch, backend
    // or data type have the same params and FLOPs per sample.
    std::map<std::pair<double, double>, std::vector<const SyntheticResult*>>
        sizes;
    for (const SyntheticResult& s : synthetic) {
      if (s.mode == "train") sizes[{s.params, s.flop_per_sample}].push_back(&s);
    }
    std::vector<std::vector<const SyntheticResult*>> ranked;
    for (auto& [size, cases] : sizes) ranked.push_back(cases);
    std::sort(ranked.begin(), ranked.end(), [&](auto& a, auto& c) {
      return Distance(*m, *a[0]) < Distance(*m, *c[0]);
    });
    if (ranked.empty()) md << "No synthetic training cases in the results.\n";
    for (int i = 0; i < nearest && i < static_cast<int>(ranked.size()); ++i) {
      const auto& cases = ranked[i];
      const SyntheticResult* best = *std::max_element(
          cases.begin(), cases.end(), [](auto* a, auto* c) {
            return a->samples_per_second < c->samples_per_second;
          });
      md << "- " << Num(best->params) << " params, "
         << Num(best->flop_per_sample) << " FLOPs per sample (distance "
         << Num(Distance(*m, *best), 3) << "): fastest `" << best->name
         << "` at " << Num(best->samples_per_second, 6) << " samples/s";
      if (cases.size() > 1) {
        md << " (" << cases.size() << " cases of this size)";
      }
      md << "\n";
    }
    md << "\nModel size: " << m->model << ", " << m->source << ".\n";
  }
  return {md.str(), csv.str()};
}

}  // namespace paradnn
