#include "analysis/stats.h"

#include <Eigen/Dense>
#include <cmath>
#include <map>
#include <set>

namespace paradnn {

Regression FitLeastSquares(const std::vector<std::vector<double>>& x,
                           const std::vector<double>& y,
                           const std::vector<std::string>& names) {
  Regression r;
  r.terms.push_back("intercept");
  r.terms.insert(r.terms.end(), names.begin(), names.end());
  r.samples = static_cast<int>(y.size());
  const Eigen::Index n = static_cast<Eigen::Index>(y.size());
  const Eigen::Index k = static_cast<Eigen::Index>(names.size()) + 1;
  if (n == 0) return r;
  Eigen::MatrixXd m(n, k);
  Eigen::VectorXd v(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    m(i, 0) = 1;
    for (Eigen::Index j = 1; j < k; ++j) m(i, j) = x[i][j - 1];
    v(i) = y[i];
  }
  const Eigen::VectorXd w = m.colPivHouseholderQr().solve(v);
  r.weights.assign(w.data(), w.data() + w.size());
  const double mean = v.mean();
  const double total = (v.array() - mean).square().sum();
  const double residual = (m * w - v).squaredNorm();
  r.r2 = total > 0 ? 1 - residual / total : 1;
  return r;
}

Regression FitFamily(const std::vector<CaseResult>& cases,
                     const std::string& family) {
  std::vector<const CaseResult*> mine;
  std::vector<double> throughput;
  for (const CaseResult& c : cases) {
    if (c.c.model.family != family) continue;
    mine.push_back(&c);
    throughput.push_back(c.samples_per_second);
  }
  return FitOnParameters(mine, throughput);
}

Regression FitOnParameters(const std::vector<const CaseResult*>& cases,
                           const std::vector<double>& values) {
  if (cases.empty()) return {};
  const FamilyDef* def = FindFamily(cases.front()->c.model.family);
  if (def == nullptr) return {};
  std::vector<std::string> names;
  for (const ParamDef& p : def->params) {
    if (!p.choices.empty()) continue;
    std::set<std::string> seen;
    for (const CaseResult* c : cases) seen.insert(c->c.model.Str(p.key));
    if (seen.size() > 1) names.push_back(p.key);
  }
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (size_t i = 0; i < cases.size(); ++i) {
    std::vector<double> row;
    for (const std::string& n : names) {
      row.push_back(std::log(static_cast<double>(cases[i]->c.model.Int(n))));
    }
    x.push_back(row);
    y.push_back(std::log(values[i]));
  }
  return FitLeastSquares(x, y, names);
}

Box BoxOf(const std::vector<double>& values) {
  Box b;
  b.n = static_cast<int>(values.size());
  b.p2 = Percentile(values, 2);
  b.p9 = Percentile(values, 9);
  b.median = Percentile(values, 50);
  b.p91 = Percentile(values, 91);
  b.p98 = Percentile(values, 98);
  return b;
}

std::string SelectorKey(const std::string& name, const std::string& sel) {
  if (sel.empty()) return name;
  const size_t at = name.find(sel);
  if (at == std::string::npos) return "";
  return name.substr(0, at) + "/" + name.substr(at + sel.size());
}

Matching Match(const std::vector<CaseResult>& a, const std::string& a_sel,
               const std::vector<CaseResult>& b, const std::string& b_sel) {
  std::map<std::string, const CaseResult*> in_b;
  for (const CaseResult& r : b) {
    const std::string k = SelectorKey(r.name, b_sel);
    if (!k.empty()) in_b[k] = &r;
  }
  // Results made without the reader (no rounds): their one figure.
  auto summaries = [](const std::vector<CaseResult>& side) {
    std::map<std::string, std::vector<double>> rounds;
    for (const CaseResult& c : side) {
      rounds[c.name] =
          c.rounds_ms.empty() ? std::vector<double>{c.step_ms} : c.rounds_ms;
    }
    return SummarizeByName(rounds);
  };
  const auto a_summaries = summaries(a), b_summaries = summaries(b);
  Matching m;
  std::set<std::string> used;
  for (const CaseResult& r : a) {
    const std::string k = SelectorKey(r.name, a_sel);
    if (k.empty()) continue;
    auto it = in_b.find(k);
    if (it == in_b.end()) {
      m.only_a.push_back(r.name);
      continue;
    }
    used.insert(k);
    const RoundSummary& sa = a_summaries.at(r.name);
    const RoundSummary& sb = b_summaries.at(it->second->name);
    const Ratio ratio = CompareRounds(sa, sb);
    m.matched.push_back({k, &r, it->second, ratio.value, sa, sb, ratio});
  }
  for (const auto& [k, r] : in_b) {
    if (!used.count(k)) m.only_b.push_back(r->name);
  }
  return m;
}

}  // namespace paradnn
