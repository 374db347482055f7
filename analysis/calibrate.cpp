#include "analysis/calibrate.h"

#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>
#include <vector>

#include "backends/backend.h"
#include "generators/cost.h"
#include "machine/host.h"
#include "records/results.h"

namespace paradnn {
using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

Platform Calibrate(int threads) {
  Platform p;
  p.name = HostName();
  p.description = CpuName() + ", " + std::to_string(threads) + " threads";
  for (const std::string& name : BackendNames()) {
    std::string error;
    const Backend* backend = FindBackend(name, &error);
    if (backend == nullptr) {
      std::cerr << "calibrate: " << error << "\n";
      continue;
    }
    const std::string device = backend->Device();
    std::string none;  // the types it has no GEMM in here
    for (const std::string type : kGemmTypes) {
      const bool tf32 = type == "tf32";
      const DType dtype = ParseDType(tf32 ? "fp32" : type);
      double best = 0;
      try {
        for (const auto& [m, n, k] : kGemmShapes) {
          best =
              std::max(best, backend->GemmFlops(m, n, k, dtype, threads, tf32));
        }
      } catch (const std::exception& e) {
        std::cerr << "calibrate: " << name << " " << type
                  << " GEMM failed: " << e.what() << "\n";
        continue;
      }
      if (best <= 0) {
        none += (none.empty() ? "" : ", ") + type;
        continue;
      }
      std::cerr << "calibrate: " << name << " " << type << " GEMM "
                << best / 1e9 << " GFLOP/s\n";
      p.gemm_flops[name][type] = best;
      p.libraries[name] = backend->Describe();
      p.backend_devices[name] = device;
      double& peak = p.devices[device][type];
      peak = std::max(peak, best);
    }
    if (!none.empty()) {
      std::cerr << "calibrate: " << name << ": no GEMM in " << none
                << " here\n";
    }
    if (device == "cpu" || p.backend_devices.count(name) == 0) continue;
    try {
      const double bandwidth = backend->MemoryBandwidth();
      if (bandwidth > 0) {
        std::cerr << "calibrate: " << name << " " << device << " memory triad "
                  << bandwidth / 1e9 << " GB/s\n";
        double& best = p.device_bandwidth[device];
        best = std::max(best, bandwidth);
      }
      const std::string device_name = backend->DeviceName();
      if (!device_name.empty()) p.device_names[device] = device_name;
    } catch (const std::exception& e) {
      std::cerr << "calibrate: " << name << " " << device
                << " memory triad failed: " << e.what() << "\n";
    }
  }
  // Each mix of reads and writes over `bytes` in all (its arrays share
  // them), as many passes as `repeats`.
  auto mixes = [&](int64_t bytes, int repeats) {
    Bandwidths b;
    b.read = StreamBandwidth(Traffic::kRead, bytes, threads, repeats);
    b.triad = StreamBandwidth(Traffic::kTriad, bytes / 3, threads, repeats);
    b.write = StreamBandwidth(Traffic::kWrite, bytes, threads, repeats);
    return b;
  };
  // Memory: 768 MiB in all, far beyond any cache.
  const Bandwidths memory = mixes(int64_t{768} << 20, 5);
  p.memory_bandwidth = memory.triad;
  p.memory_read_bandwidth = memory.read;
  p.memory_write_bandwidth = memory.write;
  std::cerr << "calibrate: memory: STREAM triad " << memory.triad / 1e9
            << " GB/s, reads " << memory.read / 1e9 << " GB/s, writes "
            << memory.write / 1e9 << " GB/s\n";
  // The caches' roofs: each mix on working sets of 256 KiB, doubling,
  // until one is no faster than memory: every cache level a layer's
  // passes may fit in, and the sizes between, where they spill in part.
  // A layer gets the roof of the smallest working set measured that holds
  // its passes: its data sits in whatever caches these passes' did.
  // Passes over a small working set are short, so many of them, the best
  // kept.
  for (int64_t bytes = int64_t{256} << 10; bytes < (int64_t{768} << 20);
       bytes *= 2) {
    const int repeats = static_cast<int>(
        std::clamp<int64_t>((int64_t{1} << 30) / bytes, 5, 2000));
    const Bandwidths bw = mixes(bytes, repeats);
    if (bw.triad <= memory.triad) break;  // no faster than memory
    p.cache_bandwidth[bytes] = bw;
    std::cerr << "calibrate: within " << bytes / 1024 << " KiB: triad "
              << bw.triad / 1e9 << " GB/s, reads " << bw.read / 1e9
              << " GB/s, writes " << bw.write / 1e9 << " GB/s\n";
  }
  return p;
}

}  // namespace paradnn
