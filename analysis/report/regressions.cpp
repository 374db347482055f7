// Which parameters matter: least squares of throughput on the parameters.
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

void Regressions(Page& page) {
  page.html
      << "<h2>Which parameters matter</h2>\n<p>Least squares of "
         "log(examples per second) on the log of each parameter that "
         "varies: a weight w means throughput grows as parameter^w.</p>\n";
  for (const FamilyDef& f : Families()) {
    for (const auto& [group, cases] : Groups(page.results.cases, f.name)) {
      const std::string family = f.name + " " + group;
      const Regression r = FitFamily(cases, f.name);
      // terms[0] is the intercept.
      if (r.terms.size() < 2) {
        page.notes.push_back(family +
                             ": no numeric parameter varies, no "
                             "regression");
        continue;
      }
      if (r.samples < static_cast<int>(r.terms.size()) + 1) {
        if (r.samples > 0) {
          page.notes.push_back(family + ": " + std::to_string(r.samples) +
                               " cases are too few for a regression on " +
                               std::to_string(r.terms.size() - 1) +
                               " parameters");
        }
        continue;
      }
      const std::string name = "regression_" + f.name + "_" + FileKey(group);
      std::ofstream csv(page.options.out + "/" + name + ".csv");
      csv << "term,weight\n";
      for (size_t i = 1; i < r.terms.size(); ++i) {
        csv << r.terms[i] << "," << r.weights[i] << "\n";
      }
      csv.close();
      page.Gnuplot(name,
                   "set style fill solid 0.6\nset boxwidth 0.6\nset yzeroaxis\n"
                   "set yrange [*<0:0<*]\n"
                   "set xzeroaxis\nset ylabel 'weight on log(parameter)'\n"
                   "set title '" +
                       std::string(family) + ": R^2 = " + Num(r.r2, 3) +
                       "'\nplot '" + name +
                       ".csv' skip 1 using 0:2:xtic(1) with "
                       "boxes notitle\n");
      page.Figure(name, std::string(family) + " regression weights");
      page.html << "<table><tr><th>" << family << "</th>";
      for (size_t i = 1; i < r.terms.size(); ++i) {
        page.html << "<th>" << Html(r.terms[i]) << "</th>";
      }
      page.html << "<th>R²</th><th>cases</th></tr><tr><td>weight</td>";
      for (size_t i = 1; i < r.weights.size(); ++i) {
        page.html << "<td>" << Num(r.weights[i], 3) << "</td>";
      }
      page.html << "<td>" << Num(r.r2, 3) << "</td><td>" << r.samples
                << "</td></tr></table>\n";
    }
  }
}

}  // namespace paradnn::report
