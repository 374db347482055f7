// paradnn report: an HTML page with SVG plots (gnuplot) and the CSV behind
// each: roofline, heat maps, regressions and, against another result set,
// speedups.
#pragma once

#include <string>
#include <vector>

namespace paradnn {

struct ReportOptions {
  std::string results;  // A: Google Benchmark JSON
  // More results whose cases join A's (mlperf-report's twins).
  std::vector<std::string> extra_results;
  std::string vs;        // B: another results file ("" : none, or A itself
                         // with selectors)
  std::string a_select;  // e.g. "/onednn/": A's cases containing it
  std::string b_select;  // e.g. "/torch/"
  std::string platform;  // peaks and bandwidth (paradnn calibrate)
  std::string color = "batch";  // parameter colouring speedup vs params
  std::string bricks;   // --paradnn_bricks_out's file: estimates vs measured
  std::string profile;  // --paradnn_profile_out's file: layer by layer
  // A folder of real MLPerf training results, set beside their twins.
  std::string mlperf;
  // Results of the same cases at other world sizes (data-parallel runs).
  std::vector<std::string> scaling;
  // LLM latency limits, "ttft_ms=2000,tpot_ms=100": which cases meet them.
  std::string slo;
  std::string out;
  // false: each plot's gnuplot script and data, not its SVG (for a machine
  // without gnuplot; `cd OUT && gnuplot NAME.gp` draws one later).
  bool plots = true;
};

// Writes OUT/index.html, OUT/*.svg and OUT/*.csv. Returns what the page
// also says about what could not be reported; throws std::runtime_error
// when nothing can be (unreadable results, gnuplot missing where plots are
// drawn).
std::vector<std::string> WriteReport(const ReportOptions& options);

}  // namespace paradnn
