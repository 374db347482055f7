#include "records/rounds.h"

#include <algorithm>
#include <boost/math/distributions/fisher_f.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <random>

#include "generators/spec.h"
#include "records/results.h"

namespace paradnn {
namespace {

// Student's t at a two-sided `confidence` with `dof` degrees of freedom
// (real: Welch's are).
double StudentT(double dof, double confidence = kRoundsConfidence) {
  const boost::math::students_t_distribution<double> t(dof);
  return boost::math::quantile(t, 1 - (1 - confidence) / 2);
}

// Half the width of the `confidence` interval of a sum of two variances
// estimated with dof_a and dof_b degrees of freedom: Student's t with
// Welch-Satterthwaite's degrees of freedom, times its square root.
double WelchHalf(double va, double dof_a, double vb, double dof_b,
                 double confidence) {
  const double variance = va + vb;
  const double dof =
      variance == 0 ? dof_a + dof_b
                    : variance * variance / (va * va / dof_a + vb * vb / dof_b);
  return StudentT(dof, confidence) * std::sqrt(variance);
}

// The sum of squared deviations of `v` from its mean.
double SumOfSquares(const std::vector<double>& v) {
  const double mean = Mean(v);
  double squares = 0;
  for (double y : v) squares += (y - mean) * (y - mean);
  return squares;
}

// A case's own spread: the standard deviation of its rounds' logs, and
// their deviations from its mean log scaled to a single round's spread
// (by sqrt(n / (n - 1)): a deviation from a mean of n is that much
// narrower).
Dispersion OwnDispersion(const std::vector<double>& rounds) {
  Dispersion d;
  if (rounds.size() < 2) return d;
  std::vector<double> logs;
  for (double x : rounds) logs.push_back(std::log(x));
  const double mean = Mean(logs);
  d.dof = static_cast<int>(rounds.size()) - 1;
  d.sigma = std::sqrt(SumOfSquares(logs) / d.dof);
  const double scale = std::sqrt(logs.size() / (logs.size() - 1.0));
  for (double y : logs) d.residuals.push_back((y - mean) * scale);
  return d;
}

// A seed from the values themselves: the same rounds, the same interval.
uint64_t SeedOf(const std::vector<double>& a, const std::vector<double>& b) {
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  for (const std::vector<double>* v : {&a, &b}) {
    for (double x : *v) seed = seed * 31 + std::hash<double>()(x);
  }
  return seed;
}

// Where a spread is known from kBootstrapResiduals pooled residuals or
// more (ten cases of three rounds), their own distribution is the noise's
// shape (one slow process in four makes a median of three jump, which a
// normal of the same variance does not); fewer give a standard deviation
// and Student's t.
constexpr size_t kBootstrapResiduals = 30;

// The `confidence` quantile of |median of na draws from `a` - median of
// nb draws from `b`|: half the width of a symmetric interval for the
// difference of two medians of rounds, the noise resampled from the pools.
double BootstrapHalf(const std::vector<double>& a, int na,
                     const std::vector<double>& b, int nb,
                     double confidence = kRoundsConfidence) {
  constexpr int kDraws = 4000;
  std::mt19937_64 random(SeedOf(a, b) + na * 1000003 + nb);
  std::uniform_int_distribution<size_t> pick_a(0, a.size() - 1),
      pick_b(0, b.size() - 1);
  std::vector<double> da(na), db(nb), gaps(kDraws);
  for (double& gap : gaps) {
    for (double& x : da) x = a[pick_a(random)];
    for (double& x : db) x = b[pick_b(random)];
    gap = std::abs(Median(db) - Median(da));
  }
  return Percentile(gaps, 100 * confidence);
}

// Whether a case's own spread is beyond its group's (see kUnstableFloor).
bool Unstable(const std::vector<double>& rounds, const Dispersion& own,
              const Dispersion& group) {
  if (own.dof == 0 || group.dof == 0) return false;
  const auto [least, most] = std::minmax_element(rounds.begin(), rounds.end());
  if ((*most - *least) / Median(rounds) <= kUnstableFloor) return false;
  if (group.sigma == 0) return own.sigma > 0;
  const boost::math::fisher_f_distribution<double> f(own.dof, group.dof);
  const double ratio = (own.sigma * own.sigma) / (group.sigma * group.sigma);
  return ratio > boost::math::quantile(f, kUnstableConfidence);
}

Dispersion Pool(const std::vector<Dispersion>& cases) {
  Dispersion pool;
  double squares = 0;
  for (const Dispersion& d : cases) {
    squares += d.sigma * d.sigma * d.dof;
    pool.dof += d.dof;
    pool.residuals.insert(pool.residuals.end(), d.residuals.begin(),
                          d.residuals.end());
  }
  if (pool.dof > 0) pool.sigma = std::sqrt(squares / pool.dof);
  return pool;
}

double NormalDensity(double x) {
  return std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
}

// MedianSdFactor for 1 < n <= 1000. Trapezoids over [-8, 8]: the
// densities below vanish beyond it.
double IntegratedMedianSd(int n) {
  constexpr int kPoints = 8001;
  constexpr double kEdge = 8;
  const double h = 2 * kEdge / (kPoints - 1);
  std::vector<double> x(kPoints), log_below(kPoints), log_above(kPoints),
      density(kPoints);
  for (int i = 0; i < kPoints; ++i) {
    x[i] = -kEdge + i * h;
    log_below[i] = std::log(0.5 * std::erfc(-x[i] / std::sqrt(2.0)));
    log_above[i] = std::log(0.5 * std::erfc(x[i] / std::sqrt(2.0)));
    density[i] = NormalDensity(x[i]);
  }
  auto log_choose = [](int total, int below, int above) {
    return std::lgamma(total + 1.0) - std::lgamma(below + 1.0) -
           std::lgamma(above + 1.0);
  };
  // E[X_(k)^2] for the k-th of n order statistics (1-based).
  auto second_moment = [&](int k) {
    const double c = log_choose(n, k - 1, n - k);
    double sum = 0;
    for (int i = 0; i < kPoints; ++i) {
      const double w = (i == 0 || i == kPoints - 1) ? 0.5 : 1;
      sum += w * x[i] * x[i] * density[i] *
             std::exp(c + (k - 1) * log_below[i] + (n - k) * log_above[i]);
    }
    return sum * h;
  };
  if (n % 2 == 1) return std::sqrt(second_moment((n + 1) / 2));
  // Even n: the median is the mean of X_(k) and X_(k+1), k = n/2, whose
  // joint density is n!/((k-1)!^2) F(x)^(k-1) f(x) f(y) (1-F(y))^(k-1)
  // for x < y. E[XY] integrates y over (x, inf) first, as a running sum
  // from the top.
  const int k = n / 2;
  const double c =
      std::lgamma(n + 1.0) - 2 * std::lgamma(static_cast<double>(k));
  std::vector<double> upper(kPoints, 0);  // integral of y f(y) (1-F)^(k-1)
  for (int i = kPoints - 2; i >= 0; --i) {
    auto g = [&](int j) {
      return x[j] * density[j] * std::exp((k - 1) * log_above[j]);
    };
    upper[i] = upper[i + 1] + 0.5 * h * (g(i) + g(i + 1));
  }
  double cross = 0;
  for (int i = 0; i < kPoints; ++i) {
    const double w = (i == 0 || i == kPoints - 1) ? 0.5 : 1;
    cross +=
        w * x[i] * density[i] * std::exp(c + (k - 1) * log_below[i]) * upper[i];
  }
  cross *= h;
  const double square = second_moment(k);  // = E[X_(k+1)^2] by symmetry
  return std::sqrt((2 * square + 2 * cross) / 4);
}

}  // namespace

double MedianSdFactor(int n) {
  if (n <= 1) return 1;
  // Beyond a thousand rounds the asymptote is exact to 0.1%.
  if (n > 1000) return std::sqrt(M_PI / (2.0 * n));
  // Each n is integrated once: an integral takes about a millisecond, and
  // compare asks at every look of every case.
  static std::mutex* const mutex = new std::mutex;
  static std::map<int, double>* const known = new std::map<int, double>;
  const std::lock_guard<std::mutex> lock(*mutex);
  const auto [at, fresh] = known->try_emplace(n, 0.0);
  if (fresh) at->second = IntegratedMedianSd(n);
  return at->second;
}

Dispersion PoolDispersion(const std::vector<std::vector<double>>& cases) {
  std::vector<Dispersion> own;
  for (const std::vector<double>& c : cases) own.push_back(OwnDispersion(c));
  const Dispersion first = Pool(own);
  std::vector<Dispersion> steady;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (!Unstable(cases[i], own[i], first)) steady.push_back(own[i]);
  }
  return Pool(steady);
}

RoundSummary Summarize(const std::vector<double>& rounds,
                       const Dispersion& group) {
  RoundSummary s;
  s.values = rounds;
  s.rounds = static_cast<int>(rounds.size());
  if (rounds.empty()) return s;
  s.median = Median(rounds);
  s.least = *std::min_element(rounds.begin(), rounds.end());
  s.most = *std::max_element(rounds.begin(), rounds.end());
  s.spread = (s.most - s.least) / s.median;
  const Dispersion own = OwnDispersion(rounds);
  s.unstable = Unstable(rounds, own, group);
  s.noise = s.unstable ? own : group;
  s.low = s.high = s.median;
  if (s.noise.dof == 0) return s;
  const double half = s.noise.residuals.size() >= kBootstrapResiduals
                          ? BootstrapHalf(s.noise.residuals, s.rounds,
                                          s.noise.residuals, s.rounds)
                          : StudentT(s.noise.dof) * std::sqrt(2.0) *
                                MedianSdFactor(s.rounds) * s.noise.sigma;
  s.low = s.median * std::exp(-half);
  s.high = s.median * std::exp(half);
  if (s.unstable) {
    s.low = std::min(s.low, s.least);
    s.high = std::max(s.high, s.most);
  }
  return s;
}

std::map<std::string, RoundSummary> SummarizeAll(
    const std::map<std::string, std::vector<double>>& rounds,
    const std::map<std::string, std::vector<std::string>>& groups) {
  auto groups_of = [&](const std::string& name) {
    const auto g = groups.find(name);
    return g == groups.end() || g->second.empty() ? std::vector<std::string>{""}
                                                  : g->second;
  };
  std::map<std::string, std::vector<std::vector<double>>> members;
  for (const auto& [name, r] : rounds) {
    for (const std::string& g : groups_of(name)) members[g].push_back(r);
  }
  auto measured = [](const std::vector<std::vector<double>>& cases) {
    return std::count_if(cases.begin(), cases.end(),
                         [](const auto& r) { return r.size() > 1; });
  };
  std::map<std::string, Dispersion> pools;
  std::map<std::string, RoundSummary> out;
  for (const auto& [name, r] : rounds) {
    const std::vector<std::string> mine = groups_of(name);
    std::string group = mine.back();
    for (const std::string& g : mine) {
      if (measured(members[g]) >= kMinGroupCases) {
        group = g;
        break;
      }
    }
    if (!pools.count(group)) pools[group] = PoolDispersion(members[group]);
    out[name] = Summarize(r, pools[group]);
  }
  return out;
}

std::vector<std::string> NoiseGroups(const std::string& name) {
  try {
    const Case c = ParseCaseName(name);
    return {c.backend + "/" + c.model.family, c.backend};
  } catch (const SpecError&) {
    return {""};
  }
}

std::map<std::string, RoundSummary> SummarizeByName(
    const std::map<std::string, std::vector<double>>& rounds) {
  std::map<std::string, std::vector<std::string>> groups;
  for (const auto& [name, r] : rounds) groups[name] = NoiseGroups(name);
  return SummarizeAll(rounds, groups);
}

Ratio CompareRounds(const RoundSummary& a, const RoundSummary& b,
                    double confidence) {
  Ratio r;
  if (a.rounds == 0 || b.rounds == 0) return r;
  r.value = b.median / a.median;
  r.high = std::numeric_limits<double>::infinity();
  if (a.noise.dof == 0 || b.noise.dof == 0) return r;
  r.bounded = true;
  if (a.noise.residuals.size() >= kBootstrapResiduals &&
      b.noise.residuals.size() >= kBootstrapResiduals) {
    const double half = BootstrapHalf(a.noise.residuals, a.rounds,
                                      b.noise.residuals, b.rounds, confidence);
    r.low = r.value * std::exp(-half);
    r.high = r.value * std::exp(half);
    return r;
  }
  const double ca = MedianSdFactor(a.rounds), cb = MedianSdFactor(b.rounds);
  const double half = WelchHalf(
      ca * ca * a.noise.sigma * a.noise.sigma, a.noise.dof,
      cb * cb * b.noise.sigma * b.noise.sigma, b.noise.dof, confidence);
  r.low = r.value * std::exp(-half);
  r.high = r.value * std::exp(half);
  return r;
}

const char* ToString(Verdict v) {
  switch (v) {
    case Verdict::kFaster:
      return "faster";
    case Verdict::kSlower:
      return "slower";
    case Verdict::kEquivalent:
      return "equivalent";
    case Verdict::kUndecided:
      break;
  }
  return "undecided";
}

Verdict Decide(const Ratio& r, double margin) {
  if (!r.bounded) return Verdict::kUndecided;
  if (margin > 0 && r.low >= 1 - margin && r.high <= 1 + margin) {
    return Verdict::kEquivalent;
  }
  if (r.low > 1) return Verdict::kSlower;
  if (r.high < 1) return Verdict::kFaster;
  return Verdict::kUndecided;
}

GroupRatio CompareGroup(
    const std::vector<std::pair<RoundSummary, RoundSummary>>& cases,
    double margin, double confidence) {
  GroupRatio g;
  g.cases = static_cast<int>(cases.size());
  if (cases.empty()) return g;
  size_t rounds_a = cases.front().first.values.size();
  size_t rounds_b = cases.front().second.values.size();
  for (const auto& [a, b] : cases) {
    switch (Decide(CompareRounds(a, b, confidence), margin)) {
      case Verdict::kFaster:
        ++g.faster;
        break;
      case Verdict::kSlower:
        ++g.slower;
        break;
      case Verdict::kEquivalent:
        ++g.equivalent;
        break;
      case Verdict::kUndecided:
        ++g.undecided;
        break;
    }
    rounds_a = std::min(rounds_a, a.values.size());
    rounds_b = std::min(rounds_b, b.values.size());
  }
  if (rounds_a == 0 || rounds_b == 0) return g;
  // Round i of a side as one figure: the mean log time of the group's
  // cases in that round.
  auto per_round = [&cases](size_t rounds, bool b_side) {
    std::vector<double> figures(rounds);
    for (size_t i = 0; i < rounds; ++i) {
      double sum = 0;
      for (const auto& [a, b] : cases) {
        sum += std::log((b_side ? b : a).values[i]);
      }
      figures[i] = sum / cases.size();
    }
    return figures;
  };
  const std::vector<double> fa = per_round(rounds_a, false);
  const std::vector<double> fb = per_round(rounds_b, true);
  const double diff = Mean(fb) - Mean(fa);
  g.value = std::exp(diff);
  if (rounds_a < 2 || rounds_b < 2) return g;
  // The variance of each side's mean figure, its sample variance over n.
  auto variance_of_mean = [](const std::vector<double>& f) {
    return SumOfSquares(f) / (f.size() - 1) / f.size();
  };
  const double half =
      WelchHalf(variance_of_mean(fa), rounds_a - 1.0, variance_of_mean(fb),
                rounds_b - 1.0, confidence);
  g.bounded = true;
  g.low = std::exp(diff - half);
  g.high = std::exp(diff + half);
  return g;
}

}  // namespace paradnn
