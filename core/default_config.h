#pragma once

namespace paradnn {

// configs/quickstart.yaml, built into the library so that a host binary runs
// the default sweep with no file at hand.
const char* DefaultConfigText();
constexpr const char* kDefaultConfigName = "<built-in configs/quickstart.yaml>";

}  // namespace paradnn
