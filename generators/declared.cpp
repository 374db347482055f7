#include "generators/declared.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "generators/declared_program.h"
#include "generators/expr.h"
#include "generators/yaml_text.h"

namespace paradnn {
namespace declared {

const std::map<std::string, OpInfo>& Ops() {
  static const std::map<std::string, OpInfo> ops = {
      {"input",
       {Op::kInput,
        0,
        {{"shape", Kind::kShape, true},
         {"batch_dim", Kind::kNonNegative, false}}}},
      {"tokens",
       {Op::kTokens,
        0,
        {{"length", Kind::kPositive, true},
         {"batch", Kind::kPositive, true},
         {"vocab", Kind::kPositive, true}}}},
      {"dense",
       {Op::kDense,
        1,
        {{"units", Kind::kPositive, true}, {"bias", Kind::kFlag, false}}}},
      {"conv2d",
       {Op::kConv2d,
        1,
        {{"channels", Kind::kPositive, true},
         {"kernel", Kind::kPositive, true},
         {"kernel_w", Kind::kPositive, false},
         {"stride", Kind::kPositive, false},
         {"pad", Kind::kNonNegative, false},
         {"pad_w", Kind::kNonNegative, false},
         {"dilation", Kind::kPositive, false},
         {"groups", Kind::kPositive, false},
         {"bias", Kind::kFlag, false},
         {"weight_norm", Kind::kNonNegative, false}}}},
      {"conv3d",
       {Op::kConv3d,
        1,
        {{"channels", Kind::kPositive, true},
         {"kernel", Kind::kPositive, true},
         {"kernel_d", Kind::kPositive, false},
         {"stride", Kind::kPositive, false},
         {"stride_d", Kind::kPositive, false},
         {"pad", Kind::kNonNegative, false},
         {"pad_d", Kind::kNonNegative, false},
         {"bias", Kind::kFlag, false}}}},
      {"batchnorm", {Op::kBatchNorm, 1, {}}},
      {"relu", {Op::kReLU, 1, {}}},
      {"maxpool",
       {Op::kMaxPool,
        1,
        {{"kernel", Kind::kPositive, true},
         {"stride", Kind::kPositive, false},
         {"pad", Kind::kNonNegative, false},
         {"ceil", Kind::kFlag, false}}}},
      {"add", {Op::kAdd, 2, {}}},
      {"avgpool", {Op::kGlobalAvgPool, 1, {}}},
      {"embedding", {Op::kEmbedding, 1, {{"units", Kind::kPositive, true}}}},
      {"recurrent",
       {Op::kRecurrent,
        1,
        {{"cell", Kind::kCell, true}, {"hidden", Kind::kPositive, true}}}},
      {"layernorm", {Op::kLayerNorm, 1, {{"axis", Kind::kPositive, false}}}},
      {"gelu", {Op::kGelu, 1, {}}},
      {"positional", {Op::kPositional, 1, {}}},
      {"attention",
       {Op::kAttention,
        -1,
        {{"heads", Kind::kPositive, true}, {"causal", Kind::kFlag, false}}}},
      {"softmax_xent",
       {Op::kSoftmaxCrossEntropy, 1, {{"axis", Kind::kPositive, false}}}},
      {"rmsnorm", {Op::kRmsNorm, 1, {}}},
      {"rope",
       {Op::kRope,
        1,
        {{"heads", Kind::kPositive, true},
         {"position", Kind::kNonNegative, false}}}},
      {"swiglu", {Op::kSwiGlu, 2, {}}},
      {"cached_attention",
       {Op::kCachedAttention,
        3,
        {{"heads", Kind::kPositive, true},
         {"kv_heads", Kind::kPositive, true},
         {"context", Kind::kPositive, true}}}},
      {"last_position", {Op::kLastPosition, 1, {}}},
      {"embedding_bag",
       {Op::kEmbeddingBag, 1, {{"units", Kind::kPositive, true}}}},
      {"concat", {Op::kConcat, -2, {{"axis", Kind::kNonNegative, false}}}},
      {"cross", {Op::kCross, 2, {{"rank", Kind::kNonNegative, false}}}},
      {"avgpool2d",
       {Op::kAvgPool,
        1,
        {{"kernel", Kind::kPositive, true},
         {"stride", Kind::kPositive, false},
         {"pad", Kind::kNonNegative, false},
         {"count_pad", Kind::kFlag, false}}}},
      {"flatten", {Op::kFlatten, 1, {}}},
      {"sigmoid", {Op::kSigmoid, 1, {}}},
      {"silu", {Op::kSilu, 1, {}}},
      {"relu6", {Op::kRelu6, 1, {}}},
      {"hardswish", {Op::kHardSwish, 1, {}}},
      {"hardsigmoid", {Op::kHardSigmoid, 1, {}}},
      {"channel_mul", {Op::kChannelMul, 2, {}}},
      {"channel_shuffle",
       {Op::kChannelShuffle, 1, {{"groups", Kind::kPositive, true}}}},
      {"slice",
       {Op::kSlice,
        1,
        {{"axis", Kind::kPositive, true},
         {"begin", Kind::kNonNegative, true},
         {"units", Kind::kPositive, true}}}},
      {"sequence", {Op::kSequence, 1, {}}},
      {"class_token", {Op::kClassToken, 1, {}}},
      {"first_token", {Op::kFirstToken, 1, {}}},
      {"layer_scale", {Op::kLayerScale, 1, {}}},
      {"instance_norm", {Op::kInstanceNorm, 1, {}}},
      {"maps", {Op::kMaps, 1, {{"height", Kind::kPositive, true}}}},
      {"resize",
       {Op::kResize,
        1,
        {{"height", Kind::kPositive, true},
         {"width", Kind::kPositive, false}}}},
  };
  return ops;
}

namespace {

class FileParser {
 public:
  explicit FileParser(std::string source) : source_(std::move(source)) {}

  FamilyDef Parse(const std::string& text) {
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::ParserException& e) {
      Fail(e.mark, "invalid YAML: " + e.msg);
    }
    if (!root.IsMap()) Fail(root.Mark(), "expected a mapping with 'family'");
    auto program = std::make_shared<Program>();
    program->source = source_;
    FamilyDef def;
    def.source = source_;
    for (const auto& kv : root) {
      const std::string key = kv.first.Scalar();
      const YAML::Node& v = kv.second;
      if (key == "family") {
        def.name = FamilyName(v);
      } else if (key == "about") {
        Scalar(v, "about");
      } else if (key == "params") {
        def.params = Params(v);
      } else if (key == "modes") {
        def.modes = Modes(v);
      } else if (key == "modes_why") {
        def.modes_why = Scalar(v, "modes_why");
      } else if (key != "requires" && key != "graph") {
        Fail(kv.first.Mark(), "unknown key '" + key +
                                  "': expected family, about, params, "
                                  "modes, modes_why, requires or graph");
      }
    }
    if (def.name.empty()) Fail(root.Mark(), "no 'family': expected its name");
    if (def.params.empty()) {
      Fail(root.Mark(), "no 'params': expected the list of its parameters");
    }
    if (!root["graph"]) Fail(root.Mark(), "no 'graph': expected its layers");
    for (const ParamDef& p : def.params) {
      Binding b;
      if (!p.choices.empty()) b.value = p.choices[0];
      if (p.groups > 0) b.groups.resize(p.groups);
      known_[p.key] = b;
    }
    if (const YAML::Node req = root["requires"]) {
      if (!req.IsSequence()) {
        Fail(req.Mark(),
             "'requires' should be a list of {that: EXPR, why: "
             "TEXT}");
      }
      for (const YAML::Node& r : req) {
        if (!r.IsMap() || !r["that"] || !r["why"] || r.size() != 2) {
          Fail(r.Mark(), "expected {that: EXPR, why: TEXT}");
        }
        program->requires_.emplace_back(Expression(r["that"]),
                                        Scalar(r["why"], "why"));
      }
    }
    program->family = def.name;
    program->params = def.params;
    program->graph = List(root["graph"]);
    program->trains = std::find(def.modes.begin(), def.modes.end(),
                                Mode::kTrain) != def.modes.end();
    if (def.modes.size() < 2 && def.modes_why.empty()) {
      Fail(root.Mark(), "modes " + std::string(ToString(def.modes[0])) +
                            " only: expected 'modes_why', the reason");
    }
    def.build = [program](const ModelSpec& s) {
      return BuildModel(*program, s);
    };
    def.check = [program](const ModelSpec& s) -> std::string {
      try {
        BuildModel(*program, s);
      } catch (const SpecError& e) {
        return e.what();
      }
      return "";
    };
    return def;
  }

 private:
  [[noreturn]] void Fail(const YAML::Mark& mark, const std::string& what) {
    throw SpecError(Where(source_, mark.is_null() ? 0 : mark.line + 1) + ": " +
                    what);
  }

  std::string Scalar(const YAML::Node& n, const std::string& what) {
    if (!n.IsScalar() || n.Scalar().empty()) {
      Fail(n.Mark(),
           YamlText(n) + " is not a valid " + what + ": expected text");
    }
    return n.Scalar();
  }

  std::string FamilyName(const YAML::Node& n) {
    const std::string name = Scalar(n, "family");
    bool ok = std::isupper(static_cast<unsigned char>(name[0]));
    for (char c : name) {
      ok = ok && (std::isupper(static_cast<unsigned char>(c)) ||
                  std::isdigit(static_cast<unsigned char>(c)) || c == '_');
    }
    if (!ok) {
      Fail(n.Mark(), YamlText(n) +
                         " is not a valid family: expected capitals, "
                         "digits and '_', starting with a capital");
    }
    return name;
  }

  std::vector<Mode> Modes(const YAML::Node& n) {
    std::vector<Mode> modes;
    if (n.IsSequence()) {
      for (const YAML::Node& m : n) {
        try {
          modes.push_back(ParseMode(Scalar(m, "mode")));
        } catch (const SpecError& e) {
          Fail(m.Mark(), e.what());
        }
      }
    }
    if (modes.empty() || modes.size() > 2 ||
        (modes.size() == 2 && modes[0] == modes[1])) {
      Fail(n.Mark(), YamlText(n) +
                         " is not a valid modes: expected [train, "
                         "infer], [train] or [infer]");
    }
    return modes;
  }

  // A parameter's key: a name expressions can read.
  std::string Key(const YAML::Node& n) {
    const std::string key = Scalar(n, "parameter name");
    bool ok = std::islower(static_cast<unsigned char>(key[0]));
    for (char c : key) {
      ok = ok && (std::islower(static_cast<unsigned char>(c)) ||
                  std::isdigit(static_cast<unsigned char>(c)) || c == '_');
    }
    if (!ok || key == "true" || key == "false") {
      Fail(n.Mark(), YamlText(n) +
                         " is not a valid parameter name: expected "
                         "lower case letters, digits and '_'");
    }
    return key;
  }

  std::vector<ParamDef> Params(const YAML::Node& n) {
    if (!n.IsSequence() || n.size() == 0) {
      Fail(n.Mark(),
           "'params' should be a non-empty list of names or "
           "{name: N, choices: [...], groups: G, default: V}");
    }
    std::vector<ParamDef> params;
    std::set<std::string> seen;
    for (const YAML::Node& p : n) {
      ParamDef def;
      std::optional<YAML::Node> default_node;
      if (p.IsScalar()) {
        def.key = Key(p);
      } else if (p.IsMap() && p["name"]) {
        def.key = Key(p["name"]);
        for (const auto& kv : p) {
          const std::string k = kv.first.Scalar();
          if (k == "choices") {
            if (!kv.second.IsSequence() || kv.second.size() == 0) {
              Fail(kv.second.Mark(), "'choices' should be a non-empty list");
            }
            for (const YAML::Node& c : kv.second) {
              def.choices.push_back(Scalar(c, "choice"));
            }
          } else if (k == "groups") {
            int groups = 0;
            if (!kv.second.IsScalar() ||
                !YAML::convert<int>::decode(kv.second, groups) || groups < 2) {
              Fail(kv.second.Mark(), YamlText(kv.second) +
                                         " is not a valid groups: expected "
                                         "an integer of at least 2");
            }
            def.groups = groups;
          } else if (k == "default") {
            default_node = kv.second;
          } else if (k != "name") {
            Fail(kv.first.Mark(), "unknown key '" + k +
                                      "' of a parameter: expected name, "
                                      "choices, groups or default");
          }
        }
      } else {
        Fail(p.Mark(), YamlText(p) +
                           " is not a parameter: expected a name or "
                           "{name: N, ...}");
      }
      if (!def.choices.empty() && def.groups > 0) {
        Fail(p.Mark(), def.key + ": choices or groups, not both");
      }
      if (default_node) {
        const std::string text = Scalar(*default_node, "default");
        try {
          def.default_value = CanonicalValue(def, text);
        } catch (const SpecError& e) {
          Fail(default_node->Mark(), e.what());
        }
      }
      if (!seen.insert(def.key).second) {
        Fail(p.Mark(), "parameter '" + def.key + "' twice");
      }
      params.push_back(std::move(def));
    }
    return params;
  }

  // An expression over what is known where it stands.
  Expr Expression(const YAML::Node& n) {
    if (!n.IsScalar()) {
      Fail(n.Mark(), YamlText(n) +
                         " is not an expression: expected an integer "
                         "or an expression of the parameters");
    }
    Expr e;
    try {
      e = Expr::Parse(n.Scalar());
    } catch (const ExprError& x) {
      Fail(n.Mark(), x.what());
    }
    for (const std::string& name : e.Names()) {
      if (name != "true" && name != "false" && known_.count(name) == 0) {
        std::string names;
        for (const auto& [k, b] : known_)
          names += (names.empty() ? "" : ", ") + k;
        Fail(n.Mark(), "'" + e.text() + "': '" + name +
                           "' is no parameter or variable here: expected one "
                           "of " +
                           names);
      }
    }
    return e;
  }

  std::vector<Item> List(const YAML::Node& n) {
    if (!n.IsSequence() || n.size() == 0) {
      Fail(n.Mark(), "expected a non-empty list of layers and blocks");
    }
    std::vector<Item> items;
    for (const YAML::Node& i : n) items.push_back(Entry(i));
    return items;
  }

  std::string LayerName(const YAML::Node& n) {
    const std::string name = Scalar(n, "layer name");
    if (name == ".") return name;
    if (layers_.count(name) == 0 && lists_.count(name) == 0) {
      Fail(n.Mark(), "'" + name +
                         "' names no layer before this one: a layer reads "
                         "only layers above it (no cycles), named with 'as' "
                         "(or lists of them with 'into')");
    }
    return name;
  }

  Item Entry(const YAML::Node& n) {
    if (!n.IsMap()) {
      Fail(n.Mark(), YamlText(n) +
                         " is not a layer: expected {op: NAME, ...}, "
                         "{as: NAME, input: NAME} or a block {graph: "
                         "[...], repeat: N, if: COND}");
    }
    Item item;
    item.line = n.Mark().line + 1;
    if (n["if"]) item.when = Expression(n["if"]);
    if (n["graph"]) return Block(n, std::move(item));
    if (n["op"]) return Layer(n, std::move(item));
    if (n["as"] && n["input"] && n.size() == (n["if"] ? 3u : 2u)) {
      item.inputs = {LayerName(n["input"])};
      if (lists_.count(item.inputs[0]) != 0) {
        Fail(n["input"].Mark(), "'" + item.inputs[0] +
                                    "' is a list of layers (into): 'as' "
                                    "names one layer");
      }
      item.as = Scalar(n["as"], "layer name");
      layers_.insert(item.as);
      return item;
    }
    Fail(n.Mark(), YamlText(n) +
                       " is not a layer: expected 'op', 'graph', or "
                       "'as' with 'input' alone");
  }

  Item Block(const YAML::Node& n, Item item) {
    item.block = true;
    std::map<std::string, Binding> outer = known_;
    for (const auto& kv : n) {
      const std::string k = kv.first.Scalar();
      if (k == "repeat") {
        item.repeat = Expression(kv.second);
      } else if (k == "index") {
        item.index = Key(kv.second);
        known_[item.index] = Binding{int64_t{0}, {}};
      } else if (k != "graph" && k != "let" && k != "if" && k != "else") {
        Fail(kv.first.Mark(), "unknown key '" + k +
                                  "' of a block: expected graph, repeat, "
                                  "index, let, if or else");
      }
    }
    if (!item.index.empty() && !item.repeat) {
      Fail(n.Mark(), "'index' without 'repeat'");
    }
    if (n["else"] && (!item.when || item.repeat)) {
      Fail(n["else"].Mark(),
           "'else' belongs to a block with 'if' and no "
           "'repeat'");
    }
    if (const YAML::Node let = n["let"]) {
      if (!let.IsMap()) Fail(let.Mark(), "'let' should map names to values");
      for (const auto& kv : let) {
        const std::string name = Key(kv.first);
        item.let.emplace_back(name, Expression(kv.second));
        known_[name] = Binding{int64_t{0}, {}};
      }
    }
    item.body = List(n["graph"]);
    known_ = outer;  // the block's variables end with it, its names do not
    if (n["else"]) item.otherwise = List(n["else"]);
    return item;
  }

  Item Layer(const YAML::Node& n, Item item) {
    item.op_name = Scalar(n["op"], "op");
    const auto op = Ops().find(item.op_name);
    if (op == Ops().end()) {
      std::string names;
      for (const auto& [name, info] : Ops()) {
        names += (names.empty() ? "" : ", ") + name;
      }
      Fail(
          n["op"].Mark(),
          YamlText(n["op"]) + " is not an operation: expected one of " + names);
    }
    item.op = &op->second;
    for (const auto& kv : n) {
      const std::string k = kv.first.Scalar();
      if (k == "op" || k == "if") continue;
      if (k == "as") {
        item.as = Scalar(kv.second, "layer name");
      } else if (k == "into") {
        item.into = Scalar(kv.second, "list name");
      } else if (k == "input" && item.op->inputs != 0) {
        item.inputs = {LayerName(kv.second)};
      } else if (k == "inputs" && item.op->inputs != 0) {
        if (!kv.second.IsSequence()) {
          Fail(kv.second.Mark(), "'inputs' should be a list of layer names");
        }
        for (const YAML::Node& i : kv.second) {
          item.inputs.push_back(LayerName(i));
        }
      } else {
        const Attr* attr = nullptr;
        for (const Attr& a : item.op->attrs) {
          if (k == a.key) attr = &a;
        }
        if (attr == nullptr) {
          std::string keys = item.op->inputs != 0 ? "input, inputs, " : "";
          for (const Attr& a : item.op->attrs)
            keys += std::string(a.key) + ", ";
          Fail(kv.first.Mark(), "unknown key '" + k + "' of " + item.op_name +
                                    ": expected " + keys + "as, into or if");
        }
        if (attr->kind == Kind::kShape) {
          if (!kv.second.IsSequence() || kv.second.size() == 0) {
            Fail(kv.second.Mark(),
                 "'shape' should be a non-empty list of "
                 "sizes");
          }
          for (const YAML::Node& d : kv.second) {
            item.shape.push_back(Expression(d));
          }
        } else {
          item.attrs.emplace(k, Expression(kv.second));
        }
      }
    }
    for (const Attr& a : item.op->attrs) {
      if (a.required && item.attrs.count(a.key) == 0 &&
          !(a.kind == Kind::kShape && !item.shape.empty())) {
        Fail(n.Mark(), item.op_name + " without '" + a.key + "'");
      }
    }
    const int given = static_cast<int>(item.inputs.size());
    const int wanted = item.op->inputs;
    for (const std::string& name : item.inputs) {
      if (lists_.count(name) != 0 && wanted != -2) {
        Fail(n.Mark(), "'" + name + "' is a list of layers (into): " +
                           item.op_name + " reads layers, only concat lists");
      }
    }
    if (wanted == -2 && given == 0) {
      Fail(n.Mark(), item.op_name +
                         " reads layers and lists of them: expected "
                         "'inputs: [...]'");
    }
    if (given > 0 && wanted != -2 &&
        !(given == wanted || (wanted == -1 && (given == 1 || given == 3)))) {
      Fail(n.Mark(), item.op_name + " reads " +
                         (wanted == -1 ? std::string("one input or three")
                                       : std::to_string(wanted)) +
                         ", not " + std::to_string(given));
    }
    if (given == 0 && wanted > 1) {
      Fail(n.Mark(), item.op_name + " reads " + std::to_string(wanted) +
                         " inputs: expected 'inputs: [...]'");
    }
    if (!item.as.empty()) layers_.insert(item.as);
    if (!item.into.empty()) {
      if (layers_.count(item.into) != 0) {
        Fail(n.Mark(), "'" + item.into +
                           "' names a layer (as): a list (into) needs a "
                           "name of its own");
      }
      lists_.insert(item.into);
    }
    return item;
  }

  std::string source_;
  std::map<std::string, Binding> known_;  // parameters and variables here
  std::set<std::string> layers_;          // layer names defined so far
  std::set<std::string> lists_;           // and names of lists of layers
};

}  // namespace
}  // namespace declared

FamilyDef ParseFamily(const std::string& text, const std::string& source) {
  return declared::FileParser(source).Parse(text);
}

namespace {

std::map<std::string, FamilyReader>& Readers() {
  static std::map<std::string, FamilyReader> readers;
  return readers;
}

}  // namespace

void RegisterFamilyReader(const std::string& extension, FamilyReader reader) {
  Readers()[extension] = std::move(reader);
}

FamilyDef ReadFamilyFile(const std::string& path) {
  const std::string extension = std::filesystem::path(path).extension();
  const auto reader = Readers().find(extension);
  if (reader != Readers().end()) return reader->second(path);
  if (extension == ".onnx") {
    throw SpecError(path +
                    ": an ONNX file, and this program reads none "
                    "(importers/onnx.h: UseOnnxFamilies)");
  }
  std::ifstream in(path);
  if (!in) {
    throw SpecError(path +
                    ": cannot open the family file: " + std::strerror(errno));
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParseFamily(text.str(), path);
}

namespace {

std::vector<std::string>& Loaded() {
  static std::vector<std::string> files;
  return files;
}

}  // namespace

std::string LoadFamilyFile(const std::string& path) {
  FamilyDef def = ReadFamilyFile(path);
  const std::string name = def.name;
  RegisterFamily(std::move(def));
  const std::string absolute = std::filesystem::absolute(path).string();
  if (std::find(Loaded().begin(), Loaded().end(), absolute) == Loaded().end()) {
    Loaded().push_back(absolute);
  }
  return name;
}

std::string FamilyFiles() {
  std::string out;
  for (const std::string& f : Loaded()) out += (out.empty() ? "" : ",") + f;
  return out;
}

}  // namespace paradnn
