#include "adapters/mlperf/side_by_side.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "generators/cost.h"
#include "generators/spec.h"

namespace paradnn {
using nlohmann::json;

namespace {

// The table, and the twins UseTwin put in it.
std::vector<ReferenceModel>& Models() {
  // Training FLOPs per sample = 3 x forward (forward, input and weight
  // gradients), as paradnn's cost model counts them.
  static std::vector<ReferenceModel> models = {
      {"resnet", "ResNet-50 v1.5, 224x224", 25557032, 3 * 2 * 4.089184256e9,
       "torchvision resnet50: 25,557,032 parameters, 4.089 GMACs forward "
       "(fvcore)",
       "CNN/block:bottleneck/blocks:3-4-6-3/filters:64/image:224/output:1000/"
       "batch:1",
       "none in the layers (ResNet-50 v1.5: stride in the 3x3 convolution); "
       "the first convolution computes no input gradient",
       0.01, 0, "", ""},
      {"bert", "BERT-large, sequence 512", 335.1e6, 6 * 335.1e6 * 512,
       "BERT-large encoder and embeddings (Devlin et al. 2019: 340M with "
       "its heads); FLOPs 6 x params x tokens, attention products not "
       "included",
       "TRANSFORMER/layers:24/d_model:1024/heads:16/ffn:4096/length:512/"
       "vocab:30522/causal:false/batch:1",
       "the output layer is not tied to the token embedding (+31.3M "
       "params); no token-type embeddings, pooler or MLM transform; the "
       "loss covers every position, where MLPerf's covers the masked ones; "
       "the twin's FLOPs count the attention products",
       0.10, 0, "", ""},
      {"gpt3", "GPT-3 175B, sequence 2048", 175e9, 6 * 175e9 * 2048,
       "Brown et al. 2020; FLOPs 6 x params x tokens",
       "TRANSFORMER/layers:96/d_model:12288/heads:96/ffn:49152/length:2048/"
       "vocab:50257/causal:true/batch:1",
       "dense attention in every layer (GPT-3 alternates dense and banded "
       "sparse layers); learned positions; the output layer untied",
       0.10, 0, "", ""},
      {"llama2_70b_lora", "Llama 2 70B with LoRA, sequence 8192", 68.98e9,
       std::nullopt,
       "Touvron et al. 2023 (70B; 68.98e9 counted); LoRA's training FLOPs "
       "are not published with it",
       "TRANSFORMER/layers:80/d_model:8192/heads:64/ffn:35840/length:8192/"
       "vocab:32000/causal:true/batch:1",
       "full multi-head attention where Llama 2 shares keys and values "
       "between 8 groups; a GELU feed-forward of two matrices, sized to "
       "match the three of SwiGLU in params; layer norm for RMSNorm; the "
       "twin trains every weight, where LoRA trains small adapters only "
       "(weight gradients of the frozen weights are not computed there)",
       0.10, 0, "", ""},
      {"llama3.1-8b", "Llama 3.1 8B, context 2048 (MLPerf Inference)", 8.03e9,
       std::nullopt,
       "Meta's Llama 3.1 8B model card (8.03B parameters); an MLPerf "
       "Inference benchmark (Server: TTFT 2 s, TPOT 100 ms)",
       "LLM/layers:32/d_model:4096/heads:32/kv_heads:8/ffn:14336/"
       "vocab:128256/context:2048/batch:1/phase:decode",
       "synthetic weights; rotary positions of base 500000 without Llama "
       "3.1's frequency scaling; a decode step over a full cache of 2048 "
       "positions, where a served request's context grows token by token; "
       "MLPerf's training results have no such benchmark to set beside it",
       0.005, 0, "", ""},
      {"ssd", "RetinaNet, ResNeXt50-32x4d, 800x800", 37.74e6, std::nullopt,
       "MLPerf Training v3.x reference model; FLOPs not stated there", "",
       "no family has grouped convolutions, a feature pyramid or detection "
       "heads: no twin",
       0, 0, "", ""},
      {"dlrm_dcnv2", "DLRM-DCNv2 on Criteo 1TB multi-hot", 26151671809,
       std::nullopt,
       "MLPerf Training's reference (mlcommons/training, "
       "recommendation_v2/torchrec_dlrm, README): 26 tables of 204,184,588 "
       "rows in all (40,000,000, 39,060, 17,295, ... 36), 128 wide, 214 ids "
       "per example over them (multi-hot sizes 3, 2, 1, ... 1), a bottom "
       "MLP 512-256-128 over 13 dense features, 3 DCNv2 cross layers of "
       "rank 512, a top MLP 1024-1024-512-256-1, global batch 65,536 on 8 "
       "GPUs; 26,151,671,809 parameters counted from that configuration "
       "(none is published); FLOPs not published",
       "DLRM/tables:26/rows:7853253/dim:128/hotness:8/dense:13/"
       "bottom:512-256-128/top:1024-1024-512-256/cross:3/rank:512/batch:1",
       "its 26 tables alike: 7,853,253 rows each (the reference's "
       "204,184,588 over 26, where its tables run from 3 to 40,000,000 "
       "rows) and 8 ids each (208 per example, not 214); ids uniform over "
       "each table; two logits and softmax cross-entropy for its logit and "
       "sigmoid (+257 params); SGD for its Adagrad",
       0.001, 8192,
       "DLRM/tables:26/rows:262144/dim:128/hotness:8/dense:13/"
       "bottom:512-256-128/top:1024-1024-512-256/cross:3/rank:512/batch:1",
       "tables capped at 262,144 rows (3.5 GB of fp32 tables, not 105 GB): "
       "still far beyond any CPU's last-level cache, so every id looked up "
       "reads memory as in the full tables, and a step's work does not "
       "depend on the rows"},
      {"stable_diffusion", "Stable Diffusion v2, 512x512", 865e6, std::nullopt,
       "its U-Net (Rombach et al. 2022)", "",
       "no family has a U-Net's down- and up-sampling paths with "
       "cross-attention: no twin",
       0, 0, "", ""},
  };
  return models;
}

}  // namespace

const std::vector<ReferenceModel>& ReferenceModels() { return Models(); }

void UseTwin(const std::string& benchmark, const std::string& model,
             const std::string& source) {
  for (ReferenceModel& m : Models()) {
    if (m.benchmark != benchmark) continue;
    const std::string built_in =
        m.twin.empty() ? "none" : "`" + m.twin + "`";
    m.twin = model;
    m.runs_as.clear();
    m.runs_as_why.clear();
    m.differences = "the model of " + source +
                    ", its layers as the file has them, in place of the "
                    "built-in twin (" +
                    built_in + ")";
    // The sizes' distance from the published ones, as measured.
    const Cost c = ComputeCost(TwinModel(m, 1).BuildGraph(), Mode::kTrain,
                               DType::kFp32);
    m.tolerance = std::abs(static_cast<double>(c.params) / m.params - 1);
    if (m.train_flop_per_sample) {
      m.tolerance = std::max(
          m.tolerance,
          std::abs(static_cast<double>(c.flops) / *m.train_flop_per_sample -
                   1));
    }
    return;
  }
  std::string known;
  for (const ReferenceModel& m : Models()) {
    known += (known.empty() ? "" : ", ") + m.benchmark;
  }
  throw SpecError("'" + benchmark + "' is no MLPerf benchmark paradnn knows: " +
                  known);
}

const ReferenceModel* FindReference(const std::string& benchmark) {
  for (const ReferenceModel& r : ReferenceModels()) {
    if (r.benchmark == benchmark) return &r;
  }
  return nullptr;
}

namespace {

// A model's canonical name at batch 1, at another batch.
ModelSpec AtBatch(const std::string& name, int64_t batch) {
  const FamilyDef* def = FindFamily(Split(name, '/')[0]);
  if (def == nullptr) throw SpecError("'" + name + "': no such family");
  const Case c =
      ParseCaseName(name + "/any/fp32/" + ToString(def->modes.front()));
  std::vector<std::string> values = c.model.values;
  for (size_t i = 0; i < def->params.size(); ++i) {
    if (def->params[i].key == "batch") values[i] = std::to_string(batch);
  }
  return ModelSpec::Make(c.model.family, std::move(values));
}

}  // namespace

ModelSpec TwinModel(const ReferenceModel& m, int64_t batch) {
  return AtBatch(m.twin, batch);
}

ModelSpec RunModel(const ReferenceModel& m, int64_t batch) {
  return AtBatch(m.runs_as.empty() ? m.twin : m.runs_as, batch);
}

namespace {

// `b`: the MLPerf result, or nullptr for a model with none given.
TwinComparison Compare(const MlperfBenchmark* b, const ReferenceModel& m,
                       const std::vector<CaseResult>& synthetic) {
  TwinComparison t;
  t.real = b;
  t.model = &m;
  std::vector<double> rates;
  std::optional<int64_t> global_batch;
  for (const MlperfRun& r : b ? b->runs : std::vector<MlperfRun>()) {
    if (!r.passed()) continue;
    if (r.samples_per_second) rates.push_back(*r.samples_per_second);
    if (!global_batch) global_batch = r.global_batch_size;
  }
  const int devices = b ? b->accelerators : 0;
  t.global_batch = global_batch.value_or(0);
  const int64_t batch =
      t.batch_known() ? std::max<int64_t>(1, t.global_batch / devices)
      : b == nullptr && m.reference_batch > 0 ? m.reference_batch
                                              : 1;
  t.twin = TwinModel(m, batch);
  t.run = RunModel(m, batch);
  t.cost = ComputeCost(t.twin.BuildGraph(), Mode::kTrain, DType::kFp32);
  t.flop_per_sample = static_cast<double>(t.cost.flops) / t.twin.Int("batch");
  if (!rates.empty() && devices > 0)
    t.accelerator_rate = Median(rates) / devices;
  // The training cases of what runs here: its model at any batch.
  for (const CaseResult& s : synthetic) {
    if (s.c.mode == Mode::kTrain && s.c.model.family == t.run.family &&
        RunModel(m, s.c.model.Int("batch")) == s.c.model) {
      t.here.push_back(&s);
    }
  }
  return t;
}

// The twin's section of the Markdown: sizes against the published ones,
// and this machine's samples/s against one accelerator's.
void Twin(const TwinComparison& t, std::ostringstream& md,
          std::ostringstream& csv) {
  const MlperfBenchmark* b = t.real;
  const ReferenceModel& m = *t.model;
  const std::string accelerator =
      b == nullptr || b->accelerator.empty() ? "accelerator" : b->accelerator;
  md << "Twin: `" << t.twin.Name() << "`";
  if (t.batch_known()) {
    md << " (global batch " << t.global_batch << " over " << b->accelerators
       << " " << (b->accelerator.empty() ? "accelerators" : b->accelerator)
       << ")";
  } else if (b == nullptr && m.reference_batch > 0) {
    md << " (the reference implementation's batch per accelerator)";
  } else {
    md << " (batch 1: the submission's batch per accelerator is not known)";
  }
  md << ".\n\n| | published " << m.model << " | twin | twin / published |\n"
     << "|---|---|---|---|\n| params | " << Num(m.params) << " | "
     << Num(t.cost.params) << " | " << Num(t.cost.params / m.params, 3)
     << " |\n";
  if (m.train_flop_per_sample) {
    md << "| training FLOPs per sample | " << Num(*m.train_flop_per_sample)
       << " | " << Num(t.flop_per_sample) << " | "
       << Num(t.flop_per_sample / *m.train_flop_per_sample, 3) << " |\n";
  }
  md << "\nSizes within " << Num(100 * m.tolerance, 2)
     << "% of the published ones. Differences: " << m.differences << ".\n\n";
  const Cost run = m.runs_as.empty() ? t.cost
                                     : ComputeCost(t.run.BuildGraph(),
                                                   Mode::kTrain, DType::kFp32);
  if (!m.runs_as.empty()) {
    md << "Runs here as `" << t.run.Name() << "` (" << Num(run.params)
       << " params): " << m.runs_as_why << ".\n\n";
  }
  if (t.here.empty()) {
    md << "The twin is not in the results. To measure it here:\n"
       << "`build/paradnn --paradnn_case=" << t.run.Name()
       << "/onednn/fp32/train --benchmark_format=json` (the cost model "
          "estimates "
       << Num(run.memory / 1073741824.0, 3) << " GiB for it).\n";
    return;
  }
  md << "| here | batch | samples/s | ms per sample | one " << accelerator
     << ", samples/s | here / accelerator |\n|---|---|---|---|---|---|\n";
  for (const CaseResult* s : t.here) {
    const double rate = t.accelerator_rate;
    md << "| `" << s->name << "` | " << s->c.model.Str("batch") << " | "
       << Num(s->samples_per_second, 4) << " | "
       << Num(1e3 / s->samples_per_second, 4) << " | "
       << (rate > 0 ? Num(rate, 4) : "") << " | "
       << (rate > 0 ? Num(s->samples_per_second / rate, 3) : "") << " |\n";
    csv << "twin," << (b ? b->system_name : "") << "," << s->name << ","
        << s->params << "," << s->flop_per_sample << ","
        << s->samples_per_second << ",," << s->step_ms << "\n";
  }
}

// Distance in log10 space over the dimensions both sides have.
double Distance(const ReferenceModel& m, const CaseResult& s) {
  double d = std::pow(std::log10(m.params) - std::log10(s.params), 2);
  if (m.train_flop_per_sample) {
    d += std::pow(
        std::log10(*m.train_flop_per_sample) - std::log10(s.flop_per_sample),
        2);
  }
  return std::sqrt(d);
}

}  // namespace

namespace {

// The twins of models with no result in `real`, compared with none.
std::vector<TwinComparison> TwinsWithoutResults(
    const std::vector<MlperfBenchmark>& real,
    const std::vector<CaseResult>& synthetic) {
  std::vector<TwinComparison> out;
  for (const ReferenceModel& m : ReferenceModels()) {
    const bool given = std::any_of(
        real.begin(), real.end(),
        [&](const MlperfBenchmark& b) { return b.benchmark == m.benchmark; });
    if (!m.twin.empty() && !given)
      out.push_back(Compare(nullptr, m, synthetic));
  }
  return out;
}

}  // namespace

std::vector<TwinComparison> CompareTwins(
    const std::vector<MlperfBenchmark>& real,
    const std::vector<CaseResult>& synthetic) {
  std::vector<TwinComparison> out;
  for (const MlperfBenchmark& b : real) {
    const ReferenceModel* m = FindReference(b.benchmark);
    if (m != nullptr && !m->twin.empty()) {
      out.push_back(Compare(&b, *m, synthetic));
    }
  }
  for (TwinComparison& t : TwinsWithoutResults(real, synthetic)) {
    out.push_back(std::move(t));
  }
  return out;
}

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
      if (r.passed() && r.samples_per_second)
        rates.push_back(*r.samples_per_second);
    }
    const std::string params = m ? Num(m->params) : "";
    const std::string flops =
        m && m->train_flop_per_sample ? Num(*m->train_flop_per_sample) : "";
    const std::string rate = rates.empty() ? "" : Num(Median(rates), 6);
    const std::string score = b.score_min ? Num(*b.score_min, 6) : "";
    md << "| " << b.system_name << " | MLPerf " << b.benchmark
       << (m ? " (" + m->model + ")" : "") << " | " << params << " | " << flops
       << " | " << rate << " | " << score << " (score) |\n";
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
  md << "\n## Each MLPerf model's synthetic twin\n\n"
     << "The twin is the paradnn model built from the model's published "
        "architecture figures, at the submission's batch per accelerator; "
        "its sizes are the cost model's. Where no family can express the "
        "model, the synthetic training cases nearest in size are listed "
        "(distance in log10 of params and training FLOPs per sample).\n";
  for (const MlperfBenchmark& b : real) {
    const ReferenceModel* m = FindReference(b.benchmark);
    md << "\n### " << b.benchmark << " on " << b.system_name << "\n\n";
    if (m == nullptr) {
      md << "No published size for this benchmark in paradnn's table.\n";
      continue;
    }
    if (!m->twin.empty()) {
      Twin(Compare(&b, *m, synthetic), md, csv);
      continue;
    }
    md << m->model << ": " << m->differences << ".\n\n";
    if (m->params <= 0) continue;
    // One line per distinct size: cases differing only in batch, backend
    // or data type have the same params and FLOPs per sample.
    std::map<std::pair<double, double>, std::vector<const CaseResult*>> sizes;
    for (const CaseResult& s : synthetic) {
      if (s.c.mode == Mode::kTrain)
        sizes[{s.params, s.flop_per_sample}].push_back(&s);
    }
    std::vector<std::vector<const CaseResult*>> ranked;
    for (auto& [size, cases] : sizes) ranked.push_back(cases);
    std::sort(ranked.begin(), ranked.end(), [&](auto& a, auto& c) {
      return Distance(*m, *a[0]) < Distance(*m, *c[0]);
    });
    if (ranked.empty()) md << "No synthetic training cases in the results.\n";
    for (int i = 0; i < nearest && i < static_cast<int>(ranked.size()); ++i) {
      const auto& cases = ranked[i];
      const CaseResult* best =
          *std::max_element(cases.begin(), cases.end(), [](auto* a, auto* c) {
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
  for (const TwinComparison& t : TwinsWithoutResults(real, synthetic)) {
    md << "\n### " << t.model->benchmark << ": no MLPerf result given\n\n";
    Twin(t, md, csv);
    md << "\nModel size: " << t.model->model << ", " << t.model->source
       << ".\n";
  }
  return {md.str(), csv.str()};
}

}  // namespace paradnn
