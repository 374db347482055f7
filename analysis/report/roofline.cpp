// The roofline: every case at (intensity, FLOP/s) under its device's roofs.
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

// The roofline's series of a case: its family, an LLM's by phase (a
// decode step is bound by memory, a prefill step by compute).
std::string Series(const CaseResult& r) {
  const ModelSpec& m = r.c.model;
  return m.family == "LLM" ? "LLM " + m.Str("phase") : m.family;
}

void Roofline(Page& page, const std::string& device,
              const std::vector<const CaseResult*>& cases) {
  const std::string name =
      device == "cpu" ? "roofline" : "roofline_" + FileKey(device);
  std::ofstream csv(page.options.out + "/" + name + ".csv");
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
      plots +=
          "'" + name + ".csv' skip 1 using (strcol(1) eq '" + family +
          "' && strcol(5) eq '" + dtype + "' ? $3 : 1/0):4 with points pt " +
          (dtype == "bf16"   ? "5"
           : dtype == "fp16" ? "9"
                             : "7") +
          " ps 0.8 lc rgb '" + kCategoryColors[i % std::size(kCategoryColors)] +
          "' title '" + title + "'";
    }
  }
  const PeakFlops& roofs = page.platform.DevicePeaks(device);
  const double bandwidth = page.platform.Bandwidth(device);
  if (page.have_platform && bandwidth > 0) {
    gp << "set samples 400\nbw=" << bandwidth << "\n";
    for (const auto& [dtype, peak] : roofs) {
      gp << "roof_" << dtype << "(x) = bw*x < " << peak << " ? bw*x : " << peak
         << "\n";
      plots += ", roof_" + dtype + "(x) with lines lw 2 title '" + dtype +
               " roof (" + Num(peak / 1e9, 3) + " GFLOP/s, " +
               Num(bandwidth / 1e9, 3) + " GB/s)'";
    }
    // Each backend's own GEMM, where it sits below the roof: the gap is
    // what its library leaves on this device.
    for (const auto& [backend, peaks] : page.platform.gemm_flops) {
      if (page.platform.DeviceOf(backend) != device) continue;
      for (const auto& [dtype, gemm] : peaks) {
        const auto roof = roofs.find(dtype);
        if (roof == roofs.end() || gemm >= 0.98 * roof->second) continue;
        plots += ", " + Num(gemm, 6) + " with lines dt 2 title '" + backend +
                 " " + dtype + " GEMM (" + Num(gemm / 1e9, 3) + " GFLOP/s)'";
      }
    }
  } else if (page.have_platform) {
    page.notes.push_back("the platform file has no memory bandwidth of the " +
                         device + ": its roofline has no roofs");
  }
  gp << "plot " << plots << "\n";
  page.Gnuplot(name, gp.str());
  const auto described = page.platform.device_names.find(device);
  page.Figure(name, "every case on the " + device +
                        (described == page.platform.device_names.end()
                             ? ""
                             : " (" + described->second + ")") +
                        " at (intensity, FLOP/s), by family and data type, "
                        "each type under its own roof");
}

}  // namespace

// A roofline per device the cases ran on: the CPU's is "roofline", a
// GPU's "roofline_gpu" (a GPU's roofs would flatten the CPU's cases).
void Rooflines(Page& page) {
  std::map<std::string, std::vector<const CaseResult*>> by_device;
  for (const CaseResult& r : page.results.cases) {
    by_device[page.platform.DeviceOf(r.c.backend)].push_back(&r);
  }
  if (!page.have_platform) {
    page.notes.push_back("no platform file: the roofline has no roofs");
  }
  page.html << "<h2>Roofline</h2>\n";
  for (const auto& [device, cases] : by_device) Roofline(page, device, cases);
}

}  // namespace paradnn::report
