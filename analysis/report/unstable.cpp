// Cases whose rounds disagree beyond their group's.
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

// Cases whose rounds disagree beyond their group's (RoundSummary).
void Unstable(Page& page) {
  std::vector<const CaseResult*> unstable;
  for (const CaseResult& r : page.results.cases) {
    if (r.unstable) unstable.push_back(&r);
  }
  if (unstable.empty()) return;
  page.html << "<h2>Unstable cases</h2>\n<p>Their rounds disagree beyond the "
               "spread of their group's rounds (and by over "
            << Num(100 * kUnstableFloor, 2)
            << "% of their median): a re-run may move them far, and their "
               "intervals are their own.</p>\n<ul>\n";
  for (const CaseResult* r : unstable) {
    const auto [least, most] =
        std::minmax_element(r->rounds_ms.begin(), r->rounds_ms.end());
    page.html << "<li>" << Html(r->name) << ": unstable: rounds "
              << Num(*least, 3) << "-" << Num(*most, 3) << " ms</li>\n";
  }
  page.html << "</ul>\n";
}

}  // namespace paradnn::report
