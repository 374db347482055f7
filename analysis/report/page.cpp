#include "analysis/report/page.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>

#include "analysis/stats.h"

namespace paradnn::report {
namespace fs = std::filesystem;

const char* const kTerminal =
    "set terminal svg size 900,560 dynamic enhanced font 'sans,11' "
    "background rgb 'white'\n";

const char* const kPalette =
    "set palette defined (0 '#440154', 0.25 '#3b528b', 0.5 '#21918c', "
    "0.75 '#5ec962', 1 '#fde725')\n";

std::map<std::string, std::vector<CaseResult>> Groups(
    const std::vector<CaseResult>& cases, const std::string& family) {
  std::map<std::string, std::vector<CaseResult>> groups;
  for (const CaseResult& r : cases) {
    if (r.c.model.family != family) continue;
    groups[ContextName(r.c.backend, r.c.dtype, r.c.mode)].push_back(r);
  }
  return groups;
}

std::string FileKey(std::string group) {
  std::replace(group.begin(), group.end(), '/', '_');
  return group;
}

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

std::string TimeInterval(const CaseResult& r) {
  if (!(r.step_ms_low < r.step_ms_high)) return "";
  return " (" + Num(r.step_ms_low, 3) + "-" + Num(r.step_ms_high, 3) + ")";
}
std::string RateInterval(const CaseResult& r, double per_ms) {
  if (!(r.step_ms_low < r.step_ms_high)) return "";
  return " (" + Num(per_ms / r.step_ms_high, 3) + "-" +
         Num(per_ms / r.step_ms_low, 3) + ")";
}

void Page::Gnuplot(const std::string& name, const std::string& script) {
  const std::string path = options.out + "/" + name + ".gp";
  std::ofstream(path) << kTerminal << "set output '" << name << ".svg'\n"
                      << "set datafile separator ','\n"
                      << script;
  if (!options.plots) return;
  const std::string cmd = "cd '" + options.out + "' && gnuplot '" + name +
                          ".gp' 2> '" + name + ".gnuplot.log'";
  if (std::system(cmd.c_str()) != 0) {
    throw std::runtime_error("gnuplot failed on " + path + " (see " +
                             options.out + "/" + name + ".gnuplot.log)");
  }
  fs::remove(options.out + "/" + name + ".gnuplot.log");
}

void Page::Figure(const std::string& name, const std::string& caption) {
  html << "<figure>";
  if (options.plots) {
    html << "<img src='" << name << ".svg' alt='" << Html(caption) << "'>";
  }
  html << "<figcaption>" << Html(caption) << " (<a href='" << name
       << ".csv'>data</a>"
       << (options.plots ? ""
                         : ", <a href='" + name + ".gp'>gnuplot script</a>")
       << ")</figcaption></figure>\n";
}

double Page::Peak(const CaseResult& r) const {
  const PeakFlops& peaks = platform.DevicePeaks(platform.DeviceOf(r.c.backend));
  auto it = peaks.find(ToString(r.c.dtype));
  return it == peaks.end() ? 0 : it->second;
}

void Page::GridMap(const std::string& name, const std::string& x_key,
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
  std::ofstream csv(options.out + "/" + name + ".csv");
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
  gp << "set xlabel '" << x_key << "'\nset ylabel '" << y_key << "'\nset xtics "
     << tics(xi) << "\nset ytics " << tics(yi) << "\n"
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

}  // namespace paradnn::report
