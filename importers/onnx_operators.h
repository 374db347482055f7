// The importer's table of ONNX operators: one entry per operator type,
// with what of it the layer graph takes (its attributes, its inputs'
// shapes, the opsets whose form it reads), what it maps onto, and how. The
// Mapper (importers/onnx_mapper.h) is the context the entries share: the
// graph built so far, the values that are layers, views of layers or
// known tensors. docs/onnx.md's table of operators is this one's
// (`paradnn onnx-check --operators`; a test holds them equal).
#ifndef PARADNN_IMPORTERS_ONNX_OPERATORS_H_
#define PARADNN_IMPORTERS_ONNX_OPERATORS_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "importers/onnx.h"

namespace paradnn {

class Mapper;
struct Known;

struct Operator {
  OnnxOperatorInfo info;  // its type, first opset, what it maps onto, when
  // Why the graph cannot take node `n`, from its attributes and the file's
  // tensors alone (run on every node, also past the first that fails), or
  // "". Null: every such node may map.
  std::string (*check)(const Mapper& m, const onnx::NodeProto& n) = nullptr;
  // The node's value where its inputs are all known (shape arithmetic);
  // nullopt where it computes none of them. Null: it never does.
  std::optional<Known> (*fold)(const Mapper& m,
                               const onnx::NodeProto& n) = nullptr;
  // Maps node `index` onto the graph; throws GraphError where its inputs
  // do not fit what it maps onto.
  void (*apply)(Mapper& m, int index, const onnx::NodeProto& n) = nullptr;
};

// The table, by type.
const std::vector<Operator>& Operators();

// The entry of an operator type, or null where the graph has none.
const Operator* FindOperator(const std::string& type);

}  // namespace paradnn

#endif  // PARADNN_IMPORTERS_ONNX_OPERATORS_H_
