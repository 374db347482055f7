#include "machine/platform.h"

#include <charconv>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace paradnn {
using nlohmann::json;

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
  std::map<std::string, double> caches;
  for (const auto& [bytes, bw] : p.cache_bandwidth) {
    caches[std::to_string(bytes)] = bw;
  }
  j["cache_bandwidth"] = caches;
  j["device_names"] = p.device_names;
  j["backend_devices"] = p.backend_devices;
  return j.dump(2) + "\n";
}

Platform LoadPlatform(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open the platform file");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    throw std::runtime_error(path + ": not JSON: " + e.what());
  }
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
  if (j.contains("cache_bandwidth")) {
    for (const auto& [key, bw] :
         positives(j["cache_bandwidth"], "cache_bandwidth",
                   "bytes per second per cache capacity in bytes, e.g. "
                   "{\"4194304\": 1.2e11}",
                   "number of bytes per second")) {
      int64_t bytes = 0;
      const auto [end, ec] =
          std::from_chars(key.data(), key.data() + key.size(), bytes);
      if (ec != std::errc() || end != key.data() + key.size() || bytes <= 0) {
        throw std::runtime_error(path + ": field 'cache_bandwidth." + key +
                                 "': expected a capacity in bytes");
      }
      p.cache_bandwidth[bytes] = bw;
    }
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
