#include "core/profile_report.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

namespace paradnn {

void WriteProfiles(const Run& run) {
  if (run.settings.flags.profile_out.empty()) return;
  using nlohmann::ordered_json;
  ordered_json cases = ordered_json::array();
  for (const Entry& e : run.cases.entries) {
    if (!e.profile) continue;
    const StepProfile& p = *e.profile;
    ordered_json shares = ordered_json::object();
    const auto s = p.Shares();
    for (int c = 0; c < kOpClasses; ++c) {
      shares[ToString(static_cast<OpClass>(c))] = s[c];
    }
    std::vector<std::pair<std::string, StepProfile::Op>> ops(p.ops().begin(),
                                                             p.ops().end());
    std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) {
      return a.second.seconds > b.second.seconds;
    });
    const double steps = p.steps();
    ordered_json list = ordered_json::array();
    for (const auto& [name, op] : ops) {
      list.push_back({{"name", name},
                      {"class", ToString(op.cls)},
                      {"ms_per_step", op.seconds * 1e3 / steps},
                      {"calls_per_step", op.calls / steps}});
    }
    cases.push_back({{"name", e.name},
                     {"profiled_steps", p.steps()},
                     {"profiled_step_ms", p.step_s() * 1e3},
                     {"timed_step_ms", e.step_ms},
                     {"shares", shares},
                     {"ops", list}});
  }
  std::ofstream(run.settings.flags.profile_out)
      << ordered_json{{"cases", cases}}.dump(2) << "\n";
}

}  // namespace paradnn
