#include "generators/shard.h"

#include <algorithm>
#include <numeric>

#include "generators/spec.h"

namespace paradnn {

Shard ParseShard(const std::string& text) {
  const size_t slash = text.find('/');
  Shard s;
  try {
    if (slash == std::string::npos) throw std::invalid_argument("no /");
    size_t end = 0;
    s.index = std::stoi(text.substr(0, slash), &end);
    if (end != slash) throw std::invalid_argument("index");
    s.count = std::stoi(text.substr(slash + 1), &end);
    if (end != text.size() - slash - 1) throw std::invalid_argument("count");
  } catch (const std::exception&) {
    throw SpecError("'" + text + "' is not a shard: expected I/N");
  }
  if (s.count < 1 || s.index < 0 || s.index >= s.count) {
    throw SpecError("'" + text +
                    "' is not a shard: expected 0 <= I < N in I/N");
  }
  return s;
}

std::optional<Shard> ShardFromEnvironment(
    int count_flag, const std::function<const char*(const char*)>& env) {
  auto number = [&](const char* name) -> std::optional<int> {
    const char* v = env(name);
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::atoi(v);
  };
  if (auto id = number("SLURM_ARRAY_TASK_ID")) {
    const auto count = number("SLURM_ARRAY_TASK_COUNT");
    if (!count) {
      throw SpecError(
          "SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT "
          "is not: expected a Slurm job array");
    }
    const int min = number("SLURM_ARRAY_TASK_MIN").value_or(0);
    return ParseShard(std::to_string(*id - min) + "/" + std::to_string(*count));
  }
  if (auto index = number("JOB_COMPLETION_INDEX")) {
    const int count =
        count_flag > 0 ? count_flag : number("PARADNN_SHARD_COUNT").value_or(0);
    if (count <= 0) {
      throw SpecError(
          "JOB_COMPLETION_INDEX is set: expected the number of "
          "shards in --paradnn_shard_count or PARADNN_SHARD_COUNT "
          "(the Job's completions)");
    }
    return ParseShard(std::to_string(*index) + "/" + std::to_string(count));
  }
  return std::nullopt;
}

double EstimatedSeconds(const Cost& cost) {
  const double step = std::max(cost.flops / 1e11, cost.bytes / 2e10);
  return 0.5 + 3 * step;
}

std::vector<int> AssignShards(const std::vector<double>& seconds, int count) {
  std::vector<size_t> order(seconds.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return seconds[a] > seconds[b]; });
  std::vector<double> load(count, 0);
  std::vector<int> shard(seconds.size());
  for (size_t i : order) {
    const int s = static_cast<int>(std::min_element(load.begin(), load.end()) -
                                   load.begin());
    shard[i] = s;
    load[s] += seconds[i];
  }
  return shard;
}

}  // namespace paradnn
