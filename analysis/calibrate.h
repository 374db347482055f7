// The platform file: peak FLOP/s per data type and memory bandwidth, measured
// here (paradnn calibrate) or written by hand from a data sheet.
#pragma once

#include <map>
#include <string>

namespace paradnn {

using PeakFlops = std::map<std::string, double>;  // "fp32", "bf16" -> FLOP/s

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
  // A device's memory bandwidth: the host's for "cpu", 0 where unknown.
  double Bandwidth(const std::string& device) const;
  // The device a backend's cases ran on: the file's, else "gpu" for
  // torch_cuda and "cpu" for the others.
  std::string DeviceOf(const std::string& backend) const;
};

// The data types calibrate measures a GEMM in: the case data types, and
// TF32, the math NVIDIA GPUs may run fp32 products in.
constexpr const char* kGemmTypes[] = {"fp32", "tf32", "fp16", "bf16"};

// The GEMM shapes (m, n, k) calibrate measures; the best of them is a
// backend's roof. Large ones, and the batch-sized products of dense layers
// whose operands stay in cache, where a backend runs fastest.
constexpr int64_t kGemmShapes[][3] = {{2048, 4096, 4096}, {4096, 4096, 1024},
                                      {1024, 1024, 1024}, {512, 1024, 1024},
                                      {512, 256, 2048},   {64, 1024, 1024}};

// Measures every backend's own GEMM over kGemmShapes in each of
// kGemmTypes it has, best of several runs, a STREAM triad with `threads`
// threads, and each other device's memory; progress on stderr.
Platform Calibrate(int threads);

std::string PlatformJson(const Platform& p);
// Throws std::runtime_error naming the file and the missing or bad field.
Platform LoadPlatform(const std::string& path);

// This machine's name (gethostname).
std::string HostName();

// The CPU's model name (/proc/cpuinfo).
std::string CpuName();

// The CPUs this process may use: those of its affinity mask (taskset, a
// Slurm task's binding), at most its cgroup's CPU quota rounded up (a
// container's or a Slurm step's limit). The default thread count.
int UsableCpus();

// Bytes of memory available to a new process (MemAvailable), 0 if unknown.
int64_t AvailableMemory();

// The CPUs a cgroup quota file allows, rounded up: cgroup v2's cpu.max
// ("150000 100000" gives 2, "max 100000" none) or, given the period file
// too, cgroup v1's cpu.cfs_quota_us (-1: none). 0 when there is no limit.
int CpuQuota(const std::string& quota_file,
             const std::string& period_file = "");

// FLOP/s of a STREAM-like triad a = b + s * c over `bytes` per array.
double StreamTriad(size_t bytes_per_array, int threads, int repeats);

}  // namespace paradnn
