// MLPerf training-style logs: ":::MLLOG " and one JSON object per line, with
// the keys MLPerf's training rules require, for one run of a paradnn case.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace paradnn {

using OrderedJson = nlohmann::ordered_json;

// One log line. time_ms is milliseconds since the Unix epoch.
struct MllogEvent {
  int64_t time_ms = 0;
  std::string event_type;  // INTERVAL_START, INTERVAL_END, POINT_IN_TIME
  std::string key;
  OrderedJson value;  // null for start and stop events
  OrderedJson extra = OrderedJson::object();  // metadata after file, lineno
  int lineno = 0;
};

// ":::MLLOG {"namespace": "", "time_ms": ..., ...}" with the separators of
// Python's json.dumps, as MLPerf's own logger writes them.
std::string FormatMllog(const MllogEvent& e);

// What a log says about one run of one case.
struct CaseRun {
  std::string case_name;
  std::string family;  // "FC" -> submission_benchmark "paradnn_fc"
  std::string backend, dtype, mode;
  int64_t batch = 0;
  int64_t params = 0;
  int64_t flop_per_step = 0;
  uint64_t seed = 0;
  int64_t iterations = 0;
  double seconds = 0;  // of the timed steps
  // Wall-clock milliseconds: the model's preparation, and this run's timed
  // steps (each repetition has its own).
  int64_t init_start_ms = 0, init_stop_ms = 0, run_start_ms = 0,
          run_stop_ms = 0;
  bool success = true;
  std::string org, platform, status;
};

std::vector<MllogEvent> MllogEvents(const CaseRun& run);

// "FC/layers:4/..." -> "FC_layers-4_..." for file and folder names.
std::string SafeName(const std::string& case_name);

}  // namespace paradnn
