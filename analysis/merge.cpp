#include "analysis/merge.h"

#include <set>
#include <stdexcept>

#include "records/results.h"
#include "backends/backend.h"
#include "generators/sweep.h"

namespace paradnn {
using nlohmann::json;

Merged MergeResults(const std::vector<std::string>& files,
                    const std::string& config) {
  if (files.empty()) throw std::runtime_error("no results files to merge");
  Merged m;
  json first;
  std::set<std::string> seen, names;
  json benchmarks = json::array();
  for (const std::string& file : files) {
    const json j = ReadJsonFile(file, "results file");
    if (!j.is_object() || !j.contains("context") || !j.contains("benchmarks")) {
      throw std::runtime_error(file + ": not Google Benchmark JSON");
    }
    const json& context = j["context"];
    if (first.is_null()) {
      first = j;
    } else {
      for (const char* field : {"paradnn_version", "paradnn_config"}) {
        const json a = first["context"].value(field, json());
        const json b = context.value(field, json());
        if (a != b) {
          throw std::runtime_error(
              "cannot merge " + file + " with " + files[0] + ": context field '" +
              field + "' differs (" + b.dump() + " vs " + a.dump() + ")");
        }
      }
    }
    for (json b : j["benchmarks"]) {
      const std::string key = b.value("name", "") + "#" +
                              std::to_string(b.value("repetition_index", 0)) +
                              "#" + b.value("aggregate_name", "");
      if (!seen.insert(key).second) {
        m.duplicates.push_back(b.value("name", "") + " (again in " + file + ")");
        continue;
      }
      b["host_name"] = context.value("host_name", "");
      names.insert(CaseNameOf(b.value("run_name", b.value("name", ""))));
      benchmarks.push_back(b);
    }
  }
  m.results = first;
  m.results["context"]["paradnn_merged_from"] = files;
  m.results["context"].erase("paradnn_shard");
  m.results["benchmarks"] = benchmarks;
  if (!config.empty()) {
    for (const Case& c : LoadSweep(config, BackendNames()).cases) {
      if (!names.count(c.Name())) m.missing.push_back(c.Name());
    }
  }
  return m;
}

}  // namespace paradnn
