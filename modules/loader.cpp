#include "modules/loader.h"

#include <dlfcn.h>

#include <cstdlib>

#include "generators/spec.h"

namespace paradnn {
namespace {

namespace fs = std::filesystem;

// Where modules are looked for, in order: PARADNN_BACKEND_PATH, beside this
// library (its paradnn/ folder), the build tree's and the install prefix's
// module folders.
std::vector<fs::path> SearchPath() {
  std::vector<fs::path> dirs = UserModuleFolders();
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&SearchPath), &self) &&
      self.dli_fname != nullptr) {
    dirs.push_back(fs::path(self.dli_fname).parent_path() / "paradnn");
  }
  dirs.emplace_back(PARADNN_MODULE_BUILD_DIR);
  dirs.emplace_back(PARADNN_MODULE_INSTALL_DIR);
  return dirs;
}

}  // namespace

std::vector<fs::path> UserModuleFolders() {
  std::vector<fs::path> dirs;
  const char* env = std::getenv("PARADNN_BACKEND_PATH");
  for (const std::string& dir : Split(env ? env : "", ':')) {
    if (!dir.empty()) dirs.emplace_back(dir);
  }
  return dirs;
}

void* OpenModule(const std::string& file, std::string* error) {
  std::string tried;
  for (const fs::path& dir : SearchPath()) {
    const fs::path path = dir / file;
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      tried += (tried.empty() ? "" : ", ") + dir.string();
      continue;
    }
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) *error = dlerror();
    return handle;
  }
  *error =
      "no " + file + " in " + tried + " (PARADNN_BACKEND_PATH adds folders)";
  return nullptr;
}

}  // namespace paradnn
