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
#include "machine/caches.h"
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
  p.memory_bandwidth = StreamTriad(size_t{256} << 20, threads, 5);
  std::cerr << "calibrate: STREAM triad " << p.memory_bandwidth / 1e9
            << " GB/s\n";
  // The caches' roofs: the triad on half of each level, the rest of it
  // left for what else a core holds; passes over a small working set are
  // short, so many of them, the best kept.
  const int64_t l2 = L2Bytes() * threads;
  const int64_t l3 = static_cast<int64_t>(
      MeasureL3Bytes(static_cast<size_t>(L2Bytes()), size_t{256} << 20));
  for (const int64_t capacity : {l2, l3}) {
    if (capacity <= 0 || p.cache_bandwidth.count(capacity)) continue;
    const int repeats = static_cast<int>(
        std::clamp<int64_t>((int64_t{1} << 30) / capacity, 5, 2000));
    const double bw =
        StreamTriad(static_cast<size_t>(capacity / 6), threads, repeats);
    if (bw <= p.memory_bandwidth) continue;  // no faster than memory
    p.cache_bandwidth[capacity] = bw;
    std::cerr << "calibrate: triad within " << capacity / 1024
              << " KiB of cache " << bw / 1e9 << " GB/s\n";
  }
  return p;
}

}  // namespace paradnn
