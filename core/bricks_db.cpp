#include "core/bricks_db.h"

#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "backends/backend.h"
#include "core/run.h"
#include "machine/host.h"
#include "records/results.h"

namespace paradnn {
namespace {

using nlohmann::json;

// What a brick's time depends on besides its name (layer, shapes, backend,
// data type, mode), described once per backend: it loads the backend.
const json& Context(Run& run, const std::string& backend) {
  const auto known = run.brick_context.find(backend);
  if (known != run.brick_context.end()) return known->second;
  std::string library;
  std::string error;
  const Backend* b = FindBackend(backend, &error);
  try {
    library = b != nullptr ? b->Describe() : "not available: " + error;
  } catch (const std::exception& ex) {
    library = std::string("not available: ") + ex.what();
  }
  return run.brick_context[backend] = {
             {"cpu", CpuName()},
             {"threads", run.settings.flags.threads},
             {"l3_bytes", L3Bytes(run)},
             {"library", library},
             {"paradnn_version", PARADNN_VERSION},
             {"brick_steps",
              "step_ms: median of the warm steps, after 3 settling steps; "
              "step_spread_ms: its standard error; cold: 3 steps after "
              "Runner::Cool (LibTorch: free blocks flushed too, and 256 MB "
              "of other pages read; oneDNN: the caches refilled with twice "
              "the L3 and at least 256 MB), an add's shortcut left in "
              "memory; oneDNN's adds binary primitives"}};
}

std::string Now() {
  char text[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return text;
}

}  // namespace

void UseBricksDb(Run& run) {
  const std::string& path = run.settings.flags.bricks_db;
  std::ifstream exists(path);
  json db = {{"bricks", json::array()}};
  if (exists) {
    db = ReadJsonFile(path, "bricks database");
    if (!db.contains("bricks") || !db["bricks"].is_array()) {
      throw std::runtime_error(path +
                               ": field 'bricks' is missing: expected a "
                               "bricks database (--paradnn_bricks_db)");
    }
  }
  for (const json& record : db["bricks"]) {
    if (!record.contains("name") || !record["name"].is_string() ||
        !record.contains("step_ms") || !record["step_ms"].is_number() ||
        !record.contains("context") || !record["context"].is_object()) {
      throw std::runtime_error(path + ": entry " + record.dump() +
                               ": expected name, step_ms and context");
    }
    run.bricks_db.push_back(record);
  }
  // All read first: where this run's L3 is not given, the records' is
  // taken (L3Bytes), and every context below has it.
  int other_context = 0;
  for (const json& record : run.bricks_db) {
    const auto it = run.cases.index.find(record["name"].get<std::string>());
    if (it == run.cases.index.end()) continue;
    Entry& e = run.cases.entries[it->second];
    if (!e.brick) continue;
    if (record["context"] != Context(run, e.backend)) {
      ++other_context;
      continue;
    }
    for (int k = 0; k < kCachesKinds; ++k) {
      const std::string field = FieldPrefix(static_cast<Caches>(k)) + "step_";
      if (record.contains(field + "ms") && record[field + "ms"].is_number()) {
        const json& spread = record.value(field + "spread_ms", json());
        e.known[k] = BrickTime{record[field + "ms"].get<double>(),
                               spread.is_number() ? spread.get<double>() : 0};
      }
    }
    run.cases.entries[it->second].info.registered = false;
  }
  if (other_context > 0) {
    run.loaded->notes.push_back(
        "bricks database " + path + ": " + std::to_string(other_context) +
        " of this sweep's bricks were measured in another context (CPU, "
        "threads, L3, library or paradnn version) and are timed again");
  }
}

void SaveBricksDb(Run& run) {
  json bricks = json::array();
  std::map<std::string, json> measured;  // name -> record
  const std::string now = Now();
  for (const Entry& e : run.cases.entries) {
    if (!e.brick || e.status != CaseStatus::kPassed) continue;
    json record = {{"name", e.name}};
    for (int k = 0; k < kCachesKinds; ++k) {
      const auto caches = static_cast<Caches>(k);
      const std::optional<BrickTime> t = e.Time(caches);
      if (!t) continue;
      record[FieldPrefix(caches) + "step_ms"] = t->ms;
      record[FieldPrefix(caches) + "step_spread_ms"] = t->spread_ms;
      record[FieldPrefix(caches) + "steps"] = e.log.Of(caches).size();
    }
    record["measured_at"] = now;
    record["context"] = Context(run, e.backend);
    measured[e.name] = std::move(record);
  }
  for (const json& record : run.bricks_db) {
    const auto it = measured.find(record["name"].get<std::string>());
    if (it != measured.end() && it->second["context"] == record["context"])
      continue;  // replaced
    bricks.push_back(record);
  }
  for (auto& [name, record] : measured) bricks.push_back(std::move(record));
  std::ofstream out(run.settings.flags.bricks_db);
  out << json{{"bricks", bricks}}.dump(1) << "\n";
  if (!out) {
    std::fprintf(stderr, "paradnn: cannot write the bricks database %s\n",
                 run.settings.flags.bricks_db.c_str());
  }
}

}  // namespace paradnn
