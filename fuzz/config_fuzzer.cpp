// YAML sweep configs: any text gives a sweep or a ConfigError, nothing else.
#include <cstdint>
#include <string>

#include "generators/sweep.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    paradnn::Sweep s = paradnn::ParseSweep(text, "fuzz.yaml", {"torch"});
    // Expansion bounds: a fuzzed grid must not exhaust memory.
    (void)s;
  } catch (const paradnn::ConfigError&) {
  }
  return 0;
}
