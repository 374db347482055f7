#include "backends/torch/profiler.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <optional>
#include <string>

namespace paradnn {
namespace {

std::optional<OpClass> ScopeClass(const std::string& name) {
  if (name == kOptimizerScope) return OpClass::kOptimizer;
  if (name == kAllReduceScope) return OpClass::kCommunication;
  return std::nullopt;
}

bool HasAny(const std::string& name, std::initializer_list<const char*> parts) {
  return std::any_of(parts.begin(), parts.end(), [&](const char* p) {
    return name.find(p) != std::string::npos;
  });
}

// The class of an ATen operation or autograd node, by its name.
OpClass ClassOf(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (name.rfind("aten::", 0) == 0) name = name.substr(6);
  if (HasAny(name, {"mm", "conv", "linear", "matmul", "lstm", "gru", "rnn",
                    "_cell", "attention", "einsum", "dot"})) {
    return OpClass::kGemm;
  }
  if (name == "t" ||
      HasAny(name,
             {"copy",      "clone",   "contiguous", "cat",           "stack",
              "embedding", "index",   "gather",     "scatter",       "to_",
              "_to",       "permute", "transpose",  "view",          "reshape",
              "expand",    "select",  "slice",      "narrow",        "squeeze",
              "split",     "chunk",   "unbind",     "as_strided",    "flatten",
              "detach",    "empty",   "resize",     "accumulategrad"})) {
    return OpClass::kMovement;
  }
  return OpClass::kElementwise;
}

}  // namespace

// Self time (own time minus nested operations') of every range of one
// thread's events; everything inside a scope of ours is of its class.
void AddSelfTimes(
    const std::vector<torch::autograd::profiler::LegacyEvent>& events,
    StepProfile* profile) {
  using torch::autograd::profiler::EventKind;
  using torch::autograd::profiler::LegacyEvent;
  struct Open {
    const LegacyEvent* push;
    double children_us = 0;
    std::optional<OpClass> scope;
  };
  std::vector<Open> stack;
  for (const LegacyEvent& e : events) {
    if (e.kind() == EventKind::PushRange) {
      std::optional<OpClass> scope =
          stack.empty() ? std::nullopt : stack.back().scope;
      if (!scope) scope = ScopeClass(e.name());
      stack.push_back({&e, 0, scope});
    } else if (e.kind() == EventKind::PopRange && !stack.empty()) {
      const Open open = stack.back();
      stack.pop_back();
      const double us = open.push->hasCuda() ? open.push->cudaElapsedUs(e)
                                             : open.push->cpuElapsedUs(e);
      if (!stack.empty()) stack.back().children_us += us;
      const std::string name = open.push->name();
      profile->Add(open.scope ? *open.scope : ClassOf(name), name,
                   (us - open.children_us) / 1e6);
    }
  }
}

}  // namespace paradnn
