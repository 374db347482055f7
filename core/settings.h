// A run's settings: its flags and environment resolved once, when the run
// loads, into one value the rest of the core reads and never changes. A
// child process that runs one call of a case for this one takes a value of
// its own (ForChild).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "backends/backend.h"
#include "core/flags.h"
#include "distributed/world.h"
#include "generators/shard.h"
#include "generators/sweep.h"
#include "machine/platform.h"

namespace paradnn {

struct Settings {
  // Every flag, resolved: `threads`, `seed` and `max_memory` hold what the
  // run uses (the flag's, else the config's, else the machine's); `rounds`
  // is 1 where ranks step together; MLPerf's names are the flag's, else the
  // config's, else the defaults.
  Options flags;
  // --paradnn_max_memory was given: it limits every device's cases, where
  // a GPU's limit is otherwise what it has free.
  bool max_memory_given = false;
  World world;
  std::optional<Shard> shard;  // this process's, when it runs one of several
  std::string config;          // the sweep's file, or the built-in's name
  // From --paradnn_platform: peaks per device and data type, and each
  // device's memory bandwidths (the host's as "cpu").
  std::map<std::string, PeakFlops> device_peaks;
  std::map<std::string, Bandwidths> device_bandwidth;
  // The host's caches' bandwidths per working set
  // (Platform::cache_bandwidth).
  std::map<int64_t, Bandwidths> cache_bandwidth;

  // Each call of a case runs in a child process: --paradnn_isolate, or
  // rounds (a process per case's round).
  bool Isolates() const { return flags.isolate || flags.rounds > 1; }
  // This process reports: rank 0, or every rank with --paradnn_all_ranks.
  bool Reports() const { return world.rank == 0 || flags.all_ranks; }
  uint64_t seed() const { return static_cast<uint64_t>(flags.seed); }
  // What every case's backend is given: the threads and the seed.
  RunOptions BackendOptions() const;
  // "I/N" when this process runs shard I of N, else "".
  std::string ShardName() const;
  // The settings of a child that runs one call of a case for this process:
  // the case's steps in this process (no further child, no rounds), no
  // progress, and a profile (and perf counts) only if `profile` (once per
  // case).
  Settings ForChild(bool profile) const;
};

// What the machine offers where neither the flags nor the config say.
struct MachineDefaults {
  int cpus = 1;                  // the CPUs this process may use
  int64_t available_memory = 0;  // bytes a new process may take
  std::string host;              // MLPerf's system name
};
MachineDefaults ThisMachine();

// Every rank of a data-parallel run steps each case the same number of
// times (each step is a collective): --paradnn_steps, else this many.
inline constexpr int64_t kDataParallelSteps = 10;

// A rank's flags in a data-parallel run of `world`: the flags that cannot
// work there are refused (FlagError), a round is the run, steps are fixed,
// and ranks other than 0 write no files (with --paradnn_all_ranks, their
// own, suffixed .rankR) and show no progress.
Options ForRank(Options flags, const World& world);

// The run's settings from its flags, world and sweep: threads (flag,
// config, the usable CPUs), seed (flag, config), memory limit (flag, else
// 80% of what is available), shard (flag, else the scheduler's), MLPerf
// names. Throws on a bad shard. Platforms are added by UsePlatform.
Settings ResolveSettings(Options flags, const World& world, const Sweep& sweep,
                         const MachineDefaults& machine);

// Peaks and bandwidths of the platform file, for utilizations.
void UsePlatform(const Platform& platform, Settings* settings);

// The roofs of a device and data type, where a platform file gave them:
// peak FLOP/s and memory bandwidths (and on the CPU its caches').
struct Roofs {
  std::optional<double> peak;
  std::optional<Bandwidths> memory;
  std::map<int64_t, Bandwidths> caches;  // the host's, by working set

  // The roof of traffic that passes over at most `working_set` bytes,
  // `read_fraction` of them read (RoofFor).
  std::optional<double> BandwidthFor(int64_t working_set,
                                     double read_fraction) const;
};
Roofs RoofsOf(const Settings& settings, const std::string& device, DType dtype);

}  // namespace paradnn
