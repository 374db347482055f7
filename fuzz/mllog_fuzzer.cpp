// MLPerf logs: any bytes are read into a run with problems, never a crash.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "adapters/mlperf/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path =
      (std::filesystem::temp_directory_path() /
       ("paradnn_mllog_fuzz_" + std::to_string(getpid()) + ".txt"))
          .string();
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(data), size);
  (void)paradnn::ReadMlperfLog(path);
  return 0;
}
