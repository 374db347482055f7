#include "analysis/report.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>

#include "adapters/mlperf/side_by_side.h"
#include "analysis/calibrate.h"
#include "analysis/stats.h"
#include "records/results.h"

namespace paradnn {
namespace fs = std::filesystem;

namespace {

const char* kTerminal =
    "set terminal svg size 900,560 dynamic enhanced font 'sans,11' "
    "background rgb 'white'\n";

// The two parameters of each family's heat map.
// A perceptually uniform palette (viridis' colors at five stops): equal
// steps of utilization look equally far apart, unlike a rainbow's.
constexpr char kPalette[] =
    "set palette defined (0 '#440154', 0.25 '#3b528b', 0.5 '#21918c', "
    "0.75 '#5ec962', 1 '#fde725')\n";
// Categories (families) in viridis' darker stops, readable on white.
constexpr const char* kCategoryColors[] = {"#440154", "#3b528b", "#21918c",
                                           "#5ec962"};

// Each family's cases per backend, data type and mode ("torch/fp32/train"):
// heat maps and regressions never pool them.
std::map<std::string, std::vector<CaseResult>> Groups(
    const std::vector<CaseResult>& cases, const std::string& family) {
  std::map<std::string, std::vector<CaseResult>> groups;
  for (const CaseResult& r : cases) {
    if (r.c.model.family != family) continue;
    groups[ContextName(r.c.backend, r.c.dtype, r.c.mode)].push_back(r);
  }
  return groups;
}

// "torch/fp32/train" -> "torch_fp32_train", for file names.
std::string FileKey(std::string group) {
  std::replace(group.begin(), group.end(), '/', '_');
  return group;
}

// The integer parameters whose values differ among the cases, most values
// first (batch first among equals).
std::vector<std::string> Varying(const std::vector<CaseResult>& cases) {
  std::vector<std::pair<size_t, std::string>> varying;
  for (const ParamDef& p : cases.front().c.model.def().params) {
    if (!p.choices.empty()) continue;
    std::set<int64_t> values;
    for (const CaseResult& r : cases) values.insert(r.c.model.Int(p.key));
    if (values.size() > 1) varying.push_back({values.size(), p.key});
  }
  std::stable_sort(varying.begin(), varying.end(), [](auto& a, auto& b) {
    return a.first > b.first ||
           (a.first == b.first && a.second == "batch" && b.second != "batch");
  });
  std::vector<std::string> keys;
  for (const auto& [n, key] : varying) keys.push_back(key);
  return keys;
}

std::string Html(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

class Report {
 public:
  explicit Report(const ReportOptions& o) : o_(o) {}

  std::vector<std::string> Write() {
    if (o_.plots && std::system("gnuplot --version > /dev/null 2>&1") != 0) {
      throw std::runtime_error(
          "gnuplot is not installed: scripts/setup.sh installs gnuplot-nox "
          "(--no-plots writes the plots' scripts and data without it)");
    }
    if (!o_.plots) {
      notes_.push_back(
          "plots not drawn (--no-plots): each figure links its gnuplot "
          "script and data; cd to this folder and run gnuplot NAME.gp");
    }
    fs::create_directories(o_.out);
    a_ = ReadResults(o_.results);
    for (const std::string& file : o_.extra_results) {
      const Results more = ReadResults(file);
      a_.cases.insert(a_.cases.end(), more.cases.begin(), more.cases.end());
      a_.failed.insert(a_.failed.end(), more.failed.begin(), more.failed.end());
    }
    for (const std::string& f : a_.failed) {
      notes_.push_back("failed or skipped in " + o_.results + ": " + f);
    }
    if (!o_.platform.empty()) {
      try {
        platform_ = LoadPlatform(o_.platform);
        have_platform_ = true;
      } catch (const std::exception& e) {
        notes_.push_back(std::string(e.what()) +
                         ": roofs and utilization left out");
      }
    }
    html_ << "<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
          << "<title>paradnn report</title><style>body{font-family:sans-serif;"
             "max-width:1000px;margin:auto}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
             "img{max-width:100%}</style></head><body>\n"
          << "<h1>paradnn report</h1>\n<p>Results: <code>" << Html(o_.results)
          << "</code>, " << a_.cases.size() << " cases";
    int rounds = 1, unstable = 0;
    for (const CaseResult& r : a_.cases) {
      rounds = std::max<int>(rounds, r.rounds_ms.size());
      unstable += r.unstable;
    }
    if (rounds > 1) {
      html_ << ", each the median of " << rounds
            << " rounds in fresh processes, with a 90% interval for a "
               "re-run's median; "
            << unstable << " unstable.";
    } else {
      html_ << ", each measured in one process: a re-run may move them "
               "(measure with --paradnn_rounds=3 or more for intervals).";
    }
    if (have_platform_) {
      html_ << " Platform: " << Html(platform_.name) << " ("
            << Html(platform_.description) << ").";
    }
    html_ << "</p>\n";
    Rooflines();
    for (const FamilyDef& f : Families()) {
      if (f.name == "LLM") continue;  // per phase, in its own section
      for (const auto& [group, cases] : Groups(a_.cases, f.name)) {
        HeatMap(f.name, group, cases);
      }
    }
    Unstable();
    Llm();
    Regressions();
    Profiles();
    if (!o_.vs.empty() || !o_.a_select.empty()) Speedups();
    if (!o_.bricks.empty()) Bricks();
    if (!o_.scaling.empty()) Scaling();
    if (!o_.mlperf.empty()) Mlperf();
    if (!notes_.empty()) {
      html_ << "<h2>Not reported</h2>\n<ul>\n";
      for (const std::string& n : notes_)
        html_ << "<li>" << Html(n) << "</li>\n";
      html_ << "</ul>\n";
    }
    // The page checks that every plot loaded (the tests read this line).
    html_ << "<p id='status'>loading</p>\n<script>window.addEventListener("
             "'load',()=>{const imgs=[...document.images];const bad=imgs."
             "filter(i=>!i.complete||i.naturalWidth===0).length;document."
             "getElementById('status').textContent='plots: '+imgs.length+"
             "' loaded: '+(imgs.length-bad)+' failed: '+bad;});</script>\n"
          << "</body></html>\n";
    std::ofstream(o_.out + "/index.html") << html_.str();
    return notes_;
  }

 private:
  void Gnuplot(const std::string& name, const std::string& script) {
    const std::string path = o_.out + "/" + name + ".gp";
    std::ofstream(path) << kTerminal << "set output '" << name << ".svg'\n"
                        << "set datafile separator ','\n"
                        << script;
    if (!o_.plots) return;
    const std::string cmd = "cd '" + o_.out + "' && gnuplot '" + name +
                            ".gp' 2> '" + name + ".gnuplot.log'";
    if (std::system(cmd.c_str()) != 0) {
      throw std::runtime_error("gnuplot failed on " + path + " (see " + o_.out +
                               "/" + name + ".gnuplot.log)");
    }
    fs::remove(o_.out + "/" + name + ".gnuplot.log");
  }

  void Figure(const std::string& name, const std::string& caption) {
    html_ << "<figure>";
    if (o_.plots) {
      html_ << "<img src='" << name << ".svg' alt='" << Html(caption) << "'>";
    }
    html_ << "<figcaption>" << Html(caption) << " (<a href='" << name
          << ".csv'>data</a>"
          << (o_.plots ? "" : ", <a href='" + name + ".gp'>gnuplot script</a>")
          << ")</figcaption></figure>\n";
  }

  double Peak(const CaseResult& r) const {
    const PeakFlops& peaks =
        platform_.DevicePeaks(platform_.DeviceOf(r.c.backend));
    auto it = peaks.find(ToString(r.c.dtype));
    return it == peaks.end() ? 0 : it->second;
  }

  // A roofline per device the cases ran on: the CPU's is "roofline", a
  // GPU's "roofline_gpu" (a GPU's roofs would flatten the CPU's cases).
  void Rooflines() {
    std::map<std::string, std::vector<const CaseResult*>> by_device;
    for (const CaseResult& r : a_.cases) {
      by_device[platform_.DeviceOf(r.c.backend)].push_back(&r);
    }
    if (!have_platform_) {
      notes_.push_back("no platform file: the roofline has no roofs");
    }
    html_ << "<h2>Roofline</h2>\n";
    for (const auto& [device, cases] : by_device) Roofline(device, cases);
  }

  void Roofline(const std::string& device,
                const std::vector<const CaseResult*>& cases) {
    const std::string name =
        device == "cpu" ? "roofline" : "roofline_" + FileKey(device);
    std::ofstream csv(o_.out + "/" + name + ".csv");
    csv << "family,case,intensity,flops,dtype\n";
    std::set<std::string> dtypes;
    for (const CaseResult* r : cases) {
      csv << Series(*r) << "," << r->name << "," << r->intensity << ","
          << r->flops << "," << ToString(r->c.dtype) << "\n";
      dtypes.insert(ToString(r->c.dtype));
    }
    csv.close();  // before gnuplot reads it
    std::ostringstream gp;
    gp << "set logscale xy\nset xrange [0.5:*]\n"
       << "set xlabel 'arithmetic intensity (FLOP/byte)'\n"
       << "set ylabel 'FLOP/s'\nset key outside right top\nset grid\n";
    // A colour per family, a marker per data type (each type has its own
    // roof below): fp32 circles, bf16 squares, fp16 triangles.
    std::string plots;
    std::vector<std::string> families;
    for (const FamilyDef& f : Families()) {
      if (f.name != "LLM") families.push_back(f.name);
    }
    families.push_back("LLM prefill");
    families.push_back("LLM decode");
    for (size_t i = 0; i < families.size(); ++i) {
      const std::string& family = families[i];
      for (const std::string& dtype : dtypes) {
        if (!plots.empty()) plots += ", ";
        const std::string title =
            dtypes.size() > 1 ? family + " " + dtype : family;
        plots += "'" + name + ".csv' skip 1 using (strcol(1) eq '" + family +
                 "' && strcol(5) eq '" + dtype +
                 "' ? $3 : 1/0):4 with points pt " +
                 (dtype == "bf16"   ? "5"
                  : dtype == "fp16" ? "9"
                                    : "7") +
                 " ps 0.8 lc rgb '" +
                 kCategoryColors[i % std::size(kCategoryColors)] + "' title '" +
                 title + "'";
      }
    }
    const PeakFlops& roofs = platform_.DevicePeaks(device);
    const double bandwidth = platform_.Bandwidth(device);
    if (have_platform_ && bandwidth > 0) {
      gp << "set samples 400\nbw=" << bandwidth << "\n";
      for (const auto& [dtype, peak] : roofs) {
        gp << "roof_" << dtype << "(x) = bw*x < " << peak
           << " ? bw*x : " << peak << "\n";
        plots += ", roof_" + dtype + "(x) with lines lw 2 title '" + dtype +
                 " roof (" + Num(peak / 1e9, 3) + " GFLOP/s, " +
                 Num(bandwidth / 1e9, 3) + " GB/s)'";
      }
      // Each backend's own GEMM, where it sits below the roof: the gap is
      // what its library leaves on this device.
      for (const auto& [backend, peaks] : platform_.gemm_flops) {
        if (platform_.DeviceOf(backend) != device) continue;
        for (const auto& [dtype, gemm] : peaks) {
          const auto roof = roofs.find(dtype);
          if (roof == roofs.end() || gemm >= 0.98 * roof->second) continue;
          plots += ", " + Num(gemm, 6) + " with lines dt 2 title '" + backend +
                   " " + dtype + " GEMM (" + Num(gemm / 1e9, 3) + " GFLOP/s)'";
        }
      }
    } else if (have_platform_) {
      notes_.push_back("the platform file has no memory bandwidth of the " +
                       device + ": its roofline has no roofs");
    }
    gp << "plot " << plots << "\n";
    Gnuplot(name, gp.str());
    const auto described = platform_.device_names.find(device);
    Figure(name, "every case on the " + device +
                     (described == platform_.device_names.end()
                          ? ""
                          : " (" + described->second + ")") +
                     " at (intensity, FLOP/s), by family and data type, "
                     "each type under its own roof");
  }

  // Values per (x, y) cell of two integer parameters.
  using Cells = std::map<std::pair<int64_t, int64_t>, std::vector<double>>;

  // A heat map of each cell's median: NAME.csv (the cells' indices and
  // values, the median as `value`, the count) and NAME.svg, titled
  // "TITLE (median over the other parameters)"; `colorbar` sets gnuplot's
  // colour scale.
  void GridMap(const std::string& name, const std::string& x_key,
               const std::string& y_key, const std::string& value,
               const std::string& colorbar, const std::string& title,
               const Cells& cells) {
    std::map<int64_t, int> xi, yi;
    for (const auto& [xy, v] : cells) {
      xi[xy.first];
      yi[xy.second];
    }
    for (auto* index : {&xi, &yi}) {
      int i = 0;
      for (auto& [key, at] : *index) at = i++;
    }
    std::ofstream csv(o_.out + "/" + name + ".csv");
    csv << "x_index,y_index," << x_key << "," << y_key << "," << value
        << ",cases\n";
    for (const auto& [xy, v] : cells) {
      csv << xi[xy.first] << "," << yi[xy.second] << "," << xy.first << ","
          << xy.second << "," << Median(v) << "," << v.size() << "\n";
    }
    csv.close();
    auto tics = [](const std::map<int64_t, int>& idx) {
      std::string t = "(";
      for (const auto& [v, i] : idx) {
        t += (i ? ", '" : "'") + std::to_string(v) + "' " + std::to_string(i);
      }
      return t + ")";
    };
    std::ostringstream gp;
    gp << "set xlabel '" << x_key << "'\nset ylabel '" << y_key
       << "'\nset xtics " << tics(xi) << "\nset ytics " << tics(yi) << "\n"
       << colorbar << kPalette << "set xrange [-0.5:" << xi.size() - 0.5
       << "]\nset yrange [-0.5:" << yi.size() - 0.5 << "]\n"
       << "set title '" << title << " (median over the other parameters)'\n"
       << "set style fill solid 1.0 noborder\n"
       << "plot '" << name << ".csv' skip 1 using 1:2:(0.5):(0.5):5 with "
       << "boxxyerror fc palette notitle, '" << name
       << ".csv' skip 1 using 1:2:(sprintf('%.3g',$5)) with labels "
       << "tc rgb 'white' notitle\n";
    Gnuplot(name, gp.str());
  }

  // The roofline's series of a case: its family, an LLM's by phase (a
  // decode step is bound by memory, a prefill step by compute).
  static std::string Series(const CaseResult& r) {
    const ModelSpec& m = r.c.model;
    return m.family == "LLM" ? "LLM " + m.Str("phase") : m.family;
  }

  // LLM cases: tokens per second over batch and context per phase (the
  // median over the other parameters: sizes, kv_heads), and with --slo
  // which cases meet the latency limits (TTFT for a prefill step, TPOT for
  // a decode step).
  void Llm() {
    std::vector<const CaseResult*> llm;
    for (const CaseResult& r : a_.cases) {
      if (r.c.model.family == "LLM") llm.push_back(&r);
    }
    if (llm.empty()) {
      if (!o_.slo.empty()) notes_.push_back("--slo: no LLM cases");
      return;
    }
    html_ << "<h2>LLM serving</h2>\n<p>Tokens per second: a prefill step "
             "gives each prompt's tokens (its time is the time to first "
             "token, TTFT), a decode step one per sequence (its time is the "
             "time per output token, TPOT). Decode steps read every weight "
             "and the whole key/value cache for a few tokens: they sit on "
             "the roofline's bandwidth roof; prefill steps on its compute "
             "roof.</p>\n";
    std::map<std::string, std::vector<const CaseResult*>> groups;
    for (const CaseResult* r : llm) {
      groups[r->c.model.Str("phase") + "/" +
             ContextName(r->c.backend, r->c.dtype, r->c.mode)]
          .push_back(r);
    }
    for (const auto& [group, cases] : groups) LlmHeatMap(group, cases);
    if (!o_.slo.empty()) Slo(llm);
  }

  static double TokensPerStep(const CaseResult& r) {
    const ModelSpec& m = r.c.model;
    return static_cast<double>(m.Int("batch")) *
           (m.Str("phase") == "prefill" ? m.Int("context") : 1);
  }

  void LlmHeatMap(const std::string& group,
                  const std::vector<const CaseResult*>& cases) {
    Cells cells;
    for (const CaseResult* r : cases) {
      cells[{r->c.model.Int("batch"), r->c.model.Int("context")}].push_back(
          TokensPerStep(*r) / (r->step_ms / 1e3));
    }
    const std::string name = "llm_tokens_" + FileKey(group);
    GridMap(name, "batch", "context", "tokens_per_second",
            "set cblabel 'tokens/s'\nset logscale cb\n", "LLM " + group, cells);
    Figure(name, "LLM " + group + ": tokens per second over batch and context");
  }

  // --slo ttft_ms=X,tpot_ms=Y: each LLM case's latency against its phase's
  // limit (a limit not given: the phase is not judged).
  void Slo(const std::vector<const CaseResult*>& llm) {
    std::map<std::string, double> limits;
    for (const std::string& part : Split(o_.slo, ',')) {
      const size_t eq = part.find('=');
      const std::string key = part.substr(0, eq);
      double value = 0;
      if (eq != std::string::npos) {
        try {
          value = std::stod(part.substr(eq + 1));
        } catch (const std::exception&) {
          value = 0;
        }
      }
      if ((key != "ttft_ms" && key != "tpot_ms") || value <= 0) {
        throw std::runtime_error(
            "--slo " + o_.slo + ": '" + part +
            "': expected ttft_ms=MS and/or tpot_ms=MS, comma-separated, "
            "positive");
      }
      limits[key] = value;
    }
    std::ofstream csv(o_.out + "/slo.csv");
    csv << "case,phase,latency,latency_ms,limit_ms,meets,tokens_per_second,"
           "latency_low_ms,latency_high_ms\n";
    html_ << "<h3>Latency limits</h3>\n<p>";
    for (const auto& [key, value] : limits) {
      html_ << "<code>" << key << "</code> &le; " << Num(value, 6) << " ms. ";
    }
    html_ << "A prefill step is judged by TTFT, a decode step by TPOT.</p>\n"
          << "<table><tr><th>case</th><th>latency (ms)</th><th>limit "
             "(ms)</th><th>meets</th><th>tokens/s</th></tr>\n";
    int judged = 0, meet = 0;
    for (const CaseResult* r : llm) {
      const bool prefill = r->c.model.Str("phase") == "prefill";
      const std::string key = prefill ? "ttft_ms" : "tpot_ms";
      const auto limit = limits.find(key);
      if (limit == limits.end()) continue;
      const bool ok = r->step_ms <= limit->second;
      ++judged;
      meet += ok;
      const double tokens = TokensPerStep(*r) / (r->step_ms / 1e3);
      // The limit inside the case's interval: a re-run may judge it the
      // other way.
      const bool noise = r->step_ms_low <= limit->second &&
                         limit->second <= r->step_ms_high &&
                         r->step_ms_low < r->step_ms_high;
      csv << r->name << "," << r->c.model.Str("phase") << "," << key << ","
          << r->step_ms << "," << limit->second << "," << (ok ? "yes" : "no")
          << "," << tokens << "," << r->step_ms_low << "," << r->step_ms_high
          << "\n";
      html_ << "<tr><td style='text-align:left'>" << Html(r->name)
            << "</td><td>" << Num(r->step_ms, 4) << TimeInterval(*r)
            << "</td><td>" << Num(limit->second, 6) << "</td><td>"
            << (ok ? "yes" : "no") << (noise ? ", within noise" : "")
            << "</td><td>" << Num(tokens, 4)
            << RateInterval(*r, TokensPerStep(*r) * 1e3) << "</td></tr>\n";
    }
    html_ << "</table>\n<p>" << meet << " of " << judged
          << " cases meet their limit (<a href='slo.csv'>data</a>).</p>\n";
  }

  // Utilization (or GFLOP/s) over the two parameters that vary most, the
  // median over the others, for one family, backend, data type and mode.
  void HeatMap(const std::string& family, const std::string& group,
               const std::vector<CaseResult>& cases) {
    const std::vector<std::string> varying = Varying(cases);
    if (varying.size() < 2) {
      notes_.push_back(family + " " + group + ": " +
                       (varying.empty() ? "no parameter varies"
                                        : "only " + varying[0] + " varies") +
                       ": no heat map");
      return;
    }
    const std::pair<std::string, std::string> axes = {varying[0], varying[1]};
    const bool util = have_platform_;
    Cells cells;
    for (const CaseResult& r : cases) {
      const int64_t x = r.c.model.Int(axes.first);
      const int64_t y = r.c.model.Int(axes.second);
      const double peak = Peak(r);
      // A case above the platform's peak is no utilization over 1: it says
      // the platform file was measured slower than this run; the map's
      // colors stop at 1 and the case is named.
      if (util && peak > 0 && r.flops > peak) {
        notes_.push_back(r.name + ": " + Num(r.flops / 1e9, 3) +
                         " GFLOP/s, above the platform's peak of " +
                         Num(peak / 1e9, 3) +
                         " GFLOP/s (calibrate again on this machine)");
      }
      cells[{x, y}].push_back(util && peak > 0 ? r.flops / peak
                                               : r.flops / 1e9);
    }
    const std::string name = "heatmap_" + family + "_" + FileKey(group);
    GridMap(name, axes.first, axes.second, util ? "flops_util" : "gflops",
            std::string("set cblabel '") +
                (util ? "FLOP/s utilization" : "GFLOP/s") + "'\n" +
                (util ? "set cbrange [0:1]\n" : ""),
            family + " " + group, cells);
    if (!heat_title_) {
      html_ << "<h2>Heat maps</h2>\n";
      heat_title_ = true;
    }
    Figure(name, family + " " + group + ": " +
                     (util ? "utilization" : "GFLOP/s") + " over " +
                     axes.first + " and " + axes.second);
  }

  void Regressions() {
    html_ << "<h2>Which parameters matter</h2>\n<p>Least squares of "
             "log(examples per second) on the log of each parameter that "
             "varies: a weight w means throughput grows as parameter^w.</p>\n";
    for (const FamilyDef& f : Families()) {
      for (const auto& [group, cases] : Groups(a_.cases, f.name)) {
        const std::string family = f.name + " " + group;
        const Regression r = FitFamily(cases, f.name);
        // terms[0] is the intercept.
        if (r.terms.size() < 2) {
          notes_.push_back(family +
                           ": no numeric parameter varies, no "
                           "regression");
          continue;
        }
        if (r.samples < static_cast<int>(r.terms.size()) + 1) {
          if (r.samples > 0) {
            notes_.push_back(family + ": " + std::to_string(r.samples) +
                             " cases are too few for a regression on " +
                             std::to_string(r.terms.size() - 1) +
                             " parameters");
          }
          continue;
        }
        const std::string name = "regression_" + f.name + "_" + FileKey(group);
        std::ofstream csv(o_.out + "/" + name + ".csv");
        csv << "term,weight\n";
        for (size_t i = 1; i < r.terms.size(); ++i) {
          csv << r.terms[i] << "," << r.weights[i] << "\n";
        }
        csv.close();
        Gnuplot(name,
                "set style fill solid 0.6\nset boxwidth 0.6\nset yzeroaxis\n"
                "set yrange [*<0:0<*]\n"
                "set xzeroaxis\nset ylabel 'weight on log(parameter)'\n"
                "set title '" +
                    std::string(family) + ": R^2 = " + Num(r.r2, 3) +
                    "'\nplot '" + name +
                    ".csv' skip 1 using 0:2:xtic(1) with "
                    "boxes notitle\n");
        Figure(name, std::string(family) + " regression weights");
        html_ << "<table><tr><th>" << family << "</th>";
        for (size_t i = 1; i < r.terms.size(); ++i) {
          html_ << "<th>" << Html(r.terms[i]) << "</th>";
        }
        html_ << "<th>R²</th><th>cases</th></tr><tr><td>weight</td>";
        for (size_t i = 1; i < r.weights.size(); ++i) {
          html_ << "<td>" << Num(r.weights[i], 3) << "</td>";
        }
        html_ << "<td>" << Num(r.r2, 3) << "</td><td>" << r.samples
              << "</td></tr></table>\n";
      }
    }
  }

  // Where step time goes: the mean share of each operation class over the
  // profiled cases of each family, backend and mode, as stacked bars.
  void Profiles() {
    std::map<std::string, std::pair<std::array<double, kOpClasses>, int>>
        groups;
    for (const CaseResult& r : a_.cases) {
      if (!r.profiled) continue;
      auto& [sum, n] = groups[r.c.model.family + "/" + r.c.backend + "/" +
                              ToString(r.c.mode)];
      for (int k = 0; k < kOpClasses; ++k) sum[k] += r.time_frac[k];
      ++n;
    }
    if (groups.empty()) {
      notes_.push_back(
          "no case was profiled (--paradnn_profile): no time breakdown");
      return;
    }
    std::ofstream csv(o_.out + "/profile.csv");
    csv << "group,cases";
    for (int k = 0; k < kOpClasses; ++k) {
      csv << "," << ToString(static_cast<OpClass>(k));
    }
    csv << "\n";
    html_ << "<h2>Where step time goes</h2>\n<p>Mean share of step time per "
             "operation class (--paradnn_profile), by family, backend and "
             "mode.</p>\n<table><tr><th>group</th><th>cases</th>";
    for (int k = 0; k < kOpClasses; ++k) {
      html_ << "<th>" << ToString(static_cast<OpClass>(k)) << "</th>";
    }
    html_ << "</tr>\n";
    for (const auto& [group, entry] : groups) {
      const auto& [sum, n] = entry;
      csv << group << "," << n;
      html_ << "<tr><td>" << Html(group) << "</td><td>" << n << "</td>";
      for (int k = 0; k < kOpClasses; ++k) {
        csv << "," << sum[k] / n;
        html_ << "<td>" << Num(sum[k] / n, 3) << "</td>";
      }
      csv << "\n";
      html_ << "</tr>\n";
    }
    html_ << "</table>\n";
    csv.close();
    std::string plot = "plot 'profile.csv' skip 1 using 3:xtic(1) title 'gemm'";
    for (int k = 1; k < kOpClasses; ++k) {
      plot += ", '' skip 1 using " + std::to_string(k + 3) + " title '" +
              ToString(static_cast<OpClass>(k)) + "'";
    }
    Gnuplot("profile",
            "set style data histograms\nset style histogram rowstacked\n"
            "set style fill solid 0.8 border -1\nset boxwidth 0.7\n"
            "set yrange [0:1]\nset ylabel 'share of step time'\n"
            "set xtics rotate by -30\nset key outside right\n" +
                plot + "\n");
    Figure("profile", "share of step time per operation class");
  }

  // Real MLPerf results beside their models' twins: a table per result,
  // and the MLPerf models as marked points on the synthetic plots (the
  // submission per accelerator at the published size, the twin as it ran
  // here).
  void Mlperf() {
    std::vector<MlperfBenchmark> real;
    try {
      real = SummarizeMlperf(o_.mlperf);
    } catch (const std::exception& e) {
      notes_.push_back(std::string(e.what()) + ": MLPerf left out");
      return;
    }
    if (real.empty()) {
      notes_.push_back("no MLPerf result logs under " + o_.mlperf);
      return;
    }
    const std::vector<TwinComparison> twins = CompareTwins(real, a_.cases);
    html_ << "<h2>Beside MLPerf</h2>\n<p>Each MLPerf result (<code>"
          << Html(o_.mlperf)
          << "</code>) beside its model's twin: the paradnn model built from "
             "the published architecture, at the submission's batch per "
             "accelerator, with its sizes by the cost model; samples per "
             "second here against one accelerator's (the submission's "
             "median over its accelerators).</p>\n<table><tr><th>benchmark"
             "</th><th>system</th><th>per accelerator: batch, samples/s</th>"
             "<th>twin</th><th>params, FLOPs/sample: twin / published</th>"
             "<th>here: fastest samples/s</th><th>here / accelerator</th>"
             "</tr>\n";
    std::ofstream points(o_.out + "/mlperf_points.csv");
    points << "label,kind,params,flop_per_sample,samples_per_second,"
              "intensity,flops\n";
    for (const MlperfBenchmark& b : real) {
      const TwinComparison* t = nullptr;
      for (const TwinComparison& c : twins) {
        if (c.real == &b) t = &c;
      }
      if (t != nullptr) continue;
      const ReferenceModel* m = FindReference(b.benchmark);
      html_ << "<tr><td>" << Html(b.benchmark) << "</td><td>"
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
      html_ << "<tr><td>" << Html(m.benchmark) << "</td><td>"
            << Html(t->real ? t->real->system_name : "no result given")
            << "</td>";
      const bool reference = !t->real && m.reference_batch > 0;
      html_ << "<td>"
            << (t->batch_known() || reference ? t->twin.Str("batch") : "?")
            << (reference ? " (reference)" : "") << ", "
            << (t->accelerator_rate > 0 ? Num(t->accelerator_rate, 4) : "?")
            << "</td><td style='text-align:left'><code>" << Html(t->twin.Name())
            << "</code></td><td>" << Num(t->cost.params / m.params, 3) << ", "
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
        html_ << "<td>" << Num(best->samples_per_second, 4) << " (batch "
              << best->c.model.Str("batch") << ", " << best->c.backend
              << ")</td><td>"
              << (t->accelerator_rate > 0
                      ? Num(best->samples_per_second / t->accelerator_rate, 3)
                      : "")
              << "</td></tr>\n";
      } else {
        html_ << "<td colspan='2'>not run here (about "
              << Num(t->cost.memory / 1073741824.0, 3) << " GiB)</td></tr>\n";
      }
      if (t->accelerator_rate > 0) {
        points << label << ",submission," << m.params << ","
               << m.train_flop_per_sample.value_or(t->flop_per_sample) << ","
               << t->accelerator_rate << ",,\n";
      }
    }
    html_ << "</table>\n<p>Differences between each model and its twin: "
             "<code>build/paradnn mlperf-report</code> writes them with the "
             "sizes (side_by_side.md).</p>\n";
    points.close();
    std::ofstream cases(o_.out + "/mlperf_cases.csv");
    cases << "family,name,params,flop_per_sample,samples_per_second,"
             "intensity,flops\n";
    for (const CaseResult& r : a_.cases) {
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
      Gnuplot(name, "set logscale xy\nset grid\nset key outside right top\n" +
                        axes + p);
      Figure(name, caption);
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

  // Data-parallel scaling: the same cases at several world sizes (the
  // results and the --scaling files), throughput and the all-reduce's
  // share against world size, and the efficiency against one rank where
  // one rank was measured.
  void Scaling() {
    std::vector<Results> runs = {a_};
    for (const std::string& file : o_.scaling) {
      try {
        runs.push_back(ReadResults(file));
      } catch (const std::exception& e) {
        notes_.push_back(std::string(e.what()) + ": left out of scaling");
      }
    }
    std::map<std::string, std::map<int, const CaseResult*>> cases;
    for (const Results& run : runs) {
      for (const CaseResult& r : run.cases) {
        if (cases[r.name].count(run.world_size)) {
          notes_.push_back("scaling: " + r.name + " twice at world size " +
                           std::to_string(run.world_size) + "; " + run.path +
                           " left out");
          continue;
        }
        cases[r.name][run.world_size] = &r;
      }
    }
    std::ofstream csv(o_.out + "/scaling.csv");
    csv << "case,name,world_size,step_ms,examples_per_second,allreduce_frac,"
           "efficiency\n";
    html_ << "<h2>Data-parallel scaling</h2>\n<p>The same cases at several "
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
        html_ << "<tr><td>" << shown << "</td><td>" << Html(name) << "</td><td>"
              << world << "</td><td>" << Num(r->step_ms, 3) << TimeInterval(*r)
              << "</td><td>" << Num(r->samples_per_second, 3) << "</td><td>"
              << Num(r->allreduce_frac, 2) << "</td><td>"
              << (std::isnan(efficiency) ? "" : Num(efficiency, 3))
              << "</td></tr>\n";
      }
      csv << "\n\n";  // one gnuplot data block per case
    }
    html_ << "</table>\n";
    csv.close();
    if (shown == 0) {
      notes_.push_back(
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
    Gnuplot(
        "scaling_throughput",
        axes + "set logscale y\nset ylabel 'examples per second'\n" + plot(5));
    Figure("scaling_throughput", "examples per second against ranks, by case");
    Gnuplot("scaling_allreduce",
            axes + "set yrange [0:1]\nset ylabel 'all-reduce share of step'\n" +
                plot(6));
    Figure("scaling_allreduce",
           "share of step time in the gradients' all-reduce against ranks");
  }

  // Model step times estimated from bricks against the plain runs of the
  // models checked (--paradnn_bricks_out): a scatter per family and the
  // errors per family and context.
  void Bricks() {
    nlohmann::json b;
    try {
      b = ReadJsonFile(o_.bricks, "bricks file");
      if (!b.contains("models") || !b["models"].is_array() ||
          !b.contains("error")) {
        throw std::runtime_error(o_.bricks +
                                 ": not a bricks file (--paradnn_bricks_out): "
                                 "expected 'models' and 'error'");
      }
    } catch (const std::exception& e) {
      notes_.push_back(std::string(e.what()) + ": bricks left out");
      return;
    }
    std::ofstream csv(o_.out + "/bricks.csv");
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
    html_ << "<h2>Model times from layer bricks</h2>\n<p>" << estimated
          << " models' step times estimated from their layers, each timed "
             "once on its own (<code>"
          << Html(o_.bricks) << "</code>)";
    if (b.contains("median_estimated_spread") &&
        b["median_estimated_spread"].is_number()) {
      html_ << ", each with an interval (median &plusmn;"
            << Num(100 * b["median_estimated_spread"].get<double>(), 2) << "%)";
    }
    html_ << ", and " << b.value("checked_models", 0)
          << " of them run plainly after the bricks, the reference. Each "
             "error is an estimate's against a plain run it was not "
             "calibrated on; the bricks took "
          << Num(b.value("bricks_benchmark_s", 0.0), 3) << " s";
    if (b.contains("projected_plain_benchmark_s") &&
        b["projected_plain_benchmark_s"].is_number()) {
      html_ << ", all the models plainly about "
            << Num(b["projected_plain_benchmark_s"].get<double>(), 3)
            << " s (projected from the checked ones)";
    }
    html_ << ".</p>\n";
    if (!families.empty()) {
      std::string plot = "plot x title 'estimate = plain' lc rgb '#888888'";
      for (size_t i = 0; i < families.size(); ++i) {
        plot += ", 'bricks.csv' skip 1 using (strcol(2) eq '" + families[i] +
                "' ? $4 : NaN):3 with points pt 7 ps 0.6 lc rgb '" +
                kCategoryColors[i % std::size(kCategoryColors)] + "' title '" +
                families[i] + "'";
      }
      Gnuplot("bricks",
              "set logscale xy\nset xlabel 'plain run, ms per step'\n"
              "set ylabel 'estimated from bricks, ms per step'\n"
              "set key left top\n" +
                  plot + "\n");
      Figure("bricks", "Estimated against plain step time per checked model");
    }
    html_ << "<table><tr><th>group</th><th>models checked</th><th>mean "
             "error</th><th>worst error</th><th>estimate/plain (geometric "
             "mean)</th></tr>\n";
    const nlohmann::json& errors = b["error"];
    for (const char* level : {"per_family", "per_family_context"}) {
      if (!errors.contains(level) || !errors[level].is_object()) continue;
      for (const auto& [group, e] : errors[level].items()) {
        if (!e.is_object()) continue;
        html_ << "<tr><td>" << Html(group) << "</td><td>"
              << e.value("models", 0) << "</td><td>"
              << Num(100 * e.value("mean_abs_error", 0.0), 3) << "%</td><td>"
              << Num(100 * e.value("max_abs_error", 0.0), 3) << "%</td><td>"
              << Num(e.value("geomean", 0.0), 3) << "</td></tr>\n";
      }
    }
    html_ << "</table>\n";
  }

  // The one backend every case of the results ran on, or "".
  static std::string OnlyBackend(const Results& r) {
    std::set<std::string> backends;
    for (const CaseResult& c : r.cases) backends.insert(c.c.backend);
    return backends.size() == 1 ? *backends.begin() : "";
  }

  void Speedups() {
    const std::string b_path = o_.vs.empty() ? o_.results : o_.vs;
    const Results b = b_path == o_.results ? a_ : ReadResults(b_path);
    std::string a_select = o_.a_select, b_select = o_.b_select;
    Matching m = Match(a_.cases, a_select, b.cases, b_select);
    // Two files of one backend each (two libraries, two machines) share no
    // name: paired by model instead, the backends set aside, and said so.
    const std::string a_backend = OnlyBackend(a_), b_backend = OnlyBackend(b);
    if (m.matched.empty() && a_select.empty() && b_select.empty() &&
        !a_backend.empty() && !b_backend.empty() && a_backend != b_backend) {
      a_select = "/" + a_backend + "/";
      b_select = "/" + b_backend + "/";
      m = Match(a_.cases, a_select, b.cases, b_select);
      notes_.push_back(
          "no case name is in both files: cases paired by model "
          "across backends, as --a " +
          a_select + " --b " + b_select + " would");
    }
    std::string a_label = a_select.empty() ? o_.results : a_select;
    std::string b_label = b_select.empty() ? b_path : b_select;
    // What the plots call A and B: "onednn over torch", "a over b".
    auto shown = [](const std::string& label) {
      std::string s = label;
      s.erase(0, s.find_first_not_of('/'));
      s.erase(s.find_last_not_of('/') + 1);
      return s.find('/') == std::string::npos
                 ? s
                 : std::filesystem::path(s).stem().string();
    };
    std::string a_shown = shown(a_label), b_shown = shown(b_label);
    // Two stacks (two distributions, two releases of a library): each side
    // is named by what its stack has that the other's lacks, the plots by
    // the first such item ("Debian GNU/Linux 13 (trixie)").
    if (const auto own = StackContrast(a_.stack, b.stack)) {
      auto first = [](const std::string& items) {
        return items.empty() ? std::string("the same")
                             : items.substr(0, items.find(", "));
      };
      a_label = WithStack(a_label, own->first);
      b_label = WithStack(b_label, own->second);
      a_shown = first(own->first);
      b_shown = first(own->second);
    }
    // One way everywhere (compare too): B's step time over A's, below 1
    // where B is faster.
    const std::string b_over_a = "step time of " + b_shown + " over " + a_shown;
    html_ << "<h2>Step time of " << Html(b_shown) << " over " << Html(a_shown)
          << "</h2>\n<p>A = <code>" << Html(a_label) << "</code>, B = <code>"
          << Html(b_label)
          << "</code>: B/A = B's step time / A's step time (below 1: B is "
             "faster), for "
          << m.matched.size() << " cases matched by canonical name.</p>\n";
    for (const std::string& n : m.only_a) notes_.push_back("only in A: " + n);
    for (const std::string& n : m.only_b) notes_.push_back("only in B: " + n);
    if (m.matched.empty()) {
      notes_.push_back("A and B have no case in common: no speedups");
      return;
    }
    std::ofstream csv(o_.out + "/speedup.csv");
    csv << "family,case,a_ms,b_ms,speedup,params," << o_.color
        << ",speedup_low,speedup_high,verdict\n";
    std::map<std::string, std::vector<double>> by_family;
    // Per family, backend, data type and mode: stacks differ by library
    // and data type, and training and inference take different kernels.
    std::map<std::string, std::vector<std::pair<RoundSummary, RoundSummary>>>
        rounds_by_group;
    std::map<std::string, std::vector<const Speedup*>> by_group;
    for (const Speedup& s : m.matched) {
      const std::string family = s.a->c.model.family;
      by_family[family].push_back(s.value);
      const std::string group = SpeedupGroup(s);
      rounds_by_group[group].emplace_back(s.sa, s.sb);
      by_group[group].push_back(&s);
      csv << family << "," << s.key << "," << s.a->step_ms << ","
          << s.b->step_ms << "," << s.value << "," << s.a->params << ",";
      bool has = false;
      for (const ParamDef& p : s.a->c.model.def().params) {
        has = has || (p.key == o_.color && p.choices.empty());
      }
      csv << (has ? std::to_string(s.a->c.model.Int(o_.color)) : "") << ","
          << s.ratio.low << "," << s.ratio.high << ","
          << ToString(Decide(s.ratio, kDefaultMargin)) << "\n";
    }
    csv.close();
    SpeedupIntervals(m, rounds_by_group);
    std::ofstream box(o_.out + "/speedup_box.csv");
    box << "index,family,p2,p9,median,p91,p98,cases\n";
    html_ << "<table><tr><th>family</th><th>cases</th><th>p2</th><th>p9</th>"
             "<th>median</th><th>p91</th><th>p98</th></tr>\n";
    std::string tics = "(";
    int i = 0;
    for (const auto& [family, values] : by_family) {
      const Box bx = BoxOf(values);
      box << i << "," << family << "," << bx.p2 << "," << bx.p9 << ","
          << bx.median << "," << bx.p91 << "," << bx.p98 << "," << bx.n << "\n";
      html_ << "<tr><td>" << family << "</td><td>" << bx.n << "</td><td>"
            << Num(bx.p2, 3) << "</td><td>" << Num(bx.p9, 3) << "</td><td>"
            << Num(bx.median, 3) << "</td><td>" << Num(bx.p91, 3) << "</td><td>"
            << Num(bx.p98, 3) << "</td></tr>\n";
      tics += (i ? ", '" : "'") + family + "' " + std::to_string(i);
      ++i;
    }
    html_ << "</table>\n";
    box.close();
    Gnuplot("speedup_box",
            "set xtics " + tics + ")\nset xrange [-0.6:" + std::to_string(i) +
                "-0.4]\nset ylabel '" + b_over_a +
                "'\nset grid y\n"
                "set boxwidth 0.4\nset style fill solid 0.3\n"
                "plot 'speedup_box.csv' skip 1 using 1:4:3:7:6 with "
                "candlesticks title 'p9-p91, whiskers p2-p98', "
                "'' skip 1 using 1:5:5:5:5 with candlesticks lw 2 title "
                "'median', 1 with lines dt 2 notitle\n");
    Figure(
        "speedup_box",
        b_over_a + " per family (box 9th-91st percentile, whiskers 2nd-98th)");
    Gnuplot("speedup",
            "set logscale x\nset logscale cb\nset xlabel 'params'\n"
            "set ylabel '" +
                b_over_a + "'\nset cblabel '" + o_.color + "'\n" + kPalette +
                "set grid\nplot 'speedup.csv' skip 1 using 6:5:7 with "
                "points pt 7 palette notitle, 1 with lines dt 2 notitle\n");
    Figure("speedup", b_over_a + " against params, coloured by " + o_.color);
    SpeedupParameters(by_group, b_over_a);
  }

  // "FC torch/fp32/train"; "FC onednn-torch/fp32/train" where A and B are
  // two backends.
  static std::string SpeedupGroup(const Speedup& s) {
    const Case& a = s.a->c;
    const std::string backend = a.backend == s.b->c.backend
                                    ? a.backend
                                    : a.backend + "-" + s.b->c.backend;
    return a.model.family + " " + ContextName(backend, a.dtype, a.mode);
  }

  // Where B wins or loses, per group: a heat map of the speedup over the
  // two parameters that vary most (the median over the others), and the
  // least squares of log(speedup) on the log of each varying parameter.
  void SpeedupParameters(
      const std::map<std::string, std::vector<const Speedup*>>& by_group,
      const std::string& b_over_a) {
    std::ostringstream table;
    for (const auto& [group, speedups] : by_group) {
      std::vector<CaseResult> cases;
      std::vector<const CaseResult*> models;
      std::vector<double> values;
      for (const Speedup* s : speedups) {
        cases.push_back(*s->a);
        models.push_back(s->a);
        values.push_back(s->value);
      }
      const std::vector<std::string> varying = Varying(cases);
      if (varying.size() >= 2) {
        Cells cells;
        for (const Speedup* s : speedups) {
          cells[{s->a->c.model.Int(varying[0]), s->a->c.model.Int(varying[1])}]
              .push_back(s->value);
        }
        std::string name = "speedup_heatmap_" + FileKey(group);
        std::replace(name.begin(), name.end(), ' ', '_');
        GridMap(name, varying[0], varying[1], "speedup",
                "set logscale cb\nset cblabel '" + b_over_a + "'\n", group,
                cells);
        Figure(name, group + ": " + b_over_a + " against " + varying[0] +
                         " and " + varying[1]);
      }
      const Regression r = FitOnParameters(models, values);
      if (r.terms.size() < 2 ||
          r.samples < static_cast<int>(r.terms.size()) + 1) {
        continue;
      }
      table << "<tr><td>" << Html(group) << "</td><td>" << r.samples
            << "</td><td>" << Num(r.r2, 3) << "</td><td>";
      for (size_t i = 1; i < r.terms.size(); ++i) {
        table << (i > 1 ? ", " : "") << r.terms[i] << " "
              << Num(r.weights[i], 3);
      }
      table << "</td></tr>\n";
    }
    if (table.str().empty()) return;
    html_ << "<h3>Which parameters explain the speedup</h3>\n<p>Least "
             "squares of log(speedup) on the log of each parameter that "
             "varies: a weight w means the speedup grows as "
             "parameter^w.</p>\n<table><tr><th>group</th><th>cases</th>"
             "<th>R^2</th><th>weights</th></tr>\n"
          << table.str() << "</table>\n";
  }

  // Each ratio with its interval from both sides' rounds and what it
  // decides; per group (family, backend, data type, mode) the geometric
  // mean with its interval and the verdicts' counts.
  void SpeedupIntervals(
      const Matching& m,
      const std::map<std::string,
                     std::vector<std::pair<RoundSummary, RoundSummary>>>&
          rounds_by_group) {
    int rounds_a = 0, rounds_b = 0;
    for (const Speedup& s : m.matched) {
      rounds_a = std::max<int>(rounds_a, s.a->rounds_ms.size());
      rounds_b = std::max<int>(rounds_b, s.b->rounds_ms.size());
    }
    auto interval = [](bool bounded, double low, double high) {
      return bounded ? Num(low, 3) + "-" + Num(high, 3) : std::string("none");
    };
    html_ << "<p>Intervals from both sides' rounds (" << rounds_a << " and "
          << rounds_b
          << " at most) and the spread of their groups' rounds "
             "(docs/running.md, \"Rounds\"): B is <i>faster</i> or "
             "<i>slower</i> where the ratio's 90% interval leaves out 1, "
             "<i>equivalent</i> where it lies inside 1 &plusmn; "
          << Num(100 * kDefaultMargin, 2)
          << "%, else <i>undecided</i> (more rounds would tell: paradnn "
             "compare --run-a/--run-b adds them). A group's ratio is the "
             "geometric mean of its cases', its interval from its rounds, "
             "each round the mean over the group's cases (a slow round slows "
             "them together).</p>\n"
          << "<table><tr><th>group</th><th>cases</th><th>B/A</th><th>90% "
             "interval</th><th>faster</th><th>slower</th><th>equivalent</th>"
             "<th>undecided</th></tr>\n";
    for (const auto& [group, cases] : rounds_by_group) {
      const GroupRatio g = CompareGroup(cases, kDefaultMargin);
      html_ << "<tr><td>" << Html(group) << "</td><td>" << g.cases
            << "</td><td>" << Num(g.value, 3) << "</td><td>"
            << interval(g.bounded, g.low, g.high) << "</td><td>" << g.faster
            << "</td><td>" << g.slower << "</td><td>" << g.equivalent
            << "</td><td>" << g.undecided << "</td></tr>\n";
    }
    html_ << "</table>\n<table><tr><th>case</th><th>A ms</th><th>B "
             "ms</th><th>B/A</th><th>interval</th><th>B is</th></tr>\n";
    for (const Speedup& s : m.matched) {
      html_ << "<tr><td style='text-align:left'>" << Html(s.key) << "</td><td>"
            << Num(s.a->step_ms, 4) << "</td><td>" << Num(s.b->step_ms, 4)
            << "</td><td>" << Num(s.value, 3) << "</td><td>"
            << interval(s.ratio.bounded, s.ratio.low, s.ratio.high)
            << "</td><td>" << ToString(Decide(s.ratio, kDefaultMargin))
            << "</td></tr>\n";
    }
    html_ << "</table>\n";
  }

  // " (low-high)": the interval of the case's step time from its rounds,
  // or of a rate, `per_ms` over it; "" without rounds.
  static std::string TimeInterval(const CaseResult& r) {
    if (!(r.step_ms_low < r.step_ms_high)) return "";
    return " (" + Num(r.step_ms_low, 3) + "-" + Num(r.step_ms_high, 3) + ")";
  }
  static std::string RateInterval(const CaseResult& r, double per_ms) {
    if (!(r.step_ms_low < r.step_ms_high)) return "";
    return " (" + Num(per_ms / r.step_ms_high, 3) + "-" +
           Num(per_ms / r.step_ms_low, 3) + ")";
  }

  // Cases whose rounds disagree beyond their group's (RoundSummary).
  void Unstable() {
    std::vector<const CaseResult*> unstable;
    for (const CaseResult& r : a_.cases) {
      if (r.unstable) unstable.push_back(&r);
    }
    if (unstable.empty()) return;
    html_ << "<h2>Unstable cases</h2>\n<p>Their rounds disagree beyond the "
             "spread of their group's rounds (and by over "
          << Num(100 * kUnstableFloor, 2)
          << "% of their median): a re-run may move them far, and their "
             "intervals are their own.</p>\n<ul>\n";
    for (const CaseResult* r : unstable) {
      const auto [least, most] =
          std::minmax_element(r->rounds_ms.begin(), r->rounds_ms.end());
      html_ << "<li>" << Html(r->name) << ": unstable: rounds "
            << Num(*least, 3) << "-" << Num(*most, 3) << " ms</li>\n";
    }
    html_ << "</ul>\n";
  }

  const ReportOptions& o_;
  Results a_;
  Platform platform_;
  bool have_platform_ = false;
  bool heat_title_ = false;
  std::ostringstream html_;
  std::vector<std::string> notes_;
};

}  // namespace

std::vector<std::string> WriteReport(const ReportOptions& options) {
  return Report(options).Write();
}

}  // namespace paradnn
