// A family file's program run with one model's values: its layer graph.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "generators/declared_program.h"

namespace paradnn::declared {
namespace {

// The graph of one model: the program run with its values.
class Builder {
 public:
  Builder(const Program& p, const ModelSpec& s) : p_(p) {
    for (size_t i = 0; i < p.params.size(); ++i) {
      const ParamDef& d = p.params[i];
      Binding b;
      // The values are canonical (ModelSpec::Make): words, integers, and
      // per group one integer or as many as the groups.
      const std::string& text = s.values.at(i);
      if (!d.choices.empty()) {
        b.value = text;
      } else if (d.groups > 0) {
        for (const std::string& v : Split(text, '-')) {
          b.groups.push_back(std::stoll(v));
        }
        b.groups.resize(d.groups, b.groups.front());
      } else {
        b.value = static_cast<int64_t>(std::stoll(text));
      }
      vars_.emplace_back(d.key, b);
    }
    vars_.emplace_back("true", Binding{int64_t{1}, {}});
    vars_.emplace_back("false", Binding{int64_t{0}, {}});
    scope_ = [this](const std::string& name) -> const Binding* {
      for (auto it = vars_.rbegin(); it != vars_.rend(); ++it) {
        if (it->first == name) return &it->second;
      }
      return nullptr;
    };
  }

  Graph Run() {
    for (const auto& [that, why] : p_.requires_) {
      if (Int(that, 0) == 0) throw SpecError(why);
    }
    Items(p_.graph);
    if (g_.size() == 0) throw SpecError(Where(p_.source, 1) + ": no layers");
    if (p_.trains && g_.layers().back().op != Op::kSoftmaxCrossEntropy) {
      throw SpecError(p_.source + ": the last layer is " +
                      ToString(g_.layers().back().op) +
                      ": a family that trains ends with softmax_xent");
    }
    return std::move(g_);
  }

 private:
  [[noreturn]] void Fail(int line, const std::string& what) const {
    throw SpecError(Where(p_.source, line) + ": " + what);
  }

  int64_t Int(const Expr& e, int line) const {
    try {
      return e.Int(scope_);
    } catch (const ExprError& x) {
      Fail(line, x.what());
    }
  }

  int64_t Size(const Expr& e, Kind kind, const std::string& what,
               int line) const {
    const int64_t v = Int(e, line);
    if (v < (kind == Kind::kNonNegative ? 0 : 1)) {
      Fail(line, what + " = " + e.text() + " is " + std::to_string(v) +
                     " for this model: expected " +
                     (kind == Kind::kNonNegative ? "an integer of at least 0"
                                                 : "a positive integer"));
    }
    return v;
  }

  void Items(const std::vector<Item>& items) {
    for (const Item& item : items) {
      if (item.when && Int(*item.when, item.line) == 0) {
        if (item.block && !item.otherwise.empty()) Items(item.otherwise);
        continue;
      }
      if (item.block) {
        Block(item);
      } else if (item.op == nullptr) {
        names_[item.as] = Input(item.inputs[0], item.line);
      } else {
        Layer(item);
      }
    }
  }

  void Block(const Item& item) {
    const int64_t times = item.repeat ? Size(*item.repeat, Kind::kNonNegative,
                                             "repeat", item.line)
                                      : 1;
    if (times > kMaxLayers) {
      Fail(item.line, "repeat = " + item.repeat->text() + " is " +
                          std::to_string(times) + ": expected at most " +
                          std::to_string(kMaxLayers));
    }
    const size_t depth = vars_.size();
    if (!item.index.empty()) vars_.emplace_back(item.index, Binding{});
    for (int64_t i = 0; i < times; ++i) {
      vars_.resize(depth + (item.index.empty() ? 0 : 1));
      if (!item.index.empty()) vars_.back().second.value = i;
      for (const auto& [name, e] : item.let) {
        Value v;
        try {
          v = e.Evaluate(scope_);
        } catch (const ExprError& x) {
          Fail(item.line, x.what());
        }
        vars_.emplace_back(name, Binding{v, {}});
      }
      Items(item.body);
    }
    vars_.resize(depth);
  }

  int Input(const std::string& name, int line) const {
    if (name == ".") {
      if (last_ < 0) Fail(line, "no layer before this one to read");
      return last_;
    }
    const auto it = names_.find(name);
    if (it == names_.end()) {
      Fail(line, "'" + name +
                     "' names no layer made before this one in "
                     "this model (its block did not run)");
    }
    return it->second;
  }

  void Layer(const Item& item) {
    if (g_.size() >= kMaxLayers) {
      Fail(item.line, "more than " + std::to_string(kMaxLayers) +
                          " layers: expected a model, not a repeat gone wrong");
    }
    auto size = [&](const char* key, int64_t otherwise) {
      const auto it = item.attrs.find(key);
      if (it == item.attrs.end()) return otherwise;
      Kind kind = Kind::kPositive;
      for (const Attr& a : item.op->attrs) {
        if (a.key == std::string(key)) kind = a.kind;
      }
      return Size(it->second, kind, key, item.line);
    };
    auto flag = [&](const char* key, bool otherwise) {
      const auto it = item.attrs.find(key);
      return it == item.attrs.end() ? otherwise
                                    : Int(it->second, item.line) != 0;
    };
    std::vector<int> in;
    for (const std::string& name : item.inputs) {
      const auto list = lists_.find(name);
      if (list != lists_.end()) {
        in.insert(in.end(), list->second.begin(), list->second.end());
      } else {
        in.push_back(Input(name, item.line));
      }
    }
    if (in.empty() && item.op->inputs != 0) in = {Input(".", item.line)};
    int made = -1;
    try {
      switch (item.op->op) {
        case Op::kInput: {
          Shape shape;
          for (const Expr& d : item.shape) {
            shape.push_back(Size(d, Kind::kPositive, "shape", item.line));
          }
          made = g_.Input(shape, false, static_cast<int>(size("batch_dim", 0)));
          break;
        }
        case Op::kTokens:
          made =
              g_.Tokens(size("length", 0), size("batch", 0), size("vocab", 0));
          break;
        case Op::kDense:
          made = g_.Dense(in[0], size("units", 0), flag("bias", true));
          break;
        case Op::kConv2d: {
          // A kernel of kernel x kernel_w (square where no width is
          // given), padded to keep the size at stride 1 unless told (by
          // half its span: dilated, `dilation` times half the kernel); the
          // padding across that of the height where the kernel is square.
          const int64_t kernel = size("kernel", 0);
          const int64_t kernel_w = size("kernel_w", kernel);
          const int64_t dilation = size("dilation", 1);
          const int64_t pad = size("pad", dilation * (kernel / 2));
          const int64_t pad_w = size(
              "pad_w", kernel_w == kernel ? pad : dilation * (kernel_w / 2));
          made = g_.Conv2d(in[0], size("channels", 0), {kernel, kernel_w},
                           size("stride", 1), {pad, pad_w}, size("groups", 1),
                           flag("bias", false), dilation);
          // weight_norm: the weights' axis with a magnitude per index
          // (PyTorch's weight_norm dim), as Wav2Vec2's 3 over taps.
          if (size("weight_norm", -1) >= 0) {
            made = g_.WeightNorm(made, size("weight_norm", -1));
          }
          break;
        }
        case Op::kConv3d: {
          // A kernel of kernel_d frames by kernel x kernel (a cube where
          // no depth is given), strides and padding likewise, padded to
          // keep the size at stride 1 unless told.
          const int64_t kernel = size("kernel", 0);
          const int64_t kernel_d = size("kernel_d", kernel);
          const int64_t stride = size("stride", 1);
          const int64_t pad = size("pad", kernel / 2);
          made = g_.Conv3d(
              in[0], size("channels", 0), {kernel_d, kernel, kernel},
              {size("stride_d", stride), stride, stride},
              {size("pad_d", kernel_d / 2), pad, pad}, flag("bias", false));
          break;
        }
        case Op::kBatchNorm:
          if (g_.layer(in[0]).shape.size() < 2) {
            throw GraphError("batch norm needs [batch, channels, ...]");
          }
          made = g_.BatchNorm(in[0]);
          break;
        case Op::kReLU:
          made = g_.ReLU(in[0]);
          break;
        case Op::kMaxPool:
          made = g_.MaxPool(in[0], size("kernel", 0), size("stride", 1),
                            size("pad", 0), flag("ceil", false));
          break;
        case Op::kAdd:
          made = g_.Add(in[0], in[1]);
          break;
        case Op::kGlobalAvgPool:
          made = g_.GlobalAvgPool(in[0]);
          break;
        case Op::kEmbedding:
          made = g_.Embedding(in[0], size("units", 0));
          break;
        case Op::kRecurrent:
          made = g_.Recurrent(in[0], CellOf(item), size("hidden", 0));
          break;
        case Op::kLayerNorm:
          made = g_.LayerNorm(in[0], kNormEpsilon, size("axis", -1));
          break;
        case Op::kGelu:
          made = g_.Gelu(in[0]);
          break;
        case Op::kPositional:
          made = g_.Positional(in[0]);
          break;
        case Op::kAttention: {
          const int k = in.size() == 3 ? in[1] : in[0];
          const int v = in.size() == 3 ? in[2] : in[0];
          made = g_.Attention(in[0], k, v, size("heads", 0),
                              flag("causal", false));
          break;
        }
        case Op::kSoftmaxCrossEntropy:
          made = g_.SoftmaxCrossEntropy(in[0], size("axis", -1));
          break;
        case Op::kRmsNorm:
          made = g_.RmsNorm(in[0]);
          break;
        case Op::kRope:
          made = g_.Rope(in[0], size("heads", 0), size("position", 0));
          break;
        case Op::kSwiGlu:
          made = g_.SwiGlu(in[0], in[1]);
          break;
        case Op::kCachedAttention:
          made = g_.CachedAttention(in[0], in[1], in[2], size("heads", 0),
                                    size("kv_heads", 0), size("context", 0));
          break;
        case Op::kLastPosition:
          made = g_.LastPosition(in[0]);
          break;
        case Op::kEmbeddingBag:
          made = g_.EmbeddingBag(in[0], size("units", 0));
          break;
        case Op::kConcat:
          made = g_.Concat(in, size("axis", -1));
          break;
        case Op::kCross:
          made = g_.Cross(in[0], in[1], size("rank", 0));
          break;
        case Op::kAvgPool:
          made = g_.AvgPool(in[0], size("kernel", 0), size("stride", 1),
                            size("pad", 0), flag("count_pad", false));
          break;
        case Op::kFlatten:
          made = g_.Flatten(in[0]);
          break;
        case Op::kSigmoid:
          made = g_.Sigmoid(in[0]);
          break;
        case Op::kSilu:
          made = g_.Silu(in[0]);
          break;
        case Op::kRelu6:
          made = g_.Relu6(in[0]);
          break;
        case Op::kHardSwish:
          made = g_.HardSwish(in[0]);
          break;
        case Op::kHardSigmoid:
          made = g_.HardSigmoid(in[0]);
          break;
        case Op::kChannelMul:
          made = g_.ChannelMul(in[0], in[1]);
          break;
        case Op::kChannelShuffle:
          made = g_.ChannelShuffle(in[0], size("groups", 0));
          break;
        case Op::kSlice:
          made = g_.Slice(in[0], size("axis", 0), size("begin", 0),
                          size("units", 0));
          break;
        case Op::kSequence:
          made = g_.Sequence(in[0]);
          break;
        case Op::kClassToken:
          made = g_.ClassToken(in[0]);
          break;
        case Op::kFirstToken:
          made = g_.FirstToken(in[0]);
          break;
        case Op::kLayerScale:
          made = g_.LayerScale(in[0]);
          break;
        case Op::kInstanceNorm:
          made = g_.InstanceNorm(in[0]);
          break;
        case Op::kMaps:
          made = g_.Maps(in[0], size("height", 0));
          break;
        case Op::kResize: {
          const int64_t height = size("height", 0);
          made = g_.Resize(in[0], height, size("width", height));
          break;
        }
        case Op::kMeanLoss:
          break;
      }
    } catch (const GraphError& e) {
      std::string shapes;
      for (int i : in) shapes += " " + ToString(g_.layer(i).shape);
      Fail(item.line, item.op_name + ": " + e.what() +
                          (shapes.empty() ? "" : " (inputs" + shapes + ")"));
    }
    last_ = made;
    if (!item.as.empty()) names_[item.as] = made;
    if (!item.into.empty()) lists_[item.into].push_back(made);
  }

  Cell CellOf(const Item& item) const {
    Value v;
    try {
      v = item.attrs.at("cell").Evaluate(scope_);
    } catch (const ExprError& x) {
      Fail(item.line, x.what());
    }
    const std::string* name = std::get_if<std::string>(&v);
    for (Cell c : {Cell::kRnn, Cell::kLstm, Cell::kGru}) {
      if (name != nullptr && *name == ToString(c)) return c;
    }
    Fail(item.line, "cell = " + item.attrs.at("cell").text() + " is " +
                        ToText(v) + ": expected 'rnn', 'lstm' or 'gru'");
  }

  const Program& p_;
  std::vector<std::pair<std::string, Binding>> vars_;
  Scope scope_;
  Graph g_;
  std::map<std::string, int> names_;
  std::map<std::string, std::vector<int>> lists_;
  int last_ = -1;
};

}  // namespace

Graph BuildModel(const Program& p, const ModelSpec& s) {
  return Builder(p, s).Run();
}

}  // namespace paradnn::declared
