// paradnn report's comparisons and LLM sections: A against B, two stacks,
// latency limits.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/calibrate.h"
#include "analysis/compare.h"
#include "analysis/report.h"
#include "generators/spec.h"
#include "machine/host.h"
#include "records/results.h"
#include "tests/analysis/report_inputs.h"
#include "tests/analysis/results_json.h"
#include "tests/catch.h"
#include "tests/scratch.h"

namespace paradnn::report_tests {
namespace {

TEST_CASE(
    "LLM cases: tokens/s per phase over batch and context, latency "
    "limits",
    "[report]") {
  const fs::path dir = Dir("llm");
  // Decode steps of 10 ms + 1 ms per sequence and 1 ms per 1000 cached
  // positions; prefill steps of 1 ms per 10 prompt tokens. step_ms is the
  // time paradnn's rates divide by (real_time a little above it).
  std::string out = "{\"context\": {}, \"benchmarks\": [";
  bool first = true;
  for (const char* phase : {"prefill", "decode"}) {
    for (int batch : {1, 4}) {
      for (int context : {1000, 4000}) {
        const std::string name =
            "LLM/layers:2/d_model:256/heads:8/kv_heads:2/ffn:688/vocab:1000/"
            "context:" +
            std::to_string(context) + "/batch:" + std::to_string(batch) +
            "/phase:" + phase + "/torch/fp32/infer";
        const bool prefill = std::string(phase) == "prefill";
        const double ms =
            prefill ? batch * context / 10.0 : 10 + batch + context / 1000.0;
        out += std::string(first ? "" : ",") + "{\"name\": \"" + name +
               "/real_time\", \"run_name\": \"" + name +
               "/real_time\", \"run_type\": \"iteration\", \"iterations\": "
               "5, \"real_time\": " +
               std::to_string(ms * 1.01) +
               ", \"step_ms\": " + std::to_string(ms) +
               ", \"time_unit\": \"ms\", \"params\": 2e6, "
               "\"flop_per_step\": 4e6, \"bytes_per_step\": 8e6, "
               "\"intensity\": 0.5}";
        first = false;
      }
    }
  }
  std::ofstream(dir / "llm.json") << out + "]}";
  ReportOptions o;
  o.results = (dir / "llm.json").string();
  o.out = (dir / "out").string();
  o.slo = "ttft_ms=150,tpot_ms=13";
  WriteReport(o);
  // Tokens per second: prefill batch x context per step, decode batch.
  const std::string prefill =
      Slurp(dir / "out/llm_tokens_prefill_torch_fp32_infer.csv");
  CHECK_THAT(prefill,
             ContainsSubstring("0,0,1,1000,10000,1"));  // 1000 in 100 ms
  CHECK_THAT(prefill,
             ContainsSubstring("1,1,4,4000,10000,1"));  // 16000 in 1.6 s
  const std::string decode =
      Slurp(dir / "out/llm_tokens_decode_torch_fp32_infer.csv");
  CHECK_THAT(decode, ContainsSubstring("0,0,1,1000,83.3333,1"));  // 1 in 12 ms
  CHECK_THAT(decode, ContainsSubstring("1,1,4,4000,222.222,1"));  // 4 in 18 ms
  // TTFT 100 ms (batch 1, context 1000) meets 150 ms, the others do not;
  // TPOT 12 ms (batch 1, context 1000) meets 13 ms, the others do not.
  const std::string slo = Slurp(dir / "out/slo.csv");
  size_t yes = 0;
  for (size_t at = slo.find(",yes,"); at != std::string::npos;
       at = slo.find(",yes,", at + 1)) {
    ++yes;
  }
  CHECK(yes == 2);
  CHECK_THAT(slo,
             ContainsSubstring("context:1000/batch:1/phase:prefill/torch/fp32/"
                               "infer,prefill,ttft_ms,100,150,yes"));
  CHECK_THAT(slo,
             ContainsSubstring("context:1000/batch:1/phase:decode/torch/fp32/"
                               "infer,decode,tpot_ms,12,13,yes"));
  CHECK_THAT(Slurp(dir / "out/index.html"),
             ContainsSubstring("2 of 8 cases meet"));
  // The roofline draws the phases apart.
  CHECK_THAT(Slurp(dir / "out/roofline.csv"), ContainsSubstring("LLM decode,"));
  CHECK_THAT(Slurp(dir / "out/roofline.csv"),
             ContainsSubstring("LLM prefill,"));
  o.slo = "ttft=2";
  CHECK_THROWS_WITH(WriteReport(o), ContainsSubstring("expected ttft_ms=MS"));
}

TEST_CASE(
    "A against B from rounds: ratios with intervals and what they decide, "
    "unstable cases listed",
    "[report][rounds]") {
  const fs::path dir = Dir("rounds_report");
  const std::string fc =
      "FC/layers:4/nodes:256/input:2000/output:1000/batch:64";
  const std::string rnn =
      "RNN/cell:lstm/layers:2/embed:16/vocab:32/length:5/batch:4";
  // oneDNN twice as fast on FC in every round; on the RNN the rounds
  // overlap; the RNN's LibTorch rounds spread from 1 to 1.6.
  std::ofstream(dir / "r.json")
      << test::RoundsJson({{fc + "/torch/fp32/train", {2.0, 2.1, 2.2}},
                           {fc + "/onednn/fp32/train", {1.0, 1.05, 1.1}},
                           {rnn + "/torch/fp32/train", {1.0, 1.3, 1.6}},
                           {rnn + "/onednn/fp32/train", {1.1, 1.2, 1.4}}});
  ReportOptions o;
  o.results = (dir / "r.json").string();
  o.out = (dir / "report").string();
  o.a_select = "/onednn/";
  o.b_select = "/torch/";
  WriteReport(o);
  const std::string html = Slurp(dir / "report" / "index.html");
  // Each backend's two cases (fewer than 3 per family) pool their rounds'
  // log variances: by hand, oneDNN's (0.004543 + 0.029830) / 4 = 0.008593,
  // LibTorch's (0.004551 + 0.110950) / 4 = 0.028875, each with 4 degrees
  // of freedom. FC: 2.1 / 1.05 = 2, its log's standard error
  // sqrt(0.4487 (0.008593 + 0.028875)) = 0.12966 (c(3)^2 = 0.4487, the
  // variance of a median of three standard normals), Welch's degrees of
  // freedom 6.19, t = 1.934 (tables: 1.943 at 6, 1.895 at 7): 2
  // exp(+-0.2508) = 1.557-2.570, B slower.
  CHECK_THAT(html, ContainsSubstring(
                       fc + "/fp32/train</td><td>1.05</td><td>2.1</td><td>"
                            "2</td><td>1.56-2.57</td><td>slower</td>"));
  // The RNN: 1.3 / 1.2 = 1.083, its interval 0.84-1.39 holds 1.
  CHECK_THAT(html, ContainsSubstring(
                       rnn + "/fp32/train</td><td>1.2</td><td>1.3</td><td>"
                             "1.08</td><td>0.843-1.39</td><td>undecided</td>"));
  CHECK_THAT(html, ContainsSubstring("<h2>Unstable cases</h2>"));
  CHECK_THAT(html, ContainsSubstring(
                       rnn + "/torch/fp32/train: unstable: rounds 1-1.6 ms"));
  CHECK_THAT(html, ContainsSubstring("each the median of 3 rounds"));
  const std::string csv = Slurp(dir / "report" / "speedup.csv");
  CHECK_THAT(csv, ContainsSubstring("speedup_low,speedup_high,verdict"));
  CHECK_THAT(csv, ContainsSubstring(",slower\n"));
}

TEST_CASE(
    "LLM cases in rounds against latency limits: a limit inside a case's "
    "interval is within noise",
    "[report][rounds]") {
  const fs::path dir = Dir("llm_rounds");
  const std::string decode =
      "LLM/layers:2/d_model:256/heads:8/kv_heads:2/ffn:688/vocab:1000/"
      "context:1000/batch:";
  // Batch 1: rounds 11, 12, 14 ms (median 12, interval 11-14); batch 4:
  // 15, 16, 17 ms, all over the limit.
  std::ofstream(dir / "r.json") << test::RoundsJson(
      {{decode + "1/phase:decode/torch/fp32/infer", {11, 12, 14}},
       {decode + "4/phase:decode/torch/fp32/infer", {15, 16, 17}}});
  ReportOptions o;
  o.results = (dir / "r.json").string();
  o.out = (dir / "out").string();
  o.slo = "tpot_ms=13";
  WriteReport(o);
  const std::string html = Slurp(dir / "out/index.html");
  // 12 ms meets 13 ms, but 13 lies inside 11-14: a re-run may not.
  CHECK_THAT(html, ContainsSubstring("<td>yes, within noise</td>"));
  CHECK_THAT(html, ContainsSubstring("<td>no</td>"));
  CHECK_THAT(html, ContainsSubstring("1 of 2 cases meet"));
}

TEST_CASE(
    "report --vs: two files of one backend each pair their cases by model",
    "[report]") {
  const fs::path dir = Dir("vs_backends");
  // The same results, one file per backend.
  const nlohmann::json all = ParseBenchmarkJson(ResultsJson());
  for (const std::string backend : {"torch", "onednn"}) {
    nlohmann::json one = all;
    one["benchmarks"] = nlohmann::json::array();
    for (const nlohmann::json& b : all["benchmarks"]) {
      if (b["name"].get<std::string>().find("/" + backend + "/") !=
          std::string::npos) {
        one["benchmarks"].push_back(b);
      }
    }
    std::ofstream(dir / (backend + ".json")) << one.dump();
  }
  ReportOptions o;
  o.results = (dir / "onednn.json").string();
  o.vs = (dir / "torch.json").string();
  o.out = (dir / "report").string();
  const std::vector<std::string> notes = WriteReport(o);
  CHECK(std::find(notes.begin(), notes.end(),
                  "no case name is in both files: cases paired by model "
                  "across backends, as --a /onednn/ --b /torch/ would") !=
        notes.end());
  for (const std::string& n : notes) CHECK(n.rfind("only in", 0) != 0);
  // Every case of one file paired with its model in the other: 12 FC and
  // CNN cases, and the speedup plot drawn.
  const std::string csv = Slurp(dir / "report/speedup.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 1 + 12);
  CHECK(fs::file_size(dir / "report/speedup.svg") > 0);
}

TEST_CASE(
    "two stacks: each side named by its own, speedups per family, backend, "
    "data type and mode, and the parameters that explain them",
    "[report]") {
  const fs::path dir = Dir("stacks");
  // The same cases on two stacks; B's FC steps take (nodes/256)^0.5 times
  // A's, its CNN steps A's: the speedup grows with nodes as nodes^0.5 and
  // with nothing else.
  nlohmann::json a = ParseBenchmarkJson(ResultsJson());
  nlohmann::json b = a;
  a["context"]["paradnn_distribution"] = "Debian GNU/Linux 13 (trixie)";
  a["context"]["paradnn_compiler"] = "GCC 14.2.0";
  a["context"]["paradnn_backend_torch"] =
      "LibTorch 2.6.0, BLAS /usr/lib/x86_64-linux-gnu/openblas-openmp/"
      "libopenblasp-r0.3.29.so, OpenBLAS core Cooperlake, CPU";
  a["context"]["paradnn_backend_onednn"] =
      "oneDNN 3.7.2, CPU runtime OpenMP, ISA avx512_core_bf16";
  b["context"]["paradnn_distribution"] = "Debian GNU/Linux 12 (bookworm)";
  b["context"]["paradnn_compiler"] = "GCC 12.2.0";
  b["context"]["paradnn_backend_torch"] =
      "LibTorch 1.13.0, BLAS /usr/lib/x86_64-linux-gnu/openblas-openmp/"
      "libopenblasp-r0.3.21.so, OpenBLAS core Cooperlake, CPU";
  b["context"]["paradnn_backend_onednn"] =
      "oneDNN 2.6.3, CPU runtime OpenMP, ISA avx512_core_bf16";
  for (nlohmann::json& run : b["benchmarks"]) {
    const Case c = ParseCaseName(run["name"].get<std::string>().substr(
        0, run["name"].get<std::string>().rfind("/real_time")));
    if (c.model.family != "FC") continue;
    run["real_time"] = run["real_time"].get<double>() *
                       std::sqrt(c.model.Int("nodes") / 256.0);
  }
  std::ofstream(dir / "a.json") << a.dump();
  std::ofstream(dir / "b.json") << b.dump();
  ReportOptions o;
  o.results = (dir / "a.json").string();
  o.vs = (dir / "b.json").string();
  o.out = (dir / "report").string();
  WriteReport(o);
  const std::string html = Slurp(dir / "report/index.html");
  // What each stack has that the other lacks (the backends by name, the
  // BLAS by its file), not what they share (the OpenBLAS core, the ISA).
  CHECK_THAT(html, ContainsSubstring(
                       "a.json (Debian GNU/Linux 13 (trixie), GCC 14.2.0, "
                       "oneDNN 3.7.2, LibTorch 2.6.0, BLAS "
                       "libopenblasp-r0.3.29.so)"));
  CHECK_THAT(html, ContainsSubstring(
                       "b.json (Debian GNU/Linux 12 (bookworm), GCC 12.2.0, "
                       "oneDNN 2.6.3, LibTorch 1.13.0, BLAS "
                       "libopenblasp-r0.3.21.so)"));
  CHECK_THAT(html,
             ContainsSubstring("Step time of Debian GNU/Linux 12 (bookworm) "
                               "over Debian GNU/Linux 13 (trixie)"));
  // One row per family, backend, data type and mode.
  for (const auto& [group, cases] : {std::pair{"FC onednn/fp32/train", 6},
                                     {"FC torch/fp32/train", 6},
                                     {"CNN onednn/fp32/train", 4},
                                     {"CNN torch/bf16/train", 2}}) {
    CHECK_THAT(html,
               ContainsSubstring(std::string("<tr><td>") + group + "</td><td>" +
                                 std::to_string(cases) + "</td>"));
  }
  // The law put in: nodes^0.5 (R^2 = 1), batch^0 for FC; nothing for CNN.
  CHECK_THAT(html, ContainsSubstring("<tr><td>FC torch/fp32/train</td><td>6"
                                     "</td><td>1</td><td>nodes 0.5, batch "));
  const std::string map =
      Slurp(dir / "report/speedup_heatmap_FC_torch_fp32_train.csv");
  CHECK_THAT(map, ContainsSubstring(",4096,64,4,1\n"));
  CHECK_THAT(map, ContainsSubstring(",1024,256,2,1\n"));
  // paradnn compare labels its sides alike; one stack on both sides keeps
  // the labels as given.
  const std::string a_path = (dir / "a.json").string();
  const std::string b_path = (dir / "b.json").string();
  CHECK(StackLabels(a_path, b_path, "A", "B") ==
        std::pair<std::string, std::string>(
            "A (Debian GNU/Linux 13 (trixie), GCC 14.2.0, oneDNN 3.7.2, "
            "LibTorch 2.6.0, BLAS libopenblasp-r0.3.29.so)",
            "B (Debian GNU/Linux 12 (bookworm), GCC 12.2.0, oneDNN 2.6.3, "
            "LibTorch 1.13.0, BLAS libopenblasp-r0.3.21.so)"));
  CHECK(StackLabels(a_path, a_path, "A", "B") ==
        std::pair<std::string, std::string>("A", "B"));
}

}  // namespace
}  // namespace paradnn::report_tests
