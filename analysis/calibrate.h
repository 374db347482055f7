// The platform file: peak FLOP/s per data type and memory bandwidth, measured
// here (paradnn calibrate) or written by hand from a data sheet.
#pragma once

#include <map>
#include <string>

namespace paradnn {

struct Platform {
  std::string name;
  std::string description;
  std::map<std::string, double> peak_flops;  // "fp32", "bf16" -> FLOP/s
  double memory_bandwidth = 0;               // bytes/s
};

// Measures large GEMM-shaped FC cases on every backend that runs here and a
// STREAM triad, with `threads` threads; progress on stderr.
Platform Calibrate(int threads);

std::string PlatformJson(const Platform& p);
// Throws std::runtime_error naming the file and the missing or bad field.
Platform LoadPlatform(const std::string& path);

// This machine's name (gethostname).
std::string HostName();

// The CPUs this process may use: those of its affinity mask (taskset, a
// Slurm task's binding), at most its cgroup's CPU quota rounded up (a
// container's or a Slurm step's limit). The default thread count.
int UsableCpus();

// The CPUs a cgroup quota file allows, rounded up: cgroup v2's cpu.max
// ("150000 100000" gives 2, "max 100000" none) or, given the period file
// too, cgroup v1's cpu.cfs_quota_us (-1: none). 0 when there is no limit.
int CpuQuota(const std::string& quota_file,
             const std::string& period_file = "");

// FLOP/s of a STREAM-like triad a = b + s * c over `bytes` per array.
double StreamTriad(size_t bytes_per_array, int threads, int repeats);

}  // namespace paradnn
