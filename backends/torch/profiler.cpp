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

std::string LayerScope(int i) { return "paradnn::layer/" + std::to_string(i); }

void AddSelfTimes(
    const std::vector<torch::autograd::profiler::LegacyEvent>& events,
    const std::vector<LayerSequence>& sequences, StepProfile* profile) {
  using torch::autograd::profiler::EventKind;
  using torch::autograd::profiler::LegacyEvent;
  static const std::string kLayer = LayerScope(0).substr(0, 15);
  static const std::string kEngine = "autograd::engine::evaluate_function";
  // The layer whose forward made the autograd node of sequence number n.
  auto layer_of = [&](int64_t n) {
    if (n < 0) return -1;
    const uint64_t s = static_cast<uint64_t>(n);
    auto it = std::upper_bound(
        sequences.begin(), sequences.end(), s,
        [](uint64_t v, const LayerSequence& r) { return v < r.first; });
    if (it == sequences.begin()) return -1;
    --it;
    return s < it->end ? it->layer : -1;
  };
  struct Open {
    const LegacyEvent* push = nullptr;
    double children_us = 0;
    std::optional<OpClass> scope;
    int layer = -1;
    Pass pass = Pass::kForward;
  };
  std::vector<Open> stack;
  for (const LegacyEvent& e : events) {
    if (e.kind() == EventKind::PushRange) {
      Open open;
      open.push = &e;
      if (!stack.empty()) {
        open.scope = stack.back().scope;
        open.layer = stack.back().layer;
        open.pass = stack.back().pass;
      }
      if (!open.scope) open.scope = ScopeClass(e.name());
      const std::string name = e.name();
      if (name.rfind(kLayer, 0) == 0) {
        open.layer = std::stoi(name.substr(kLayer.size()));
        // A layer's scope inside the optimizer's: its parameters' update.
        if (open.scope == OpClass::kOptimizer) open.pass = Pass::kUpdate;
      } else if (open.layer < 0 && layer_of(e.sequenceNr()) >= 0) {
        // Outside every layer's scope: an autograd node's backward.
        open.layer = layer_of(e.sequenceNr());
        open.pass = Pass::kBackward;
        // The engine's range around the node is the node's layer's too:
        // its own time, and what it runs after the node (the sum that
        // reduces a broadcast bias's gradient to the bias's shape).
        Open* engine = stack.empty() ? nullptr : &stack.back();
        if (engine != nullptr && engine->layer < 0 &&
            std::string(engine->push->name()).rfind(kEngine, 0) == 0) {
          engine->layer = open.layer;
          engine->pass = Pass::kBackward;
        }
      }
      stack.push_back(open);
    } else if (e.kind() == EventKind::PopRange && !stack.empty()) {
      const Open open = stack.back();
      stack.pop_back();
      const double us = open.push->hasCuda() ? open.push->cudaElapsedUs(e)
                                             : open.push->cpuElapsedUs(e);
      if (!stack.empty()) stack.back().children_us += us;
      std::string name = open.push->name();
      OpClass cls = open.scope ? *open.scope : ClassOf(name);
      // A layer's scope: LibTorch's own time between its operations (in
      // the update, the optimizer's).
      if (name.rfind(kLayer, 0) == 0 && open.pass != Pass::kUpdate) {
        name = "framework (between operations)";
        cls = OpClass::kOther;
      } else if (name.rfind(kLayer, 0) == 0) {
        name = "framework (update)";
      }
      profile->Add(cls, name, (us - open.children_us) / 1e6, open.layer,
                   open.pass);
    }
  }
}

}  // namespace paradnn
