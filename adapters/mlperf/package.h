// The MLPerf results package layout:
//   <org>/systems/<system>.json
//   <org>/results/<system>/<benchmark>/result_<N>.txt
#pragma once

#include <string>
#include <vector>

#include "adapters/mlperf/mllog.h"

namespace paradnn {

// The system description MLPerf asks for, filled from what this machine
// tells (/proc/cpuinfo, /proc/meminfo, /etc/os-release); `frameworks` are
// the backends' descriptions.
OrderedJson SystemDescription(const std::string& org, const std::string& system,
                              const std::string& status,
                              const std::vector<std::string>& frameworks);

// Writes the lines of one run to `path`, creating its folders.
void WriteMllog(const std::string& path, const std::vector<MllogEvent>& events);

}  // namespace paradnn
