// Families declared in YAML: a family file names the family, its
// parameters (integers, or one of a few choices, or one integer per group;
// each with a default where a sweep may leave it out) and its layers, as
// the layer graph's operations with sizes written as expressions of the
// parameters (generators/expr.h), repeated blocks, conditional blocks,
// named layers that later ones read (a residual's shortcut), and the loss.
// A sweep names a declared family as a built-in one; its cases' names
// round-trip once its file is loaded (a config's `families:`, or
// --paradnn_families). docs/extending.md describes the format.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "generators/spec.h"

namespace paradnn {

// The family a file declares; SpecError "PATH:LINE: what, expected what"
// for anything that is no family (an unknown operation, key or parameter,
// an expression that does not parse). Sizes that do not evaluate to
// positive integers, and layers whose inputs do not fit them, are found
// when a model is built, with the file and line of the layer.
FamilyDef ParseFamily(const std::string& text, const std::string& source);
// A family file by its extension's reader (RegisterFamilyReader), else as
// YAML.
FamilyDef ReadFamilyFile(const std::string& path);

// Families in files of another format: a reader for the files whose name
// ends in `extension` (".onnx": importers/onnx.h), registered by the layer
// that reads them. Throws SpecError naming the file where it has no family.
using FamilyReader = std::function<FamilyDef(const std::string& path)>;
void RegisterFamilyReader(const std::string& extension, FamilyReader reader);

// Reads and registers the family of `path` (RegisterFamily); returns its
// name.
std::string LoadFamilyFile(const std::string& path);
// The family files loaded so far, as absolute paths joined by ',': what a
// results file's context keeps, for a report to load them again.
std::string FamilyFiles();

// The family files built into the library (families/*.yaml: FC, CNN,
// RNN), as (name, text), in that order.
std::vector<std::pair<std::string, std::string>> BuiltInFamilyFiles();

}  // namespace paradnn
