#include "machine/platform.h"

#include <algorithm>
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

Bandwidths Platform::MemoryBandwidths(const std::string& device) const {
  Bandwidths b;
  b.triad = Bandwidth(device);
  if (device == "cpu") {
    b.read = memory_read_bandwidth;
    b.write = memory_write_bandwidth;
  }
  return b;
}

double Bandwidths::For(double read_fraction) const {
  const double f = std::clamp(read_fraction, 0.0, 1.0);
  constexpr double kTriad = 2.0 / 3.0;  // the triad's read fraction
  const double other = f >= kTriad ? read : write;
  if (triad <= 0 || other <= 0) return triad;
  // Seconds per byte at the triad and at the end of f's side.
  const double at_triad = 1 / triad, at_end = 1 / other;
  const double w =
      f >= kTriad ? (f - kTriad) / (1 - kTriad) : (kTriad - f) / kTriad;
  return 1 / (at_triad + w * (at_end - at_triad));
}

double RoofFor(const Bandwidths& memory,
               const std::map<int64_t, Bandwidths>& caches, int64_t working_set,
               double read_fraction) {
  double best = memory.For(read_fraction);
  for (const auto& [bytes, bw] : caches) {
    if (working_set <= bytes) best = std::max(best, bw.For(read_fraction));
  }
  return best;
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
  if (p.memory_read_bandwidth > 0) {
    j["memory_read_bandwidth"] = p.memory_read_bandwidth;
  }
  if (p.memory_write_bandwidth > 0) {
    j["memory_write_bandwidth"] = p.memory_write_bandwidth;
  }
  j["device_bandwidth"] = p.device_bandwidth;
  json caches = json::object();
  for (const auto& [bytes, bw] : p.cache_bandwidth) {
    caches[std::to_string(bytes)] = {
        {"read", bw.read}, {"triad", bw.triad}, {"write", bw.write}};
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
  for (const char* field :
       {"memory_read_bandwidth", "memory_write_bandwidth"}) {
    if (!j.contains(field)) continue;
    if (!j[field].is_number() || j[field].get<double>() <= 0) {
      throw std::runtime_error(path + ": field '" + field + "' is " +
                               j[field].dump() +
                               ": expected a positive number of bytes per "
                               "second");
    }
    (std::string(field) == "memory_read_bandwidth" ? p.memory_read_bandwidth
                                                   : p.memory_write_bandwidth) =
        j[field];
  }
  if (j.contains("device_bandwidth")) {
    p.device_bandwidth =
        positives(j["device_bandwidth"], "device_bandwidth",
                  "bytes per second per device, e.g. {\"gpu\": 4.3e12}",
                  "number of bytes per second");
  }
  if (j.contains("cache_bandwidth")) {
    const json& caches = j["cache_bandwidth"];
    if (!caches.is_object()) {
      throw std::runtime_error(path + ": field 'cache_bandwidth' is " +
                               caches.dump() +
                               ": expected an object of bandwidths per cache "
                               "capacity in bytes");
    }
    for (const auto& [key, v] : caches.items()) {
      // A triad's bytes/s, or each mix's: {"read": .., "triad": .., ...}.
      const std::map<std::string, double> mixes =
          v.is_object()
              ? positives(v, "cache_bandwidth." + key,
                          "bytes per second per mix, e.g. {\"read\": 2e11, "
                          "\"triad\": 1.5e11, \"write\": 1e11}",
                          "number of bytes per second")
              : positives(json{{"triad", v}}, "cache_bandwidth." + key,
                          "bytes per second", "number of bytes per second");
      Bandwidths bw;
      for (const auto& [mix, value] : mixes) {
        if (mix == "read") {
          bw.read = value;
        } else if (mix == "triad") {
          bw.triad = value;
        } else if (mix == "write") {
          bw.write = value;
        } else {
          throw std::runtime_error(path + ": field 'cache_bandwidth." + key +
                                   "." + mix +
                                   "': expected read, triad or write");
        }
      }
      if (bw.triad <= 0) {
        throw std::runtime_error(path + ": field 'cache_bandwidth." + key +
                                 "' has no triad: expected its bytes per "
                                 "second");
      }
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
