#include "core/settings.h"

#include <algorithm>

#include "core/default_config.h"
#include "machine/host.h"

namespace paradnn {

RunOptions Settings::BackendOptions() const {
  RunOptions options;
  options.threads = flags.threads;
  options.seed = seed();
  options.fuse = flags.fuse;
  return options;
}

std::string Settings::ShardName() const {
  if (!shard || shard->count <= 1) return "";
  return std::to_string(shard->index) + "/" + std::to_string(shard->count);
}

Settings Settings::ForChild(bool profile) const {
  Settings child = *this;
  child.flags.isolate = false;
  child.flags.rounds = 1;
  child.flags.progress = false;
  child.flags.profile = flags.profile && profile;
  child.flags.counters = flags.counters && profile;
  return child;
}

MachineDefaults ThisMachine() {
  return {UsableCpus(), AvailableMemory(), HostName()};
}

Options ForRank(Options o, const World& w) {
  if (o.isolate) {
    throw FlagError(
        "--paradnn_isolate runs cases in child processes, which cannot join "
        "the " +
        std::to_string(w.size) + " ranks of this data-parallel run");
  }
  if (!o.resume.empty()) {
    throw FlagError(
        "--paradnn_resume: ranks of a data-parallel run would each resume "
        "from their own journal and could run different cases; rerun the "
        "sweep without it");
  }
  if (o.steps == 0) o.steps = kDataParallelSteps;
  // Ranks step together, in one process each: a round is the run.
  if (o.rounds > 1 && std::any_of(o.given.begin(), o.given.end(), [](auto& g) {
        return g.first == "paradnn_rounds";
      })) {
    throw FlagError(
        "--paradnn_rounds runs cases in child processes, which cannot join "
        "the " +
        std::to_string(w.size) +
        " ranks of this data-parallel run: run it again for another round");
  }
  o.rounds = 1;
  if (w.rank == 0) return o;
  const std::string suffix = ".rank" + std::to_string(w.rank);
  // Every rank reads the bricks database (they must skip the same bricks);
  // rank 0 alone adds to it.
  for (std::string* file :
       {&o.mllog, &o.mlperf_package, &o.bricks_out, &o.profile_out}) {
    if (!file->empty()) *file = o.all_ranks ? *file + suffix : "";
  }
  if (!o.all_ranks) o.progress = false;
  return o;
}

Settings ResolveSettings(Options o, const World& world, const Sweep& sweep,
                         const MachineDefaults& machine) {
  Settings s;
  s.world = world;
  s.shard = o.shard.empty() ? ShardFromEnvironment(o.shard_count)
                            : ParseShard(o.shard);
  s.config =
      o.config.empty() && o.cases.empty() ? kDefaultConfigName : o.config;
  o.threads = o.threads > 0       ? o.threads
              : sweep.threads > 0 ? sweep.threads
                                  : machine.cpus;
  o.seed = o.seed >= 0 ? o.seed : static_cast<int64_t>(sweep.seed);
  s.max_memory_given = o.max_memory > 0;
  if (!s.max_memory_given) {
    o.max_memory = static_cast<int64_t>(0.8 * machine.available_memory);
  }
  // MLPerf names: the flag, else the config, else the default.
  auto pick = [](std::string& flag, const std::string& config,
                 std::string fallback) {
    if (flag.empty()) flag = config.empty() ? fallback : config;
  };
  pick(o.mlperf_org, sweep.mlperf_org, "paradnn");
  pick(o.mlperf_system, sweep.mlperf_system, machine.host);
  pick(o.mlperf_status, sweep.mlperf_status, "onprem");
  s.flags = std::move(o);
  return s;
}

void UsePlatform(const Platform& platform, Settings* settings) {
  settings->device_peaks = platform.devices;
  for (const auto& [device, bw] : platform.device_bandwidth) {
    settings->device_bandwidth[device] = platform.MemoryBandwidths(device);
  }
  settings->device_bandwidth["cpu"] = platform.MemoryBandwidths("cpu");
  settings->cache_bandwidth = platform.cache_bandwidth;
}

std::optional<double> Roofs::BandwidthFor(int64_t working_set,
                                          double read_fraction) const {
  if (!memory) return std::nullopt;
  return RoofFor(*memory, caches, working_set, read_fraction);
}

Roofs RoofsOf(const Settings& settings, const std::string& device,
              DType dtype) {
  Roofs r;
  const auto peaks = settings.device_peaks.find(device);
  if (peaks != settings.device_peaks.end()) {
    const auto peak = peaks->second.find(ToString(dtype));
    if (peak != peaks->second.end() && peak->second > 0) r.peak = peak->second;
  }
  const auto bw = settings.device_bandwidth.find(device);
  if (bw != settings.device_bandwidth.end() && bw->second.triad > 0) {
    r.memory = bw->second;
  }
  if (device == "cpu") r.caches = settings.cache_bandwidth;
  return r;
}

}  // namespace paradnn
