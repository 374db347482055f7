// --paradnn_resume's journal: what it records is what it reads back.
#include "core/journal.h"

#include <fstream>
#include <set>
#include <string>

#include "core/flags.h"
#include "tests/catch.h"
#include "tests/scratch.h"

namespace paradnn {
namespace {

TEST_CASE("journal: finished cases read back, a torn last line skipped",
          "[core][journal]") {
  const std::string path = test::Scratch("journal/fc.journal").string();
  {
    Journal j;
    CHECK_FALSE(j.is_open());
    j.Add("FC/never", false, 1);  // not open: writes nothing
    j.Open(path);
    CHECK(j.is_open());
    j.Add("FC/a", false, 1.5);
    j.Add("CNN/b", true, 0);
  }
  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  CHECK(first == R"({"name": "FC/a", "error": false, "real_time_ms": 1.5})");
  CHECK(ReadJournal(path) == std::set<std::string>{"FC/a", "CNN/b"});
  // A process killed while writing its line.
  std::ofstream(path, std::ios::app) << R"({"name": "RNN/c", "err)";
  CHECK(ReadJournal(path) == std::set<std::string>{"FC/a", "CNN/b"});
  // Opening again appends, on a line of its own.
  {
    Journal j;
    j.Open(path);
    j.Add("RNN/d", false, 2);
  }
  CHECK(ReadJournal(path) == std::set<std::string>{"FC/a", "CNN/b", "RNN/d"});
  CHECK(ReadJournal(test::Scratch("journal/none").string()).empty());
}

TEST_CASE("journal: a file that cannot be written is an error naming it",
          "[core][journal]") {
  Journal j;
  const std::string path =
      test::Scratch("journal/x").string() + "/no/such/folder/j";
  CHECK_THROWS_WITH(j.Open(path),
                    "--paradnn_resume=" + path + ": cannot write it");
}

}  // namespace
}  // namespace paradnn
