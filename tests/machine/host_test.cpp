// The machine's facts as the operating system gives them.
#include "machine/host.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/catch.h"
#include "tests/scratch.h"

namespace paradnn {
namespace {

TEST_CASE("cgroup CPU quotas, as cgroup v2 and v1 write them", "[platform]") {
  auto file = [](const std::string& name, const std::string& text) {
    const std::string path = test::Scratch("cgroup/" + name).string();
    std::ofstream(path) << text;
    return path;
  };
  CHECK(CpuQuota(file("v2_limited", "150000 100000\n")) == 2);
  CHECK(CpuQuota(file("v2_one", "100000 100000\n")) == 1);
  CHECK(CpuQuota(file("v2_half", "50000 100000\n")) == 1);
  CHECK(CpuQuota(file("v2_none", "max 100000\n")) == 0);
  CHECK(CpuQuota(file("v1_quota", "300000\n"), file("v1_period", "100000")) ==
        3);
  CHECK(CpuQuota(file("v1_none", "-1\n"), file("v1_period2", "100000")) == 0);
  CHECK(CpuQuota(test::Scratch("cgroup/missing").string()) == 0);
  CHECK(UsableCpus() >= 1);
}

TEST_CASE("a STREAM triad measures some bandwidth", "[report]") {
  // 16 MiB per array: beyond the caches of small machines, quick anywhere.
  CHECK(StreamTriad(size_t{16} << 20, 1, 2) > 1e8);
}

}  // namespace
}  // namespace paradnn
