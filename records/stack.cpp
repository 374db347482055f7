#include "records/stack.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace paradnn {
namespace {

// A backend description's items: "LibTorch 2.6.0, BLAS /usr/lib/.../x.so,
// OpenBLAS core Zen, CPU" -> "LibTorch 2.6.0", "BLAS x.so", ... (a library's
// folder is the distribution's business, its file name says its version).
std::vector<std::string> DescriptionItems(const std::string& description) {
  std::vector<std::string> items;
  size_t at = 0;
  while (at <= description.size()) {
    size_t comma = description.find(", ", at);
    if (comma == std::string::npos) comma = description.size();
    std::string item = description.substr(at, comma - at);
    const size_t space = item.find(' ');
    if (space != std::string::npos && item.find('/', space) == space + 1) {
      item = item.substr(0, space + 1) +
             std::filesystem::path(item.substr(space + 1)).filename().string();
    }
    if (!item.empty()) items.push_back(item);
    at = comma + 2;
  }
  return items;
}

}  // namespace

std::vector<std::string> Stack::Items() const {
  std::vector<std::string> items;
  for (const std::string* s : {&distribution, &compiler}) {
    if (!s->empty()) items.push_back(*s);
  }
  for (const auto& [name, description] : backends) {
    for (std::string& item : DescriptionItems(description)) {
      items.push_back(std::move(item));
    }
  }
  return items;
}

std::string Stack::ToString() const {
  std::string s;
  auto add = [&s](const std::string& part) {
    if (!part.empty()) s += (s.empty() ? "" : "; ") + part;
  };
  add(distribution);
  add(compiler);
  for (const auto& [name, description] : backends) add(description);
  return s;
}

std::string ThisDistribution() {
  std::ifstream in("/etc/os-release");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      std::string v = line.substr(12);
      if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
      return v;
    }
  }
  return "unknown";
}

std::string ThisCompiler() {
#if defined(__clang__)
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "GCC " __VERSION__;
#else
  return "unknown compiler";
#endif
}

Stack StackOf(const nlohmann::json& context) {
  Stack stack;
  if (!context.is_object()) return stack;
  auto text = [&context](const std::string& key) {
    const auto it = context.find(key);
    return it != context.end() && it->is_string() ? it->get<std::string>()
                                                  : std::string();
  };
  stack.distribution = text("paradnn_distribution");
  stack.compiler = text("paradnn_compiler");
  const std::string prefix = "paradnn_backend_";
  for (const auto& [key, value] : context.items()) {
    if (key.rfind(prefix, 0) == 0 && value.is_string()) {
      stack.backends[key.substr(prefix.size())] = value.get<std::string>();
    }
  }
  return stack;
}

std::string StackDifference(const Stack& a, const Stack& b) {
  const std::vector<std::string> theirs = b.Items();
  std::string label;
  for (const std::string& item : a.Items()) {
    if (std::find(theirs.begin(), theirs.end(), item) == theirs.end()) {
      label += (label.empty() ? "" : ", ") + item;
    }
  }
  return label;
}

std::optional<std::pair<std::string, std::string>> StackContrast(
    const Stack& a, const Stack& b) {
  std::string a_own = StackDifference(a, b), b_own = StackDifference(b, a);
  if (a.backends.empty() || b.backends.empty() ||
      (a_own.empty() && b_own.empty())) {
    return std::nullopt;
  }
  return std::pair{std::move(a_own), std::move(b_own)};
}

std::string WithStack(const std::string& label, const std::string& own) {
  return label + " (" + (own.empty() ? "nothing of its own" : own) + ")";
}

}  // namespace paradnn
