// Step time of B over A: ratios, their intervals and verdicts.
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

// The one backend every case of the results ran on, or "".
std::string OnlyBackend(const Results& r) {
  std::set<std::string> backends;
  for (const CaseResult& c : r.cases) backends.insert(c.c.backend);
  return backends.size() == 1 ? *backends.begin() : "";
}

// "FC torch/fp32/train"; "FC onednn-torch/fp32/train" where A and B are
// two backends.
std::string SpeedupGroup(const Speedup& s) {
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
    Page& page,
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
      page.GridMap(name, varying[0], varying[1], "speedup",
                   "set logscale cb\nset cblabel '" + b_over_a + "'\n", group,
                   cells);
      page.Figure(name, group + ": " + b_over_a + " against " + varying[0] +
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
      table << (i > 1 ? ", " : "") << r.terms[i] << " " << Num(r.weights[i], 3);
    }
    table << "</td></tr>\n";
  }
  if (table.str().empty()) return;
  page.html << "<h3>Which parameters explain the speedup</h3>\n<p>Least "
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
    Page& page, const Matching& m,
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
  page.html << "<p>Intervals from both sides' rounds (" << rounds_a << " and "
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
    page.html << "<tr><td>" << Html(group) << "</td><td>" << g.cases
              << "</td><td>" << Num(g.value, 3) << "</td><td>"
              << interval(g.bounded, g.low, g.high) << "</td><td>" << g.faster
              << "</td><td>" << g.slower << "</td><td>" << g.equivalent
              << "</td><td>" << g.undecided << "</td></tr>\n";
  }
  page.html << "</table>\n<table><tr><th>case</th><th>A ms</th><th>B "
               "ms</th><th>B/A</th><th>interval</th><th>B is</th></tr>\n";
  for (const Speedup& s : m.matched) {
    page.html << "<tr><td style='text-align:left'>" << Html(s.key)
              << "</td><td>" << Num(s.a->step_ms, 4) << "</td><td>"
              << Num(s.b->step_ms, 4) << "</td><td>" << Num(s.value, 3)
              << "</td><td>"
              << interval(s.ratio.bounded, s.ratio.low, s.ratio.high)
              << "</td><td>" << ToString(Decide(s.ratio, kDefaultMargin))
              << "</td></tr>\n";
  }
  page.html << "</table>\n";
}

}  // namespace

void Speedups(Page& page) {
  const std::string b_path =
      page.options.vs.empty() ? page.options.results : page.options.vs;
  const Results b =
      b_path == page.options.results ? page.results : ReadResults(b_path);
  std::string a_select = page.options.a_select,
              b_select = page.options.b_select;
  Matching m = Match(page.results.cases, a_select, b.cases, b_select);
  // Two files of one backend each (two libraries, two machines) share no
  // name: paired by model instead, the backends set aside, and said so.
  const std::string a_backend = OnlyBackend(page.results),
                    b_backend = OnlyBackend(b);
  if (m.matched.empty() && a_select.empty() && b_select.empty() &&
      !a_backend.empty() && !b_backend.empty() && a_backend != b_backend) {
    a_select = "/" + a_backend + "/";
    b_select = "/" + b_backend + "/";
    m = Match(page.results.cases, a_select, b.cases, b_select);
    page.notes.push_back(
        "no case name is in both files: cases paired by model "
        "across backends, as --a " +
        a_select + " --b " + b_select + " would");
  }
  std::string a_label = a_select.empty() ? page.options.results : a_select;
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
  if (const auto own = StackContrast(page.results.stack, b.stack)) {
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
  page.html << "<h2>Step time of " << Html(b_shown) << " over " << Html(a_shown)
            << "</h2>\n<p>A = <code>" << Html(a_label) << "</code>, B = <code>"
            << Html(b_label)
            << "</code>: B/A = B's step time / A's step time (below 1: B is "
               "faster), for "
            << m.matched.size() << " cases matched by canonical name.</p>\n";
  for (const std::string& n : m.only_a) page.notes.push_back("only in A: " + n);
  for (const std::string& n : m.only_b) page.notes.push_back("only in B: " + n);
  if (m.matched.empty()) {
    page.notes.push_back("A and B have no case in common: no speedups");
    return;
  }
  std::ofstream csv(page.options.out + "/speedup.csv");
  csv << "family,case,a_ms,b_ms,speedup,params," << page.options.color
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
    csv << family << "," << s.key << "," << s.a->step_ms << "," << s.b->step_ms
        << "," << s.value << "," << s.a->params << ",";
    bool has = false;
    for (const ParamDef& p : s.a->c.model.def().params) {
      has = has || (p.key == page.options.color && p.choices.empty());
    }
    csv << (has ? std::to_string(s.a->c.model.Int(page.options.color)) : "")
        << "," << s.ratio.low << "," << s.ratio.high << ","
        << ToString(Decide(s.ratio, kDefaultMargin)) << "\n";
  }
  csv.close();
  SpeedupIntervals(page, m, rounds_by_group);
  std::ofstream box(page.options.out + "/speedup_box.csv");
  box << "index,family,p2,p9,median,p91,p98,cases\n";
  page.html << "<table><tr><th>family</th><th>cases</th><th>p2</th><th>p9</th>"
               "<th>median</th><th>p91</th><th>p98</th></tr>\n";
  std::string tics = "(";
  int i = 0;
  for (const auto& [family, values] : by_family) {
    const Box bx = BoxOf(values);
    box << i << "," << family << "," << bx.p2 << "," << bx.p9 << ","
        << bx.median << "," << bx.p91 << "," << bx.p98 << "," << bx.n << "\n";
    page.html << "<tr><td>" << family << "</td><td>" << bx.n << "</td><td>"
              << Num(bx.p2, 3) << "</td><td>" << Num(bx.p9, 3) << "</td><td>"
              << Num(bx.median, 3) << "</td><td>" << Num(bx.p91, 3)
              << "</td><td>" << Num(bx.p98, 3) << "</td></tr>\n";
    tics += (i ? ", '" : "'") + family + "' " + std::to_string(i);
    ++i;
  }
  page.html << "</table>\n";
  box.close();
  page.Gnuplot("speedup_box",
               "set xtics " + tics + ")\nset xrange [-0.6:" +
                   std::to_string(i) + "-0.4]\nset ylabel '" + b_over_a +
                   "'\nset grid y\n"
                   "set boxwidth 0.4\nset style fill solid 0.3\n"
                   "plot 'speedup_box.csv' skip 1 using 1:4:3:7:6 with "
                   "candlesticks title 'p9-p91, whiskers p2-p98', "
                   "'' skip 1 using 1:5:5:5:5 with candlesticks lw 2 title "
                   "'median', 1 with lines dt 2 notitle\n");
  page.Figure(
      "speedup_box",
      b_over_a + " per family (box 9th-91st percentile, whiskers 2nd-98th)");
  page.Gnuplot("speedup",
               "set logscale x\nset logscale cb\nset xlabel 'params'\n"
               "set ylabel '" +
                   b_over_a + "'\nset cblabel '" + page.options.color + "'\n" +
                   kPalette +
                   "set grid\nplot 'speedup.csv' skip 1 using 6:5:7 with "
                   "points pt 7 palette notitle, 1 with lines dt 2 notitle\n");
  page.Figure("speedup",
              b_over_a + " against params, coloured by " + page.options.color);
  SpeedupParameters(page, by_group, b_over_a);
}

}  // namespace paradnn::report
