// The module libparadnn_import_onnx.so: ONNX files read with the ONNX
// library and mapped onto the layer graph (importers/onnx.h) by the Mapper
// (importers/onnx_mapper.h).
#include <fcntl.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <memory>
#include <optional>
#include <stdexcept>

#include "importers/onnx.h"
#include "importers/onnx_mapper.h"

namespace paradnn {
namespace {

// The first line of a library's message: ONNX's checker appends its
// context over many lines.
std::string FirstLine(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

// A file's model, its weights' values let go.
class ProtoFile : public OnnxFile {
 public:
  // `weights`: the file's float tensors, where its cases start from them.
  ProtoFile(std::string path, onnx::ModelProto model,
            std::optional<Tensors> weights)
      : path_(std::move(path)),
        model_(std::move(model)),
        weights_(std::move(weights)) {}

  OnnxModel Map(int64_t batch) const override {
    const onnx::ModelProto& m = model_;
    OnnxModel out;
    out.path = path_;
    out.producer =
        m.producer_name() +
        (m.producer_version().empty() ? "" : " " + m.producer_version());
    for (const onnx::OperatorSetIdProto& o : m.opset_import()) {
      if (o.domain().empty() || o.domain() == "ai.onnx") {
        out.opset = o.version();
      }
    }
    Mapper mapper(m.graph(), batch, weights_ ? &*weights_ : nullptr);
    for (int i = 0; i < m.graph().node_size(); ++i) {
      const onnx::NodeProto& n = m.graph().node(i);
      out.nodes.push_back({n.name(), n.op_type(), mapper.Map(i)});
    }
    out.graph = mapper.Finish(&out.why_no_graph, &out.param_sources);
    out.initializer_params = mapper.params();
    return out;
  }

 private:
  std::string path_;
  onnx::ModelProto model_;
  std::optional<Tensors> weights_;
};

// The file's float tensors by name: its initializers' and its Constant
// nodes'.
Tensors FloatTensors(const onnx::GraphProto& g) {
  Tensors out;
  auto keep = [&](const std::string& name, const onnx::TensorProto& t) {
    if (t.data_type() == onnx::TensorProto::FLOAT) {
      out[name] =
          std::make_shared<const std::vector<float>>(TensorValues<float>(t));
    }
  };
  for (const onnx::TensorProto& t : g.initializer()) keep(t.name(), t);
  for (const onnx::NodeProto& n : g.node()) {
    if (n.op_type() != "Constant" || n.output_size() != 1) continue;
    for (const onnx::AttributeProto& a : n.attribute()) {
      if (a.name() == "value") keep(n.output(0), a.t());
    }
  }
  return out;
}

std::shared_ptr<const OnnxFile> ReadFile(const std::string& path,
                                         bool weights) {
  onnx::ModelProto m;
  {
    // Parsed from the file's pages as they are: a stream would copy every
    // weight once more on the way (VGG-16's 553 MB took 1.3 s so, and as
    // much memory again).
    const int fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) throw std::runtime_error(path + ": cannot open the ONNX file");
    struct stat st;
    const size_t size = fstat(fd, &st) == 0 ? st.st_size : 0;
    void* data = size > 0 ? mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0)
                          : MAP_FAILED;
    close(fd);
    const bool parsed = data != MAP_FAILED &&
                        size <= static_cast<size_t>(INT_MAX) &&
                        m.ParseFromArray(data, static_cast<int>(size));
    if (data != MAP_FAILED) munmap(data, size);
    if (!parsed) {
      throw std::runtime_error(path +
                               ": not an ONNX model (no protobuf "
                               "ModelProto could be read from it)");
    }
  }
  try {
    onnx::checker::check_model(m);
    onnx::shape_inference::InferShapes(m);
  } catch (const std::exception& e) {
    throw std::runtime_error(
        path + ": not a valid ONNX model: " + FirstLine(e.what()));
  }
  // Where asked for, the weights' values as the layers will read them.
  std::optional<Tensors> tensors;
  if (weights) tensors = FloatTensors(m.graph());
  // The mapping reads the weights' shapes only: their values (most of a
  // file) are let go, but for the few small tensors it reads.
  for (onnx::TensorProto& t : *m.mutable_graph()->mutable_initializer()) {
    int64_t n = 1;
    for (int64_t d : t.dims()) n *= d;
    if (n <= kValuesKept) continue;
    t.clear_raw_data();
    t.clear_float_data();
  }
  return std::make_shared<ProtoFile>(path, std::move(m), std::move(tensors));
}

}  // namespace
}  // namespace paradnn

extern "C" __attribute__((visibility("default"))) paradnn::OnnxReader
paradnn_onnx_reader_v2() {
  return paradnn::ReadFile;
}
