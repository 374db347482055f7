// Model step times estimated from bricks against the plain runs.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/report/page.h"
#include "analysis/stats.h"

namespace paradnn::report {

// Model step times estimated from bricks against the plain runs of the
// models checked (--paradnn_bricks_out): a scatter per family and the
// errors per family and context.
void Bricks(Page& page) {
  nlohmann::json b;
  try {
    b = ReadJsonFile(page.options.bricks, "bricks file");
    if (!b.contains("models") || !b["models"].is_array() ||
        !b.contains("error")) {
      throw std::runtime_error(page.options.bricks +
                               ": not a bricks file (--paradnn_bricks_out): "
                               "expected 'models' and 'error'");
    }
  } catch (const std::exception& e) {
    page.notes.push_back(std::string(e.what()) + ": bricks left out");
    return;
  }
  std::ofstream csv(page.options.out + "/bricks.csv");
  csv << "model,family,estimated_ms,plain_ms\n";
  std::vector<std::string> families;
  int estimated = 0;
  for (const nlohmann::json& m : b["models"]) {
    if (!m["estimated_ms"].is_number()) continue;
    ++estimated;
    if (!m.contains("plain_ms") || !m["plain_ms"].is_number()) continue;
    const std::string name = m["name"];
    const std::string family = name.substr(0, name.find('/'));
    if (std::find(families.begin(), families.end(), family) == families.end())
      families.push_back(family);
    csv << name << "," << family << "," << m["estimated_ms"].get<double>()
        << "," << m["plain_ms"].get<double>() << "\n";
  }
  csv.close();
  page.html << "<h2>Model times from layer bricks</h2>\n<p>" << estimated
            << " models' step times estimated from their layers, each timed "
               "once on its own (<code>"
            << Html(page.options.bricks) << "</code>)";
  if (b.contains("median_estimated_spread") &&
      b["median_estimated_spread"].is_number()) {
    page.html << ", each with an interval (median &plusmn;"
              << Num(100 * b["median_estimated_spread"].get<double>(), 2)
              << "%)";
  }
  page.html << ", and " << b.value("checked_models", 0)
            << " of them run plainly after the bricks, the reference. Each "
               "error is an estimate's against a plain run it was not "
               "calibrated on; the bricks took "
            << Num(b.value("bricks_benchmark_s", 0.0), 3) << " s";
  if (b.contains("projected_plain_benchmark_s") &&
      b["projected_plain_benchmark_s"].is_number()) {
    page.html << ", all the models plainly about "
              << Num(b["projected_plain_benchmark_s"].get<double>(), 3)
              << " s (projected from the checked ones)";
  }
  page.html << ".</p>\n";
  if (!families.empty()) {
    std::string plot = "plot x title 'estimate = plain' lc rgb '#888888'";
    for (size_t i = 0; i < families.size(); ++i) {
      plot += ", 'bricks.csv' skip 1 using (strcol(2) eq '" + families[i] +
              "' ? $4 : NaN):3 with points pt 7 ps 0.6 lc rgb '" +
              kCategoryColors[i % std::size(kCategoryColors)] + "' title '" +
              families[i] + "'";
    }
    page.Gnuplot("bricks",
                 "set logscale xy\nset xlabel 'plain run, ms per step'\n"
                 "set ylabel 'estimated from bricks, ms per step'\n"
                 "set key left top\n" +
                     plot + "\n");
    page.Figure("bricks",
                "Estimated against plain step time per checked model");
  }
  page.html << "<table><tr><th>group</th><th>models checked</th><th>mean "
               "error</th><th>worst error</th><th>estimate/plain (geometric "
               "mean)</th></tr>\n";
  const nlohmann::json& errors = b["error"];
  for (const char* level : {"per_family", "per_family_context"}) {
    if (!errors.contains(level) || !errors[level].is_object()) continue;
    for (const auto& [group, e] : errors[level].items()) {
      if (!e.is_object()) continue;
      page.html << "<tr><td>" << Html(group) << "</td><td>"
                << e.value("models", 0) << "</td><td>"
                << Num(100 * e.value("mean_abs_error", 0.0), 3) << "%</td><td>"
                << Num(100 * e.value("max_abs_error", 0.0), 3) << "%</td><td>"
                << Num(e.value("geomean", 0.0), 3) << "</td></tr>\n";
    }
  }
  page.html << "</table>\n";
}

}  // namespace paradnn::report
