// The report's page as its sections write it: the results and platform
// they read, the HTML they append, what they could not report, and the
// plumbing of a figure (its CSV, gnuplot script and SVG). One file per
// section (analysis/report/*.cpp); analysis/report.cpp puts them in order.
#pragma once

#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "analysis/report.h"
#include "machine/platform.h"
#include "records/results.h"

namespace paradnn::report {

// gnuplot's terminal: SVG, white.
extern const char* const kTerminal;
// A perceptually uniform palette (viridis' colors at five stops): equal
// steps of utilization look equally far apart, unlike a rainbow's.
extern const char* const kPalette;
// Categories (families) in viridis' darker stops, readable on white.
inline constexpr const char* kCategoryColors[] = {"#440154", "#3b528b",
                                                  "#21918c", "#5ec962"};

// Each family's cases per backend, data type and mode ("torch/fp32/train"):
// heat maps and regressions never pool them.
std::map<std::string, std::vector<CaseResult>> Groups(
    const std::vector<CaseResult>& cases, const std::string& family);
// "torch/fp32/train" -> "torch_fp32_train", for file names.
std::string FileKey(std::string group);
// The integer parameters whose values differ among the cases, most values
// first (batch first among equals).
std::vector<std::string> Varying(const std::vector<CaseResult>& cases);
// Text escaped for HTML.
std::string Html(const std::string& s);
// " (low-high)": the interval of the case's step time from its rounds,
// or of a rate, `per_ms` over it; "" without rounds.
std::string TimeInterval(const CaseResult& r);
std::string RateInterval(const CaseResult& r, double per_ms);

// Values per (x, y) cell of two integer parameters.
using Cells = std::map<std::pair<int64_t, int64_t>, std::vector<double>>;

struct Page {
  explicit Page(const ReportOptions& o) : options(o) {}

  const ReportOptions& options;
  Results results;
  Platform platform;
  bool have_platform = false;
  std::ostringstream html;
  std::vector<std::string> notes;

  // Writes NAME.gp (the terminal, the output NAME.svg, CSV input, then
  // `script`) and, with plots, runs gnuplot on it.
  void Gnuplot(const std::string& name, const std::string& script);
  // The figure NAME.svg with its caption and links to its data.
  void Figure(const std::string& name, const std::string& caption);
  // The peak FLOP/s of a case's device and data type, 0 where unknown.
  double Peak(const CaseResult& r) const;
  // A heat map of each cell's median: NAME.csv (the cells' indices and
  // values, the median as `value`, the count) and NAME.svg, titled
  // "TITLE (median over the other parameters)"; `colorbar` sets gnuplot's
  // colour scale.
  void GridMap(const std::string& name, const std::string& x_key,
               const std::string& y_key, const std::string& value,
               const std::string& colorbar, const std::string& title,
               const Cells& cells);
};

// The sections, in the order of the page.
void Rooflines(Page& page);
void HeatMaps(Page& page);
void Unstable(Page& page);
void Llm(Page& page);
void Regressions(Page& page);
void Profiles(Page& page);
void Layers(Page& page);    // --profile
void Speedups(Page& page);  // --vs, or --a/--b
void Bricks(Page& page);    // --bricks
void Scaling(Page& page);   // --scaling
void Mlperf(Page& page);    // --mlperf

}  // namespace paradnn::report
