// Combining the Google Benchmark JSON of a sweep's shards into one file.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace paradnn {

struct Merged {
  nlohmann::json results;               // Google Benchmark JSON
  std::vector<std::string> duplicates;  // runs seen in more than one file
  std::vector<std::string> missing;     // cases of the config in no file
};

// Refuses (std::runtime_error naming both files and the field) shards whose
// contexts differ in paradnn version or config; each benchmark keeps its
// file's host_name. With a config, lists the cases it expands to that no
// file has.
Merged MergeResults(const std::vector<std::string>& files,
                    const std::string& config = "");

}  // namespace paradnn
