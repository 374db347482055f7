// Layer by layer (--profile, the runner's --paradnn_profile_out): each
// profiled case's layers against their roofs, the layer kinds furthest
// below theirs across the sweep, and the layers on the roofline.
#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "analysis/report/page.h"
#include "analysis/stats.h"

namespace paradnn::report {
namespace {

using nlohmann::json;

struct LayerRow {
  std::string case_name, backend, op, shape, brick, bound, kernel;
  int layer = 0;
  double ms = 0, share = 0, flops = 0, bytes = 0, intensity = 0;
  double flop_per_s = 0;
  double roof_util = -1;  // unknown without a platform file
};

// The backend of a canonical case name: its third part from the end.
std::string BackendOf(const std::string& name) {
  std::vector<std::string> parts;
  size_t from = 0;
  for (size_t at; (at = name.find('/', from)) != std::string::npos;
       from = at + 1) {
    parts.push_back(name.substr(from, at - from));
  }
  parts.push_back(name.substr(from));
  return parts.size() >= 3 ? parts[parts.size() - 3] : "";
}

// The profile's layers; per case, the share of the profiled step the
// layers cover and the profiled step over the timed one (the profiler's
// overhead).
std::vector<LayerRow> ReadLayers(const std::string& path,
                                 std::vector<double>* coverage,
                                 std::vector<double>* overhead) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read the profile");
  json j;
  try {
    in >> j;
  } catch (const json::exception& e) {
    throw std::runtime_error(path + ": not a profile (" + e.what() + ")");
  }
  std::vector<LayerRow> rows;
  for (const json& c : j.value("cases", json::array())) {
    if (!c.contains("layers")) continue;
    const json& layers = c["layers"];
    const double step = c.value("profiled_step_ms", 0.0);
    if (step > 0) coverage->push_back(layers.value("layers_ms", 0.0) / step);
    const double timed = c.value("timed_step_ms", 0.0);
    if (step > 0 && timed > 0) overhead->push_back(step / timed);
    for (const json& l : layers["list"]) {
      LayerRow r;
      r.case_name = c.value("name", "");
      r.backend = BackendOf(r.case_name);
      r.layer = l.value("layer", 0);
      r.op = l.value("op", "");
      // A fused group is a kind of its own: "conv2d+batch_norm+relu".
      for (const json& m : l.value("fused", json::array())) {
        r.op += "+" + m.value("op", "");
      }
      for (const json& d : l.value("shape", json::array())) {
        r.shape += (r.shape.empty() ? "" : "x") + d.dump();
      }
      r.brick = l.value("brick", "");
      r.ms = l.value("forward_ms", 0.0) + l.value("backward_ms", 0.0) +
             l.value("update_ms", 0.0);
      r.share = l.value("share", 0.0);
      r.flops = l.value("flops", 0.0);
      r.bytes = l.value("bytes", 0.0);
      r.intensity = l.value("intensity", 0.0);
      r.flop_per_s = l.value("flop_per_s", 0.0);
      r.roof_util = l.value("roof_util", -1.0);
      r.bound = l.value("bound", "");
      if (l.contains("kernels") && !l["kernels"].empty()) {
        r.kernel = l["kernels"][0].value("name", "");
      }
      rows.push_back(std::move(r));
    }
  }
  return rows;
}

std::string Util(double v) { return v < 0 ? "" : Num(v, 3); }

// Each brick's step time by its case name, from a --paradnn_bricks_out
// file; empty where it has none.
std::map<std::string, double> BrickTimes(const std::string& path) {
  std::map<std::string, double> out;
  std::ifstream in(path);
  const json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("bricks")) return out;
  for (const json& b : j["bricks"]) {
    if (b.contains("name") && b.contains("step_ms") &&
        b["step_ms"].is_number()) {
      out[b["name"]] = b["step_ms"];
    }
  }
  return out;
}

// What DLBricks assumes, checked: a layer's time inside its model (its
// update's included) over its brick's step (the same layer on its own,
// updated too: its step adds a mean loss and a step's own overhead), per
// layer kind and backend.
void BesideBricks(Page& page, const std::vector<LayerRow>& rows) {
  const std::map<std::string, double> bricks = BrickTimes(page.options.bricks);
  std::map<std::pair<std::string, std::string>, std::vector<double>> ratios;
  for (const LayerRow& r : rows) {
    const auto b = bricks.find(r.brick);
    if (b == bricks.end() || b->second <= 0) continue;
    ratios[{r.op, r.backend}].push_back(r.ms / b->second);
  }
  if (ratios.empty()) {
    page.notes.push_back(page.options.bricks +
                         ": no brick of a profiled layer: no layer beside "
                         "its brick");
    return;
  }
  std::ofstream csv(page.options.out + "/layers_vs_bricks.csv");
  csv << "op,backend,layers,median,p10,p90\n";
  page.html
      << "<h3>Inside the model against on its own</h3>\n<p>Each "
         "profiled layer's time in its model over its brick's step "
         "(--bricks: the same layer run on its own, updated too, whose "
         "step adds a mean loss and a step's own overhead); 1 is what "
         "layer bricks assume.</p>\n<table><tr><th>layer</th><th>backend</th>"
         "<th>layers</th><th>median</th><th>10th-90th percentile</th>"
         "</tr>\n";
  for (const auto& [key, v] : ratios) {
    const double median = Median(v), low = Percentile(v, 10),
                 high = Percentile(v, 90);
    csv << key.first << "," << key.second << "," << v.size() << "," << median
        << "," << low << "," << high << "\n";
    page.html << "<tr><td>" << Html(key.first) << "</td><td>"
              << Html(key.second) << "</td><td>" << v.size() << "</td><td>"
              << Num(median, 3) << "</td><td>" << Num(low, 3) << "-"
              << Num(high, 3) << "</td></tr>\n";
  }
  page.html << "</table>\n";
}

}  // namespace

void Layers(Page& page) {
  std::vector<double> coverage, overhead;
  std::vector<LayerRow> rows;
  try {
    rows = ReadLayers(page.options.profile, &coverage, &overhead);
  } catch (const std::runtime_error& e) {
    page.notes.push_back(std::string(e.what()) + ": layers left out");
    return;
  }
  if (rows.empty()) {
    page.notes.push_back(page.options.profile +
                         ": no case's layers were profiled");
    return;
  }
  std::ofstream csv(page.options.out + "/layers.csv");
  csv << "case,layer,op,shape,brick,ms_per_step,share,flops,bytes,intensity,"
         "flop_per_s,roof_util,bound,top_kernel\n";
  // Kernel names in a CSV gnuplot also reads: no commas.
  auto field = [](std::string s) {
    std::replace(s.begin(), s.end(), ',', ';');
    return s;
  };
  for (const LayerRow& r : rows) {
    csv << r.case_name << "," << r.layer << "," << r.op << "," << r.shape << ","
        << r.brick << "," << r.ms << "," << r.share << "," << r.flops << ","
        << r.bytes << "," << r.intensity << "," << r.flop_per_s << ","
        << Util(r.roof_util) << "," << r.bound << "," << field(r.kernel)
        << "\n";
  }
  csv.close();
  const bool roofs =
      std::any_of(rows.begin(), rows.end(),
                  [](const LayerRow& r) { return r.roof_util >= 0; });
  page.html << "<h2>Layer by layer</h2>\n<p>Each profiled case's layers "
               "(--paradnn_profile_out, docs/profile.md): their time per "
               "step, forward, backward and update, against the roof at "
               "their intensity (the cost model's FLOPs and bytes per "
               "layer). The layers cover a median of "
            << Num(100 * Median(coverage), 3)
            << "% of the profiled steps (the rest: the framework between "
               "layers, the loss)";
  if (!overhead.empty()) {
    page.html << "; a profiled step took a median of "
              << Num(Median(overhead), 3)
              << "x its timed step (the profiler's overhead: timing runs "
                 "without it)";
  }
  page.html << ".</p>\n";
  // Across the sweep: each layer kind per backend, its time and its
  // time-weighted share of its roof.
  struct Kind {
    int layers = 0;
    double ms = 0, weighted = 0, worst = 2;
  };
  std::map<std::pair<std::string, std::string>, Kind> kinds;
  double total_ms = 0;
  for (const LayerRow& r : rows) {
    Kind& k = kinds[{r.op, r.backend}];
    ++k.layers;
    k.ms += r.ms;
    total_ms += r.ms;
    if (r.roof_util >= 0) {
      k.weighted += r.roof_util * r.ms;
      k.worst = std::min(k.worst, r.roof_util);
    }
  }
  std::vector<std::pair<std::pair<std::string, std::string>, Kind>> sorted(
      kinds.begin(), kinds.end());
  std::sort(sorted.begin(), sorted.end(), [&](const auto& a, const auto& b) {
    if (roofs) {
      return a.second.weighted / std::max(a.second.ms, 1e-12) <
             b.second.weighted / std::max(b.second.ms, 1e-12);
    }
    return a.second.ms > b.second.ms;
  });
  page.html << "<h3>Layer kinds" << (roofs ? " furthest below their roofs" : "")
            << "</h3>\n<table><tr><th>layer</th><th>backend</th><th>layers</th>"
               "<th>share of the layers' time</th>"
            << (roofs ? "<th>of its roof (time-weighted)</th><th>worst</th>"
                      : "")
            << "</tr>\n";
  for (const auto& [key, k] : sorted) {
    page.html << "<tr><td>" << Html(key.first) << "</td><td>"
              << Html(key.second) << "</td><td>" << k.layers << "</td><td>"
              << Num(k.ms / total_ms, 3) << "</td>";
    if (roofs) {
      page.html << "<td>" << (k.worst <= 1.5 ? Num(k.weighted / k.ms, 3) : "")
                << "</td><td>" << (k.worst <= 1.5 ? Num(k.worst, 3) : "")
                << "</td>";
    }
    page.html << "</tr>\n";
  }
  page.html << "</table>\n";
  // The layers that matter (a twentieth of their step or more), furthest
  // below their roofs first, else the slowest.
  std::vector<const LayerRow*> heavy;
  for (const LayerRow& r : rows) {
    if (r.share >= 0.05) heavy.push_back(&r);
  }
  std::sort(heavy.begin(), heavy.end(),
            [&](const LayerRow* a, const LayerRow* b) {
              if (roofs && (a->roof_util >= 0) != (b->roof_util >= 0)) {
                return a->roof_util >= 0;
              }
              return roofs ? a->roof_util < b->roof_util : a->ms > b->ms;
            });
  if (heavy.size() > 20) heavy.resize(20);
  page.html << "<h3>Layers of a twentieth of their step or more"
            << (roofs ? ", furthest below their roofs" : ", slowest")
            << "</h3>\n<table><tr><th>case</th><th>layer</th><th>op</th>"
               "<th>shape</th><th>ms per step</th><th>share</th>"
            << (roofs ? "<th>of its roof</th><th>bound</th>" : "")
            << "<th>its slowest kernel</th></tr>\n";
  for (const LayerRow* r : heavy) {
    page.html << "<tr><td>" << Html(r->case_name) << "</td><td>" << r->layer
              << "</td><td>" << Html(r->op) << "</td><td>" << Html(r->shape)
              << "</td><td>" << Num(r->ms, 3) << "</td><td>" << Num(r->share, 3)
              << "</td>";
    if (roofs) {
      page.html << "<td>" << Util(r->roof_util) << "</td><td>" << Html(r->bound)
                << "</td>";
    }
    page.html << "<td>" << Html(r->kernel) << "</td></tr>\n";
  }
  page.html << "</table>\n";
  if (!page.options.bricks.empty()) BesideBricks(page, rows);
  // The layers on the host's roofline, a colour per layer kind (those with
  // FLOPs: the others sit at intensity 0, off a log axis).
  std::set<std::string> ops;
  for (const LayerRow& r : rows) {
    if (r.flops > 0) ops.insert(r.op);
  }
  if (ops.empty()) return;
  std::ostringstream gp;
  gp << "set datafile separator ','\nset logscale xy\n"
     << "set xlabel 'arithmetic intensity (FLOP/byte)'\n"
     << "set ylabel 'FLOP/s'\nset key outside right top\nset grid\n";
  std::string plots;
  int color = 0;
  for (const std::string& op : ops) {
    if (!plots.empty()) plots += ", ";
    plots += "'layers.csv' skip 1 using (strcol(3) eq '" + op +
             "' && $8 > 0 ? $10 : 1/0):11 with points pt 7 ps 0.6 lc rgb '" +
             kCategoryColors[color++ % std::size(kCategoryColors)] +
             "' title '" + op + "'";
  }
  const double bandwidth = page.platform.Bandwidth("cpu");
  if (page.have_platform && bandwidth > 0) {
    gp << "set samples 400\nbw=" << bandwidth << "\n";
    for (const auto& [dtype, peak] : page.platform.DevicePeaks("cpu")) {
      gp << "roof_" << dtype << "(x) = bw*x < " << peak << " ? bw*x : " << peak
         << "\n";
      plots +=
          ", roof_" + dtype + "(x) with lines lw 2 title '" + dtype + " roof'";
    }
  }
  page.Gnuplot("layers_roofline", gp.str() + "plot " + plots + "\n");
  page.Figure("layers_roofline",
              "each profiled layer at (intensity, FLOP/s): its FLOPs and "
              "bytes per step over its time, by layer kind");
}

}  // namespace paradnn::report
