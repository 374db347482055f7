#include <stdexcept>

#include "backends/backend.h"
#ifdef PARADNN_WITH_ONEDNN
#include "backends/onednn/onednn_backend.h"
#endif
#ifdef PARADNN_WITH_TORCH
#include "backends/torch/torch_backend.h"
#endif

namespace paradnn {
namespace {

// The built-in backends, listed explicitly: static self-registration would
// be dropped by the linker from a static archive.
std::vector<std::unique_ptr<Backend>>& Table() {
  static std::vector<std::unique_ptr<Backend>>* table = [] {
    auto* t = new std::vector<std::unique_ptr<Backend>>();
#ifdef PARADNN_WITH_TORCH
    t->push_back(MakeTorchBackend(/*cuda=*/false));
    t->push_back(MakeTorchBackend(/*cuda=*/true));
#endif
#ifdef PARADNN_WITH_ONEDNN
    t->push_back(MakeOnednnBackend());
#endif
    return t;
  }();
  return *table;
}

}  // namespace

void RegisterBackend(std::unique_ptr<Backend> backend) {
  if (FindBackend(backend->name()) != nullptr) {
    throw std::invalid_argument("a backend named '" + backend->name() +
                                "' is already registered");
  }
  Table().push_back(std::move(backend));
}

const Backend* FindBackend(const std::string& name) {
  for (const auto& b : Table()) {
    if (b->name() == name) return b.get();
  }
  return nullptr;
}

std::vector<std::string> BackendNames() {
  std::vector<std::string> names;
  for (const auto& b : Table()) names.push_back(b->name());
  return names;
}

}  // namespace paradnn
