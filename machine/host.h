// This machine as the operating system describes it: its name, its CPU,
// the CPUs and memory this process may use, and its memory's bandwidth.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace paradnn {

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

// The traffic of a streaming pass over arrays of doubles: reads only (a
// sum of b), STREAM's triad (a = b + s * c: two reads to a write), writes
// only (a = s * i).
enum class Traffic { kRead, kTriad, kWrite };

// Bytes/s a pass of `traffic` over `bytes` per array moves (read and
// written together), the best of `repeats`.
double StreamBandwidth(Traffic traffic, size_t bytes_per_array, int threads,
                       int repeats);

}  // namespace paradnn
