// The runner's commands and their help.
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
#include "tests/runner/runner.h"
#include "tests/scratch.h"

namespace paradnn::runner_tests {
namespace {

const char* const kCommandNames[] = {"calibrate",      "report",
                                     "merge",          "onnx-check",
                                     "mlperf-summary", "mlperf-report"};

TEST_CASE("--help lists the commands and flags, on stdout", "[runner][cli]") {
  for (const char* flag : {"--help", "-h", "help"}) {
    INFO(flag);
    Result r = RunRunner(flag);
    CHECK(r.status == 0);
    CHECK(r.err.empty());
    for (const char* command : kCommandNames) {
      CHECK_THAT(r.out, ContainsSubstring(std::string("\n  ") + command + " "));
    }
    CHECK_THAT(r.out, ContainsSubstring("--paradnn_config"));
    CHECK_THAT(r.out, ContainsSubstring("--paradnn_isolate"));
    CHECK_THAT(r.out, ContainsSubstring("paradnn --benchmark_help"));
  }
  Result gb = RunRunner("--benchmark_help");
  CHECK(gb.status == 0);
  CHECK_THAT(gb.out, ContainsSubstring("--benchmark_filter="));
}

TEST_CASE("every command explains itself with --help", "[runner][cli]") {
  for (const char* command : kCommandNames) {
    INFO(command);
    for (const std::string& args :
         {std::string(command) + " --help", std::string(command) + " -h",
          std::string("help ") + command}) {
      Result r = RunRunner(args);
      CHECK(r.status == 0);
      CHECK(r.err.empty());
      CHECK(r.out.rfind(std::string("usage: paradnn ") + command + " ", 0) ==
            0);
    }
    // Used wrongly, the same usage goes to stderr with status 2.
    Result wrong = RunRunner(std::string(command) + " --no-such-option x");
    CHECK(wrong.status == 2);
    CHECK(wrong.out.empty());
    CHECK_THAT(wrong.err,
               ContainsSubstring(std::string("usage: paradnn ") + command));
  }
}

TEST_CASE("an unknown command names the known ones", "[runner][cli]") {
  Result r = RunRunner("mreg a.json");
  CHECK(r.status == 2);
  CHECK_THAT(r.err,
             ContainsSubstring(
                 "no command 'mreg'; commands: calibrate, report, "
                 "compare, merge, onnx-check, mlperf-summary, mlperf-report, "
                 "help"));
  Result help = RunRunner("help mreg");
  CHECK(help.status == 2);
  CHECK_THAT(help.err, ContainsSubstring("no command 'mreg'"));
}

}  // namespace
}  // namespace paradnn::runner_tests
