// A YAML node as its file wrote it, for error messages of the YAML
// readers (sweeps, family files): a scalar quoted, anything else in flow
// style.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

namespace paradnn {

inline std::string YamlText(const YAML::Node& n) {
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

}  // namespace paradnn
