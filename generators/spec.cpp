#include "generators/spec.h"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "generators/check.h"
#include "generators/declared.h"

namespace paradnn {

namespace {

// FC, CNN and RNN from their files (families/), then the families whose
// layers no file expresses yet (docs/extending.md).
std::deque<FamilyDef>& Registry() {
  static std::deque<FamilyDef> families = [] {
    std::deque<FamilyDef> built_in;
    for (const auto& [name, text] : BuiltInFamilyFiles()) {
      built_in.push_back(ParseFamily(text, name));
    }
    built_in.push_back(TransformerFamily());
    built_in.push_back(LlmFamily());
    return built_in;
  }();
  return families;
}

}  // namespace

const std::deque<FamilyDef>& Families() { return Registry(); }

void RegisterFamily(FamilyDef family) {
  if (const FamilyDef* known = FindFamily(family.name)) {
    if (!family.source.empty() && known->source == family.source) return;
    throw SpecError(
        (family.source.empty() ? "" : family.source + ": ") + "family '" +
        family.name + "' is declared already" +
        (known->source.empty() ? " (built in)" : " in " + known->source) +
        ": expected a name of its own");
  }
  Registry().push_back(std::move(family));
}

const FamilyDef* FindFamily(std::string_view name) {
  for (const FamilyDef& f : Families()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

namespace {

std::string Join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const std::string& s : items) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

std::string FamilyNames() {
  std::vector<std::string> names;
  for (const FamilyDef& f : Families()) names.push_back(f.name);
  return Join(names, ", ");
}

int ParamIndex(const FamilyDef& def, std::string_view key) {
  for (size_t i = 0; i < def.params.size(); ++i) {
    if (def.params[i].key == key) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

std::string CanonicalValue(const ParamDef& def, std::string_view value) {
  if (!def.choices.empty()) {
    for (const std::string& c : def.choices) {
      if (c == value) return c;
    }
    throw SpecError("'" + std::string(value) + "' is not a valid " + def.key +
                    ": expected one of " + Join(def.choices, ", "));
  }
  const std::string expected =
      def.groups > 0 ? "a positive integer, or " + std::to_string(def.groups) +
                           " of them joined by '-', one per group"
                     : "a positive integer";
  auto bad = [&] {
    return SpecError("'" + std::string(value) + "' is not a valid " + def.key +
                     ": expected " + expected);
  };
  std::vector<std::string> parts = {std::string(value)};
  if (def.groups > 0 && value.find('-') != std::string_view::npos) {
    parts = Split(std::string(value), '-');
    if (static_cast<int>(parts.size()) != def.groups) throw bad();
  }
  std::vector<std::string> canonical;
  for (const std::string& part : parts) {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (ec != std::errc() || end != part.data() + part.size() || v <= 0) {
      throw bad();
    }
    canonical.push_back(std::to_string(v));
  }
  // Equal groups are written as one value: one name per model.
  if (std::all_of(canonical.begin(), canonical.end(),
                  [&](const std::string& v) { return v == canonical[0]; })) {
    return canonical[0];
  }
  return Join(canonical, "-");
}

DType ParseDType(std::string_view s) {
  if (s == "fp32") return DType::kFp32;
  if (s == "bf16") return DType::kBf16;
  if (s == "fp16") return DType::kFp16;
  throw SpecError("'" + std::string(s) +
                  "' is not a data type: expected fp32, bf16 or fp16");
}

Mode ParseMode(std::string_view s) {
  if (s == "train") return Mode::kTrain;
  if (s == "infer") return Mode::kInfer;
  throw SpecError("'" + std::string(s) +
                  "' is not a mode: expected train or infer");
}

ModelSpec ModelSpec::Make(std::string_view family,
                          std::vector<std::string> values) {
  const FamilyDef* def = FindFamily(family);
  if (def == nullptr) {
    throw SpecError("'" + std::string(family) +
                    "' is not a model family: expected one of " +
                    FamilyNames());
  }
  if (values.size() != def->params.size()) {
    throw SpecError(def->name + " takes " + std::to_string(def->params.size()) +
                    " parameters, got " + std::to_string(values.size()));
  }
  ModelSpec spec;
  spec.family = def->name;
  for (size_t i = 0; i < values.size(); ++i) {
    spec.values.push_back(CanonicalValue(def->params[i], values[i]));
  }
  if (def->check) {
    const std::string why = def->check(spec);
    if (!why.empty()) throw SpecError(spec.Name() + ": " + why);
  }
  return spec;
}

const FamilyDef& ModelSpec::def() const {
  const FamilyDef* d = FindFamily(family);
  PARADNN_CHECK(d != nullptr, "spec of an unknown family");
  return *d;
}

const std::string& ModelSpec::Str(std::string_view key) const {
  int i = ParamIndex(def(), key);
  PARADNN_CHECK(i >= 0, "family has no such parameter");
  return values.at(i);
}

int64_t ModelSpec::Int(std::string_view key) const {
  const std::string& value = Str(key);
  if (value.find('-') == std::string::npos) return std::stoll(value);
  const std::vector<int64_t> groups = Ints(key);
  int64_t total = 0;
  for (int64_t v : groups) total += v;
  const int64_t n = static_cast<int64_t>(groups.size());
  return (total + n / 2) / n;
}

std::vector<int64_t> ModelSpec::Ints(std::string_view key) const {
  const ParamDef& d = def().params.at(ParamIndex(def(), key));
  PARADNN_CHECK(d.groups > 0, "parameter has no groups");
  std::vector<int64_t> out;
  for (const std::string& v : Split(Str(key), '-'))
    out.push_back(std::stoll(v));
  if (out.size() == 1) out.resize(d.groups, out[0]);
  return out;
}

std::string ModelSpec::Name() const {
  std::string name = family;
  const FamilyDef& d = def();
  for (size_t i = 0; i < values.size(); ++i) {
    name += "/" + d.params[i].key + ":" + values[i];
  }
  return name;
}

std::string ContextName(const std::string& backend, DType dtype, Mode mode) {
  return backend + "/" + ToString(dtype) + "/" + ToString(mode);
}

std::string Case::Name() const {
  return model.Name() + "/" + ContextName(backend, dtype, mode);
}

std::string CaseNameOf(std::string reported) {
  // Google Benchmark's segments: "real_time" and the like, and key:value
  // settings such as "iterations:5".
  static const char* const kSuffixes[] = {
      "real_time", "manual_time", "process_time", "iterations:",
      "repeats:",  "threads:",    "min_time:",    "min_warmup_time:"};
  while (true) {
    const size_t slash = reported.rfind('/');
    if (slash == std::string::npos || slash == 0) return reported;
    const std::string last = reported.substr(slash + 1);
    bool suffix = false;
    for (const char* s : kSuffixes) {
      const std::string p = s;
      suffix = suffix || (p.back() == ':' ? last.rfind(p, 0) == 0 : last == p);
    }
    if (!suffix) return reported;
    reported.resize(slash);
  }
}

Case ParseCaseName(std::string_view name) {
  std::vector<std::string> parts = Split(name, '/');
  const std::string quoted = "'" + std::string(name) + "'";
  const FamilyDef* def = FindFamily(parts[0]);
  if (def == nullptr) {
    throw SpecError(quoted + ": '" + parts[0] +
                    "' is not a model family: expected one of " +
                    FamilyNames());
  }
  std::string expected = def->name;
  for (const ParamDef& p : def->params) expected += "/" + p.key + ":<value>";
  expected += "/<backend>/<fp32|bf16|fp16>/<train|infer>";
  if (parts.size() != def->params.size() + 4) {
    throw SpecError(quoted + " is not a case name: expected " + expected);
  }
  std::vector<std::string> values;
  for (size_t i = 0; i < def->params.size(); ++i) {
    const std::string& part = parts[i + 1];
    const std::string prefix = def->params[i].key + ":";
    if (part.compare(0, prefix.size(), prefix) != 0) {
      throw SpecError(quoted + ": segment '" + part + "' should start with '" +
                      prefix + "': expected " + expected);
    }
    values.push_back(part.substr(prefix.size()));
  }
  try {
    Case c;
    c.model = ModelSpec::Make(def->name, std::move(values));
    size_t k = def->params.size() + 1;
    c.backend = parts[k];
    if (c.backend.empty()) throw SpecError("the backend is empty");
    c.dtype = ParseDType(parts[k + 1]);
    c.mode = ParseMode(parts[k + 2]);
    if (std::find(def->modes.begin(), def->modes.end(), c.mode) ==
        def->modes.end()) {
      throw SpecError("mode " + parts[k + 2] + ": expected " +
                      ToString(def->modes.front()) + ": " + def->modes_why);
    }
    return c;
  } catch (const SpecError& e) {
    throw SpecError(quoted + ": " + e.what());
  }
}

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t end = s.find(sep, start);
    parts.emplace_back(s.substr(start, end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

}  // namespace paradnn
