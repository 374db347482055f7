// Results JSON: read, or a runtime_error that names the file.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "records/results.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path =
      (std::filesystem::temp_directory_path() /
       ("paradnn_results_fuzz_" + std::to_string(getpid()) + ".json"))
          .string();
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(data), size);
  try {
    (void)paradnn::ReadResults(path);
  } catch (const std::runtime_error&) {
  }
  return 0;
}
