// Data-parallel scaling over world sizes.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/report/page.h"
#include "analysis/stats.h"

namespace paradnn::report {

// Data-parallel scaling: the same cases at several world sizes (the
// results and the --scaling files), throughput and the all-reduce's
// share against world size, and the efficiency against one rank where
// one rank was measured.
void Scaling(Page& page) {
  std::vector<Results> runs = {page.results};
  for (const std::string& file : page.options.scaling) {
    try {
      runs.push_back(ReadResults(file));
    } catch (const std::exception& e) {
      page.notes.push_back(std::string(e.what()) + ": left out of scaling");
    }
  }
  std::map<std::string, std::map<int, const CaseResult*>> cases;
  for (const Results& run : runs) {
    for (const CaseResult& r : run.cases) {
      if (cases[r.name].count(run.world_size)) {
        page.notes.push_back("scaling: " + r.name + " twice at world size " +
                             std::to_string(run.world_size) + "; " + run.path +
                             " left out");
        continue;
      }
      cases[r.name][run.world_size] = &r;
    }
  }
  std::ofstream csv(page.options.out + "/scaling.csv");
  csv << "case,name,world_size,step_ms,examples_per_second,allreduce_frac,"
         "efficiency\n";
  page.html << "<h2>Data-parallel scaling</h2>\n<p>The same cases at several "
               "world sizes (batch per rank; examples per second over all "
               "ranks). Efficiency: examples per second on N ranks over N "
               "times those of one rank.</p>\n<table><tr><th>#</th><th>case"
               "</th><th>ranks</th><th>ms per step</th><th>examples/s</th>"
               "<th>all-reduce share</th><th>efficiency</th></tr>\n";
  int shown = 0;
  for (const auto& [name, worlds] : cases) {
    if (worlds.size() < 2) continue;
    ++shown;
    const auto one = worlds.find(1);
    for (const auto& [world, r] : worlds) {
      const double efficiency =
          one == worlds.end() ? NAN
                              : r->samples_per_second /
                                    (world * one->second->samples_per_second);
      csv << shown << "," << name << "," << world << "," << r->step_ms << ","
          << r->samples_per_second << "," << r->allreduce_frac << ","
          << efficiency << "\n";
      page.html << "<tr><td>" << shown << "</td><td>" << Html(name)
                << "</td><td>" << world << "</td><td>" << Num(r->step_ms, 3)
                << TimeInterval(*r) << "</td><td>"
                << Num(r->samples_per_second, 3) << "</td><td>"
                << Num(r->allreduce_frac, 2) << "</td><td>"
                << (std::isnan(efficiency) ? "" : Num(efficiency, 3))
                << "</td></tr>\n";
    }
    csv << "\n\n";  // one gnuplot data block per case
  }
  page.html << "</table>\n";
  csv.close();
  if (shown == 0) {
    page.notes.push_back(
        "scaling: no case was measured at two world sizes (the context's "
        "paradnn_world_size)");
    return;
  }
  auto plot = [&](int column) {
    std::string p = "plot ";
    for (int i = 0; i < shown; ++i) {
      p += std::string(i ? ", " : "") + "'scaling.csv' skip 1 index " +
           std::to_string(i) + " using 3:" + std::to_string(column) +
           " with linespoints pt 7 title '" + std::to_string(i + 1) + "'";
    }
    return p + "\n";
  };
  const std::string axes =
      "set xlabel 'ranks'\nset xtics 1\nset key outside right title "
      "'case'\nset grid\n";
  page.Gnuplot(
      "scaling_throughput",
      axes + "set logscale y\nset ylabel 'examples per second'\n" + plot(5));
  page.Figure("scaling_throughput",
              "examples per second against ranks, by case");
  page.Gnuplot("scaling_allreduce",
               axes +
                   "set yrange [0:1]\nset ylabel 'all-reduce share of step'\n" +
                   plot(6));
  page.Figure("scaling_allreduce",
              "share of step time in the gradients' all-reduce against ranks");
}

}  // namespace paradnn::report
