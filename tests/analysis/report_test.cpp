// paradnn report: the page, its plots and data, its sections beside MLPerf,
// scaling and bricks, and what it says of bad input.
#include "analysis/report.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/calibrate.h"
#include "analysis/compare.h"
#include "generators/spec.h"
#include "machine/host.h"
#include "records/results.h"
#include "tests/analysis/report_inputs.h"
#include "tests/analysis/results_json.h"
#include "tests/catch.h"
#include "tests/scratch.h"

namespace paradnn::report_tests {
namespace {

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

// A profile's layers as the runner writes them (--paradnn_profile_out), by
// hand: LibTorch's dense layer at a tenth of its roof and its ReLU at a
// twentieth, oneDNN's dense layer at half.
std::string ProfileJson() {
  return R"json({"cases": [
    {"name": "FC/layers:1/nodes:64/input:32/output:10/batch:8/torch/fp32/train",
     "profiled_step_ms": 2.0, "layers": {"layers_ms": 1.8,
     "unattributed_ms": 0.2, "list": [
      {"layer": 1, "op": "dense", "shape": [8, 64],
       "brick": "BRICK/dense/in:8x32/units:64/bias:1/grad:0/torch/fp32/train",
       "forward_ms": 0.5, "backward_ms": 0.5, "share": 0.5, "flops": 1e6,
       "bytes": 1e5, "intensity": 10, "flop_per_s": 1e9, "roof_util": 0.1,
       "bound": "memory", "kernels": [{"name": "aten::addmm", "ms": 0.6}]},
      {"layer": 2, "op": "relu", "shape": [8, 64], "brick": "",
       "forward_ms": 0.4, "backward_ms": 0.4, "share": 0.4, "flops": 0,
       "bytes": 4096, "intensity": 0, "flop_per_s": 0, "roof_util": 0.05,
       "bound": "memory", "kernels": [{"name": "aten::relu", "ms": 0.4}]}]}},
    {"name": "FC/layers:1/nodes:64/input:32/output:10/batch:8/onednn/fp32/train",
     "profiled_step_ms": 1.0, "layers": {"layers_ms": 0.5,
     "unattributed_ms": 0.5, "list": [
      {"layer": 1, "op": "dense", "shape": [8, 64], "brick": "",
       "forward_ms": 0.2, "backward_ms": 0.2, "share": 0.4, "flops": 1e6,
       "bytes": 1e5, "intensity": 10, "flop_per_s": 2.5e9, "roof_util": 0.5,
       "bound": "memory",
       "kernels": [{"name": "inner_product forward (brg:avx512_core)",
                    "ms": 0.2}]}]}}]})json";
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
  std::ofstream(dir / "profile.json") << ProfileJson();
  o.profile = (dir / "profile.json").string();
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
  CHECK(images == 19);
  CHECK_THAT(page,
             ContainsSubstring("CNN onednn/fp32/train: 5 cases are too few for "
                               "a regression on 4 parameters"));
  CHECK_THAT(dom, ContainsSubstring("plots: 19 loaded: 19 failed: 0"));
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
  std::ofstream(dir / "s.json")
      << "{\"peak_flops\": {\"fp32\": 2e11}, \"memory_bandwidth\": 3e10, "
         "\"cache_bandwidth\": {\"4096\": {\"triad\": 1e11, \"reads\": 2e11}}}";
  CHECK_THROWS_WITH(
      LoadPlatform((dir / "s.json").string()),
      ContainsSubstring("field 'cache_bandwidth.4096.reads': expected read, "
                        "triad or write"));
}

TEST_CASE("a memory roof for each mix of reads and writes", "[report]") {
  // Reads at 40 GB/s, the triad (2 reads : 1 write) at 30, writes at 10:
  // 25, 33.3 and 100 ps a byte.
  const Bandwidths b{4e10, 3e10, 1e10};
  CHECK(b.For(1) == Approx(4e10));
  CHECK(b.For(2.0 / 3) == Approx(3e10));
  CHECK(b.For(0) == Approx(1e10));
  // Halfway between the triad's mix and reads only: 29.17 ps a byte.
  CHECK(b.For(5.0 / 6) == Approx(1 / ((25e-12 + 33.333e-12) / 2)));
  // Half of the triad's reads (1/3): 66.67 ps a byte.
  CHECK(b.For(1.0 / 3) == Approx(1 / ((100e-12 + 33.333e-12) / 2)));
  // The triad alone where the others were not measured.
  CHECK(Bandwidths{0, 3e10, 0}.For(1) == 3e10);
  // Calibrate's file keeps all three, per cache too.
  Platform p;
  p.devices["cpu"]["fp32"] = 1e11;
  p.memory_bandwidth = 3e10;
  p.memory_read_bandwidth = 4e10;
  p.memory_write_bandwidth = 1e10;
  p.cache_bandwidth[1 << 20] = {2e11, 1e11, 5e10};
  const fs::path dir = Dir("mixes");
  std::ofstream(dir / "p.json") << PlatformJson(p);
  const Platform q = LoadPlatform((dir / "p.json").string());
  CHECK(q.MemoryBandwidths("cpu").For(1) == 4e10);
  CHECK(q.MemoryBandwidths("cpu").For(0) == 1e10);
  CHECK(q.cache_bandwidth.at(1 << 20).write == 5e10);
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

TEST_CASE(
    "layers: each profiled layer against its roof, the kinds furthest "
    "below theirs",
    "[report]") {
  const fs::path dir = Dir("layers");
  std::ofstream(dir / "results.json") << ResultsJson();
  std::ofstream(dir / "profile.json") << ProfileJson();
  ReportOptions o;
  o.results = (dir / "results.json").string();
  o.profile = (dir / "profile.json").string();
  o.out = (dir / "report").string();
  WriteReport(o);
  CHECK(Slurp(dir / "report/layers.csv") ==
        "case,layer,op,shape,brick,ms_per_step,share,flops,bytes,intensity,"
        "flop_per_s,roof_util,bound,top_kernel\n"
        "FC/layers:1/nodes:64/input:32/output:10/batch:8/torch/fp32/train,1,"
        "dense,8x64,BRICK/dense/in:8x32/units:64/bias:1/grad:0/torch/fp32/"
        "train,1,0.5,1e+06,100000,10,1e+09,0.1,memory,aten::addmm\n"
        "FC/layers:1/nodes:64/input:32/output:10/batch:8/torch/fp32/train,2,"
        "relu,8x64,,0.8,0.4,0,4096,0,0,0.05,memory,aten::relu\n"
        "FC/layers:1/nodes:64/input:32/output:10/batch:8/onednn/fp32/train,1,"
        "dense,8x64,,0.4,0.4,1e+06,100000,10,2.5e+09,0.5,memory,"
        "inner_product forward (brg:avx512_core)\n");
  CHECK(fs::file_size(dir / "report/layers_roofline.gp") > 0);
  const std::string html = Slurp(dir / "report/index.html");
  // The layers cover 0.9 and 0.5 of their steps: a median of 70%.
  CHECK_THAT(html, ContainsSubstring("cover a median of 70%"));
  // The kinds, furthest below their roofs first: LibTorch's ReLU (0.8 of
  // the layers' 2.2 ms), its dense layer, oneDNN's.
  const size_t relu = html.find(
      "<tr><td>relu</td><td>torch</td><td>1</td>"
      "<td>0.364</td><td>0.05</td><td>0.05</td>");
  const size_t dense = html.find(
      "<tr><td>dense</td><td>torch</td><td>1</td>"
      "<td>0.455</td><td>0.1</td><td>0.1</td>");
  const size_t onednn = html.find(
      "<tr><td>dense</td><td>onednn</td><td>1</td>"
      "<td>0.182</td><td>0.5</td><td>0.5</td>");
  REQUIRE(relu != std::string::npos);
  REQUIRE(dense != std::string::npos);
  REQUIRE(onednn != std::string::npos);
  CHECK(relu < dense);
  CHECK(dense < onednn);
  // Beside its brick: LibTorch's dense layer took 1 ms a step in its
  // model, its brick's step 0.5 ms.
  std::ofstream(dir / "bricks.json") << R"json({"bricks": [
    {"name": "BRICK/dense/in:8x32/units:64/bias:1/grad:0/torch/fp32/train",
     "step_ms": 0.5}]})json";
  o.bricks = (dir / "bricks.json").string();
  WriteReport(o);
  CHECK(Slurp(dir / "report/layers_vs_bricks.csv") ==
        "op,backend,layers,median,p10,p90\ndense,torch,1,2,2,2\n");
  o.bricks.clear();
  // Not a profile: said, and the rest is still reported.
  o.profile = (dir / "missing.json").string();
  const std::vector<std::string> notes = WriteReport(o);
  CHECK(std::find(notes.begin(), notes.end(),
                  o.profile + ": cannot read the profile: layers left out") !=
        notes.end());
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
}  // namespace paradnn::report_tests
