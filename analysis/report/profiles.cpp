// Where step time goes: the profile's shares per operation class.
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

// Where step time goes: the mean share of each operation class over the
// profiled cases of each family, backend and mode, as stacked bars.
void Profiles(Page& page) {
  std::map<std::string, std::pair<std::array<double, kOpClasses>, int>> groups;
  for (const CaseResult& r : page.results.cases) {
    if (!r.profiled) continue;
    auto& [sum, n] =
        groups[r.c.model.family + "/" + r.c.backend + "/" + ToString(r.c.mode)];
    for (int k = 0; k < kOpClasses; ++k) sum[k] += r.time_frac[k];
    ++n;
  }
  if (groups.empty()) {
    page.notes.push_back(
        "no case was profiled (--paradnn_profile): no time breakdown");
    return;
  }
  std::ofstream csv(page.options.out + "/profile.csv");
  csv << "group,cases";
  for (int k = 0; k < kOpClasses; ++k) {
    csv << "," << ToString(static_cast<OpClass>(k));
  }
  csv << "\n";
  page.html << "<h2>Where step time goes</h2>\n<p>Mean share of step time per "
               "operation class (--paradnn_profile), by family, backend and "
               "mode.</p>\n<table><tr><th>group</th><th>cases</th>";
  for (int k = 0; k < kOpClasses; ++k) {
    page.html << "<th>" << ToString(static_cast<OpClass>(k)) << "</th>";
  }
  page.html << "</tr>\n";
  for (const auto& [group, entry] : groups) {
    const auto& [sum, n] = entry;
    csv << group << "," << n;
    page.html << "<tr><td>" << Html(group) << "</td><td>" << n << "</td>";
    for (int k = 0; k < kOpClasses; ++k) {
      csv << "," << sum[k] / n;
      page.html << "<td>" << Num(sum[k] / n, 3) << "</td>";
    }
    csv << "\n";
    page.html << "</tr>\n";
  }
  page.html << "</table>\n";
  csv.close();
  std::string plot = "plot 'profile.csv' skip 1 using 3:xtic(1) title 'gemm'";
  for (int k = 1; k < kOpClasses; ++k) {
    plot += ", '' skip 1 using " + std::to_string(k + 3) + " title '" +
            ToString(static_cast<OpClass>(k)) + "'";
  }
  page.Gnuplot("profile",
               "set style data histograms\nset style histogram rowstacked\n"
               "set style fill solid 0.8 border -1\nset boxwidth 0.7\n"
               "set yrange [0:1]\nset ylabel 'share of step time'\n"
               "set xtics rotate by -30\nset key outside right\n" +
                   plot + "\n");
  page.Figure("profile", "share of step time per operation class");
}

}  // namespace paradnn::report
