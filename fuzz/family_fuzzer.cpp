// Family files: any text gives a family or a SpecError, and a family's
// model, built from its parameters' defaults (else the first choice, else
// 2), gives a graph or a SpecError; nothing else.
#include <cstdint>
#include <string>

#include "generators/declared.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const paradnn::FamilyDef def = paradnn::ParseFamily(text, "fuzz.yaml");
    std::vector<std::string> values;
    for (const paradnn::ParamDef& p : def.params) {
      values.push_back(!p.default_value.empty() ? p.default_value
                       : !p.choices.empty()     ? p.choices[0]
                                                : "2");
    }
    paradnn::ModelSpec spec;
    spec.family = def.name;
    spec.values = values;
    const std::string why = def.check(spec);
    (void)why;
  } catch (const paradnn::SpecError&) {
  }
  return 0;
}
