// Splitting a sweep into shards for several machines: deterministic and
// balanced by the cost model's estimate of each case's benchmark time.
#pragma once

#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "generators/cost.h"

namespace paradnn {

struct Shard {
  int index = 0;  // 0-based
  int count = 1;
};

// "I/N" with 0 <= I < N (SpecError otherwise).
Shard ParseShard(const std::string& text);

// The shard a scheduler gave this process: Slurm job arrays
// (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_COUNT) or
// Kubernetes Indexed Jobs (JOB_COMPLETION_INDEX, with `count` from a flag or
// PARADNN_SHARD_COUNT). `env` reads a variable (getenv by default).
std::optional<Shard> ShardFromEnvironment(
    int count_flag,
    const std::function<const char*(const char*)>& env = std::getenv);

// Seconds a case is expected to take in a sweep: Google Benchmark's half
// second of timing plus a few steps at a nominal roofline (100 GFLOP/s,
// 20 GB/s). Only ratios between cases matter.
double EstimatedSeconds(const Cost& cost);

// The shard of each item: longest first onto the least loaded shard, ties
// by position, so every machine computes the same split.
std::vector<int> AssignShards(const std::vector<double>& seconds, int count);

}  // namespace paradnn
