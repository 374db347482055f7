// Heat maps: utilization (or GFLOP/s) over the two parameters that vary most.
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
namespace {

// Utilization (or GFLOP/s) over the two parameters that vary most, the
// median over the others, for one family, backend, data type and mode.
void HeatMap(Page& page, const std::string& family, const std::string& group,
             const std::vector<CaseResult>& cases, bool* titled) {
  const std::vector<std::string> varying = Varying(cases);
  if (varying.size() < 2) {
    page.notes.push_back(family + " " + group + ": " +
                         (varying.empty() ? "no parameter varies"
                                          : "only " + varying[0] + " varies") +
                         ": no heat map");
    return;
  }
  const std::pair<std::string, std::string> axes = {varying[0], varying[1]};
  const bool util = page.have_platform;
  Cells cells;
  for (const CaseResult& r : cases) {
    const int64_t x = r.c.model.Int(axes.first);
    const int64_t y = r.c.model.Int(axes.second);
    const double peak = page.Peak(r);
    // A case above the platform's peak is no utilization over 1: it says
    // the platform file was measured slower than this run; the map's
    // colors stop at 1 and the case is named.
    if (util && peak > 0 && r.flops > peak) {
      page.notes.push_back(r.name + ": " + Num(r.flops / 1e9, 3) +
                           " GFLOP/s, above the platform's peak of " +
                           Num(peak / 1e9, 3) +
                           " GFLOP/s (calibrate again on this machine)");
    }
    cells[{x, y}].push_back(util && peak > 0 ? r.flops / peak : r.flops / 1e9);
  }
  const std::string name = "heatmap_" + family + "_" + FileKey(group);
  page.GridMap(name, axes.first, axes.second, util ? "flops_util" : "gflops",
               std::string("set cblabel '") +
                   (util ? "FLOP/s utilization" : "GFLOP/s") + "'\n" +
                   (util ? "set cbrange [0:1]\n" : ""),
               family + " " + group, cells);
  if (!*titled) {
    page.html << "<h2>Heat maps</h2>\n";
    *titled = true;
  }
  page.Figure(name, family + " " + group + ": " +
                        (util ? "utilization" : "GFLOP/s") + " over " +
                        axes.first + " and " + axes.second);
}

}  // namespace

void HeatMaps(Page& page) {
  bool titled = false;
  for (const FamilyDef& f : Families()) {
    if (f.name == "LLM") continue;  // per phase, in its own section
    for (const auto& [group, cases] : Groups(page.results.cases, f.name)) {
      HeatMap(page, f.name, group, cases, &titled);
    }
  }
}

}  // namespace paradnn::report
