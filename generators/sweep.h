// Sweeps from YAML: each family parameter is a value, a list, or a range;
// the sweep is their Cartesian product with backends, dtypes and modes.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "generators/spec.h"

namespace paradnn {

// A bad config: the message starts with "file:line:column: ".
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Sweep {
  std::vector<Case> cases;  // unique, in config order
  // Grid points that are no model, as "file:line:col: skipped NAME: why".
  std::vector<std::string> invalid;
  int threads = 0;  // 0: the CPUs the process may use
  uint64_t seed = 1;
  // Who and what MLPerf outputs name (empty: the flags' or the defaults).
  std::string mlperf_org, mlperf_system, mlperf_status;
};

// `backends` lists the names a config may use.
Sweep LoadSweep(const std::string& path,
                const std::vector<std::string>& backends);
Sweep ParseSweep(const std::string& text, const std::string& source,
                 const std::vector<std::string>& backends);

}  // namespace paradnn
