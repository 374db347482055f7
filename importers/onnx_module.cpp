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
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

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
    Mapper mapper(m.graph(), out.opset, batch, weights_ ? &*weights_ : nullptr);
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

// The file's bytes without the values of its large initializers, for a
// model whose cases start from the seed: parsing copies every value (VGG's
// 530 MB, 1.5 s), where the mapping reads the initializers' shapes and
// the values of small ones only. Walks protobuf's wire format (each field
// a varint key, number << 3 | type, then a varint, 8 bytes, a length and
// as many bytes, or 4 bytes) through ModelProto's graph (field 7) to
// GraphProto's initializers (5), and cuts a TensorProto's raw_data (9) and
// float_data (4) longer than kValuesKept values can be (10 bytes each, a
// varint's most) to one value's bytes; the rest of their pages are never
// read. Empty where the bytes are not that.
class Stripper {
 public:
  static std::string Model(const uint8_t* p, const uint8_t* end) {
    std::string out;
    return Fields(p, end, &Nested<7, &Nested<5, &Tensor>>, &out)
               ? out
               : std::string();
  }

 private:
  // A length-delimited field's new value (nullopt: the field as it is),
  // from its number and bytes; false where they are not what is expected.
  using Rewrite = bool (*)(uint64_t number, const uint8_t* p,
                           const uint8_t* end,
                           std::optional<std::string>* value);

  static bool Varint(const uint8_t*& p, const uint8_t* end, uint64_t* v) {
    *v = 0;
    for (int shift = 0; p < end && shift < 64; shift += 7) {
      const uint8_t b = *p++;
      *v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  }

  static void PutVarint(uint64_t v, std::string* out) {
    do {
      const uint8_t b = v & 0x7f;
      v >>= 7;
      out->push_back(static_cast<char>(v ? b | 0x80 : b));
    } while (v);
  }

  // Copies a message's fields to `out`, each length-delimited one as
  // `rewrite` has it (re-encoded with its new length where it changes).
  static bool Fields(const uint8_t* p, const uint8_t* end, Rewrite rewrite,
                     std::string* out) {
    while (p < end) {
      const uint8_t* field = p;
      uint64_t key = 0, n = 0;
      if (!Varint(p, end, &key)) return false;
      const uint64_t type = key & 7;
      if (type == 0) {
        if (!Varint(p, end, &n)) return false;
      } else if (type == 1 || type == 5) {
        p += type == 1 ? 8 : 4;
      } else if (type == 2) {
        if (!Varint(p, end, &n) || n > static_cast<uint64_t>(end - p)) {
          return false;
        }
        std::optional<std::string> value;
        if (!rewrite(key >> 3, p, p + n, &value)) return false;
        p += n;
        if (value) {
          PutVarint(key, out);
          PutVarint(value->size(), out);
          out->append(*value);
          continue;
        }
      } else {
        return false;
      }
      if (p > end) return false;
      out->append(reinterpret_cast<const char*>(field), p - field);
    }
    return true;
  }

  // Field `kField`, a message, its fields through `kInner`.
  template <uint64_t kField, Rewrite kInner>
  static bool Nested(uint64_t number, const uint8_t* p, const uint8_t* end,
                     std::optional<std::string>* value) {
    if (number != kField) return true;
    value->emplace();
    return Fields(p, end, kInner, &**value);
  }

  static bool Tensor(uint64_t number, const uint8_t* p, const uint8_t* end,
                     std::optional<std::string>* value) {
    if ((number == 9 || number == 4) && end - p > kValuesKept * 10) {
      // One value's bytes kept: ONNX's checker asks a tensor for its one
      // field of values (and a checker that also checks their number has
      // the file read whole).
      *value = std::string(4, '\0');
    }
    return true;
  }
};

// Whether some initializer's values lie in a file of their own (PyTorch
// writes a model over 2 GB so).
bool ExternalData(const onnx::ModelProto& m) {
  for (const onnx::TensorProto& t : m.graph().initializer()) {
    if (t.data_location() == onnx::TensorProto::EXTERNAL) return true;
  }
  return false;
}

// ONNX's checker and shape inference on m, read from `path`: why it is no
// valid model, or "". A model with external data is checked by its path:
// the checker looks for those files beside the model it read, which for
// one in memory is the working directory.
std::string Invalid(onnx::ModelProto& m, const std::string& path) {
  try {
    if (ExternalData(m)) {
      onnx::checker::check_model(path);
    } else {
      onnx::checker::check_model(m);
    }
    onnx::shape_inference::InferShapes(m);
  } catch (const std::exception& e) {
    return FirstLine(e.what());
  }
  return "";
}

std::shared_ptr<const OnnxFile> ReadFile(const std::string& path,
                                         bool weights) {
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
  onnx::ModelProto m;
  bool valid = false;
  if (data != MAP_FAILED && !weights) {
    // Without the large values where the cases start from the seed; the
    // whole file where that is no valid model, for the checker's own word
    // on the file.
    const auto* bytes = static_cast<const uint8_t*>(data);
    const std::string stripped = Stripper::Model(bytes, bytes + size);
    valid = !stripped.empty() && m.ParseFromString(stripped) &&
            Invalid(m, path).empty();
  }
  std::string why;
  if (!valid) {
    m.Clear();
    const bool parsed = data != MAP_FAILED &&
                        size <= static_cast<size_t>(INT_MAX) &&
                        m.ParseFromArray(data, static_cast<int>(size));
    if (data != MAP_FAILED) munmap(data, size);
    if (!parsed) {
      throw std::runtime_error(path +
                               ": not an ONNX model (no protobuf "
                               "ModelProto could be read from it)");
    }
    why = Invalid(m, path);
  } else {
    munmap(data, size);
  }
  if (!why.empty()) {
    throw std::runtime_error(path + ": not a valid ONNX model: " + why);
  }
  if (weights && ExternalData(m)) {
    throw std::runtime_error(path +
                             ": its weights lie in external data files, "
                             "which --paradnn_onnx_weights does not read");
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

// The table's rows (importers/onnx_operators.h).
std::vector<OnnxOperatorInfo> OperatorInfos() {
  std::vector<OnnxOperatorInfo> out;
  for (const Operator& op : Operators()) out.push_back(op.info);
  return out;
}

}  // namespace
}  // namespace paradnn

extern "C" __attribute__((visibility("default"))) paradnn::OnnxReader
paradnn_onnx_reader_v2() {
  return paradnn::ReadFile;
}

extern "C" __attribute__((visibility("default"))) paradnn::OnnxOperatorList
paradnn_onnx_operators_v1() {
  return paradnn::OperatorInfos;
}
