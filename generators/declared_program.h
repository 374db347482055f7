// A family file as a program (generators/declared.cpp parses it), which
// generators/declared_build.cpp runs with a model's values into its graph.
// Internal to the two.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "generators/expr.h"
#include "generators/graph.h"
#include "generators/spec.h"

namespace paradnn::declared {

// A model of more layers, or a block repeated more often, is a mistake in
// its file, not a model to build (the largest built-in has a few thousand).
constexpr int64_t kMaxLayers = 1 << 20;

// What an attribute holds, and what its value must be.
enum class Kind { kPositive, kNonNegative, kFlag, kCell, kShape };

struct Attr {
  const char* key;
  Kind kind;
  bool required;
};

// The operations a family file may use: the layer graph's, by the names
// the graph prints (generators/graph.h), with their attributes.
struct OpInfo {
  Op op;
  // -1: one, or three (attention reads q, k, v); -2: any number of layers
  // and lists of layers (concat).
  int inputs;
  std::vector<Attr> attrs;
};

// The operations a family file may use, by name.
const std::map<std::string, OpInfo>& Ops();

// One entry of a `graph` list: a layer (op), a name for a layer already
// made (as and input, no op), or a block (graph: repeated, conditional).
struct Item {
  int line = 0;
  std::optional<Expr> when;  // if
  // A layer, or a name.
  const OpInfo* op = nullptr;
  std::string op_name;
  std::vector<std::string> inputs;  // names; "." the layer before
  std::string as;
  std::string into;  // a list of layers this one joins (concat reads lists)
  std::map<std::string, Expr> attrs;
  std::vector<Expr> shape;
  // A block.
  bool block = false;
  std::optional<Expr> repeat;
  std::string index;
  std::vector<std::pair<std::string, Expr>> let;
  std::vector<Item> body, otherwise;
};

struct Program {
  std::string source, family;
  std::vector<ParamDef> params;
  std::vector<std::pair<Expr, std::string>> requires_;  // that, why
  std::vector<Item> graph;
  bool trains = true;
};

// "file:line", as errors name a place.
inline std::string Where(const std::string& source, int line) {
  return source + ":" + std::to_string(line);
}

// The graph of one model of the family: the program run with its values.
// Throws SpecError naming the file and line where a size is invalid.
Graph BuildModel(const Program& p, const ModelSpec& s);

}  // namespace paradnn::declared
