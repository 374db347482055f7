// After a --paradnn_bricks run: every model's step time constructed as the
// sum of its layers' times, against its measured time.
#include "core/bricks_report.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <vector>

#include "backends/backend.h"

namespace paradnn {
namespace {

using nlohmann::ordered_json;

// A model's data within this many times its threads' L2 caches stay cached
// from step to step; the L3 decides how far beyond (ColdShare).
constexpr int64_t kColdAboveL2s = 8;

// How much of its brick's extra cold time (the cold step over the warm
// one) a model's layer takes: its data come from memory only
// where the rest of the model's step, D bytes by the cost model, has pushed
// them out of the caches, half of them at a reach R. Where half the L3 is
// past 8 L2s (a large L3 that other machines' work shares), D / (D + R),
// R the geometric mean of 8 L2s and half the L3 ("One reach on a large
// L3"). Where half the L3 is within 8 L2s (the EPYC's 32 MB, its cores'
// own), the caches keep a model's data until its step's bytes near what
// they hold, the larger of 8 L2s and the L3, then lose them fast:
// D^2 / (D^2 + R^2), R that larger ("A sharper rise on a core's own L3").
double ColdShare(const Run& run, const Entry& model) {
  const double bytes = static_cast<double>(model.cost.bytes);
  const double l2s =
      static_cast<double>(kColdAboveL2s * run.options.threads * L2Bytes());
  const double l3 = static_cast<double>(L3Bytes());
  if (l3 / 2 > l2s) {
    const double reach = std::sqrt(l2s * l3 / 2);
    return bytes / (bytes + reach);
  }
  const double reach = std::max(l2s, l3);
  return bytes * bytes / (bytes * bytes + reach * reach);
}

// Whether a brick has a step time: timed in this run, or from the database.
bool HasStepTime(const Entry& brick) {
  return brick.status == CaseStatus::kPassed || brick.known_step_ms[0][0];
}

// Each brick's step times (Entry::StepMs) by the calls they come from and
// the caches their steps started with, taken once before the models' loop:
// taking one sorts the brick's steps, and a sweep's models share their
// bricks, each estimated from all calls and from either half of them.
class BrickTimes {
 public:
  explicit BrickTimes(const Run& run) : ms_(run.entries.size()) {
    for (size_t i = 0; i < run.entries.size(); ++i) {
      const Entry& e = run.entries[i];
      if (!e.brick || !HasStepTime(e)) continue;
      const bool halves = e.TimedInHalves();
      for (const Calls calls : {Calls::kAll, Calls::kEven, Calls::kOdd}) {
        if (calls != Calls::kAll && !halves) continue;
        for (int k = 0; k < kCachesKinds; ++k) {
          ms_[i][static_cast<int>(calls)][k] = e.StepMs(
              static_cast<Caches>(k), run.moments, run.case_time, calls);
        }
      }
    }
  }
  // The brick's time; a brick without one of these calls (not timed, or
  // timed in one call only and asked for a half) is not asked for it.
  double Ms(int brick, Caches caches, Calls calls) const {
    return *ms_[brick][static_cast<int>(calls)][static_cast<int>(caches)];
  }
  bool HasMs(int brick, Calls calls) const {
    return ms_[brick][static_cast<int>(calls)][0].has_value();
  }

 private:
  std::vector<std::array<std::array<std::optional<double>, kCachesKinds>, 3>>
      ms_;
};

// The bricks of a step's fixed cost (StepCostBricks) in a model's context
// (backend, data type, mode), where the run has both with a time.
std::vector<int> StepCostBricksOf(const Run& run, const Entry& model) {
  std::vector<int> bricks;
  for (Brick& b : StepCostBricks()) {
    const auto it = run.index.find(
        BrickCase{std::move(b), model.backend, model.dtype, model.mode}.Name());
    if (it == run.index.end() || !HasStepTime(run.entries[it->second])) {
      return {};
    }
    bricks.push_back(it->second);
  }
  return bricks;
}

// The fixed cost of a step from its bricks' times of `calls`: twice the
// one-ReLU brick's step time less the two-ReLU chain's. None without them.
// The machine's noise can put the difference below zero or above the
// one-ReLU step, which is the fixed cost and one ReLU: it is kept between
// the two.
double StepCostMs(const BrickTimes& times, const std::vector<int>& bricks,
                  Calls calls) {
  if (bricks.empty()) return 0;
  const double one = times.Ms(bricks[0], Caches::kWarm, calls);
  const double two = times.Ms(bricks[1], Caches::kWarm, calls);
  return std::clamp(2 * one - two, 0.0, one);
}

// Every brick a model's estimate takes: the step cost's, its layers', and
// its runs' chains.
std::vector<int> AllBricks(const Entry& model,
                           const std::vector<int>& step_cost_bricks) {
  std::vector<int> all = step_cost_bricks;
  all.insert(all.end(), model.layer_bricks.begin(), model.layer_bricks.end());
  for (const Entry::Stack& s : model.layer_stacks) {
    all.push_back(s.chain);
  }
  return all;
}

// Whether each of a model's layers is in a run timed as a chain.
std::vector<bool> StackedLayers(const Entry& model) {
  std::vector<bool> stacked(model.layer_bricks.size(), false);
  for (const Entry::Stack& s : model.layer_stacks) {
    std::fill_n(stacked.begin() + s.first, s.layers, true);
  }
  return stacked;
}

// A model's step time constructed from its bricks' times of `calls`: the
// fixed cost of a step once and, for each layer (or run of layers timed as
// chains, Entry::layer_stacks), what its brick took beyond it warm (never
// less than nothing: a small brick's quick step against a noisy fixed
// cost) and its part of the brick's extra cold time in the model's share.
double EstimateMs(const BrickTimes& times, const Entry& model,
                  const std::vector<double>& parts, double share,
                  double step_cost, Calls calls) {
  double estimate = step_cost;
  auto own = [&](int brick, Caches kind) {
    return times.Ms(brick, kind, calls) - step_cost;
  };
  // A layer's or run's time beyond the fixed cost, `ms` of each kind.
  auto add = [&](auto ms, double part) {
    const double warm = ms(Caches::kWarm);
    estimate += std::max(0.0, warm) + part * share * (ms(Caches::kCold) - warm);
  };
  auto stack = model.layer_stacks.begin();
  for (size_t k = 0; k < model.layer_bricks.size(); ++k) {
    const int brick = model.layer_bricks[k];
    if (stack != model.layer_stacks.end() && stack->first == k) {
      add(
          [&](Caches kind) {
            return StackMs(own(brick, kind), own(stack->chain, kind),
                           stack->layers);
          },
          parts[k]);
      k += stack->layers - 1;
      ++stack;
      continue;
    }
    add([&](Caches kind) { return own(brick, kind); }, parts[k]);
  }
  return estimate;
}

// How far a model's estimate moves between halves of its bricks' calls:
// the estimate from their even calls against the one from their odd
// calls, the bricks' counterpart of the measurement's HalvesDifference.
// None where a brick was timed in fewer than two calls.
std::optional<double> EstimateHalvesDifference(
    const BrickTimes& times, const Entry& model,
    const std::vector<double>& parts, double share,
    const std::vector<int>& step_cost_bricks) {
  for (int b : AllBricks(model, step_cost_bricks)) {
    if (!times.HasMs(b, Calls::kEven)) return std::nullopt;
  }
  double half[2];
  for (const Calls calls : {Calls::kEven, Calls::kOdd}) {
    half[calls == Calls::kOdd] =
        EstimateMs(times, model, parts, share,
                   StepCostMs(times, step_cost_bricks, calls), calls);
  }
  return std::abs(half[0] / half[1] - 1);
}

// A model's estimate over its measured time, how far its measured time
// moves between halves of its calls (Entry::HalvesDifference), and how far
// its estimate does between halves of its bricks' calls
// (EstimateHalvesDifference).
struct Agreement {
  double ratio = 0;
  std::optional<double> halves, estimate_halves;
};

// The mean and the largest of `values` into `spread` as PREFIX_mean_difference
// and PREFIX_max_difference, where there are any.
void AddDifferences(const std::vector<double>& values,
                    const std::string& prefix, ordered_json& spread) {
  if (values.empty()) return;
  double sum = 0;
  for (double v : values) sum += v;
  spread[prefix + "_mean_difference"] = sum / values.size();
  spread[prefix + "_max_difference"] =
      *std::max_element(values.begin(), values.end());
}

// Estimate over measured per model: their geometric mean and range, and
// the error of the estimates, |ratio - 1|, mean and worst; beside them,
// how far the measurements themselves move between halves of their calls,
// and the estimates between halves of their bricks' calls, mean and worst:
// on a shared machine the estimates cannot agree better than either does
// with itself.
ordered_json Spread(const std::vector<Agreement>& agreements) {
  if (agreements.empty()) return nullptr;
  std::vector<double> ratios, halves, estimate_halves;
  for (const Agreement& a : agreements) {
    ratios.push_back(a.ratio);
    if (a.halves) halves.push_back(*a.halves);
    if (a.estimate_halves) estimate_halves.push_back(*a.estimate_halves);
  }
  double log_sum = 0, lo = ratios[0], hi = ratios[0], error_sum = 0, worst = 0;
  for (double r : ratios) {
    log_sum += std::log(r);
    lo = std::min(lo, r);
    hi = std::max(hi, r);
    error_sum += std::abs(r - 1);
    worst = std::max(worst, std::abs(r - 1));
  }
  ordered_json spread = {{"geomean", std::exp(log_sum / ratios.size())},
                         {"min", lo},
                         {"max", hi},
                         {"mean_abs_error", error_sum / ratios.size()},
                         {"max_abs_error", worst},
                         {"models", ratios.size()}};
  AddDifferences(halves, "measured_halves", spread);
  AddDifferences(estimate_halves, "estimated_halves", spread);
  return spread;
}

// How much of its brick's extra cold time (the cold step over the warm
// one) each of a model's layers takes before the model's share (ColdShare):
// all, except where the backend's step recycles the blocks it frees (hands
// a tensor the block of its size freed last) and a layer before it ran the
// same brick, outside a run timed as chains (whose cold steps recycle as
// the run does: Entry::layer_stacks). That layer's tensors go to blocks
// the one before it of their shapes just used, still cached, and it takes
// the part of its brick's bytes (the cost model's) the step does not
// recycle. In inference each activation is freed once the next layer has
// read it: only the weights, the layer's own, come from memory. In
// training the forward pass keeps its outputs for backward, which frees
// the gradients of the layers' outputs as it goes: only those go through
// recycled blocks (docs/bricks.md, "Layers that write where the layer
// before them wrote").
std::vector<double> ColdParts(const Run& run, const Entry& model) {
  const std::vector<int>& bricks = model.layer_bricks;
  std::vector<double> parts(bricks.size(), 1);
  const Backend* backend = FindBackend(model.backend);
  if (backend == nullptr || !backend->RecyclesWithinStep()) return parts;
  // A run's chains recycle within their own steps as the run does.
  const std::vector<bool> in_stack = StackedLayers(model);
  std::set<int> ran;
  for (size_t k = 0; k < bricks.size(); ++k) {
    if (ran.insert(bricks[k]).second || in_stack[k]) continue;
    const Entry& brick = run.entries[bricks[k]];
    const Cost& c = brick.cost;
    const int64_t recycled =
        brick.mode == Mode::kTrain
            ? c.gradient_bytes
            : c.bytes - c.params * ElementSize(brick.dtype);
    parts[k] = 1 - static_cast<double>(recycled) / c.bytes;
  }
  return parts;
}

}  // namespace

const char* ToString(Caches caches) {
  switch (caches) {
    case Caches::kWarm:
      return "warm";
    case Caches::kCold:
      return "cold";
  }
  return "";
}

std::string FieldPrefix(Caches caches) {
  return caches == Caches::kWarm ? "" : std::string(ToString(caches)) + "_";
}

StepSeries Entry::Steps(Caches caches, Calls calls) const {
  const int k = static_cast<int>(caches);
  StepSeries steps;
  size_t step = 0;
  for (size_t call = 0; call < call_steps[k].size(); ++call) {
    const bool wanted =
        calls == Calls::kAll || (call % 2 == 0) == (calls == Calls::kEven);
    for (size_t i = 0; i < call_steps[k][call]; ++i, ++step) {
      if (wanted) {
        steps.emplace_back(all_step_at_s[k].at(step),
                           all_step_times_ms[k].at(step));
      }
    }
  }
  return steps;
}

bool Entry::TimedInHalves() const {
  if (known_step_ms[0][0]) return true;
  bool timed[2] = {false, false};  // in an even call, in an odd one
  const std::vector<size_t>& warm = call_steps[static_cast<int>(Caches::kWarm)];
  for (size_t call = 0; call < warm.size(); ++call) {
    timed[call % 2] = timed[call % 2] || warm[call] > 0;
  }
  return timed[0] && timed[1];
}

std::optional<double> Entry::HalvesDifference(const Moments& moments,
                                              CaseTime how) const {
  const StepSeries even = Steps(Caches::kWarm, Calls::kEven);
  const StepSeries odd = Steps(Caches::kWarm, Calls::kOdd);
  if (even.empty() || odd.empty()) return std::nullopt;
  return std::abs(CaseMs(how, even, moments, sensitivity[0]) /
                      CaseMs(how, odd, moments, sensitivity[0]) -
                  1);
}

double Entry::StepMs(Caches caches, const Moments& moments, CaseTime how,
                     Calls calls) const {
  auto time = [&](int k) -> std::optional<double> {
    const auto& known = known_step_ms[static_cast<int>(how)][k];
    if (known) return known;
    const StepSeries steps = Steps(static_cast<Caches>(k), calls);
    if (steps.empty()) return std::nullopt;
    return CaseMs(how, steps, moments, sensitivity[k]);
  };
  // A step that started colder did a warmer one's work and more (data
  // from memory): each bounds the warmer kinds' times from above, where
  // the machine's slow moments left a kind's own time too long.
  std::optional<double> bound;
  for (int k = static_cast<int>(caches); k < kCachesKinds; ++k) {
    const std::optional<double> t = time(k);
    if (t && (!bound || *t < *bound)) bound = t;
  }
  if (bound) return *bound;
  // None of that kind or colder (a brick from a run with fewer steps than
  // kinds): the nearest warmer kind's.
  for (int k = static_cast<int>(caches) - 1; k >= 0; --k) {
    if (const std::optional<double> t = time(k)) return *t;
  }
  return step_ms;
}

void FitRunMoments(Run& run) {
  std::vector<StepSeries> series;
  std::vector<std::pair<Entry*, int>> of;  // each series' entry and kind
  for (Entry& e : run.entries) {
    for (int k = 0; k < kCachesKinds; ++k) {
      if (!e.all_step_times_ms[k].empty()) {
        series.push_back(e.Steps(static_cast<Caches>(k)));
        of.emplace_back(&e, k);
      }
    }
  }
  MomentsFit fit = FitMoments(series);
  run.moments = std::move(fit.moments);
  for (size_t s = 0; s < of.size(); ++s) {
    of[s].first->sensitivity[of[s].second] = fit.sensitivity[s];
  }
  // Each way's mean difference between halves of a case's calls, over the
  // cases timed in two calls or more: without any (every brick from the
  // database), the quiet time.
  for (int w = 0; w < kCaseTimes; ++w) {
    double sum = 0;
    int cases = 0;
    for (const Entry& e : run.entries) {
      if (e.status != CaseStatus::kPassed) continue;
      if (const auto h = e.HalvesDifference(run.moments, CaseTime(w))) {
        sum += *h;
        ++cases;
      }
    }
    if (cases > 0) run.case_time_halves[w] = sum / cases;
  }
  run.case_time = CaseTime::kQuiet;
  for (int w = 1; w < kCaseTimes; ++w) {
    const auto& h = run.case_time_halves[w];
    const auto& best = run.case_time_halves[static_cast<int>(run.case_time)];
    if (h && best && *h < *best) run.case_time = CaseTime(w);
  }
}

void ReportBricks(const Run& run) {
  int64_t total_layers = 0, total_bricks = 0;
  double bricks_s = 0, models_s = 0;
  bool models_ran = false;
  int bricks_run = 0, unique = 0, from_db = 0, longest = 0;
  bool timed = false;  // a brick has a time: not a run that only listed
  std::set<std::string> step_cost_keys;
  for (const Brick& b : StepCostBricks()) step_cost_keys.insert(b.Key());
  for (const Entry& e : run.entries) {
    if (e.brick) {
      ++bricks_run;
      // Models' bricks, counted; the step cost's, not.
      if (step_cost_keys.count(e.brick->Key()) == 0) {
        ++unique;
        longest = std::max(longest, e.brick->layers());
      }
      from_db += e.known_step_ms[0][0].has_value();
      timed = timed || HasStepTime(e);
      bricks_s += e.benchmark_s;
    } else {
      total_bricks += static_cast<int64_t>(e.layer_bricks.size());
      total_layers += e.layers;
      models_s += e.benchmark_s;
      models_ran = models_ran || e.status != CaseStatus::kNotRun;
    }
  }
  if (!run.flags.bricks || bricks_run == 0) return;
  std::fprintf(
      stderr,
      "paradnn: bricks: %zu unique of %lld layers (%.0f%%); %d "
      "unique bricks of up to %d layers",
      run.unique_layers.size(), static_cast<long long>(total_layers),
      total_layers ? 100.0 * run.unique_layers.size() / total_layers : 0.0,
      unique, longest);
  // A run that only listed its cases: the counts, and no estimates to
  // build (for a sweep of thousands of models, seconds of them).
  if (!timed && run.flags.bricks_out.empty()) {
    std::fprintf(stderr, "\n");
    return;
  }
  const BrickTimes times(run);
  std::vector<Agreement> all;
  std::map<std::string, std::vector<Agreement>> by_family, by_group;
  ordered_json models = ordered_json::array();
  ordered_json step_costs = ordered_json::object();
  for (const Entry& e : run.entries) {
    if (!e.model) continue;
    const std::vector<double> parts = ColdParts(run, e);
    const double share = ColdShare(run, e);
    // Each brick paid the fixed cost of a step; the model pays it once
    // (EstimateMs). One per context, which its models share.
    const std::string context = ContextName(e.backend, e.dtype, e.mode);
    const std::vector<int> step_cost_bricks = StepCostBricksOf(run, e);
    if (!step_costs.contains(context)) {
      step_costs[context] = StepCostMs(times, step_cost_bricks, Calls::kAll);
    }
    const double step_cost = step_costs[context].get<double>();
    bool complete = true;
    ordered_json layers = ordered_json::array(),
                 layer_caches = ordered_json::array(),
                 layer_cold_parts = ordered_json::array();
    for (int b : AllBricks(e, {})) {
      complete = complete && HasStepTime(run.entries[b]);
    }
    const std::vector<bool> in_stack = StackedLayers(e);
    ordered_json stacks = ordered_json::array();
    for (const Entry::Stack& s : e.layer_stacks) {
      stacks.push_back({{"first", s.first},
                        {"layers", s.layers},
                        {"chain", run.entries[s.chain].name}});
    }
    for (size_t k = 0; k < e.layer_bricks.size(); ++k) {
      layers.push_back(run.entries[e.layer_bricks[k]].name);
      layer_caches.push_back(in_stack[k]    ? "stack"
                             : parts[k] < 1 ? "recycled"
                                            : "cold");
      layer_cold_parts.push_back(parts[k]);
    }
    const double estimate =
        complete ? EstimateMs(times, e, parts, share, step_cost, Calls::kAll)
                 : 0;
    const std::optional<double> estimate_halves =
        complete
            ? EstimateHalvesDifference(times, e, parts, share, step_cost_bricks)
            : std::nullopt;
    const bool measured = e.status == CaseStatus::kPassed;
    const double measured_ms =
        measured ? e.StepMs(Caches::kWarm, run.moments, run.case_time) : 0;
    ordered_json m = {
        {"name", e.name},
        {"estimated_ms", complete ? ordered_json(estimate) : nullptr},
        {"measured_ms", measured ? ordered_json(measured_ms) : nullptr},
        {"step_times_ms", e.all_step_times_ms[0]},
        {"step_at_s", e.all_step_at_s[0]},
        {"step_sensitivity", e.sensitivity[0]}};
    m["layers"] = layers;
    m["layer_caches"] = layer_caches;
    m["layer_cold_parts"] = layer_cold_parts;
    m["layer_stacks"] = stacks;
    const std::optional<double> halves =
        e.HalvesDifference(run.moments, run.case_time);
    m["measured_halves_difference"] =
        halves ? ordered_json(*halves) : ordered_json(nullptr);
    m["estimated_halves_difference"] = estimate_halves
                                           ? ordered_json(*estimate_halves)
                                           : ordered_json(nullptr);
    m["cold_share"] = share;
    m["step_cost_ms"] = step_cost;
    if (complete && measured) {
      const Agreement a{estimate / measured_ms, halves, estimate_halves};
      m["estimate_over_measured"] = a.ratio;
      all.push_back(a);
      by_family[e.model->model.family].push_back(a);
      by_group[e.model->model.family + "/" +
               ContextName(e.backend, e.dtype, e.mode)]
          .push_back(a);
    }
    models.push_back(m);
  }
  ordered_json bricks = ordered_json::array();
  for (size_t i = 0; i < run.entries.size(); ++i) {
    const Entry& e = run.entries[i];
    if (!e.brick) continue;
    ordered_json b = {{"name", e.name},
                      {"from_db", e.known_step_ms[0][0].has_value()},
                      {"step_cost", step_cost_keys.count(e.brick->Key()) > 0}};
    for (int k = 0; k < kCachesKinds; ++k) {
      const auto caches = static_cast<Caches>(k);
      b[FieldPrefix(caches) + "step_ms"] =
          times.HasMs(i, Calls::kAll)
              ? ordered_json(times.Ms(i, caches, Calls::kAll))
              : nullptr;
    }
    for (int k = 0; k < kCachesKinds; ++k) {
      b[FieldPrefix(static_cast<Caches>(k)) + "step_times_ms"] =
          e.all_step_times_ms[k];
    }
    for (int k = 0; k < kCachesKinds; ++k) {
      b[FieldPrefix(static_cast<Caches>(k)) + "step_at_s"] = e.all_step_at_s[k];
    }
    for (int k = 0; k < kCachesKinds; ++k) {
      b[FieldPrefix(static_cast<Caches>(k)) + "step_sensitivity"] =
          e.sensitivity[k];
    }
    bricks.push_back(std::move(b));
  }
  // Each fit moment's start, how much slower than the run's usual speed a
  // case of sensitivity 0 ran, and the log of how much more per unit.
  ordered_json moments = ordered_json::array();
  for (const auto& [bin, factor] : run.moments.factor) {
    moments.push_back({{"from_s", static_cast<double>(bin) * run.moments.bin_s},
                       {"factor", factor},
                       {"contrast", run.moments.contrast.at(bin)}});
  }
  auto spreads =
      [](const std::map<std::string, std::vector<Agreement>>& groups) {
        ordered_json out = ordered_json::object();
        for (const auto& [key, ratios] : groups) out[key] = Spread(ratios);
        return out;
      };
  // Each way of taking a case's time, its mean difference between halves.
  ordered_json halves = ordered_json::object();
  for (int w = 0; w < kCaseTimes; ++w) {
    const auto& h = run.case_time_halves[w];
    halves[ToString(CaseTime(w))] = h ? ordered_json(*h) : nullptr;
  }
  ordered_json out = {
      {"granularity", run.flags.bricks_granularity},
      {"total_layers", total_layers},
      {"unique_layers", run.unique_layers.size()},
      {"total_bricks", total_bricks},
      {"unique_bricks", unique},
      {"bricks_from_db", from_db},
      {"bricks_benchmark_s", bricks_s},
      {"step_cost_ms", step_costs},
      {"l2_bytes", L2Bytes()},
      {"l3_bytes", L3Bytes()},
      {"l3_source", L3Source()},
      {"moment_s", run.moments.bin_s},
      {"moments", moments},
      {"case_time", ToString(run.case_time)},
      {"case_time_halves", halves},
      {"end_to_end_benchmark_s", models_ran ? ordered_json(models_s) : nullptr},
      {"estimate_over_measured",
       {{"all", Spread(all)},
        {"per_family", spreads(by_family)},
        {"per_family_backend_dtype_mode", spreads(by_group)}}},
      {"models", models},
      {"bricks", bricks}};
  std::fprintf(stderr, " benchmarked in %.1f s", bricks_s);
  if (from_db > 0)
    std::fprintf(stderr, " (%d of them from the database)", from_db);
  if (models_ran)
    std::fprintf(stderr, ", models end to end in %.1f s", models_s);
  if (!all.empty()) {
    const ordered_json s = Spread(all);
    std::fprintf(stderr,
                 "; estimate/measured geomean %.3f (%.3f to %.3f), mean "
                 "error %.1f%%",
                 s["geomean"].get<double>(), s["min"].get<double>(),
                 s["max"].get<double>(),
                 100 * s["mean_abs_error"].get<double>());
    if (s.contains("measured_halves_mean_difference")) {
      std::fprintf(stderr, " (measured halves of calls differ by %.1f%%",
                   100 * s["measured_halves_mean_difference"].get<double>());
      if (s.contains("estimated_halves_mean_difference")) {
        std::fprintf(stderr,
                     ", estimates from halves of the bricks' calls by %.1f%%",
                     100 * s["estimated_halves_mean_difference"].get<double>());
      }
      std::fprintf(stderr, ")");
    }
  }
  if (timed && run.case_time_halves[0]) {
    std::fprintf(stderr, "; each case's %s time (calls' halves apart:",
                 ToString(run.case_time));
    for (int w = 0; w < kCaseTimes; ++w) {
      std::fprintf(stderr, "%s %s %.1f%%", w ? "," : "", ToString(CaseTime(w)),
                   100 * *run.case_time_halves[w]);
    }
    std::fprintf(stderr, ")");
  }
  std::fprintf(stderr, "\n");
  if (!run.flags.bricks_out.empty()) {
    std::ofstream(run.flags.bricks_out) << out.dump(2) << "\n";
  }
}

}  // namespace paradnn
