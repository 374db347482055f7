// Model and case specifications as values, the family table, and canonical
// names that round-trip: FC/layers:4/nodes:1024/.../torch/fp32/train.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "generators/graph.h"

namespace paradnn {

struct ModelSpec;

// One parameter of a family: a positive integer, or one of `choices`; with
// `groups` > 0 also one positive integer per group, joined by '-' (CNN
// blocks:3-4-6-3), written as one integer when they are all equal.
struct ParamDef {
  std::string key;
  std::vector<std::string> choices;
  int groups = 0;
  // What a sweep that leaves the parameter out takes; "" for none.
  std::string default_value = "";
};

struct FamilyDef {
  std::string name;              // name prefix, e.g. "CNN"
  std::vector<ParamDef> params;  // in canonical order
  std::function<Graph(const ModelSpec&)> build;
  // Why values that are each valid do not fit together, or "".
  std::function<std::string(const ModelSpec&)> check = nullptr;
  // The modes its models run in, and why when not both.
  std::vector<Mode> modes = {Mode::kTrain, Mode::kInfer};
  std::string modes_why = "";
  // Where it is declared: a family file's path, "" for C++.
  std::string source = "";
};

// The built-in families and those registered since, in order.
const std::deque<FamilyDef>& Families();
// nullptr when there is no such family.
const FamilyDef* FindFamily(std::string_view name);
// Adds a family beside the others; SpecError for a name taken by another
// (the same family again, from the same file, is no change).
void RegisterFamily(FamilyDef family);

// Thrown for text that does not describe a valid spec; the message says what
// was wrong and what was expected.
class SpecError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct ModelSpec {
  std::string family;
  // Canonical text of each parameter, in the family's order.
  std::vector<std::string> values;

  // Builds a spec, checking every value (SpecError on a bad one).
  static ModelSpec Make(std::string_view family,
                        std::vector<std::string> values);

  const FamilyDef& def() const;
  // A value per group reads as their mean, rounded (blocks:3-4-6-3: 4
  // blocks per group), so that analysis can place it on an axis.
  int64_t Int(std::string_view key) const;
  // A parameter with groups: one value per group.
  std::vector<int64_t> Ints(std::string_view key) const;
  const std::string& Str(std::string_view key) const;
  Graph BuildGraph() const { return def().build(*this); }
  // "FC/layers:4/nodes:1024/input:2000/output:1000/batch:256"
  std::string Name() const;

  bool operator==(const ModelSpec& o) const {
    return family == o.family && values == o.values;
  }
};

// "torch/fp32/train": what a case name or a brick name ends with, and the
// context a sweep's results are grouped by.
std::string ContextName(const std::string& backend, DType dtype, Mode mode);

struct Case {
  ModelSpec model;
  std::string backend;
  DType dtype = DType::kFp32;
  Mode mode = Mode::kTrain;

  std::string Name() const;
  bool operator==(const Case& o) const {
    return model == o.model && backend == o.backend && dtype == o.dtype &&
           mode == o.mode;
  }
};

// Checks one parameter value against its definition and returns its
// canonical text ("0010" -> "10"); SpecError names the key, value and what
// was expected.
std::string CanonicalValue(const ParamDef& def, std::string_view value);
DType ParseDType(std::string_view s);
Mode ParseMode(std::string_view s);

// The canonical name inside a name as Google Benchmark reports it: Google
// Benchmark appends "/real_time" (paradnn times the wall clock) and, with
// --paradnn_steps, "/iterations:N".
std::string CaseNameOf(std::string reported);

// s cut at every sep, empty parts kept: "a//b" gives a, "", b.
std::vector<std::string> Split(std::string_view s, char sep);

// Parses a canonical case name; backend names are not checked here.
Case ParseCaseName(std::string_view name);

// The families written in C++ (generators/<family>.cpp); the others are
// declared in files (families/, generators/declared.h).
FamilyDef TransformerFamily();
FamilyDef LlmFamily();

}  // namespace paradnn
