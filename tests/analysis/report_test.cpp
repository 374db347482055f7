// paradnn report end to end: files written, the page opens in headless
// Chromium with every plot, bad input explained.
#include "analysis/report.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/calibrate.h"
#include "machine/host.h"
#include "analysis/compare.h"
#include "generators/spec.h"
#include "records/results.h"
#include "tests/analysis/results_json.h"
#include "tests/catch.h"
#include "tests/scratch.h"

namespace paradnn {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::ContainsSubstring;

fs::path Dir(const std::string& name) {
  fs::path p = test::Scratch(name);
  fs::create_directories(p);
  return p;
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Results as the runner writes them: FC and CNN cases on two backends; on
// `world` ranks, each step `slower` times as long and with `more` counters.
std::string ResultsJson(int world = 1, double slower = 1,
                        const std::string& more = "") {
  std::string out = "{\"context\": {\"paradnn_world_size\": \"" +
                    std::to_string(world) + "\"}, \"benchmarks\": [";
  bool first = true;
  auto add = [&](const std::string& name, double ms, double params,
                 double flops, double intensity,
                 const std::string& extra = "") {
    out += std::string(first ? "" : ",") + "{\"name\": \"" + name +
           "/real_time\", \"run_name\": \"" + name +
           "/real_time\", \"run_type\": \"iteration\", \"iterations\": 5, "
           "\"real_time\": " +
           std::to_string(ms * slower) +
           ", \"time_unit\": \"ms\", \"params\": " + std::to_string(params) +
           ", \"flop_per_step\": " + std::to_string(flops) +
           ", \"bytes_per_step\": " + std::to_string(flops / intensity) +
           ", \"intensity\": " + std::to_string(intensity) + extra + more + "}";
    first = false;
  };
  for (const char* backend : {"onednn", "torch"}) {
    const double slow = std::string(backend) == "torch" ? 1.5 : 1.0;
    for (int batch : {64, 256}) {
      for (int nodes : {256, 1024, 4096}) {
        const std::string name =
            "FC/layers:4/nodes:" + std::to_string(nodes) +
            "/input:2000/output:1000/batch:" + std::to_string(batch) + "/" +
            backend + "/fp32/train";
        const double flops = 6.0 * batch * nodes * nodes * 4;
        // The FC cases were profiled (--paradnn_profile).
        add(name, slow * flops / 1e8 * (1 + 64.0 / batch), nodes * nodes * 4.0,
            flops, batch / 4.0,
            slow > 1
                ? ", \"time_gemm_frac\": 0.6, \"time_elementwise_frac\": "
                  "0.2, \"time_movement_frac\": 0.1, "
                  "\"time_optimizer_frac\": 0.05, \"time_other_frac\": 0.05"
                : ", \"time_gemm_frac\": 0.9, \"time_elementwise_frac\": "
                  "0.05, \"time_movement_frac\": 0.02, "
                  "\"time_optimizer_frac\": 0.02, \"time_other_frac\": 0.01");
      }
    }
    for (int batch : {8, 32}) {
      for (int filters : {16, 32}) {
        const std::string name =
            "CNN/block:residual/blocks:1/filters:" + std::to_string(filters) +
            "/image:200/output:1000/batch:" + std::to_string(batch) + "/" +
            backend + "/fp32/train";
        add(name, slow * batch * filters * 0.2, filters * 1e4,
            batch * filters * 1e8, 20.0 + filters);
      }
    }
    // Where only the block kind varies, as in the quickstart's bf16 cases.
    for (const char* block : {"residual", "bottleneck"}) {
      add(std::string("CNN/block:") + block +
              "/blocks:1/filters:32/image:200/output:1000/batch:8/" + backend +
              "/bf16/train",
          slow * 50, 3e5, 8e9, 40);
    }
  }
  return out + "]}";
}

// ResNet-50's twin as a run here measured it: batch 50, 5.422 s per step.
std::string TwinJson() {
  const std::string name =
      "CNN/block:bottleneck/blocks:3-4-6-3/filters:64/image:224/output:1000/"
      "batch:50/onednn/fp32/train";
  return "{\"context\": {}, \"benchmarks\": [{\"name\": \"" + name +
         "/real_time\", \"run_name\": \"" + name +
         "/real_time\", \"run_type\": \"iteration\", \"iterations\": 3, "
         "\"real_time\": 5422, \"time_unit\": \"ms\", \"params\": "
         "25557032, \"flop_per_step\": 1.2149e12, \"bytes_per_step\": "
         "1.5258e10, \"intensity\": 79.62}]}";
}

TEST_CASE("a report: plots, their data, the page", "[report]") {
  const fs::path dir = Dir("full");
  std::ofstream(dir / "results.json") << ResultsJson();
  Platform p;
  p.name = "box";
  p.devices["cpu"] = {{"fp32", 2e11}, {"bf16", 4e11}};
  p.gemm_flops["torch"] = {{"fp32", 0.6e11}};
  p.memory_bandwidth = 3.4e10;
  std::ofstream(dir / "platform.json") << PlatformJson(p);
  ReportOptions o;
  o.results = (dir / "results.json").string();
  o.a_select = "/onednn/";
  o.b_select = "/torch/";
  o.platform = (dir / "platform.json").string();
  o.out = (dir / "report").string();
  const std::vector<std::string> notes = WriteReport(o);
  for (const char* f :
       {"index.html", "roofline.svg", "roofline.csv",
        "heatmap_FC_onednn_fp32_train.svg", "heatmap_FC_torch_fp32_train.csv",
        "heatmap_CNN_torch_fp32_train.svg",
        "regression_FC_onednn_fp32_train.svg",
        "regression_FC_torch_fp32_train.csv",
        "regression_CNN_onednn_fp32_train.csv", "speedup_box.svg",
        "speedup_box.csv", "speedup.svg", "speedup.csv", "profile.svg",
        "profile.csv"}) {
    INFO(f);
    CHECK(fs::file_size(dir / "report" / f) > 0);
  }
  // The roofline's data keeps each case's data type, which picks its
  // marker and its roof: 4 bf16 CNNs (2 blocks, 2 backends) of 24 cases.
  const std::string roofline = Slurp(dir / "report/roofline.csv");
  CHECK(roofline.rfind("family,case,intensity,flops,dtype\n", 0) == 0);
  size_t bf16 = 0;
  for (size_t at = roofline.find(",bf16\n"); at != std::string::npos;
       at = roofline.find(",bf16\n", at + 1)) {
    ++bf16;
  }
  CHECK(bf16 == 4);
  CHECK(std::count(roofline.begin(), roofline.end(), '\n') == 1 + 24);
  // Every case is 1.5x faster on oneDNN: each family's box sits at 1.5.
  const std::string box = Slurp(dir / "report/speedup_box.csv");
  CHECK_THAT(box, ContainsSubstring(",CNN,1.5,1.5,1.5,1.5,1.5,6"));
  CHECK_THAT(box, ContainsSubstring(",FC,1.5,1.5,1.5,1.5,1.5,6"));
  // Shares of step time, per family, backend and mode; CNN was not
  // profiled.
  const std::string profile = Slurp(dir / "report/profile.csv");
  // Results without time_communication_frac (one rank) have none of it.
  CHECK_THAT(profile, ContainsSubstring("group,cases,gemm,elementwise,movement,"
                                        "optimizer,other,communication\n"));
  CHECK_THAT(profile, ContainsSubstring(
                          "FC/onednn/train,6,0.9,0.05,0.02,0.02,0.01,0\n"));
  CHECK_THAT(profile,
             ContainsSubstring("FC/torch/train,6,0.6,0.2,0.1,0.05,0.05,0\n"));
  CHECK(profile.find("CNN") == std::string::npos);
  // The roofs come from the platform file.
  const std::string gp = Slurp(dir / "report/roofline.gp");
  CHECK_THAT(gp, ContainsSubstring("bw=3.4e+10"));
  // Utilization maps stop at 1; the CNN cases here run at 500 GFLOP/s on
  // oneDNN, above the 200 GFLOP/s peak, and are named.
  CHECK_THAT(Slurp(dir / "report/heatmap_FC_onednn_fp32_train.gp"),
             ContainsSubstring("set cbrange [0:1]"));
  bool above = false;
  for (const std::string& n : notes) {
    above = above ||
            (n.find("CNN/") == 0 && n.find("/onednn/") != std::string::npos &&
             n.find(": 500 GFLOP/s, above the platform's peak of 200 "
                    "GFLOP/s") != std::string::npos);
  }
  CHECK(above);
  // LibTorch's GEMM drawn under the roof it does not reach.
  CHECK_THAT(gp, ContainsSubstring("title 'torch fp32 GEMM (60 GFLOP/s)'"));
  const std::string html = Slurp(dir / "report/index.html");
  CHECK_THAT(html, ContainsSubstring("<img src='roofline.svg'"));
  CHECK_THAT(html, ContainsSubstring("12 cases matched by canonical name"));
  // A and B named on the plots, not just in the text.
  // One way everywhere: B's step time over A's.
  CHECK_THAT(html,
             ContainsSubstring("<h2>Step time of torch over onednn</h2>"));
  CHECK_THAT(Slurp(dir / "report/speedup.gp"),
             ContainsSubstring("set ylabel 'step time of torch over onednn'"));
  // One heat map per backend, over the parameters that vary, in viridis.
  const std::string heat = Slurp(dir / "report/heatmap_FC_torch_fp32_train.gp");
  CHECK_THAT(heat, ContainsSubstring("set xlabel 'nodes'"));  // 3 values
  CHECK_THAT(heat, ContainsSubstring("set ylabel 'batch'"));  // 2 values
  CHECK_THAT(heat, ContainsSubstring("'#440154'"));
  CHECK_THAT(html, ContainsSubstring("<h2>Where step time goes</h2>"));
  // No regression on nothing.
  CHECK_FALSE(fs::exists(dir / "report/regression_CNN_torch_bf16_train.gp"));
  CHECK(std::find(notes.begin(), notes.end(),
                  "CNN torch/bf16/train: no numeric parameter varies, no "
                  "regression") != notes.end());
  for (const std::string& n : notes) INFO(n);
}

TEST_CASE("the report opens in headless Chromium with every plot",
          "[report][chromium]") {
  // Not a skip: without Chromium this test checks nothing, so it fails.
  {
    INFO("chromium is not installed (scripts/setup.sh --test)");
    REQUIRE(std::system("chromium --version > /dev/null 2>&1") == 0);
  }
  const fs::path dir = Dir("chromium");
  std::ofstream(dir / "results.json") << ResultsJson();
  ReportOptions o;
  o.results = (dir / "results.json").string();
  o.vs = o.results;
  o.a_select = "/onednn/";
  o.b_select = "/torch/";
  o.out = (dir / "report").string();
  std::ofstream(dir / "two.json")
      << ResultsJson(2, 1.25, ", \"time_allreduce_frac\": 0.2");
  o.scaling = {(dir / "two.json").string()};
  std::ofstream(dir / "twins.json") << TwinJson();
  o.extra_results = {(dir / "twins.json").string()};
  o.mlperf = test::TestData("mlperf").string();
  WriteReport(o);
  const std::string cmd =
      "timeout 120 chromium --headless --no-sandbox --disable-gpu "
      "--disable-quic --no-first-run --disable-background-networking "
      "--disable-component-update --disable-sync --user-data-dir=" +
      (dir / "profile").string() +
      " --virtual-time-budget=5000 --dump-dom file://" +
      (dir / "report/index.html").string() + " > " +
      (dir / "dom.html").string() + " 2> " + (dir / "chromium.log").string();
  REQUIRE(std::system(cmd.c_str()) == 0);
  const std::string dom = Slurp(dir / "dom.html");
  // The page's own check: every <img> loaded (naturalWidth > 0). FC and CNN
  // on two backends here: roofline, 4 heat maps and 4 regressions (one per
  // family and backend), the profile, 2 speedup plots and a speedup heat map
  // per family, 2 scaling plots, 3 MLPerf plots; but ResNet-50's twin joins the
  // CNN cases on oneDNN, where blocks, filters, image and batch now vary over 5
  // cases: too few for their regression.
  const std::string page = Slurp(dir / "report/index.html");
  size_t images = 0;
  for (size_t at = page.find("<img"); at != std::string::npos;
       at = page.find("<img", at + 1)) {
    ++images;
  }
  CHECK(images == 18);
  CHECK_THAT(page,
             ContainsSubstring("CNN onednn/fp32/train: 5 cases are too few for "
                               "a regression on 4 parameters"));
  CHECK_THAT(dom, ContainsSubstring("plots: 18 loaded: 18 failed: 0"));
}

TEST_CASE("beside MLPerf: real results, their twins, drawn", "[report]") {
  const fs::path dir = Dir("mlperf");
  std::ofstream(dir / "results.json") << ResultsJson();
  std::ofstream(dir / "twins.json") << TwinJson();
  ReportOptions o;
  o.results = (dir / "results.json").string();
  o.extra_results = {(dir / "twins.json").string()};
  o.mlperf = test::TestData("mlperf").string();
  o.out = (dir / "report").string();
  WriteReport(o);
  const std::string page = Slurp(dir / "report/index.html");
  // ResNet-50 on 8 H100s, global batch 3200: the twin at 400 per
  // accelerator; BERT on 8 A100s at 448 / 8 = 56; RetinaNet has none.
  CHECK_THAT(page,
             ContainsSubstring("<code>CNN/block:bottleneck/blocks:3-4-6-3/"
                               "filters:64/image:224/output:1000/batch:400"
                               "</code>"));
  CHECK_THAT(page, ContainsSubstring("<code>TRANSFORMER/layers:24/d_model:1024/"
                                     "heads:16/ffn:4096/length:512/vocab:30522/"
                                     "causal:false/batch:56</code>"));
  CHECK_THAT(page, ContainsSubstring("no family has grouped convolutions"));
  // The twin's 50 / 5.422 s against the submission's per accelerator.
  const std::string points = Slurp(dir / "report/mlperf_points.csv");
  CHECK_THAT(points, ContainsSubstring("resnet here,twin,2.5557e+07,"));
  CHECK_THAT(points,
             ContainsSubstring("resnet NVIDIA H100-PCIe-80GB,submission,"
                               "2.5557e+07,"));
  CHECK_THAT(points, ContainsSubstring("bert NVIDIA A100-SXM4-80GB,submission,"
                                       "3.351e+08,"));
  CHECK_THAT(page, ContainsSubstring("<td>" + Num(50 / 5.422, 4) +
                                     " (batch 50, "
                                     "onednn)</td>"));
  for (const char* plot :
       {"mlperf_params", "mlperf_flops", "mlperf_roofline"}) {
    INFO(plot);
    CHECK(fs::file_size(dir / "report" / (std::string(plot) + ".svg")) > 0);
  }
}

TEST_CASE("scaling: the same cases on 1 and 2 ranks", "[report]") {
  const fs::path dir = Dir("scaling");
  std::ofstream(dir / "one.json") << ResultsJson();
  // Each step 1.25 times as long on 2 ranks, each rank its own batch: 1.6
  // times the examples per second, an efficiency of 1.6 / 2 = 0.8.
  std::ofstream(dir / "two.json")
      << ResultsJson(2, 1.25, ", \"time_allreduce_frac\": 0.2");
  ReportOptions o;
  o.results = (dir / "two.json").string();
  o.scaling = {(dir / "one.json").string()};
  o.out = (dir / "report").string();
  WriteReport(o);
  const std::string csv = Slurp(dir / "report/scaling.csv");
  const std::string fc =
      "FC/layers:4/nodes:256/input:2000/output:1000/batch:64/onednn/fp32/"
      "train";
  CHECK_THAT(csv, ContainsSubstring("," + fc + ",1,"));
  CHECK_THAT(csv, ContainsSubstring("," + fc + ",2,"));
  int rows = 0, checked = 0;
  std::istringstream lines(csv);
  std::string line;
  std::getline(lines, line);  // header
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    ++rows;
    std::vector<std::string> f;
    std::stringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) f.push_back(cell);
    REQUIRE(f.size() == 7);
    if (f[2] == "2") {
      CHECK(std::stod(f[5]) == Approx(0.2));
      CHECK(std::stod(f[6]) == Approx(0.8));
      ++checked;
    }
  }
  CHECK(rows == 2 * 24);  // every case of the results, at both sizes
  CHECK(checked == 24);
  CHECK(fs::file_size(dir / "report/scaling_throughput.svg") > 0);
  CHECK(fs::file_size(dir / "report/scaling_allreduce.svg") > 0);
}

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

TEST_CASE("bad input: a clear message, and what can be reported still is",
          "[report]") {
  const fs::path dir = Dir("bad");
  ReportOptions o;
  o.out = (dir / "out").string();
  o.results = (dir / "missing.json").string();
  CHECK_THROWS_WITH(WriteReport(o),
                    ContainsSubstring("cannot open the results file"));
  std::ofstream(dir / "other.json")
      << "{\"benchmarks\": [{\"name\": \"BM_X\", "
         "\"run_name\": \"BM_X\", \"real_time\": 1}]}";
  o.results = (dir / "other.json").string();
  CHECK_THROWS_WITH(WriteReport(o), ContainsSubstring("no paradnn cases"));

  std::ofstream(dir / "results.json") << ResultsJson();
  std::ofstream(dir / "platform.json") << "{\"memory_bandwidth\": 1e10}";
  o.results = (dir / "results.json").string();
  o.platform = (dir / "platform.json").string();
  o.vs = o.results;
  o.a_select = "/infer/";
  o.b_select = "/train/";
  const std::vector<std::string> notes = WriteReport(o);
  std::string all;
  for (const std::string& n : notes) all += n + "\n";
  CHECK_THAT(all, ContainsSubstring("field 'peak_flops' is missing"));
  CHECK_THAT(all, ContainsSubstring("A and B have no case in common"));
  CHECK(fs::exists(dir / "out/roofline.svg"));  // still reported
  CHECK_THAT(Slurp(dir / "out/index.html"), ContainsSubstring("Not reported"));
}

TEST_CASE("platform files written by hand are checked", "[report]") {
  const fs::path dir = Dir("platform");
  std::ofstream(dir / "p.json")
      << "{\"peak_flops\": {\"fp32\": -1}, \"memory_bandwidth\": 1e10}";
  CHECK_THROWS_WITH(LoadPlatform((dir / "p.json").string()),
                    ContainsSubstring("field 'peak_flops.fp32' is -1"));
  std::ofstream(dir / "q.json") << "{\"peak_flops\": {\"fp32\": 2e11}}";
  CHECK_THROWS_WITH(LoadPlatform((dir / "q.json").string()),
                    ContainsSubstring("field 'memory_bandwidth' is missing"));
  std::ofstream(dir / "r.json")
      << "{\"peak_flops\": {\"fp32\": 2e11}, \"memory_bandwidth\": 3e10}";
  Platform p = LoadPlatform((dir / "r.json").string());
  CHECK(p.peak_flops().at("fp32") == 2e11);
  CHECK(p.memory_bandwidth == 3e10);
}

TEST_CASE("a GPU's cases under the GPU's roofs, and --no-plots draws nothing",
          "[report]") {
  const fs::path dir = Dir("gpu");
  // An FC case on each device, at 10 ms a step.
  std::string benchmarks;
  for (const char* backend : {"torch", "torch_cuda"}) {
    const std::string name =
        std::string("FC/layers:2/nodes:32/input:64/output:10/batch:8/") +
        backend + "/fp32/infer";
    benchmarks += std::string(benchmarks.empty() ? "" : ", ") +
                  "{\"name\": \"" + name + "/real_time\", \"run_name\": \"" +
                  name +
                  "/real_time\", \"run_type\": \"iteration\", "
                  "\"iterations\": 3, \"real_time\": 10, \"time_unit\": "
                  "\"ms\", \"step_ms\": 10, \"params\": 3466, "
                  "\"flop_per_step\": 54272, \"bytes_per_step\": 15000, "
                  "\"intensity\": 3.6}";
  }
  std::ofstream(dir / "results.json")
      << "{\"context\": {}, \"benchmarks\": [" << benchmarks << "]}";
  Platform p;
  p.name = "box";
  p.devices["cpu"] = {{"fp32", 2e11}};
  p.devices["gpu"] = {{"fp32", 5e13}, {"tf32", 4e14}, {"bf16", 9e14}};
  p.memory_bandwidth = 3.4e10;
  p.device_bandwidth["gpu"] = 4.3e12;
  p.device_names["gpu"] = "NVIDIA H200, 139.8 GiB";
  p.backend_devices = {{"torch", "cpu"}, {"torch_cuda", "gpu"}};
  std::ofstream(dir / "platform.json") << PlatformJson(p);
  const Platform loaded = LoadPlatform((dir / "platform.json").string());
  CHECK(loaded.DevicePeaks("gpu") == p.devices["gpu"]);
  CHECK(loaded.Bandwidth("gpu") == 4.3e12);
  CHECK(loaded.Bandwidth("cpu") == 3.4e10);
  CHECK(loaded.device_names == p.device_names);
  CHECK(loaded.DeviceOf("torch_cuda") == "gpu");
  CHECK(loaded.DeviceOf("onednn") == "cpu");
  ReportOptions o;
  o.results = (dir / "results.json").string();
  o.platform = (dir / "platform.json").string();
  o.out = (dir / "report").string();
  o.plots = false;
  const std::vector<std::string> notes = WriteReport(o);
  // Each device's cases on its own roofline, under its own roofs.
  const std::string cpu = Slurp(dir / "report/roofline.csv");
  const std::string gpu = Slurp(dir / "report/roofline_gpu.csv");
  CHECK_THAT(cpu, ContainsSubstring("/torch/fp32/infer"));
  CHECK(cpu.find("torch_cuda") == std::string::npos);
  CHECK_THAT(gpu, ContainsSubstring("/torch_cuda/fp32/infer"));
  CHECK(gpu.find("/torch/") == std::string::npos);
  CHECK_THAT(Slurp(dir / "report/roofline.gp"),
             ContainsSubstring("bw=3.4e+10"));
  const std::string gp = Slurp(dir / "report/roofline_gpu.gp");
  CHECK_THAT(gp, ContainsSubstring("bw=4.3e+12"));
  CHECK_THAT(gp, ContainsSubstring("bf16 roof (9e+05 GFLOP/s, 4.3e+03 GB/s)"));
  CHECK_THAT(gp, ContainsSubstring("tf32 roof (4e+05 GFLOP/s"));
  // No plot drawn: the page links each one's script and data.
  CHECK_FALSE(fs::exists(dir / "report/roofline.svg"));
  CHECK_FALSE(fs::exists(dir / "report/roofline_gpu.svg"));
  const std::string html = Slurp(dir / "report/index.html");
  CHECK(html.find("<img") == std::string::npos);
  CHECK_THAT(html, ContainsSubstring("every case on the gpu (NVIDIA H200, "
                                     "139.8 GiB)"));
  CHECK_THAT(html, ContainsSubstring("<a href='roofline_gpu.gp'>gnuplot "
                                     "script</a>"));
  bool said = false;
  for (const std::string& n : notes) {
    said = said || n.find("plots not drawn (--no-plots)") == 0;
  }
  CHECK(said);
  // gnuplot draws the script as written.
  REQUIRE(std::system(("cd '" + (dir / "report").string() +
                       "' && gnuplot roofline_gpu.gp 2>/dev/null")
                          .c_str()) == 0);
  CHECK(fs::file_size(dir / "report/roofline_gpu.svg") > 1000);
  // A device's bandwidth is checked as the host's is.
  std::ofstream(dir / "bad.json")
      << "{\"peak_flops\": {\"fp32\": 2e11}, \"memory_bandwidth\": 3e10, "
         "\"device_bandwidth\": {\"gpu\": -1}}";
  CHECK_THROWS_WITH(LoadPlatform((dir / "bad.json").string()),
                    ContainsSubstring("field 'device_bandwidth.gpu' is -1"));
}

TEST_CASE("cgroup CPU quotas, as cgroup v2 and v1 write them", "[platform]") {
  auto file = [](const std::string& name, const std::string& text) {
    const std::string path = test::Scratch("cgroup/" + name).string();
    std::ofstream(path) << text;
    return path;
  };
  CHECK(CpuQuota(file("v2_limited", "150000 100000\n")) == 2);
  CHECK(CpuQuota(file("v2_one", "100000 100000\n")) == 1);
  CHECK(CpuQuota(file("v2_half", "50000 100000\n")) == 1);
  CHECK(CpuQuota(file("v2_none", "max 100000\n")) == 0);
  CHECK(CpuQuota(file("v1_quota", "300000\n"), file("v1_period", "100000")) ==
        3);
  CHECK(CpuQuota(file("v1_none", "-1\n"), file("v1_period2", "100000")) == 0);
  CHECK(CpuQuota(test::Scratch("cgroup/missing").string()) == 0);
  CHECK(UsableCpus() >= 1);
}

TEST_CASE("a STREAM triad measures some bandwidth", "[report]") {
  // 16 MiB per array: beyond the caches of small machines, quick anywhere.
  CHECK(StreamTriad(size_t{16} << 20, 1, 2) > 1e8);
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

TEST_CASE("bricks: estimates against plain runs, errors per group",
          "[report]") {
  const fs::path dir = Dir("bricks");
  std::ofstream(dir / "results.json") << ResultsJson();
  std::ofstream(dir / "bricks.json") << R"({
    "checked_models": 2, "bricks_benchmark_s": 4.0,
    "median_estimated_spread": 0.05,
    "projected_plain_benchmark_s": 20.0,
    "error": {
      "all": {"geomean": 1.0, "models": 2},
      "per_family": {"CNN": {"geomean": 0.9, "mean_abs_error": 0.1,
                             "max_abs_error": 0.1, "models": 1},
                     "FC": {"geomean": 1.1, "mean_abs_error": 0.1,
                            "max_abs_error": 0.1, "models": 1}}},
    "models": [
      {"name": "FC/layers:4/nodes:256/input:2000/output:1000/batch:64/torch/fp32/train",
       "estimated_ms": 1.1, "estimated_spread": 0.04, "plain_ms": 1.0},
      {"name": "CNN/block:residual/blocks:1/filters:16/image:200/output:1000/batch:8/torch/fp32/train",
       "estimated_ms": 9.0, "estimated_spread": 0.05, "plain_ms": 10.0},
      {"name": "FC/layers:8/nodes:256/input:2000/output:1000/batch:64/torch/fp32/train",
       "estimated_ms": 2.0, "estimated_spread": 0.06}]})";
  ReportOptions o;
  o.results = (dir / "results.json").string();
  o.bricks = (dir / "bricks.json").string();
  o.out = (dir / "report").string();
  std::vector<std::string> notes = WriteReport(o);
  // The checked models only: the estimated-only one has no plain time.
  CHECK(Slurp(dir / "report/bricks.csv") ==
        "model,family,estimated_ms,plain_ms\n"
        "FC/layers:4/nodes:256/input:2000/output:1000/batch:64/torch/fp32/"
        "train,FC,1.1,1\n"
        "CNN/block:residual/blocks:1/filters:16/image:200/output:1000/batch:8/"
        "torch/fp32/train,CNN,9,10\n");
  CHECK(fs::file_size(dir / "report/bricks.svg") > 0);
  const std::string html = Slurp(dir / "report/index.html");
  CHECK_THAT(html, ContainsSubstring("3 models' step times estimated"));
  CHECK_THAT(html,
             ContainsSubstring("each with an interval (median &plusmn;5%)"));
  CHECK_THAT(html, ContainsSubstring("2 of them run plainly after the bricks"));
  CHECK_THAT(html, ContainsSubstring("all the models plainly about 20 s"));
  CHECK_THAT(html,
             ContainsSubstring("<tr><td>CNN</td><td>1</td><td>10%</td><td>10%"
                               "</td><td>0.9</td></tr>"));
  CHECK_THAT(html,
             ContainsSubstring("<tr><td>FC</td><td>1</td><td>10%</td><td>10%"
                               "</td><td>1.1</td></tr>"));
  // Not a bricks file: said, and the rest is still reported.
  o.bricks = o.results;
  notes = WriteReport(o);
  CHECK(std::find(notes.begin(), notes.end(),
                  o.results + ": not a bricks file (--paradnn_bricks_out): "
                              "expected 'models' and 'error': bricks left "
                              "out") != notes.end());
}

TEST_CASE("Google Benchmark's NaN and Infinity read as null, not in strings",
          "[report]") {
  const nlohmann::json j = ParseBenchmarkJson(
      "{\"a\": NaN, \"b\": -NaN, \"c\": Infinity, \"d\": -Infinity, "
      "\"e\": -1.5, \"f\": \"NaN Infinity \\\" NaN\", \"g\": [NaN, 2]}");
  CHECK(j["a"].is_null());
  CHECK(j["b"].is_null());
  CHECK(j["c"].is_null());
  CHECK(j["d"].is_null());
  CHECK(j["e"] == -1.5);
  CHECK(j["f"] == "NaN Infinity \" NaN");
  CHECK(j["g"][0].is_null());
  CHECK(j["g"][1] == 2);
  CHECK_THROWS(ParseBenchmarkJson("{\"a\": NaNa}"));
}

}  // namespace
}  // namespace paradnn
