#include "importers/onnx.h"

#include <dlfcn.h>

#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>

#include "generators/declared.h"
#include "modules/loader.h"

namespace paradnn {

namespace {

// The module, opened on the first call and kept: its entry point `symbol`,
// or why not, naming `what` asked for it.
void* OnnxEntry(const char* symbol, const std::string& what) {
  static std::string error;
  static void* const module = OpenModule("libparadnn_import_onnx.so", &error);
  void* entry = module == nullptr ? nullptr : dlsym(module, symbol);
  if (entry == nullptr) {
    throw std::runtime_error(
        what + ": ONNX files are read by a module that cannot be loaded: " +
        (module == nullptr ? error : std::string("no ") + symbol) +
        " (built with libonnx-dev and -DPARADNN_WITH_ONNX=ON, the default)");
  }
  return entry;
}

}  // namespace

std::shared_ptr<const OnnxFile> OnnxFile::Read(const std::string& path,
                                               bool weights) {
  static const OnnxReader reader =
      reinterpret_cast<OnnxReader (*)()>(OnnxEntry(kOnnxReaderSymbol, path))();
  return reader(path, weights);
}

std::vector<OnnxOperatorInfo> OnnxOperators() {
  return reinterpret_cast<OnnxOperatorList (*)()>(
      OnnxEntry(kOnnxOperatorsSymbol, "the table of operators"))()();
}

std::string OnnxOperatorsMarkdown() {
  std::string out =
      "| ONNX | from opset | layer graph | conditions |\n"
      "|---|---|---|---|\n";
  for (const OnnxOperatorInfo& op : OnnxOperators()) {
    out += "| `" + op.type + "` | " + std::to_string(op.since) + " | " +
           op.maps_onto + " | " + op.when + " |\n";
  }
  return out;
}

OnnxModel ReadOnnx(const std::string& path, int64_t batch, bool weights) {
  return OnnxFile::Read(path, weights)->Map(batch);
}

FamilyDef OnnxFamily(const std::string& path, bool weights) {
  const std::string name = std::filesystem::path(path).filename().string();
  // A file already read (named again by another grid): the same family.
  if (const FamilyDef* known = FindFamily(name)) {
    std::error_code ec;
    if (std::filesystem::equivalent(known->source, path, ec)) return *known;
  }
  std::shared_ptr<const OnnxFile> file;
  try {
    file = OnnxFile::Read(path, weights);
  } catch (const std::runtime_error& e) {
    throw SpecError(e.what());
  }
  // Each batch mapped once, for the checks, the cost model and the steps.
  auto models = std::make_shared<std::map<int64_t, OnnxModel>>();
  auto model = [file, models](const ModelSpec& s) -> const OnnxModel& {
    const int64_t batch = s.Int("batch");
    auto it = models->find(batch);
    if (it == models->end())
      it = models->emplace(batch, file->Map(batch)).first;
    return it->second;
  };
  FamilyDef def;
  def.name = name;
  ParamDef batch;
  batch.key = "batch";
  def.params = {batch};
  def.build = [model](const ModelSpec& s) {
    const OnnxModel& m = model(s);
    if (!m.graph) throw GraphError(m.path + ": " + m.why_no_graph);
    return *m.graph;
  };
  def.check = [model](const ModelSpec& s) {
    const OnnxModel& m = model(s);
    return m.graph ? std::string() : m.why_no_graph;
  };
  def.source = path;
  return def;
}

void UseOnnxFamilies(bool weights) {
  RegisterFamilyReader(".onnx", [weights](const std::string& path) {
    return OnnxFamily(path, weights);
  });
}

}  // namespace paradnn
