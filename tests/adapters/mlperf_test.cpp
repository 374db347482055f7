#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "adapters/mlperf/mllog.h"
#include "adapters/mlperf/package.h"
#include "adapters/mlperf/reader.h"
#include "adapters/mlperf/side_by_side.h"
#include "generators/cost.h"
#include "tests/catch.h"
#include "tests/scratch.h"

namespace paradnn {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::ContainsSubstring;

using test::Scratch;

// Real MLPerf training results (tests/data/mlperf/README.md).
std::string RealData() { return test::TestData("mlperf").string(); }

CaseRun Sample() {
  CaseRun r;
  r.case_name =
      "FC/layers:4/nodes:1024/input:2000/output:1000/batch:256/torch/fp32/"
      "train";
  r.family = "FC";
  r.backend = "torch";
  r.dtype = "fp32";
  r.mode = "train";
  r.batch = 256;
  r.params = 6222824;
  r.flop_per_step = 8501854208;
  r.seed = 7;
  r.iterations = 40;
  r.seconds = 2.5;
  r.init_start_ms = 1700000000000;
  r.init_stop_ms = 1700000001000;
  r.run_start_ms = 1700000001500;
  r.run_stop_ms = 1700000004000;
  r.org = "acme";
  r.platform = "box1";
  r.status = "onprem";
  return r;
}

TEST_CASE("MLLOG lines have MLPerf's exact format", "[mlperf]") {
  MllogEvent e;
  e.time_ms = 1700000000123;
  e.event_type = "INTERVAL_END";
  e.key = "run_stop";
  e.value = nullptr;
  e.extra = {{"status", "success"}};
  e.lineno = 28;
  CHECK(FormatMllog(e) ==
        ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1700000000123, "
        "\"event_type\": \"INTERVAL_END\", \"key\": \"run_stop\", \"value\": "
        "null, \"metadata\": {\"file\": \"paradnn\", \"lineno\": 28, "
        "\"status\": \"success\"}}");
  e.event_type = "POINT_IN_TIME";
  e.key = "tracked_stats";
  e.value = {{"throughput", 4096.5}};
  e.extra = {{"step", 40}};
  CHECK(FormatMllog(e) ==
        ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1700000000123, "
        "\"event_type\": \"POINT_IN_TIME\", \"key\": \"tracked_stats\", "
        "\"value\": {\"throughput\": 4096.5}, \"metadata\": {\"file\": "
        "\"paradnn\", \"lineno\": 28, \"step\": 40}}");
}

TEST_CASE("a case's log has MLPerf's required keys once, in order",
          "[mlperf]") {
  const std::vector<MllogEvent> events = MllogEvents(Sample());
  const std::vector<std::string> required = {"cache_clear",
                                             "init_start",
                                             "submission_benchmark",
                                             "submission_org",
                                             "submission_division",
                                             "submission_status",
                                             "submission_platform",
                                             "seed",
                                             "global_batch_size",
                                             "gradient_accumulation_steps",
                                             "opt_name",
                                             "opt_base_learning_rate",
                                             "train_samples",
                                             "eval_samples",
                                             "init_stop",
                                             "run_start",
                                             "block_start",
                                             "block_stop",
                                             "tracked_stats",
                                             "eval_accuracy",
                                             "run_stop"};
  std::map<std::string, int> count;
  std::vector<std::string> order;
  std::map<std::string, MllogEvent> by_key;
  for (const MllogEvent& e : events) {
    count[e.key]++;
    by_key[e.key] = e;
    if (std::find(required.begin(), required.end(), e.key) != required.end()) {
      order.push_back(e.key);
    }
  }
  CHECK(order == required);
  for (const std::string& k : required) CHECK(count[k] == 1);
  CHECK(by_key["submission_benchmark"].value == "paradnn_fc");
  CHECK(by_key["submission_division"].value == "open");
  CHECK(by_key["submission_org"].value == "acme");
  CHECK(by_key["global_batch_size"].value == 256);
  CHECK(by_key["train_samples"].value == 40 * 256);
  CHECK(by_key["paradnn_params"].value == 6222824);
  CHECK(by_key["paradnn_flop_per_step"].value == 8501854208);
  CHECK(by_key["paradnn_case"].value == Sample().case_name);
  CHECK(by_key["init_start"].event_type == "INTERVAL_START");
  CHECK(by_key["init_start"].value.is_null());
  CHECK(by_key["run_stop"].event_type == "INTERVAL_END");
  CHECK(by_key["run_stop"].extra["status"] == "success");
  CHECK(by_key["run_start"].time_ms == 1700000001500);
  CHECK(by_key["run_stop"].time_ms == 1700000004000);
  CHECK(by_key["block_start"].extra["samples_count"] == 40 * 256);
  CHECK(by_key["eval_accuracy"].extra["epoch_num"] == 1);
}

TEST_CASE("an inference case's log says nothing of training", "[mlperf]") {
  CaseRun infer = Sample();
  infer.mode = "infer";
  std::set<std::string> keys;
  for (const MllogEvent& e : MllogEvents(infer)) {
    keys.insert(e.key);
    // MLPerf's rules require the key in every log.
    if (e.key == "train_samples") CHECK(e.value == 0);
  }
  for (const char* training :
       {"opt_name", "opt_base_learning_rate", "gradient_accumulation_steps"}) {
    CHECK(keys.count(training) == 0);
  }
  CHECK(keys.count("train_samples") == 1);
  CHECK(keys.count("run_start") == 1);
  CHECK(keys.count("paradnn_mode") == 1);
}

TEST_CASE("what the writer writes, the reader reads back", "[mlperf]") {
  const fs::path log = Scratch("roundtrip/result_0.txt");
  WriteMllog(log.string(), MllogEvents(Sample()));
  MlperfRun r = ReadMlperfLog(log.string());
  CHECK(r.problems.empty());
  CHECK(r.benchmark == "paradnn_fc");
  CHECK(r.status == "success");
  CHECK(*r.time_to_train_min == Approx(2.5 / 60));
  CHECK(*r.global_batch_size == 256);
  CHECK(*r.samples_per_second == Approx(40 * 256 / 2.5));
  CHECK(r.samples_per_second_source == "tracked_stats");
}

// Expected values computed from the files with an independent script:
// (run_stop - run_start) of each log, the score by MLPerf's rule.
TEST_CASE("real MLPerf logs: per-run times, batch sizes and scores",
          "[mlperf]") {
  std::map<std::string, MlperfBenchmark> by;
  for (MlperfBenchmark& b : SummarizeMlperf(RealData())) by[b.benchmark] = b;
  REQUIRE(by.size() == 3);

  const MlperfBenchmark& bert = by["bert"];
  REQUIRE(bert.runs.size() == 10);
  CHECK(*bert.runs[0].time_to_train_min == Approx(18.751816666666667));
  CHECK(*bert.runs[5].time_to_train_min == Approx(15.387733333333333));
  CHECK(*bert.runs[0].global_batch_size == 448);
  // 2,703,232 samples trained in 1,125.109 s.
  CHECK(*bert.runs[0].samples_per_second == Approx(2402.640).epsilon(1e-6));
  CHECK(*bert.score_min == Approx(18.442416666666666));
  CHECK(bert.system_name == "dgxa100_ngc22.04_pytorch");

  const MlperfBenchmark& ssd = by["ssd"];
  REQUIRE(ssd.runs.size() == 5);
  CHECK(*ssd.runs[0].time_to_train_min == Approx(72.19655));
  CHECK(*ssd.runs[0].global_batch_size == 256);
  CHECK(*ssd.score_min == Approx(72.17468333333333));

  // One aborted run: it is the dropped slowest; scaling.json applies.
  const MlperfBenchmark& resnet = by["resnet"];
  REQUIRE(resnet.runs.size() == 5);
  CHECK(resnet.runs[2].status == "aborted");
  CHECK_FALSE(resnet.runs[2].passed());
  CHECK(*resnet.runs[0].time_to_train_min == Approx(20.753966666666667));
  CHECK(*resnet.runs[0].global_batch_size == 3200);
  CHECK(resnet.scaling_factor == Approx(1.0042232277526395));
  CHECK(*resnet.score_min ==
        Approx((20.746016666666666 + 20.753966666666667 + 20.730916666666666) /
               3 * 1.0042232277526395));
  for (const auto& [name, b] : by) {
    CHECK(b.system_problem.empty());
    for (const MlperfRun& r : b.runs) CHECK(r.problems.empty());
  }
}

MlperfRun Passed(double minutes) {
  MlperfRun r;
  r.status = "success";
  r.time_to_train_min = minutes;
  return r;
}

TEST_CASE("the score rule", "[mlperf]") {
  std::string note;
  CHECK(*MlperfScore({Passed(5), Passed(1), Passed(3), Passed(4), Passed(2)},
                     1.0, &note) == Approx(3.0));
  MlperfRun failed;
  failed.status = "aborted";
  failed.time_to_train_min = 0.5;  // fast, but it failed
  CHECK(*MlperfScore({Passed(5), failed, Passed(3), Passed(4), Passed(2)}, 2.0,
                     &note) == Approx((3 + 4 + 5) / 3.0 * 2.0));
  CHECK_FALSE(MlperfScore({Passed(5), failed, failed, Passed(4), Passed(2)},
                          1.0, &note));
  CHECK_THAT(note, ContainsSubstring("2 of 5 runs failed"));
}

TEST_CASE("bad logs: each problem named, the rest still read", "[mlperf]") {
  const fs::path log = Scratch("bad/result_0.txt");
  std::ofstream(log)
      << "noise before\n"
      << "[1,0]<stdout>:::MLLOG {\"namespace\": \"\", \"time_ms\": 1000, "
         "\"event_type\": \"POINT_IN_TIME\", \"key\": "
         "\"submission_benchmark\", "
         "\"value\": \"resnet\", \"metadata\": {}}\n"
      << ":::MLLOG {\"time_ms\": 2000, \"key\": \"run_start\"}\n"  // old format
      << ":::MLLOG {\"namespace\": \"\", \"time_ms\": 3000, \"key\": \n"
      << ":::MLLOG {\"namespace\": \"\", \"value\": 3}\n"
      << ":::MLLOG {\"time_ms\": 3000, \"key\": \"global_batch_size\", "
         "\"value\": 64}\n";
  MlperfRun r = ReadMlperfLog(log.string());
  CHECK(r.benchmark == "resnet");
  CHECK(*r.global_batch_size == 64);
  CHECK_FALSE(r.time_to_train_min);
  REQUIRE(r.problems.size() == 3);
  CHECK_THAT(r.problems[0], ContainsSubstring(log.string() + ":4: not JSON"));
  CHECK_THAT(r.problems[1],
             ContainsSubstring(log.string() + ":5: no key or time_ms"));
  CHECK_THAT(r.problems[2], ContainsSubstring("no run_stop: no time to train"));
}

TEST_CASE("a package's system description is checked", "[mlperf]") {
  const fs::path root = Scratch("pkg");
  const fs::path bench = root / "acme/results/box1/paradnn_case";
  WriteMllog((bench / "result_0.txt").string(), MllogEvents(Sample()));
  CHECK_THAT(
      SummarizeMlperf(root.string())[0].system_problem,
      ContainsSubstring("acme/systems/box1.json: missing system description"));
  fs::create_directories(root / "acme/systems");
  std::ofstream(root / "acme/systems/box1.json") << "{\"submitter\": \"acme\"}";
  CHECK_THAT(SummarizeMlperf(root.string())[0].system_problem,
             ContainsSubstring("box1.json: field 'system_name' is missing"));
  std::ofstream(root / "acme/systems/box1.json")
      << SystemDescription("acme", "box1", "onprem", {"LibTorch"}).dump();
  MlperfBenchmark b = SummarizeMlperf(root.string())[0];
  CHECK(b.system_problem.empty());
  CHECK(b.system_name == "box1");
  CHECK_FALSE(b.score_min);  // one run is not enough for a score
}

// A Google Benchmark JSON file as the runner writes it.
fs::path ResultsFile(const std::string& name, const std::string& body) {
  const fs::path p = Scratch(name);
  std::ofstream(p) << body;
  return p;
}

const char kFc[] =
    "FC/layers:1/nodes:8/input:8/output:2/batch:4/torch/fp32/train";
const char kCnn[] =
    "CNN/block:bottleneck/blocks:2/filters:32/image:224/output:1000/batch:"
    "64/torch/fp32/train";

std::string Bench(const std::string& name, double real_time, double params,
                  double flops, const std::string& extra = "") {
  return "{\"name\": \"" + name + "/real_time\", \"run_name\": \"" + name +
         "/real_time\", \"run_type\": \"iteration\", \"iterations\": 3, "
         "\"real_time\": " +
         std::to_string(real_time) +
         ", \"time_unit\": \"ms\", \"params\": " + std::to_string(params) +
         ", \"flop_per_step\": " + std::to_string(flops) + extra + "}";
}

TEST_CASE("results JSON: per case, the median of repetitions", "[mlperf]") {
  const fs::path p = ResultsFile(
      "results.json",
      "{\"context\": {}, \"benchmarks\": [" + Bench(kFc, 2, 90, 704) + ", " +
          Bench(kFc, 4, 90, 704) + ", " + Bench(kFc, 3, 90, 704) + ", " +
          Bench(kCnn, 500, 2e7, 6.4e11) + ", " +
          Bench(kCnn, 1, 2e7, 6.4e11,
                ", \"error_occurred\": true, \"error_message\": \"no AMX\"") +
          ", " +
          Bench(kCnn, 1, 2e7, 6.4e11,
                ", \"error_occurred\": true, \"error_message\": \"no AMX\"") +
          ", {\"name\": \"BM_Other\", \"run_name\": \"BM_Other\", "
          "\"real_time\": 1}]}");
  Results results = ReadResults(p.string());
  const std::vector<CaseResult>& r = results.cases;
  REQUIRE(r.size() == 2);
  // Each failed case once, with its message, however often it reported.
  CHECK(results.failed == std::map<std::string, std::string>{{kCnn, "no AMX"}});
  const CaseResult& cnn = r[0].name == kCnn ? r[0] : r[1];
  const CaseResult& fc = r[0].name == kFc ? r[0] : r[1];
  CHECK(fc.step_ms == Approx(3));  // median of 2, 4, 3
  CHECK(fc.samples_per_second == Approx(4 / 0.003));
  CHECK(fc.flop_per_sample == Approx(704 / 4.0));
  CHECK(cnn.step_ms == Approx(500));  // the failed repetition is left out
  CHECK(cnn.flop_per_sample == Approx(1e10));
}

TEST_CASE("results JSON that is not paradnn's says so", "[mlperf]") {
  CHECK_THROWS_WITH(ReadResults(Scratch("none.json").string()),
                    ContainsSubstring("cannot open the results file"));
  CHECK_THROWS_WITH(ReadResults(ResultsFile("list.json", "[1, 2]").string()),
                    ContainsSubstring("not Google Benchmark JSON"));
  CHECK_THROWS_WITH(
      ReadResults(ResultsFile("broken.json", "{\"bench").string()),
      ContainsSubstring("not JSON"));
  CHECK_THROWS_WITH(
      ReadResults(ResultsFile("empty.json", "{\"benchmarks\": []}").string()),
      ContainsSubstring("no benchmarks in the file"));
  CHECK_THROWS_WITH(
      ReadResults(ResultsFile("other.json",
                              "{\"benchmarks\": [{\"name\": \"BM_X\", "
                              "\"run_name\": \"BM_X\", \"real_time\": 1}]}")
                      .string()),
      ContainsSubstring("no paradnn cases"));
  // A value of the wrong type (the fuzzer's find): the file's name and
  // what was wrong, not an exception of the JSON library's escaping.
  const std::string unit =
      ResultsFile("unit.json",
                  "{\"benchmarks\": [{\"name\": \"FC/layers:1/nodes:8/"
                  "input:8/output:2/batch:2/torch/fp32/train/real_time\", "
                  "\"run_name\": \"FC/layers:1/nodes:8/input:8/output:2/"
                  "batch:2/torch/fp32/train/real_time\", \"real_time\": 1, "
                  "\"time_unit\": 119.65, \"params\": 1, "
                  "\"flop_per_step\": 1}]}")
          .string();
  CHECK_THROWS_WITH(ReadResults(unit),
                    ContainsSubstring(unit + ": [json.exception.type_error"));
}

TEST_CASE("side by side: real rows, twins, nearest sizes without a twin",
          "[mlperf]") {
  MlperfRun run;
  run.status = "success";
  run.time_to_train_min = 20.5;
  run.samples_per_second = 36000;
  run.global_batch_size = 3200;
  MlperfBenchmark resnet;
  resnet.benchmark = "resnet";
  resnet.system_name = "box1";
  resnet.score_min = 20.5;
  resnet.accelerators = 8;
  resnet.accelerator = "X100";
  resnet.runs = {run};
  MlperfBenchmark ssd = resnet;
  ssd.benchmark = "ssd";
  auto result = [](const std::string& name, double params, double flops,
                   double rate, double ms) {
    CaseResult r;
    r.c = ParseCaseName(name);
    r.name = name;
    r.params = params;
    r.flop_per_sample = flops;
    r.samples_per_second = rate;
    r.step_ms = ms;
    return r;
  };
  const std::string twin =
      "CNN/block:bottleneck/blocks:3-4-6-3/filters:64/image:224/output:1000/"
      "batch:64/onednn/fp32/train";
  std::string infer_name = kCnn;
  infer_name.replace(infer_name.size() - 5, 5, "infer");
  CaseResult cnn = result(kCnn, 2e7, 1e10, 128, 500);
  CaseResult fc = result(kFc, 90, 176, 1333, 3);
  CaseResult infer = result(infer_name, 3.7e7, 2.45e10, 1, 1);
  CaseResult resnet50 = result(twin, 25557032, 2.43e10, 100, 640);
  SideBySide out = MakeSideBySide({resnet, ssd}, {fc, cnn, infer, resnet50}, 3);
  CHECK_THAT(
      out.markdown,
      ContainsSubstring("| box1 | MLPerf resnet (ResNet-50 v1.5, 224x224) | "
                        "2.556e+07 | 2.454e+10 | 36000 | 20.5 (score) |"));
  // ResNet-50's twin at 3200 / 8 = 400 per accelerator; the results have
  // it at batch 64: 100 samples/s against 36000 / 8 on one X100.
  CHECK_THAT(
      out.markdown,
      ContainsSubstring("Twin: `CNN/block:bottleneck/blocks:3-4-6-3/filters:64/"
                        "image:224/output:1000/batch:400` (global batch 3200 "
                        "over 8 X100)"));
  CHECK_THAT(out.markdown,
             ContainsSubstring("| params | 2.556e+07 | 2.556e+07 | 1 |"));
  CHECK_THAT(out.markdown, ContainsSubstring("| `" + twin +
                                             "` | 64 | 100 | 10 | 4500 | "
                                             "0.0222 |"));
  // RetinaNet has no twin: the nearest training cases by params (its
  // FLOPs are not published), ResNet-50's first, then the CNN, then the
  // FC; inference cases are not matched.
  CHECK_THAT(out.markdown,
             ContainsSubstring("no family has grouped convolutions"));
  const size_t ssd_at = out.markdown.find("### ssd");
  const size_t first = out.markdown.find("fastest `" + twin, ssd_at);
  const size_t second =
      out.markdown.find("fastest `" + std::string(kCnn), ssd_at);
  const size_t third =
      out.markdown.find("fastest `" + std::string(kFc), ssd_at);
  REQUIRE(third != std::string::npos);
  CHECK(first < second);
  CHECK(second < third);
  CHECK(out.markdown.find("fastest `" + infer_name) == std::string::npos);
  std::ostringstream distance;
  distance.precision(3);
  distance << "(distance " << std::log10(37.74e6 / 2e7) << ")";
  CHECK_THAT(out.markdown, ContainsSubstring(distance.str()));
  // CSV: header, two MLPerf rows, four synthetic rows, the twin's row.
  CHECK(std::count(out.csv.begin(), out.csv.end(), '\n') == 8);
  CHECK_THAT(
      out.csv,
      ContainsSubstring("mlperf,box1,resnet,2.556e+07,2.454e+10,36000,20.5,"));
  CHECK_THAT(out.csv, ContainsSubstring("twin,box1," + twin + ","));
}

TEST_CASE("MLPerf twins: the published sizes within the stated tolerance",
          "[mlperf]") {
  int twins = 0;
  for (const ReferenceModel& m : ReferenceModels()) {
    INFO(m.benchmark);
    CHECK(!m.differences.empty());
    if (m.twin.empty()) continue;  // differences say why there is none
    ++twins;
    const ModelSpec model = TwinModel(m, 1);
    CHECK(model.Name() == m.twin);  // canonical as written
    CHECK(TwinModel(m, 7).Int("batch") == 7);
    const Cost cost = ComputeCost(model.BuildGraph(), model.def().modes.front(),
                                  DType::kFp32);
    CHECK(std::abs(cost.params / m.params - 1) <= m.tolerance);
    if (m.train_flop_per_sample) {
      CHECK(std::abs(cost.flops / *m.train_flop_per_sample - 1) <= m.tolerance);
    }
  }
  CHECK(twins == 6);
  // BERT-large's twin counted by hand: token and position tables, 24
  // blocks (Q, K, V and output projections with biases, two layer norms,
  // the feed-forward pair), the untied output layer.
  const int64_t d = 1024, ffn = 4096, vocab = 30522, length = 512;
  const int64_t block =
      4 * (d * d + d) + 2 * 2 * d + (d * ffn + ffn) + (ffn * d + d);
  const int64_t bert =
      vocab * d + length * d + 24 * block + (d * vocab + vocab);
  CHECK(bert == 365373242);
  const ReferenceModel& ref = ReferenceModels()[1];
  REQUIRE(ref.benchmark == "bert");
  CHECK(ComputeCost(TwinModel(ref, 1).BuildGraph(), Mode::kTrain, DType::kFp32)
            .params == bert);
}

TEST_CASE("dlrm_dcnv2: its twin against the reference configuration",
          "[mlperf]") {
  const ReferenceModel* m = FindReference("dlrm_dcnv2");
  REQUIRE(m != nullptr);
  // The reference's tables (--num_embeddings_per_feature) and widths, as
  // its README runs it.
  const std::vector<int64_t> rows = {
      40000000, 39060,    17295,    7424,     20265,  3,     7122, 1543, 63,
      40000000, 3067956,  405282,   10,       2209,   11938, 155,  4,    976,
      14,       40000000, 40000000, 40000000, 590152, 12973, 108,  36};
  REQUIRE(rows.size() == 26);
  int64_t all_rows = 0;
  for (int64_t r : rows) all_rows += r;
  CHECK(all_rows == 204184588);
  const int64_t d = 128, join = 27 * d;
  const int64_t bottom = (13 * 512 + 512) + (512 * 256 + 256) + (256 * d + d);
  const int64_t cross = 3 * (join * 512 + 512 * join + join);
  const int64_t top = (join * 1024 + 1024) + (1024 * 1024 + 1024) +
                      (1024 * 512 + 512) + (512 * 256 + 256);
  const int64_t reference = all_rows * d + bottom + cross + top + 256 + 1;
  CHECK(m->params == reference);
  // The twin: 26 tables of 204,184,588 / 26 rows (rounded down), two
  // logits where the reference has one.
  const ModelSpec twin = TwinModel(*m, 8192);
  CHECK(ComputeCost(twin.BuildGraph(), Mode::kTrain, DType::kFp32).params ==
        26 * (all_rows / 26) * d + bottom + cross + top + 2 * 256 + 2);
  // What runs here: the same but for the rows, at the same batch.
  const ModelSpec run = RunModel(*m, 8192);
  CHECK(run.Int("rows") == 262144);
  CHECK(run.Int("batch") == 8192);
  ModelSpec same = twin;
  same.values[1] = "262144";
  CHECK(run == same);
  // Beside no result, it is listed on its own at the reference's batch
  // per accelerator (65,536 over 8 GPUs).
  const SideBySide page = MakeSideBySide({}, {});
  CHECK_THAT(page.markdown,
             ContainsSubstring("### dlrm_dcnv2: no MLPerf result given"));
  CHECK_THAT(page.markdown, ContainsSubstring("Runs here as `" + run.Name()));
  CHECK(m->reference_batch == 65536 / 8);
}

}  // namespace
}  // namespace paradnn
