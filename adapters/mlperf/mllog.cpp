#include "adapters/mlperf/mllog.h"

#include <algorithm>
#include <cctype>

namespace paradnn {
namespace {

// json.dumps(obj) in Python: ", " between items and ": " after keys.
std::string Dump(const OrderedJson& j) {
  if (j.is_object()) {
    std::string out = "{";
    bool first = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!first) out += ", ";
      first = false;
      out += OrderedJson(it.key()).dump() + ": " + Dump(it.value());
    }
    return out + "}";
  }
  if (j.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < j.size(); ++i) {
      if (i > 0) out += ", ";
      out += Dump(j[i]);
    }
    return out + "]";
  }
  return j.dump();
}

}  // namespace

std::string FormatMllog(const MllogEvent& e) {
  OrderedJson line;
  line["namespace"] = "";
  line["time_ms"] = e.time_ms;
  line["event_type"] = e.event_type;
  line["key"] = e.key;
  line["value"] = e.value;
  OrderedJson metadata;
  metadata["file"] = "paradnn";
  metadata["lineno"] = e.lineno;
  for (auto it = e.extra.begin(); it != e.extra.end(); ++it) {
    metadata[it.key()] = it.value();
  }
  line["metadata"] = metadata;
  return ":::MLLOG " + Dump(line);
}

std::string SafeName(const std::string& case_name) {
  std::string s = case_name;
  std::replace(s.begin(), s.end(), '/', '_');
  std::replace(s.begin(), s.end(), ':', '-');
  return s;
}

std::vector<MllogEvent> MllogEvents(const CaseRun& r) {
  std::vector<MllogEvent> events;
  // lineno numbers the events in the order MLPerf's rules list them.
  auto add = [&](int64_t t, const char* type, const char* key,
                 OrderedJson value, OrderedJson extra = OrderedJson::object()) {
    MllogEvent e;
    e.time_ms = t;
    e.event_type = type;
    e.key = key;
    e.value = std::move(value);
    e.extra = std::move(extra);
    e.lineno = static_cast<int>(events.size()) + 1;
    events.push_back(std::move(e));
  };
  const char* kPoint = "POINT_IN_TIME";
  const int64_t samples = r.iterations * r.batch;
  std::string benchmark = "paradnn_" + r.family;
  std::transform(benchmark.begin(), benchmark.end(), benchmark.begin(),
                 ::tolower);
  const OrderedJson block = {{"first_epoch_num", 1},
                             {"epoch_count", 1},
                             {"samples_count", samples}};

  add(r.init_start_ms, kPoint, "cache_clear", true);
  add(r.init_start_ms, "INTERVAL_START", "init_start", nullptr);
  add(r.init_start_ms, kPoint, "submission_benchmark", benchmark);
  add(r.init_start_ms, kPoint, "submission_org", r.org);
  add(r.init_start_ms, kPoint, "submission_division", "open");
  add(r.init_start_ms, kPoint, "submission_status", r.status);
  add(r.init_start_ms, kPoint, "submission_platform", r.platform);
  add(r.init_start_ms, kPoint, "seed", r.seed);
  add(r.init_start_ms, kPoint, "global_batch_size", r.batch);
  // The optimizer only where there is training. MLPerf's rules require
  // train_samples in every log: none for inference.
  const bool train = r.mode == "train";
  if (train) {
    add(r.init_start_ms, kPoint, "gradient_accumulation_steps", 1);
    add(r.init_start_ms, kPoint, "opt_name", "sgd");
    add(r.init_start_ms, kPoint, "opt_base_learning_rate", 0.01);
  }
  add(r.init_start_ms, kPoint, "train_samples", train ? samples : 0);
  add(r.init_start_ms, kPoint, "eval_samples", 0);
  add(r.init_start_ms, kPoint, "paradnn_case", r.case_name);
  add(r.init_start_ms, kPoint, "paradnn_backend", r.backend);
  add(r.init_start_ms, kPoint, "paradnn_dtype", r.dtype);
  add(r.init_start_ms, kPoint, "paradnn_mode", r.mode);
  add(r.init_start_ms, kPoint, "paradnn_params", r.params);
  add(r.init_start_ms, kPoint, "paradnn_flop_per_step", r.flop_per_step);
  add(r.init_start_ms, kPoint, "paradnn_flop_per_sample",
      r.batch > 0 ? static_cast<double>(r.flop_per_step) / r.batch : 0.0);
  add(r.init_stop_ms, "INTERVAL_END", "init_stop", nullptr);
  add(r.run_start_ms, "INTERVAL_START", "run_start", nullptr);
  add(r.run_start_ms, "INTERVAL_START", "block_start", nullptr, block);
  add(r.run_stop_ms, "INTERVAL_END", "block_stop", nullptr, block);
  add(r.run_stop_ms, kPoint, "tracked_stats",
      {{"throughput", r.seconds > 0 ? samples / r.seconds : 0.0}},
      {{"step", r.iterations}});
  // Synthetic data has no accuracy: 1.0 records that the run completed its
  // planned samples (docs/mlperf.md).
  add(r.run_stop_ms, kPoint, "eval_accuracy", r.success ? 1.0 : 0.0,
      {{"epoch_num", 1}, {"samples_count", samples}});
  add(r.run_stop_ms, "INTERVAL_END", "run_stop", nullptr,
      {{"status", r.success ? "success" : "aborted"}});
  return events;
}

}  // namespace paradnn
