#include "adapters/mlperf/reader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

namespace paradnn {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr char kPrefix[] = ":::MLLOG ";

std::string Where(const std::string& file, int line) {
  return file + ":" + std::to_string(line) + ": ";
}

}  // namespace

MlperfRun ReadMlperfLog(const std::string& path) {
  MlperfRun run;
  run.file = path;
  std::ifstream in(path);
  if (!in) {
    run.problems.push_back(path + ": cannot open the log");
    return run;
  }
  std::optional<int64_t> run_start, run_stop;
  std::vector<double> throughputs;
  std::vector<std::pair<int64_t, int64_t>> train_samples;  // (time, value)
  std::optional<int64_t> first_epoch, last_epoch;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const size_t at = line.find(kPrefix);
    if (at == std::string::npos) continue;
    json j;
    try {
      j = json::parse(line.substr(at + sizeof(kPrefix) - 1));
    } catch (const json::exception& e) {
      run.problems.push_back(Where(path, n) + "not JSON: " + e.what());
      continue;
    }
    if (!j.is_object() || !j.contains("key") || !j["key"].is_string() ||
        !j.contains("time_ms") || !j["time_ms"].is_number()) {
      run.problems.push_back(Where(path, n) + "no key or time_ms");
      continue;
    }
    const std::string key = j["key"];
    const int64_t t = j["time_ms"].get<int64_t>();
    const json& value = j.contains("value") ? j["value"] : json();
    const json& meta = j.contains("metadata") && j["metadata"].is_object()
                           ? j["metadata"]
                           : json::object();
    auto epoch = [&](const char* field) {
      if (meta.contains(field) && meta[field].is_number_integer()) {
        const int64_t e = meta[field];
        first_epoch = std::min(first_epoch.value_or(e), e);
        last_epoch = std::max(last_epoch.value_or(e), e);
      }
    };
    if (key == "submission_benchmark" && value.is_string()) {
      run.benchmark = value;
    } else if (key == "run_start") {
      run_start = t;
    } else if (key == "run_stop") {
      run_stop = t;
      if (meta.contains("status") && meta["status"].is_string()) {
        run.status = meta["status"];
      } else if (value.is_object() && value.contains("status")) {
        run.status = value["status"];  // older logs
      } else {
        run.problems.push_back(Where(path, n) + "run_stop without status");
      }
    } else if (key == "global_batch_size" && value.is_number_integer()) {
      run.global_batch_size = value.get<int64_t>();
    } else if (key == "tracked_stats" && value.is_object() &&
               value.contains("throughput") &&
               value["throughput"].is_number()) {
      throughputs.push_back(value["throughput"]);
    } else if (key == "train_samples" && value.is_number_integer()) {
      train_samples.emplace_back(t, value.get<int64_t>());
    } else if (key == "epoch_start" || key == "epoch_stop" ||
               key == "eval_accuracy") {
      epoch("epoch_num");
    }
  }
  if (run.benchmark.empty()) {
    run.problems.push_back(path + ": no submission_benchmark");
  }
  if (!run_start || !run_stop) {
    run.problems.push_back(path + ": no " +
                           (run_start ? "run_stop" : "run_start") +
                           ": no time to train");
    return run;
  }
  const double seconds = (*run_stop - *run_start) / 1000.0;
  run.time_to_train_min = seconds / 60.0;
  if (!throughputs.empty()) {
    run.samples_per_second =
        std::accumulate(throughputs.begin(), throughputs.end(), 0.0) /
        throughputs.size();
    run.samples_per_second_source = "tracked_stats";
  } else if (!train_samples.empty() && train_samples.back().first >= *run_start) {
    // Logged at the end of the run: the samples trained.
    run.samples_per_second = train_samples.back().second / seconds;
    run.samples_per_second_source = "train_samples";
  } else if (!train_samples.empty() && last_epoch) {
    const int64_t epochs = *last_epoch - *first_epoch + 1;
    run.samples_per_second = epochs * train_samples.back().second / seconds;
    run.samples_per_second_source = "epochs";
  }
  return run;
}

std::optional<double> MlperfScore(const std::vector<MlperfRun>& runs,
                                  double scaling_factor, std::string* note) {
  std::vector<double> times;
  for (const MlperfRun& r : runs) {
    if (r.passed()) times.push_back(*r.time_to_train_min);
  }
  const size_t failed = runs.size() - times.size();
  if (failed > 1 || times.size() < 3) {
    *note = std::to_string(failed) + " of " + std::to_string(runs.size()) +
            " runs failed: too few passing runs for a score";
    return std::nullopt;
  }
  std::sort(times.begin(), times.end());
  times.erase(times.begin());             // the fastest
  if (failed == 0) times.pop_back();      // the slowest, unless it failed
  return std::accumulate(times.begin(), times.end(), 0.0) / times.size() *
         scaling_factor;
}

namespace {

// <org>/results/<system>/<benchmark> -> <org>/systems/<system>.json
void ReadSystem(MlperfBenchmark& b) {
  const fs::path bench(b.dir);
  const fs::path system_dir = bench.parent_path();
  if (system_dir.parent_path().filename() != "results") return;
  const fs::path file = system_dir.parent_path().parent_path() / "systems" /
                        (system_dir.filename().string() + ".json");
  std::ifstream in(file);
  if (!in) {
    b.system_problem = file.string() + ": missing system description";
    return;
  }
  try {
    const json j = json::parse(in);
    for (const char* field : {"system_name", "submitter", "division"}) {
      if (!j.contains(field) || !j[field].is_string()) {
        b.system_problem = file.string() + ": field '" + field +
                           "' is missing or not a string";
        return;
      }
    }
    b.system_name = j["system_name"];
    // Counts are strings in most descriptions, numbers in some.
    auto count = [&](const char* field) {
      if (!j.contains(field)) return 0;
      const json& v = j[field];
      if (v.is_number_integer()) return v.get<int>();
      if (!v.is_string()) return 0;
      try {
        return std::stoi(v.get<std::string>());
      } catch (const std::exception&) {
        return 0;
      }
    };
    b.accelerators = count("number_of_nodes") * count("accelerators_per_node");
    b.accelerator = j.value("accelerator_model_name", "");
  } catch (const json::exception& e) {
    b.system_problem = file.string() + ": not JSON: " + e.what();
  }
}

}  // namespace

std::vector<MlperfBenchmark> SummarizeMlperf(const std::string& root) {
  std::map<std::string, std::vector<std::string>> logs;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.rfind("result_", 0) == 0 &&
        entry.path().extension() == ".txt") {
      logs[entry.path().parent_path().string()].push_back(entry.path().string());
    }
  }
  std::vector<MlperfBenchmark> out;
  for (auto& [dir, files] : logs) {
    std::sort(files.begin(), files.end());
    MlperfBenchmark b;
    b.dir = dir;
    for (const std::string& f : files) b.runs.push_back(ReadMlperfLog(f));
    for (const MlperfRun& r : b.runs) {
      if (b.benchmark.empty()) b.benchmark = r.benchmark;
    }
    ReadSystem(b);
    const fs::path scaling = fs::path(dir) / "scaling.json";
    if (fs::exists(scaling)) {
      try {
        std::ifstream in(scaling);
        b.scaling_factor = json::parse(in).at("scaling_factor").get<double>();
      } catch (const json::exception& e) {
        b.score_note = scaling.string() + ": no usable scaling_factor (" +
                       e.what() + ")";
        out.push_back(std::move(b));
        continue;
      }
    }
    b.score_min = MlperfScore(b.runs, b.scaling_factor, &b.score_note);
    out.push_back(std::move(b));
  }
  return out;
}

namespace {

json Optional(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

}  // namespace

std::string MlperfSummaryJson(const std::vector<MlperfBenchmark>& results) {
  json all = json::array();
  for (const MlperfBenchmark& b : results) {
    json runs = json::array();
    for (const MlperfRun& r : b.runs) {
      runs.push_back(
          {{"file", r.file},
           {"benchmark", r.benchmark},
           {"status", r.status},
           {"time_to_train_min", Optional(r.time_to_train_min)},
           {"global_batch_size", r.global_batch_size
                                     ? json(*r.global_batch_size)
                                     : json(nullptr)},
           {"samples_per_second", Optional(r.samples_per_second)},
           {"samples_per_second_source", r.samples_per_second_source},
           {"problems", r.problems}});
    }
    json item = {{"dir", b.dir},
                 {"benchmark", b.benchmark},
                 {"system_name", b.system_name},
                 {"runs", runs},
                 {"scaling_factor", b.scaling_factor},
                 {"score_min", Optional(b.score_min)}};
    if (!b.score_note.empty()) item["score_note"] = b.score_note;
    if (!b.system_problem.empty()) item["system_problem"] = b.system_problem;
    all.push_back(item);
  }
  return all.dump(2) + "\n";
}

std::string MlperfSummaryCsv(const std::vector<MlperfBenchmark>& results) {
  std::ostringstream out;
  out << "dir,benchmark,file,status,time_to_train_min,global_batch_size,"
         "samples_per_second,score_min\n";
  auto num = [](const auto& v) {
    std::ostringstream s;
    if (v) s << *v;
    return s.str();
  };
  for (const MlperfBenchmark& b : results) {
    for (const MlperfRun& r : b.runs) {
      out << b.dir << "," << r.benchmark << "," << r.file << "," << r.status
          << "," << num(r.time_to_train_min) << ","
          << num(r.global_batch_size) << "," << num(r.samples_per_second)
          << "," << num(b.score_min) << "\n";
    }
  }
  return out.str();
}

}  // namespace paradnn
