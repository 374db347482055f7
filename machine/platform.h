// The platform file: peak FLOP/s per device and data type and memory
// bandwidth, measured here (paradnn calibrate) or written by hand from a
// data sheet; what flops_util and the rooflines divide by.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace paradnn {

using PeakFlops = std::map<std::string, double>;  // "fp32", "bf16" -> FLOP/s

// A memory's or a cache's bandwidth, bytes/s, for three mixes of traffic:
// reads only, STREAM's triad (two reads to a write) and writes only; 0
// where not measured.
struct Bandwidths {
  double read = 0, triad = 0, write = 0;

  // The roof of traffic of which `read_fraction` is reads. A byte read and
  // a byte written each take their own time, which the triad measures
  // overlapped: the time per byte is interpolated linearly in the read
  // fraction between the mixes measured (1, 2/3 and 0); the triad's where
  // the others were not.
  double For(double read_fraction) const;
};

// The roof of traffic that passes, again and again, over at most
// `working_set` bytes, `read_fraction` of them read: the most measured at
// that mix on a working set of `caches` that holds them (data that fits
// one fits every larger one), else `memory`'s.
double RoofFor(const Bandwidths& memory,
               const std::map<int64_t, Bandwidths>& caches, int64_t working_set,
               double read_fraction);

struct Platform {
  std::string name;
  std::string description;
  // Per device ("cpu", "gpu"), the best GEMM any backend on it reached: the
  // roof of flops_util for cases on that device.
  std::map<std::string, PeakFlops> devices;
  // Per backend, its library's own GEMM: the roof its models run under.
  std::map<std::string, PeakFlops> gemm_flops;
  std::map<std::string, std::string> libraries;  // backend -> its Describe()
  double memory_bandwidth = 0;  // the host's, bytes/s (STREAM triad)
  // And streaming reads only and writes only in it (0: not measured).
  double memory_read_bandwidth = 0, memory_write_bandwidth = 0;
  // Within the host's caches: per working set in bytes (256 KiB, doubling,
  // while faster than memory), the same passes over it: the roofs of a
  // layer whose passes each move no more.
  std::map<int64_t, Bandwidths> cache_bandwidth;
  // Per device other than the host's CPU: its memory's bandwidth (bytes/s,
  // the same triad in its memory) and its name.
  std::map<std::string, double> device_bandwidth;
  std::map<std::string, std::string> device_names;
  // Per backend, the device its cases run on ("cpu", "gpu").
  std::map<std::string, std::string> backend_devices;

  // The CPU's peaks (a hand-written file's "peak_flops").
  const PeakFlops& peak_flops() const;
  // A device's peaks, none where it has none.
  const PeakFlops& DevicePeaks(const std::string& device) const;
  // A device's memory bandwidth (triad): the host's for "cpu", 0 where
  // unknown.
  double Bandwidth(const std::string& device) const;
  // And all of its memory's measured mixes.
  Bandwidths MemoryBandwidths(const std::string& device) const;
  // The device a backend's cases ran on: the file's, else "gpu" for
  // torch_cuda and "cpu" for the others.
  std::string DeviceOf(const std::string& backend) const;
};

std::string PlatformJson(const Platform& p);
// Throws std::runtime_error naming the file and the missing or bad field.
Platform LoadPlatform(const std::string& path);

}  // namespace paradnn
