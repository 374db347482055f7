// Catch2 2's main; Catch2 3's is the Catch2WithMain library.
#define CATCH_CONFIG_MAIN
#include <cstdlib>
#include <system_error>

#include "tests/catch.h"
#include "tests/scratch.h"

namespace paradnn::test {
namespace {

// Owns the scratch folder; its destructor runs at exit.
class ScratchFolder {
 public:
  const std::filesystem::path& path() {
    if (path_.empty()) {
      std::string pattern =
          (std::filesystem::temp_directory_path() / "paradnn_test.XXXXXX")
              .string();
      if (mkdtemp(pattern.data()) == nullptr) {
        FAIL("cannot create a scratch folder from " << pattern);
      }
      path_ = pattern;
    }
    return path_;
  }
  ~ScratchFolder() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }

 private:
  std::filesystem::path path_;
};

ScratchFolder scratch;

}  // namespace

const std::filesystem::path& ScratchDir() { return scratch.path(); }

std::filesystem::path Scratch(const std::string& name) {
  std::filesystem::path p = ScratchDir() / name;
  std::filesystem::create_directories(p.parent_path());
  return p;
}

std::filesystem::path TestData(const std::string& name) {
  return std::filesystem::path(PARADNN_SOURCE_DIR) / "tests/data" / name;
}

}  // namespace paradnn::test
