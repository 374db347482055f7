// ONNX files read into the layer graph: each node of the file's graph
// mapped onto the graph's operations, or the reason it cannot be, so that a
// model the field exchanges runs as a case beside the synthetic ones.
// Read with the ONNX library (its protobuf classes, its checker and its
// shape inference) in a module of its own; docs/onnx.md says what maps
// onto what.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "generators/graph.h"
#include "generators/spec.h"

namespace paradnn {

// One node of the file's graph, and how it maps.
struct OnnxNode {
  std::string name;     // the node's name in the file ("" if it has none)
  std::string op_type;  // "Conv", "Gemm", ...
  // Empty where the node maps onto the graph (a layer, or nothing: an
  // Identity passes its input on); else why it cannot, naming the operator
  // and what of it the graph lacks.
  std::string unsupported;
};

// Where a parameter of the graph takes its values from in the file: an
// initializer as laid out there (a convolution's, a norm's, Gemm's B
// where transposed), or transposed (MatMul's [in, units]), and of that
// [units, in] matrix rows [first_row, first_row + rows) where `rows` is
// not 0 (a packed projection's queries, keys or values).
struct OnnxParamSource {
  std::string initializer;  // empty: the file gives none
  bool transposed = false;
  int64_t first_row = 0, rows = 0;
};

struct OnnxModel {
  std::string path;
  std::string producer;  // "pytorch 1.13.1"
  int64_t opset = 0;     // the default domain's
  std::vector<OnnxNode> nodes;
  // The layer graph at the batch asked for, where every node maps; its
  // training loss (softmax cross-entropy over the output) appended.
  std::optional<Graph> graph;
  // Why there is no graph: the first unsupported node, or a shape the
  // graph's builders refuse.
  std::string why_no_graph;
  // Values of the initializers the mapped layers read as parameters.
  int64_t initializer_params = 0;
  // Per parameter of the graph (Graph::Params()'s order), its source.
  std::vector<OnnxParamSource> param_sources;
};

// A file read once, checked (onnx::checker) and its shapes inferred, then
// mapped at any batch. It keeps the shapes of its weights, and their values
// where asked (`weights`): then each layer's Layer::values are the file's
// (a MatMul's weights transposed into the dense layer's [units, in]), batch
// norm's running statistics among them. Read by the module
// libparadnn_import_onnx.so (the ONNX library and protobuf), loaded on the
// first file: a process that reads none loads neither.
class OnnxFile {
 public:
  virtual ~OnnxFile() = default;
  // Throws std::runtime_error naming the file where it cannot be read or
  // is not a valid ONNX model, or where the module cannot be loaded.
  static std::shared_ptr<const OnnxFile> Read(const std::string& path,
                                              bool weights = false);

  // Maps its nodes, building the graph at `batch` examples (the file's
  // first input's first dimension, whatever the file says).
  virtual OnnxModel Map(int64_t batch) const = 0;
};

// The module's entry point: reads a file (OnnxFile::Read's contract).
using OnnxReader = std::shared_ptr<const OnnxFile> (*)(const std::string& path,
                                                       bool weights);
inline constexpr char kOnnxReaderSymbol[] = "paradnn_onnx_reader_v2";

// An ONNX operator the importer maps: its row of the importer's table.
struct OnnxOperatorInfo {
  std::string type;       // "Conv"
  int64_t since = 1;      // the first opset whose definition of it is read
  std::string maps_onto;  // the layer graph's operations, or "nothing"
  std::string when;       // what of it they take
};

// The module's table of operators, by type: what its second entry point
// returns.
using OnnxOperatorList = std::vector<OnnxOperatorInfo> (*)();
inline constexpr char kOnnxOperatorsSymbol[] = "paradnn_onnx_operators_v1";

// The operators ONNX files may hold, from the module (loaded on the first
// call); throws std::runtime_error where it cannot be loaded.
std::vector<OnnxOperatorInfo> OnnxOperators();

// OnnxOperators() as docs/onnx.md's table: markdown, a row per operator.
std::string OnnxOperatorsMarkdown();

// OnnxFile::Read(path, weights)->Map(batch).
OnnxModel ReadOnnx(const std::string& path, int64_t batch,
                   bool weights = false);

// The family of an ONNX file: named by the file ("resnet50.onnx"), its one
// parameter the batch; a model whose nodes do not all map is no model
// (its check says which node, and why). Cases are named
// resnet50.onnx/batch:32/torch/fp32/train. Throws SpecError naming the
// file where it cannot be read.
// With `weights`, its cases start from the file's weights.
FamilyDef OnnxFamily(const std::string& path, bool weights = false);

// Family files ending in .onnx are read as OnnxFamily (a config's
// `families:` and grids' `onnx:`, --paradnn_families), with their weights
// where `weights` (--paradnn_onnx_weights).
void UseOnnxFamilies(bool weights = false);

}  // namespace paradnn
