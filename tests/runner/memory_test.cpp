// Memory estimates against the measured peak RSS.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <string_view>

#include "adapters/mlperf/reader.h"
#include "analysis/compare.h"
#include "bricks/bricks.h"
#include "generators/cost.h"
#include "generators/spec.h"
#include "machine/caches.h"
#include "records/results.h"
#include "records/rounds.h"
#include "tests/backends/clock_costs.h"
#include "tests/catch.h"
#include "tests/onednn_cache_defect.h"
#include "tests/runner/runner.h"
#include "tests/scratch.h"

namespace paradnn::runner_tests {
namespace {

// Peak RSS in bytes of the runner on one case (a child process of its own).
double PeakRss(const std::string& name) {
  const pid_t pid = fork();
  if (pid == 0) {
    // The results go nowhere; only the child's footprint counts.
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    const std::string arg = "--paradnn_case=" + name;
    execl(PARADNN_RUNNER, PARADNN_RUNNER, arg.c_str(), "--paradnn_steps=2",
          "--paradnn_progress=false", "--benchmark_format=json",
          "--benchmark_out=/dev/null", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  INFO(name);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  return usage.ru_maxrss * 1024.0;
}

TEST_CASE("memory estimates against the measured peak RSS",
          "[runner][memory]") {
  // The runner's own footprint with a backend (its libraries, a tiny model)
  // is the baseline.
  std::map<std::string, double> baseline;
  for (const std::string backend : {"torch", "onednn"})
    baseline[backend] =
        PeakRss("FC/layers:1/nodes:8/input:8/output:2/batch:2/" + backend +
                "/fp32/infer");
  for (const std::string model :
       {"FC/layers:4/nodes:2048/input:2000/output:1000/batch:512",
        "CNN/block:residual/blocks:1/filters:32/image:200/output:1000/batch:32",
        "CNN/block:bottleneck/blocks:2/filters:32/image:128/output:1000/"
        "batch:16",
        "RNN/cell:lstm/layers:3/embed:512/vocab:1024/length:50/batch:64",
        "RNN/cell:gru/layers:2/embed:512/vocab:1024/length:50/batch:64",
        "TRANSFORMER/layers:2/d_model:256/heads:8/ffn:1024/length:256/"
        "vocab:1000/causal:true/batch:16",
        "LLM/layers:4/d_model:512/heads:8/kv_heads:2/ffn:1408/vocab:32000/"
        "context:2048/batch:4/phase:prefill",
        "LLM/layers:4/d_model:512/heads:8/kv_heads:2/ffn:1408/vocab:32000/"
        "context:8192/batch:16/phase:decode",
        // Tables of 410 MB in all, of which a step reads 8,000 rows of each.
        "DLRM/tables:8/rows:200000/dim:64/hotness:16/dense:13/"
        "bottom:256-128-64/top:512-256-128-64/cross:2/rank:128/batch:512"}) {
    for (const std::string suffix :
         {"/torch/fp32/train", "/torch/fp32/infer", "/onednn/fp32/train",
          "/onednn/fp32/infer"}) {
      const std::string name = model + suffix;
      // Where oneDNN misreads the caches, LibTorch convolves in its own
      // code (im2col buffers the cost model does not count).
      if (!test::OnednnCacheDefect().empty() &&
          (name.find("/onednn/") != name.npos || name.rfind("CNN/", 0) == 0)) {
        WARN(name << ": " << test::OnednnCacheDefect());
        continue;
      }
      // The LLM family serves requests: inference only.
      if (name.rfind("LLM/", 0) == 0 && name.find("/train") != name.npos) {
        continue;
      }
      const Case c = ParseCaseName(name);
      // LibTorch frees each activation after its last reader (its
      // Backend::RecyclesWithinStep); oneDNN keeps a buffer for each.
      const Cost cost = ComputeCost(c.model.BuildGraph(), c.mode, c.dtype);
      const double estimate = static_cast<double>(
          c.backend == "torch" ? cost.streaming_memory : cost.memory);
      const double measured = PeakRss(name) - baseline.at(c.backend);
      INFO(name << ": estimate " << estimate / 1048576 << " MiB, measured "
                << measured / 1048576 << " MiB above the baseline, "
                << measured / estimate << " times");
      // Measured over estimated here: 0.45 (LibTorch training) to 1.54
      // (allocator slack and backend temporaries); LibTorch's inference,
      // against what is alive between its layers, 1.0-2.3 (two runs): its
      // convolutions copy inputs and outputs to blocked layouts and its
      // attention transposes, temporaries the layer graph does not show.
      // An estimate that misses low lets a case run the machine out of
      // memory.
      const bool streaming = c.backend == "torch" && c.mode == Mode::kInfer;
      if (name.find("/phase:decode/") != name.npos) {
        // A decode step's memory is its key/value cache (537 MB here) and
        // weights (176 MB), both exact, and little else: 0.99 (oneDNN) and
        // 1.15 (LibTorch, which holds a layer's cache in fp32 on the host
        // while it copies it). A cache counted twice, or left out, misses.
        CHECK(measured > 0.8 * estimate);
        CHECK(measured < 1.3 * estimate);
        continue;
      }
      CHECK(measured < (streaming ? 3 : 1.75) * estimate);
      CHECK(measured > estimate / 4);
    }
  }
}

}  // namespace
}  // namespace paradnn::runner_tests
