// The software stack a run used, as its results' context names it: the
// distribution, the compiler that built paradnn, and each backend's own
// description (its library's version, BLAS and its kernel, ISA). Reports
// label two stacks by what differs between them.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace paradnn {

struct Stack {
  std::string distribution;  // context paradnn_distribution
  std::string compiler;      // context paradnn_compiler
  // context paradnn_backend_<name>: name -> description
  std::map<std::string, std::string> backends;

  // Its parts, one per item: the distribution, the compiler, then each
  // comma-separated item of each backend's description.
  std::vector<std::string> Items() const;
  // All items, "; " between the distribution, the compiler and each
  // backend ("" when the context names none).
  std::string ToString() const;
};

// This machine's distribution (/etc/os-release's PRETTY_NAME, "unknown"
// without one) and the compiler that built libparadnn.
std::string ThisDistribution();
std::string ThisCompiler();

// The stack a results file's "context" object names.
Stack StackOf(const nlohmann::json& context);

// The items of `a` that `b` lacks, ", " between them: A's label in a
// comparison of A with B ("" when A has none of its own).
std::string StackDifference(const Stack& a, const Stack& b);

// Where A and B are two stacks (both name their backends, and they differ):
// what each has of its own (StackDifference both ways); else nothing.
std::optional<std::pair<std::string, std::string>> StackContrast(
    const Stack& a, const Stack& b);

// A side's label with what its stack has of its own: "a.json (Debian
// GNU/Linux 13 (trixie), ...)", "a.json (nothing of its own)".
std::string WithStack(const std::string& label, const std::string& own);

}  // namespace paradnn
