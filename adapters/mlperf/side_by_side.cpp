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

// The published size of a benchmark's model, or nullptr.
const ReferenceModel* FindReference(const std::string& benchmark) {
  for (const ReferenceModel& r : ReferenceModels()) {
    if (r.benchmark == benchmark) return &r;
  }
  return nullptr;
}

// Distance in log10 space over the dimensions both sides have.
double Distance(const ReferenceModel& m, const CaseResult& s) {
  double d = std::pow(std::log10(m.params) - std::log10(s.params), 2);
  if (m.train_flop_per_sample) {
    d += std::pow(std::log10(*m.train_flop_per_sample) -
                      std::log10(s.flop_per_sample),
                  2);
  }
  return std::sqrt(d);
}

}  // namespace

SideBySide MakeSideBySide(const std::vector<MlperfBenchmark>& real,
                          const std::vector<CaseResult>& synthetic,
                          int nearest) {
  std::ostringstream md, csv;
  md << "# MLPerf results and paradnn's synthetic models\n\n"
     << "| system | benchmark or case | params | FLOPs per sample | samples/s "
        "| time to train (min) or step (ms) |\n|---|---|---|---|---|---|\n";
  csv << "kind,system,name,params,flop_per_sample,samples_per_second,"
         "time_to_train_min,step_ms\n";
  for (const MlperfBenchmark& b : real) {
    const ReferenceModel* m = FindReference(b.benchmark);
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
  for (const CaseResult& s : synthetic) {
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
    const ReferenceModel* m = FindReference(b.benchmark);
    md << "\n### " << b.benchmark << " on " << b.system_name << "\n\n";
    if (m == nullptr) {
      md << "No published size for this benchmark in paradnn's table.\n";
      continue;
    }
    // One line per distinct size: cases differing only in batch, backend
    // or data type have the same params and FLOPs per sample.
    std::map<std::pair<double, double>, std::vector<const CaseResult*>>
        sizes;
    for (const CaseResult& s : synthetic) {
      if (s.c.mode == Mode::kTrain) sizes[{s.params, s.flop_per_sample}].push_back(&s);
    }
    std::vector<std::vector<const CaseResult*>> ranked;
    for (auto& [size, cases] : sizes) ranked.push_back(cases);
    std::sort(ranked.begin(), ranked.end(), [&](auto& a, auto& c) {
      return Distance(*m, *a[0]) < Distance(*m, *c[0]);
    });
    if (ranked.empty()) md << "No synthetic training cases in the results.\n";
    for (int i = 0; i < nearest && i < static_cast<int>(ranked.size()); ++i) {
      const auto& cases = ranked[i];
      const CaseResult* best = *std::max_element(
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
