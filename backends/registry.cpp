// The backends: built-in ones listed by name and module, each module
// loaded on the first case that needs it; others registered in-process or
// found as modules on PARADNN_BACKEND_PATH.
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string_view>

#include "backends/backend.h"
#include "generators/spec.h"
#include "modules/loader.h"

namespace paradnn {
namespace {

namespace fs = std::filesystem;

// The built-in backends and the modules that hold them, listed explicitly
// (static self-registration would be dropped by the linker from a static
// archive). A module is loaded only when one of its backends is used, so a
// host that runs no LibTorch case loads no LibTorch.
struct BuiltIn {
  const char* name;
  const char* module;
  // Its Backend::ActivationsJoinProducer(), known before its module loads:
  // a sweep's bricks are made as its cases are registered, and loading
  // LibTorch's module to ask takes about 0.6 s, a third more on the time
  // paper_fc.yaml's bricks take to list. The backends' tests check that
  // each backend says the same.
  bool activations_join;
  Fusion inference_fusion;  // its Backend::InferenceFusion(), likewise
};
constexpr BuiltIn kBuiltIns[] = {
#ifdef PARADNN_WITH_TORCH
    {"torch", "torch", true, Fusion::kFoldBatchNorm},
    {"torch_cuda", "torch", true, Fusion::kFoldBatchNorm},
#endif
#ifdef PARADNN_WITH_ONEDNN
    {"onednn", "onednn", false, Fusion::kFull},
#endif
};

constexpr std::string_view kModulePrefix = "libparadnn_backend_";
constexpr std::string_view kModuleSuffix = ".so";

std::string ModuleFile(const std::string& module) {
  return std::string(kModulePrefix) + module + std::string(kModuleSuffix);
}

struct Slot {
  std::string module;                // "" for a backend registered in-process
  std::unique_ptr<Backend> backend;  // once loaded
  std::string error;                 // why loading failed
  const BuiltIn* built_in = nullptr;
};

std::map<std::string, Slot>& Table() {
  static auto* table = [] {
    auto* t = new std::map<std::string, Slot>();
    for (const BuiltIn& b : kBuiltIns) {
      (*t)[b.name].module = b.module;
      (*t)[b.name].built_in = &b;
    }
    // Third-party modules: libparadnn_backend_<name>.so on the user's path.
    for (const fs::path& dir : UserModuleFolders()) {
      std::error_code ec;
      for (const auto& f : fs::directory_iterator(dir, ec)) {
        const std::string file = f.path().filename().string();
        const size_t length = file.size() - kModulePrefix.size();
        if (file.rfind(kModulePrefix, 0) == 0 &&
            f.path().extension() == kModuleSuffix && length > 3) {
          const std::string name =
              file.substr(kModulePrefix.size(), length - kModuleSuffix.size());
          if (!t->count(name)) (*t)[name].module = name;
        }
      }
    }
    return t;
  }();
  return *table;
}

// Loads the module of a backend and asks it for the backend by name.
void Load(const std::string& name, Slot& slot) {
  void* handle = OpenModule(ModuleFile(slot.module), &slot.error);
  if (handle == nullptr) return;
  auto* make =
      reinterpret_cast<BackendModuleEntry>(dlsym(handle, kBackendModuleSymbol));
  if (make == nullptr) {
    slot.error = ModuleFile(slot.module) + " has no " + kBackendModuleSymbol +
                 " (a module of another paradnn version?)";
    return;
  }
  slot.backend.reset(make(name.c_str()));
  if (slot.backend == nullptr) {
    slot.error = ModuleFile(slot.module) + " has no backend '" + name + "'";
  }
}

}  // namespace

std::string RegisterBackend(std::unique_ptr<Backend> backend) {
  const std::string name = backend->name();
  if (Table().count(name)) {
    return "a backend named '" + name + "' is already registered";
  }
  Table()[name].backend = std::move(backend);
  return "";
}

const Backend* FindBackend(const std::string& name, std::string* error) {
  auto it = Table().find(name);
  if (it == Table().end()) {
    if (error != nullptr) *error = "'" + name + "' is not a backend";
    return nullptr;
  }
  Slot& slot = it->second;
  if (slot.backend == nullptr && slot.error.empty()) Load(name, slot);
  if (slot.backend == nullptr && error != nullptr) {
    *error = "backend '" + name + "' cannot be loaded: " + slot.error;
  }
  return slot.backend.get();
}

bool ActivationsJoinProducer(const std::string& name) {
  auto it = Table().find(name);
  if (it != Table().end() && it->second.built_in != nullptr) {
    return it->second.built_in->activations_join;
  }
  const Backend* backend = FindBackend(name);
  return backend != nullptr && backend->ActivationsJoinProducer();
}

Fusion InferenceFusion(const std::string& name) {
  auto it = Table().find(name);
  if (it != Table().end() && it->second.built_in != nullptr) {
    return it->second.built_in->inference_fusion;
  }
  const Backend* backend = FindBackend(name);
  return backend != nullptr ? backend->InferenceFusion() : Fusion::kNone;
}

std::vector<std::string> BackendNames() {
  std::vector<std::string> names;
  for (const auto& [name, slot] : Table()) names.push_back(name);
  return names;
}

}  // namespace paradnn
