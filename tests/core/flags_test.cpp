#include "core/flags.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

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
  using Catch::Matchers::Contains;
  Argv unknown({"bin", "--paradnn_colour=red"});
  CHECK_THROWS_WITH(ParseFlags(&unknown.argc, unknown.ptrs.data()),
                    Contains("paradnn_colour"));
  Argv threads({"bin", "--paradnn_threads=0"});
  CHECK_THROWS_WITH(ParseFlags(&threads.argc, threads.ptrs.data()),
                    Contains("--paradnn_threads=0: expected a positive"));
  Argv memory({"bin", "--paradnn_max_memory=lots"});
  CHECK_THROWS_WITH(ParseFlags(&memory.argc, memory.ptrs.data()),
                    Contains("'lots' is not a memory size"));
  Argv steps({"bin", "--paradnn_steps=0"});
  CHECK_THROWS_WITH(ParseFlags(&steps.argc, steps.ptrs.data()),
                    Contains("--paradnn_steps=0: expected a positive"));
  Argv type({"bin", "--paradnn_threads=two"});
  CHECK_THROWS_WITH(ParseFlags(&type.argc, type.ptrs.data()),
                    Contains("paradnn_threads"));
}

TEST_CASE("memory sizes", "[flags]") {
  CHECK(ParseSize("8G") == 8LL << 30);
  CHECK(ParseSize("512M") == 512LL << 20);
  CHECK(ParseSize("1000") == 1000);
  CHECK_THROWS_AS(ParseSize("-1G"), FlagError);
  CHECK_THROWS_AS(ParseSize("8X"), FlagError);
}

TEST_CASE("an isolated child gets the flags given, none of the parent's",
          "[flags]") {
  Argv a({"bin", "--paradnn_config=x.yaml", "--paradnn_platform", "p.json",
          "--paradnn_profile", "--paradnn_case_timeout=30",
          "--paradnn_bricks_out=b.json", "--paradnn_mllog=logs",
          "--paradnn_isolate"});
  const Options o = ParseFlags(&a.argc, a.ptrs.data());
  std::map<std::string, std::optional<std::string>> env;
  for (const auto& [name, value] : ChildEnvironment(o)) {
    CHECK(env.count(name) == 0);  // each at most once
    env[name] = value;
  }
  // Given, and the child's to use: as given.
  CHECK(env.at("PARADNN_PLATFORM") == "p.json");
  CHECK(env.at("PARADNN_PROFILE") == "true");
  CHECK(env.at("PARADNN_CASE_TIMEOUT") == "30");
  // The parent's, given or not (the environment may hold them): unset.
  for (const char* parent :
       {"PARADNN_CONFIG", "PARADNN_BRICKS_OUT", "PARADNN_MLLOG",
        "PARADNN_ISOLATE", "PARADNN_RESUME", "PARADNN_CASE",
        "PARADNN_BRICKS_DB", "PARADNN_BRICKS_CHECK", "PARADNN_PROFILE_OUT",
        "PARADNN_ROUNDS"}) {
    INFO(parent);
    REQUIRE(env.count(parent) == 1);
    CHECK_FALSE(env.at(parent).has_value());
  }
  // Not given and the child's: left to the environment.
  CHECK(env.count("PARADNN_BACKENDS") == 0);
  CHECK(env.size() == 3 + 16);
}

}  // namespace
}  // namespace paradnn
