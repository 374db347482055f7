// Google Benchmark results files as the runner writes them, for the
// analysis tests: per case a row per repetition, each its own step_ms.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace paradnn::test {

// Where `rounds`, each case's rows are its rounds: they carry the counter
// `rounds` and the case's range as its interval (unstable over a 30%
// range); else they are one process's repetitions.
inline std::string RoundsJson(
    const std::vector<std::pair<std::string, std::vector<double>>>& cases,
    bool rounds = true) {
  std::string out = "{\"context\": {}, \"benchmarks\": [";
  bool first = true;
  for (const auto& [name, times] : cases) {
    const auto [least, most] = std::minmax_element(times.begin(), times.end());
    for (size_t r = 0; r < times.size(); ++r) {
      out +=
          std::string(first ? "" : ",") + "{\"name\": \"" + name +
          "\", \"run_name\": \"" + name +
          "\", \"run_type\": \"iteration\", \"repetition_index\": " +
          std::to_string(r) + ", \"real_time\": " + std::to_string(times[r]) +
          ", \"time_unit\": \"ms\", \"step_ms\": " + std::to_string(times[r]) +
          ", \"params\": 1000, \"flop_per_step\": 1e6, "
          "\"bytes_per_step\": 1e5, \"intensity\": 10";
      if (rounds) {
        out += ", \"rounds\": " + std::to_string(times.size()) +
               ", \"step_ms_low\": " + std::to_string(*least) +
               ", \"step_ms_high\": " + std::to_string(*most) +
               ", \"unstable\": " + (*most / *least > 1.3 ? "1" : "0");
      }
      out += "}";
      first = false;
    }
  }
  return out + "]}";
}

}  // namespace paradnn::test
