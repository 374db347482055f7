#include "adapters/mlperf/package.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <thread>

#include "records/stack.h"

namespace paradnn {
namespace fs = std::filesystem;

namespace {

// The value after "key<tab>: " in /proc/cpuinfo-style files.
std::string Field(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string v = line.substr(colon + 1);
    v.erase(0, v.find_first_not_of(" \t"));
    return v;
  }
  return "";
}

int Sockets() {
  std::ifstream in("/proc/cpuinfo");
  std::set<std::string> ids;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("physical id", 0) == 0) ids.insert(line);
  }
  return ids.empty() ? 1 : static_cast<int>(ids.size());
}

}  // namespace

OrderedJson SystemDescription(const std::string& org, const std::string& system,
                              const std::string& status,
                              const std::vector<std::string>& frameworks) {
  const std::string mem_kib = Field("/proc/meminfo", "MemTotal");
  const double mem_gb = std::atof(mem_kib.c_str()) / (1024.0 * 1024.0);
  char mem[32];
  std::snprintf(mem, sizeof(mem), "%.0f GB", mem_gb);
  std::string framework;
  for (const std::string& f : frameworks) {
    framework += (framework.empty() ? "" : "; ") + f;
  }
  const std::string cores = Field("/proc/cpuinfo", "cpu cores");
  OrderedJson j;
  j["submitter"] = org;
  j["division"] = "open";
  j["status"] = status;
  j["system_name"] = system;
  j["number_of_nodes"] = "1";
  j["host_processors_per_node"] = std::to_string(Sockets());
  j["host_processor_model_name"] = Field("/proc/cpuinfo", "model name");
  j["host_processor_core_count"] = cores.empty() ? "unknown" : cores;
  j["host_processor_vcpu_count"] =
      std::to_string(std::thread::hardware_concurrency());
  j["host_memory_capacity"] = mem;
  j["host_storage_type"] = "unknown";
  j["host_storage_capacity"] = "unknown";
  j["host_networking"] = "N/A";
  j["accelerators_per_node"] = "0";
  j["accelerator_model_name"] = "N/A";
  j["accelerator_memory_capacity"] = "N/A";
  j["framework"] = framework;
  j["operating_system"] = ThisDistribution();
  j["other_software_stack"] = "paradnn synthetic models (ParaDnn)";
  j["sw_notes"] = "";
  return j;
}

void WriteMllog(const std::string& path,
                const std::vector<MllogEvent>& events) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream out(path);
  if (!out) throw std::runtime_error(path + ": cannot write the MLPerf log");
  for (const MllogEvent& e : events) out << FormatMllog(e) << "\n";
}

}  // namespace paradnn
