#include "analysis/report.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "analysis/report/page.h"

namespace paradnn {
namespace fs = std::filesystem;

std::vector<std::string> WriteReport(const ReportOptions& options) {
  report::Page page(options);
  if (page.options.plots &&
      std::system("gnuplot --version > /dev/null 2>&1") != 0) {
    throw std::runtime_error(
        "gnuplot is not installed: scripts/setup.sh installs gnuplot-nox "
        "(--no-plots writes the plots' scripts and data without it)");
  }
  if (!page.options.plots) {
    page.notes.push_back(
        "plots not drawn (--no-plots): each figure links its gnuplot "
        "script and data; cd to this folder and run gnuplot NAME.gp");
  }
  fs::create_directories(page.options.out);
  page.results = ReadResults(page.options.results);
  for (const std::string& file : page.options.extra_results) {
    const Results more = ReadResults(file);
    page.results.cases.insert(page.results.cases.end(), more.cases.begin(),
                              more.cases.end());
    page.results.failed.insert(more.failed.begin(), more.failed.end());
  }
  for (const auto& [name, message] : page.results.failed) {
    page.notes.push_back("failed or skipped in " + page.options.results + ": " +
                         name + (message.empty() ? "" : " (" + message + ")"));
  }
  if (!page.options.platform.empty()) {
    try {
      page.platform = LoadPlatform(page.options.platform);
      page.have_platform = true;
    } catch (const std::exception& e) {
      page.notes.push_back(std::string(e.what()) +
                           ": roofs and utilization left out");
    }
  }
  page.html
      << "<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
      << "<title>paradnn report</title><style>body{font-family:sans-serif;"
         "max-width:1000px;margin:auto}table{border-collapse:collapse}"
         "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
         "img{max-width:100%}</style></head><body>\n"
      << "<h1>paradnn report</h1>\n<p>Results: <code>"
      << report::Html(page.options.results) << "</code>, "
      << page.results.cases.size() << " cases";
  int rounds = 1, unstable = 0;
  for (const CaseResult& r : page.results.cases) {
    rounds = std::max<int>(rounds, r.rounds_ms.size());
    unstable += r.unstable;
  }
  if (rounds > 1) {
    page.html << ", each the median of " << rounds
              << " rounds in fresh processes, with a 90% interval for a "
                 "re-run's median; "
              << unstable << " unstable.";
  } else {
    page.html << ", each measured in one process: a re-run may move them "
                 "(measure with --paradnn_rounds=3 or more for intervals).";
  }
  if (page.have_platform) {
    page.html << " Platform: " << report::Html(page.platform.name) << " ("
              << report::Html(page.platform.description) << ").";
  }
  page.html << "</p>\n";
  report::Rooflines(page);
  report::HeatMaps(page);
  report::Unstable(page);
  report::Llm(page);
  report::Regressions(page);
  report::Profiles(page);
  if (!page.options.profile.empty()) report::Layers(page);
  if (!page.options.vs.empty() || !page.options.a_select.empty())
    report::Speedups(page);
  if (!page.options.bricks.empty()) report::Bricks(page);
  if (!page.options.scaling.empty()) report::Scaling(page);
  if (!page.options.mlperf.empty()) report::Mlperf(page);
  if (!page.notes.empty()) {
    page.html << "<h2>Not reported</h2>\n<ul>\n";
    for (const std::string& n : page.notes)
      page.html << "<li>" << report::Html(n) << "</li>\n";
    page.html << "</ul>\n";
  }
  // The page checks that every plot loaded (the tests read this line).
  page.html << "<p id='status'>loading</p>\n<script>window.addEventListener("
               "'load',()=>{const imgs=[...document.images];const bad=imgs."
               "filter(i=>!i.complete||i.naturalWidth===0).length;document."
               "getElementById('status').textContent='plots: '+imgs.length+"
               "' loaded: '+(imgs.length-bad)+' failed: '+bad;});</script>\n"
            << "</body></html>\n";
  std::ofstream(page.options.out + "/index.html") << page.html.str();
  return page.notes;
}

}  // namespace paradnn
