// Case and brick names: parse, and what parses prints back the same.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "bricks/bricks.h"
#include "generators/spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string name(reinterpret_cast<const char*>(data), size);
  try {
    const paradnn::Case c = paradnn::ParseCaseName(name);
    if (paradnn::ParseCaseName(c.Name()).Name() != c.Name()) std::abort();
  } catch (const paradnn::SpecError&) {
  }
  try {
    const paradnn::BrickCase b = paradnn::ParseBrickName(name);
    if (paradnn::ParseBrickName(b.Name()).Name() != b.Name()) std::abort();
  } catch (const paradnn::SpecError&) {
  }
  return 0;
}
