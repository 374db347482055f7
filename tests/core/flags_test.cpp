#include "core/flags.h"

#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tests/catch.h"

namespace paradnn {
namespace {

// argv as main() gets it, backed by strings the test owns.
struct Argv {
  explicit Argv(std::vector<std::string> args) : storage(std::move(args)) {
    for (std::string& s : storage) ptrs.push_back(s.data());
    ptrs.push_back(nullptr);
    argc = static_cast<int>(storage.size());
  }
  std::vector<std::string> rest() const {
    return std::vector<std::string>(ptrs.begin(), ptrs.begin() + argc);
  }
  std::vector<std::string> storage;
  std::vector<char*> ptrs;
  int argc;
};

TEST_CASE("paradnn flags are taken out of argv, others stay", "[flags]") {
  Argv a({"bin", "--benchmark_filter=FC/", "--paradnn_config=x.yaml",
          "--paradnn_case", "FC/a", "--paradnn_case=FC/b",
          "--paradnn_threads=3", "--paradnn_backends=torch,onednn",
          "--benchmark_format=json", "--paradnn_max_memory=1.5G"});
  Options o = ParseFlags(&a.argc, a.ptrs.data());
  CHECK(a.rest() == std::vector<std::string>{"bin", "--benchmark_filter=FC/",
                                             "--benchmark_format=json"});
  CHECK(a.ptrs[a.argc] == nullptr);
  CHECK(o.config == "x.yaml");
  CHECK(o.cases == std::vector<std::string>{"FC/a", "FC/b"});
  CHECK(o.threads == 3);
  CHECK(o.backends == std::vector<std::string>{"torch", "onednn"});
  CHECK(o.max_memory == 1610612736);
  CHECK(o.progress);
}

TEST_CASE("flags come from the environment too", "[flags]") {
  setenv("PARADNN_SEED", "42", 1);
  setenv("PARADNN_MODES", "infer", 1);
  Options o = ParseFlags(nullptr, nullptr);
  unsetenv("PARADNN_SEED");
  unsetenv("PARADNN_MODES");
  CHECK(o.seed == 42);
  CHECK(o.modes == std::vector<std::string>{"infer"});
}

TEST_CASE("bad flags say which and why", "[flags]") {
  using Catch::Matchers::ContainsSubstring;
  Argv unknown({"bin", "--paradnn_colour=red"});
  CHECK_THROWS_WITH(ParseFlags(&unknown.argc, unknown.ptrs.data()),
                    ContainsSubstring("paradnn_colour"));
  Argv threads({"bin", "--paradnn_threads=0"});
  CHECK_THROWS_WITH(
      ParseFlags(&threads.argc, threads.ptrs.data()),
      ContainsSubstring("--paradnn_threads=0: expected a positive"));
  Argv memory({"bin", "--paradnn_max_memory=lots"});
  CHECK_THROWS_WITH(ParseFlags(&memory.argc, memory.ptrs.data()),
                    ContainsSubstring("'lots' is not a memory size"));
  Argv steps({"bin", "--paradnn_steps=0"});
  CHECK_THROWS_WITH(
      ParseFlags(&steps.argc, steps.ptrs.data()),
      ContainsSubstring("--paradnn_steps=0: expected a positive"));
  Argv type({"bin", "--paradnn_threads=two"});
  CHECK_THROWS_WITH(ParseFlags(&type.argc, type.ptrs.data()),
                    ContainsSubstring("paradnn_threads"));
}

TEST_CASE("fusion: on by default, off as a value or from the environment",
          "[flags][fusion]") {
  Argv none({"bin"});
  CHECK(ParseFlags(&none.argc, none.ptrs.data()).fuse);
  Argv off({"bin", "--paradnn_fuse=false", "--benchmark_filter=x"});
  CHECK_FALSE(ParseFlags(&off.argc, off.ptrs.data()).fuse);
  CHECK(off.rest() == std::vector<std::string>{"bin", "--benchmark_filter=x"});
  setenv("PARADNN_FUSE", "0", 1);
  const bool env = ParseFlags(nullptr, nullptr).fuse;
  unsetenv("PARADNN_FUSE");
  CHECK_FALSE(env);
  Argv bad({"bin", "--paradnn_fuse=maybe"});
  CHECK_THROWS_WITH(ParseFlags(&bad.argc, bad.ptrs.data()),
                    Catch::Matchers::ContainsSubstring("paradnn_fuse"));
}

TEST_CASE("memory sizes", "[flags]") {
  CHECK(ParseSize("8G") == 8LL << 30);
  CHECK(ParseSize("512M") == 512LL << 20);
  CHECK(ParseSize("1000") == 1000);
  CHECK_THROWS_AS(ParseSize("-1G"), FlagError);
  CHECK_THROWS_AS(ParseSize("8X"), FlagError);
}

TEST_CASE("rounds: three by default, a positive count when given", "[flags]") {
  // The tests run with PARADNN_ROUNDS=1 (tests/CMakeLists.txt): not here.
  const char* env = std::getenv("PARADNN_ROUNDS");
  const std::string kept = env != nullptr ? env : "";
  unsetenv("PARADNN_ROUNDS");
  Argv none({"bin"});
  CHECK(ParseFlags(&none.argc, none.ptrs.data()).rounds == 3);
  if (env != nullptr) setenv("PARADNN_ROUNDS", kept.c_str(), 1);
  Argv five({"bin", "--paradnn_rounds=5", "--paradnn_pin"});
  const Options o = ParseFlags(&five.argc, five.ptrs.data());
  CHECK(o.rounds == 5);
  CHECK(o.pin);
  Argv zero({"bin", "--paradnn_rounds=0"});
  CHECK_THROWS_WITH(ParseFlags(&zero.argc, zero.ptrs.data()),
                    Catch::Matchers::ContainsSubstring(
                        "--paradnn_rounds=0: expected a positive number "
                        "of rounds"));
}

}  // namespace
}  // namespace paradnn
