// LLM cases: tokens per second per phase, and latency limits.
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

double TokensPerStep(const CaseResult& r) {
  const ModelSpec& m = r.c.model;
  return static_cast<double>(m.Int("batch")) *
         (m.Str("phase") == "prefill" ? m.Int("context") : 1);
}

void LlmHeatMap(Page& page, const std::string& group,
                const std::vector<const CaseResult*>& cases) {
  Cells cells;
  for (const CaseResult* r : cases) {
    cells[{r->c.model.Int("batch"), r->c.model.Int("context")}].push_back(
        TokensPerStep(*r) / (r->step_ms / 1e3));
  }
  const std::string name = "llm_tokens_" + FileKey(group);
  page.GridMap(name, "batch", "context", "tokens_per_second",
               "set cblabel 'tokens/s'\nset logscale cb\n", "LLM " + group,
               cells);
  page.Figure(name,
              "LLM " + group + ": tokens per second over batch and context");
}

// --slo ttft_ms=X,tpot_ms=Y: each LLM case's latency against its phase's
// limit (a limit not given: the phase is not judged).
void Slo(Page& page, const std::vector<const CaseResult*>& llm) {
  std::map<std::string, double> limits;
  for (const std::string& part : Split(page.options.slo, ',')) {
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
          "--slo " + page.options.slo + ": '" + part +
          "': expected ttft_ms=MS and/or tpot_ms=MS, comma-separated, "
          "positive");
    }
    limits[key] = value;
  }
  std::ofstream csv(page.options.out + "/slo.csv");
  csv << "case,phase,latency,latency_ms,limit_ms,meets,tokens_per_second,"
         "latency_low_ms,latency_high_ms\n";
  page.html << "<h3>Latency limits</h3>\n<p>";
  for (const auto& [key, value] : limits) {
    page.html << "<code>" << key << "</code> &le; " << Num(value, 6) << " ms. ";
  }
  page.html << "A prefill step is judged by TTFT, a decode step by TPOT.</p>\n"
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
    page.html << "<tr><td style='text-align:left'>" << Html(r->name)
              << "</td><td>" << Num(r->step_ms, 4) << TimeInterval(*r)
              << "</td><td>" << Num(limit->second, 6) << "</td><td>"
              << (ok ? "yes" : "no") << (noise ? ", within noise" : "")
              << "</td><td>" << Num(tokens, 4)
              << RateInterval(*r, TokensPerStep(*r) * 1e3) << "</td></tr>\n";
  }
  page.html << "</table>\n<p>" << meet << " of " << judged
            << " cases meet their limit (<a href='slo.csv'>data</a>).</p>\n";
}

}  // namespace

// LLM cases: tokens per second over batch and context per phase (the
// median over the other parameters: sizes, kv_heads), and with --slo
// which cases meet the latency limits (TTFT for a prefill step, TPOT for
// a decode step).
void Llm(Page& page) {
  std::vector<const CaseResult*> llm;
  for (const CaseResult& r : page.results.cases) {
    if (r.c.model.family == "LLM") llm.push_back(&r);
  }
  if (llm.empty()) {
    if (!page.options.slo.empty()) page.notes.push_back("--slo: no LLM cases");
    return;
  }
  page.html << "<h2>LLM serving</h2>\n<p>Tokens per second: a prefill step "
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
  for (const auto& [group, cases] : groups) LlmHeatMap(page, group, cases);
  if (!page.options.slo.empty()) Slo(page, llm);
}

}  // namespace paradnn::report
