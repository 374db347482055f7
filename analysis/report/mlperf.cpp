// Real MLPerf results beside their models' twins.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "adapters/mlperf/side_by_side.h"
#include "analysis/report/page.h"
#include "analysis/stats.h"

namespace paradnn::report {

// Real MLPerf results beside their models' twins: a table per result,
// and the MLPerf models as marked points on the synthetic plots (the
// submission per accelerator at the published size, the twin as it ran
// here).
void Mlperf(Page& page) {
  std::vector<MlperfBenchmark> real;
  try {
    real = SummarizeMlperf(page.options.mlperf);
  } catch (const std::exception& e) {
    page.notes.push_back(std::string(e.what()) + ": MLPerf left out");
    return;
  }
  if (real.empty()) {
    page.notes.push_back("no MLPerf result logs under " + page.options.mlperf);
    return;
  }
  const std::vector<TwinComparison> twins =
      CompareTwins(real, page.results.cases);
  page.html << "<h2>Beside MLPerf</h2>\n<p>Each MLPerf result (<code>"
            << Html(page.options.mlperf)
            << "</code>) beside its model's twin: the paradnn model built from "
               "the published architecture, at the submission's batch per "
               "accelerator, with its sizes by the cost model; samples per "
               "second here against one accelerator's (the submission's "
               "median over its accelerators).</p>\n<table><tr><th>benchmark"
               "</th><th>system</th><th>per accelerator: batch, samples/s</th>"
               "<th>twin</th><th>params, FLOPs/sample: twin / published</th>"
               "<th>here: fastest samples/s</th><th>here / accelerator</th>"
               "</tr>\n";
  std::ofstream points(page.options.out + "/mlperf_points.csv");
  points << "label,kind,params,flop_per_sample,samples_per_second,"
            "intensity,flops\n";
  for (const MlperfBenchmark& b : real) {
    const TwinComparison* t = nullptr;
    for (const TwinComparison& c : twins) {
      if (c.real == &b) t = &c;
    }
    if (t != nullptr) continue;
    const ReferenceModel* m = FindReference(b.benchmark);
    page.html << "<tr><td>" << Html(b.benchmark) << "</td><td>"
              << Html(b.system_name)
              << "</td><td></td><td colspan='4' style='text-align:left'>"
              << Html(m ? m->differences : "not in paradnn's table of models")
              << "</td></tr>\n";
  }
  // The twins, beside their results first, then those of models with
  // no result given (at the reference implementation's batch).
  for (const TwinComparison& twin : twins) {
    const TwinComparison* t = &twin;
    const ReferenceModel& m = *t->model;
    const std::string label =
        m.benchmark + (t->real ? " " + t->real->accelerator : "");
    page.html << "<tr><td>" << Html(m.benchmark) << "</td><td>"
              << Html(t->real ? t->real->system_name : "no result given")
              << "</td>";
    const bool reference = !t->real && m.reference_batch > 0;
    page.html << "<td>"
              << (t->batch_known() || reference ? t->twin.Str("batch") : "?")
              << (reference ? " (reference)" : "") << ", "
              << (t->accelerator_rate > 0 ? Num(t->accelerator_rate, 4) : "?")
              << "</td><td style='text-align:left'><code>"
              << Html(t->twin.Name()) << "</code></td><td>"
              << Num(t->cost.params / m.params, 3) << ", "
              << (m.train_flop_per_sample
                      ? Num(t->flop_per_sample / *m.train_flop_per_sample, 3)
                      : "?")
              << "</td>";
    const CaseResult* best = nullptr;
    for (const CaseResult* r : t->here) {
      if (!best || r->samples_per_second > best->samples_per_second) best = r;
      points << m.benchmark << " here,twin," << r->params << ","
             << r->flop_per_sample << "," << r->samples_per_second << ","
             << r->intensity << "," << r->flops << "\n";
    }
    if (best) {
      page.html << "<td>" << Num(best->samples_per_second, 4) << " (batch "
                << best->c.model.Str("batch") << ", " << best->c.backend
                << ")</td><td>"
                << (t->accelerator_rate > 0
                        ? Num(best->samples_per_second / t->accelerator_rate, 3)
                        : "")
                << "</td></tr>\n";
    } else {
      page.html << "<td colspan='2'>not run here (about "
                << Num(t->cost.memory / 1073741824.0, 3) << " GiB)</td></tr>\n";
    }
    if (t->accelerator_rate > 0) {
      points << label << ",submission," << m.params << ","
             << m.train_flop_per_sample.value_or(t->flop_per_sample) << ","
             << t->accelerator_rate << ",,\n";
    }
  }
  page.html << "</table>\n<p>Differences between each model and its twin: "
               "<code>build/paradnn mlperf-report</code> writes them with the "
               "sizes (side_by_side.md).</p>\n";
  points.close();
  std::ofstream cases(page.options.out + "/mlperf_cases.csv");
  cases << "family,name,params,flop_per_sample,samples_per_second,"
           "intensity,flops\n";
  for (const CaseResult& r : page.results.cases) {
    if (r.c.mode != Mode::kTrain) continue;
    cases << r.c.model.family << "," << r.name << "," << r.params << ","
          << r.flop_per_sample << "," << r.samples_per_second << ","
          << r.intensity << "," << r.flops << "\n";
  }
  cases.close();
  // x and y columns of both files: the synthetic cases in grey, MLPerf
  // submissions and twins marked and labelled.
  auto plot = [&](const std::string& name, int x, int y, bool submissions,
                  const std::string& axes, const std::string& caption) {
    const std::string xy = std::to_string(x) + ":" + std::to_string(y);
    std::string p =
        "plot 'mlperf_cases.csv' skip 1 using " + xy +
        " with points pt 7 ps 0.5 lc rgb '#bbbbbb' title 'synthetic, here'";
    if (submissions) {
      p += ", 'mlperf_points.csv' skip 1 using (strcol(2) eq 'submission' "
           "? $" +
           std::to_string(x) + " : NaN):" + std::to_string(y) +
           " with points pt 5 ps 1.4 lc rgb '#d62728' title 'MLPerf, per "
           "accelerator'";
    }
    p += ", 'mlperf_points.csv' skip 1 using (strcol(2) eq 'twin' ? $" +
         std::to_string(x) + " : NaN):" + std::to_string(y) +
         " with points pt 9 ps 1.4 lc rgb '#1f77b4' title 'twin, here'";
    p += ", 'mlperf_points.csv' skip 1 using (" +
         std::string(submissions ? "" : "strcol(2) eq 'twin' ? ") + "$" +
         std::to_string(x) + (submissions ? "" : " : NaN") +
         "):" + std::to_string(y) +
         ":1 with labels left offset 1,0.5 font ',9' notitle\n";
    page.Gnuplot(
        name,
        "set logscale xy\nset grid\nset key outside right top\n" + axes + p);
    page.Figure(name, caption);
  };
  plot("mlperf_params", 3, 5, true,
       "set xlabel 'params'\nset ylabel 'samples per second'\n",
       "samples per second against params: training cases here, MLPerf "
       "submissions per accelerator, twins here");
  plot("mlperf_flops", 4, 5, true,
       "set xlabel 'training FLOPs per sample'\nset ylabel 'samples per "
       "second'\n",
       "samples per second against training FLOPs per sample");
  plot("mlperf_roofline", 6, 7, false,
       "set xlabel 'arithmetic intensity (FLOP/byte)'\nset ylabel "
       "'FLOP/s'\n",
       "the twins on this machine's roofline among the training cases");
}

}  // namespace paradnn::report
