#include "core/case_table.h"

#include <algorithm>
#include <random>
#include <tuple>

namespace paradnn {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double SteadySeconds(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

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

std::optional<BrickTime> Entry::Time(Caches caches) const {
  const int k = static_cast<int>(caches);
  if (known[k]) return known[k];
  return TimeOfSteps(log.Of(caches));
}

void StepLog::Add(double at_s, double ms, Caches caches) {
  steps.push_back({at_s, ms, caches, static_cast<int>(calls.size()) - 1});
}

std::vector<double> StepLog::LastCall() const {
  std::vector<double> out;
  const int last = static_cast<int>(calls.size()) - 1;
  for (const StepRecord& r : steps) {
    if (r.call == last && r.caches == Caches::kWarm) out.push_back(r.ms);
  }
  return out;
}

std::vector<double> StepLog::Of(Caches caches) const {
  std::vector<double> out;
  for (const StepRecord& r : steps) {
    if (r.caches == caches) out.push_back(r.ms);
  }
  return out;
}

const Entry* CaseTable::Find(const std::string& name) const {
  const auto it = index.find(name);
  return it == index.end() ? nullptr : &entries[it->second];
}

FusionPlan PlanOf(const Graph& g, const std::string& backend, Mode mode,
                  const Settings& settings) {
  return PlanFusion(
      g, mode,
      settings.flags.fuse ? InferenceFusion(backend) : Fusion::kNone);
}

CaseTable MakeCaseTable(std::vector<Case> cases, std::vector<BrickCase> bricks,
                        const Settings& settings) {
  const Options& o = settings.flags;
  CaseTable table;
  auto add = [&](Entry e) {
    const int index = table.size();
    table.index[e.name] = index;
    e.info.name = e.name;
    // A round is one iteration of Google Benchmark's, its steps' mean.
    e.info.steps = o.rounds > 1 ? 1 : o.steps;
    e.info.manual_time = settings.Isolates();
    e.info.repetitions = o.rounds;
    e.info.one_row = o.rounds > 1 && o.display == "cases";
    table.entries.push_back(std::move(e));
    return index;
  };
  // A brick by its name (each name is built once: a sweep of thousands of
  // models names tens of thousands of bricks, most of them already added),
  // noting the bytes of the largest model it is in.
  auto add_brick = [&](Brick b, std::string name, const std::string& backend,
                       DType dtype, Mode mode, int64_t model_bytes) {
    const auto it = table.index.find(name);
    if (it != table.index.end()) {
      Entry& known = table.entries[it->second];
      known.model_bytes = std::max(known.model_bytes, model_bytes);
      return it->second;
    }
    Entry e;
    e.name = std::move(name);
    e.backend = backend;
    e.dtype = dtype;
    e.mode = mode;
    const Graph g = b.BuildGraph(mode);
    const FusionPlan plan = PlanOf(g, backend, mode, settings);
    e.cost = ComputeCost(g, e.mode, e.dtype, &plan);
    e.batch = g.batch();
    e.brick = std::move(b);
    e.model_bytes = model_bytes;
    return add(std::move(e));
  };
  std::vector<Entry> models;
  std::set<std::string> model_names;
  std::map<std::tuple<std::string, DType, Mode>, std::vector<int>> step_costs;
  for (Case& c : cases) {
    Entry e;
    e.name = c.Name();
    if (!model_names.insert(e.name).second) continue;
    const Graph g = c.model.BuildGraph();
    e.backend = c.backend;
    e.dtype = c.dtype;
    e.mode = c.mode;
    const FusionPlan plan = PlanOf(g, c.backend, c.mode, settings);
    e.cost = ComputeCost(g, e.mode, e.dtype, &plan);
    e.batch = g.batch();
    if (o.bricks) {
      auto name = [&](const Brick& b) {
        return BrickCase{b, c.backend, c.dtype, c.mode}.Name();
      };
      const int64_t bytes = e.cost.bytes;
      // Single layers are counted whatever the bricks' granularity.
      const bool join = ActivationsJoinProducer(c.backend);
      const bool one = o.bricks_granularity == 1 && !join;
      std::vector<Brick> single = BricksOf(g, c.mode, 1);
      std::vector<std::string> single_names;
      for (const Brick& b : single) {
        single_names.push_back(name(b));
        table.unique_layers.insert(single_names.back());
      }
      std::vector<Brick> layer_bricks =
          one ? std::move(single)
              : BricksOf(g, c.mode, o.bricks_granularity, join);
      // A brick of one layer is that layer's: named once (names are most
      // of the time a bricks sweep takes to list).
      std::vector<std::string> names;
      size_t first = 0;  // the brick's first layer, in single_names
      for (const Brick& b : layer_bricks) {
        e.layers += b.layers();
        names.push_back(b.layers() == 1 ? std::move(single_names[first])
                                        : name(b));
        first += b.layers();
      }
      for (Brick& b : GradientSumsOf(g, c.mode)) {
        names.push_back(name(b));
        layer_bricks.push_back(std::move(b));
      }
      for (size_t k = 0; k < layer_bricks.size(); ++k) {
        e.bricks.layers.push_back(add_brick(std::move(layer_bricks[k]),
                                            std::move(names[k]), c.backend,
                                            c.dtype, c.mode, bytes));
      }
      // Recurrent layers in a run of their kind, timed as chains too.
      if (o.bricks_granularity == 1) {
        for (BrickStack& s : StacksOf(g, c.mode, join)) {
          std::string n = name(s.chain);
          e.bricks.stacks.push_back(
              {s.first, s.layers,
               add_brick(std::move(s.chain), std::move(n), c.backend, c.dtype,
                         c.mode, bytes)});
        }
      }
      // What each of them pays once more than the model, once per backend,
      // data type and mode.
      std::vector<int>& step_cost =
          step_costs[std::make_tuple(c.backend, c.dtype, c.mode)];
      if (step_cost.empty()) {
        for (Brick& b : StepCostBricks()) {
          std::string n = name(b);
          step_cost.push_back(add_brick(std::move(b), std::move(n), c.backend,
                                        c.dtype, c.mode, 0));
        }
      }
      e.bricks.step_cost = step_cost;
    }
    e.model = std::move(c);
    models.push_back(std::move(e));
  }
  for (BrickCase& b : bricks) {
    std::string n = b.Name();
    add_brick(std::move(b.brick), std::move(n), b.backend, b.dtype, b.mode, 0);
  }
  for (Entry& m : models) add(std::move(m));
  return table;
}

void KeepCheckedModels(int checked, uint64_t seed, CaseTable* table) {
  std::vector<size_t> models;
  for (size_t i = 0; i < table->entries.size(); ++i) {
    if (table->entries[i].model) models.push_back(i);
  }
  std::mt19937_64 random(seed);
  std::shuffle(models.begin(), models.end(), random);
  for (size_t k = 0; k < models.size(); ++k) {
    table->entries[models[k]].info.registered = static_cast<int>(k) < checked;
  }
}

}  // namespace paradnn
