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
#include "results/results.h"

namespace paradnn {
using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

std::string HostName() {
  char buf[256] = {};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

int CpuQuota(const std::string& quota_file, const std::string& period_file) {
  std::ifstream quota_in(quota_file);
  std::string quota;
  double period = 0;
  if (!(quota_in >> quota)) return 0;
  if (period_file.empty()) {
    quota_in >> period;  // v2: "quota period" in one file
  } else {
    std::ifstream(period_file) >> period;
  }
  if (quota == "max" || quota == "-1" || period <= 0) return 0;
  const double cpus = std::atof(quota.c_str()) / period;
  return cpus > 0 ? static_cast<int>(std::ceil(cpus - 1e-9)) : 0;
}

int64_t AvailableMemory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

int UsableCpus() {
  int cpus = static_cast<int>(std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cpus = CPU_COUNT(&set);
  // This process's cgroup: "0::/path" (v2), or "N:cpu,cpuacct:/path" (v1).
  std::ifstream cgroups("/proc/self/cgroup");
  std::string line;
  while (std::getline(cgroups, line)) {
    const size_t colon = line.find(':'), path = line.find(':', colon + 1);
    if (colon == std::string::npos || path == std::string::npos) continue;
    const std::string controllers = line.substr(colon + 1, path - colon - 1);
    const std::string dir = line.substr(path + 1);
    int quota = 0;
    if (controllers.empty()) {
      quota = CpuQuota("/sys/fs/cgroup" + dir + "/cpu.max");
    } else if (controllers.find("cpu") != std::string::npos) {
      const std::string v1 = "/sys/fs/cgroup/cpu,cpuacct" + dir;
      quota = CpuQuota(v1 + "/cpu.cfs_quota_us", v1 + "/cpu.cfs_period_us");
    }
    if (quota > 0) cpus = std::min(cpus, quota);
  }
  return std::max(1, cpus);
}

std::string CpuName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0)
      return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

double StreamTriad(size_t bytes_per_array, int threads, int repeats) {
  const size_t n = bytes_per_array / sizeof(double);
  std::vector<double> a(n), b(n, 1.0), c(n, 2.0);
  const double s = 3.0;
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = Clock::now();
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
    const double t = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, 3.0 * n * sizeof(double) / t);
  }
  if (a[n / 2] != 7.0) throw std::logic_error("STREAM triad computed wrongly");
  return best;
}

const PeakFlops& Platform::peak_flops() const { return DevicePeaks("cpu"); }

const PeakFlops& Platform::DevicePeaks(const std::string& device) const {
  static const PeakFlops none;
  const auto it = devices.find(device);
  return it == devices.end() ? none : it->second;
}

double Platform::Bandwidth(const std::string& device) const {
  if (device == "cpu") return memory_bandwidth;
  const auto it = device_bandwidth.find(device);
  return it == device_bandwidth.end() ? 0 : it->second;
}

std::string Platform::DeviceOf(const std::string& backend) const {
  const auto it = backend_devices.find(backend);
  if (it != backend_devices.end()) return it->second;
  return backend == "torch_cuda" ? "gpu" : "cpu";
}

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
  return p;
}

std::string PlatformJson(const Platform& p) {
  json j;
  j["name"] = p.name;
  j["description"] = p.description;
  j["peak_flops"] = p.peak_flops();
  j["devices"] = p.devices;
  j["gemm_flops"] = p.gemm_flops;
  j["libraries"] = p.libraries;
  // Where the peaks come from. A theoretical peak (cores x FMA units x
  // vector width x clock) needs what the CPU does not report.
  j["peak_basis"] =
      "the fastest GEMM a backend measured on each device; no theoretical "
      "peak: the CPU reports neither its FMA units per core nor its clock "
      "under vector load";
  j["memory_bandwidth"] = p.memory_bandwidth;
  j["device_bandwidth"] = p.device_bandwidth;
  j["device_names"] = p.device_names;
  j["backend_devices"] = p.backend_devices;
  return j.dump(2) + "\n";
}

Platform LoadPlatform(const std::string& path) {
  const json j = ReadJsonFile(path, "platform file");
  Platform p;
  p.name = j.value("name", "");
  p.description = j.value("description", "");
  if (!j.contains("peak_flops") || !j["peak_flops"].is_object() ||
      j["peak_flops"].empty()) {
    throw std::runtime_error(
        path +
        ": field 'peak_flops' is missing: expected an object of peak "
        "FLOP/s per data type, e.g. {\"fp32\": 2.2e11}");
  }
  // {"key": positive number, ...} at `field`: FLOP/s per data type, or
  // bytes/s per device; `object` and `each` say which when one is not.
  auto positives = [&](const json& v, const std::string& field,
                       const std::string& object, const std::string& each) {
    if (!v.is_object()) {
      throw std::runtime_error(path + ": field '" + field + "' is " + v.dump() +
                               ": expected an object of " + object);
    }
    std::map<std::string, double> out;
    for (const auto& [key, f] : v.items()) {
      if (!f.is_number() || f.get<double>() <= 0) {
        throw std::runtime_error(path + ": field '" + field + "." + key +
                                 "' is " + f.dump() + ": expected a positive " +
                                 each);
      }
      out[key] = f;
    }
    return out;
  };
  auto peaks = [&](const json& v, const std::string& field) {
    return positives(v, field, "FLOP/s per data type", "FLOP/s");
  };
  p.devices["cpu"] = peaks(j["peak_flops"], "peak_flops");
  for (const char* group : {"devices", "gemm_flops"}) {
    if (!j.contains(group)) continue;
    auto& into = std::string(group) == "devices" ? p.devices : p.gemm_flops;
    for (const auto& [key, v] : j[group].items()) {
      into[key] = peaks(v, std::string(group) + "." + key);
    }
  }
  if (j.contains("libraries") && j["libraries"].is_object()) {
    for (const auto& [backend, v] : j["libraries"].items()) {
      if (v.is_string()) p.libraries[backend] = v;
    }
  }
  if (!j.contains("memory_bandwidth") || !j["memory_bandwidth"].is_number() ||
      j["memory_bandwidth"].get<double>() <= 0) {
    throw std::runtime_error(path +
                             ": field 'memory_bandwidth' is missing or not a "
                             "positive number of bytes per second");
  }
  p.memory_bandwidth = j["memory_bandwidth"];
  if (j.contains("device_bandwidth")) {
    p.device_bandwidth =
        positives(j["device_bandwidth"], "device_bandwidth",
                  "bytes per second per device, e.g. {\"gpu\": 4.3e12}",
                  "number of bytes per second");
  }
  for (const char* group : {"device_names", "backend_devices"}) {
    if (!j.contains(group) || !j[group].is_object()) continue;
    auto& into = std::string(group) == "device_names" ? p.device_names
                                                      : p.backend_devices;
    for (const auto& [key, v] : j[group].items()) {
      if (v.is_string()) into[key] = v;
    }
  }
  return p;
}

}  // namespace paradnn
