// The report tests' inputs: results files as the runner writes them, and
// scratch folders to draw into.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/catch.h"
#include "tests/scratch.h"

namespace paradnn::report_tests {

namespace fs = std::filesystem;
using Catch::Matchers::ContainsSubstring;

inline fs::path Dir(const std::string& name) {
  fs::path p = test::Scratch(name);
  fs::create_directories(p);
  return p;
}

inline std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Results as the runner writes them: FC and CNN cases on two backends; on
// `world` ranks, each step `slower` times as long and with `more` counters.
inline std::string ResultsJson(int world = 1, double slower = 1,
                               const std::string& more = "") {
  std::string out = "{\"context\": {\"paradnn_world_size\": \"" +
                    std::to_string(world) + "\"}, \"benchmarks\": [";
  bool first = true;
  auto add = [&](const std::string& name, double ms, double params,
                 double flops, double intensity,
                 const std::string& extra = "") {
    out += std::string(first ? "" : ",") + "{\"name\": \"" + name +
           "/real_time\", \"run_name\": \"" + name +
           "/real_time\", \"run_type\": \"iteration\", \"iterations\": 5, "
           "\"real_time\": " +
           std::to_string(ms * slower) +
           ", \"time_unit\": \"ms\", \"params\": " + std::to_string(params) +
           ", \"flop_per_step\": " + std::to_string(flops) +
           ", \"bytes_per_step\": " + std::to_string(flops / intensity) +
           ", \"intensity\": " + std::to_string(intensity) + extra + more + "}";
    first = false;
  };
  for (const char* backend : {"onednn", "torch"}) {
    const double slow = std::string(backend) == "torch" ? 1.5 : 1.0;
    for (int batch : {64, 256}) {
      for (int nodes : {256, 1024, 4096}) {
        const std::string name =
            "FC/layers:4/nodes:" + std::to_string(nodes) +
            "/input:2000/output:1000/batch:" + std::to_string(batch) + "/" +
            backend + "/fp32/train";
        const double flops = 6.0 * batch * nodes * nodes * 4;
        // The FC cases were profiled (--paradnn_profile).
        add(name, slow * flops / 1e8 * (1 + 64.0 / batch), nodes * nodes * 4.0,
            flops, batch / 4.0,
            slow > 1
                ? ", \"time_gemm_frac\": 0.6, \"time_elementwise_frac\": "
                  "0.2, \"time_movement_frac\": 0.1, "
                  "\"time_optimizer_frac\": 0.05, \"time_other_frac\": 0.05"
                : ", \"time_gemm_frac\": 0.9, \"time_elementwise_frac\": "
                  "0.05, \"time_movement_frac\": 0.02, "
                  "\"time_optimizer_frac\": 0.02, \"time_other_frac\": 0.01");
      }
    }
    for (int batch : {8, 32}) {
      for (int filters : {16, 32}) {
        const std::string name =
            "CNN/block:residual/blocks:1/filters:" + std::to_string(filters) +
            "/image:200/output:1000/batch:" + std::to_string(batch) + "/" +
            backend + "/fp32/train";
        add(name, slow * batch * filters * 0.2, filters * 1e4,
            batch * filters * 1e8, 20.0 + filters);
      }
    }
    // Where only the block kind varies, as in the quickstart's bf16 cases.
    for (const char* block : {"residual", "bottleneck"}) {
      add(std::string("CNN/block:") + block +
              "/blocks:1/filters:32/image:200/output:1000/batch:8/" + backend +
              "/bf16/train",
          slow * 50, 3e5, 8e9, 40);
    }
  }
  return out + "]}";
}

// ResNet-50's twin as a run here measured it: batch 50, 5.422 s per step.
inline std::string TwinJson() {
  const std::string name =
      "CNN/block:bottleneck/blocks:3-4-6-3/filters:64/image:224/output:1000/"
      "batch:50/onednn/fp32/train";
  return "{\"context\": {}, \"benchmarks\": [{\"name\": \"" + name +
         "/real_time\", \"run_name\": \"" + name +
         "/real_time\", \"run_type\": \"iteration\", \"iterations\": 3, "
         "\"real_time\": 5422, \"time_unit\": \"ms\", \"params\": "
         "25557032, \"flop_per_step\": 1.2149e12, \"bytes_per_step\": "
         "1.5258e10, \"intensity\": 79.62}]}";
}

}  // namespace paradnn::report_tests
