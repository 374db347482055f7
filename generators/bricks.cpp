#include "generators/bricks.h"

#include <map>
#include <sstream>

#include "generators/check.h"

namespace paradnn {
namespace {

// The attributes each op's key prints, after its input shapes.
const std::map<Op, std::vector<std::string>>& Attributes() {
  static const std::map<Op, std::vector<std::string>> attributes = {
      {Op::kDense, {"units", "bias"}},
      {Op::kConv2d, {"units", "kernel", "stride", "pad"}},
      {Op::kBatchNorm, {}},
      {Op::kReLU, {}},
      {Op::kMaxPool, {"kernel", "stride", "pad"}},
      {Op::kAdd, {}},
      {Op::kGlobalAvgPool, {}},
      {Op::kEmbedding, {"vocab", "units"}},
      {Op::kRecurrent, {"cell", "units"}},
      {Op::kSoftmaxCrossEntropy, {}},
  };
  return attributes;
}

std::string ShapeText(const Shape& s) {
  std::string out;
  for (int64_t d : s) out += (out.empty() ? "" : "x") + std::to_string(d);
  return out;
}

int64_t PositiveInt(const std::string& key, const std::string& v,
                    int64_t min = 1) {
  try {
    size_t end = 0;
    const int64_t n = std::stoll(v, &end);
    if (end == v.size() && n >= min) return n;
  } catch (const std::exception&) {
  }
  throw SpecError("'" + v + "' is not a valid " + key +
                  ": expected an integer of at least " + std::to_string(min));
}

Shape ParseShape(const std::string& text) {
  Shape s;
  std::stringstream in(text);
  std::string d;
  while (std::getline(in, d, 'x')) s.push_back(PositiveInt("dimension", d));
  if (s.empty()) throw SpecError("empty shape in 'in:'");
  return s;
}

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::stringstream in{std::string(s)};
  while (std::getline(in, part, sep)) parts.push_back(part);
  return parts;
}

}  // namespace

std::string Brick::Key() const {
  std::string key = ToString(op);
  key += "/in:";
  for (size_t i = 0; i < inputs.size(); ++i) {
    key += (i ? "," : "") + ShapeText(inputs[i]);
  }
  for (const std::string& a : Attributes().at(op)) {
    key += "/" + a + ":";
    if (a == "units") key += std::to_string(units);
    if (a == "kernel") key += std::to_string(kernel);
    if (a == "stride") key += std::to_string(stride);
    if (a == "pad") key += std::to_string(pad);
    if (a == "vocab") key += std::to_string(vocab);
    if (a == "bias") key += bias ? "1" : "0";
    if (a == "cell") key += ToString(cell);
  }
  return key + "/grad:" + (input_grad ? "1" : "0");
}

std::string BrickCase::Name() const {
  return "BRICK/" + brick.Key() + "/" + backend + "/" + ToString(dtype) + "/" +
         ToString(mode);
}

BrickCase ParseBrickName(std::string_view name) {
  const std::string quoted = "'" + std::string(name) + "'";
  std::vector<std::string> parts = Split(name, '/');
  if (parts.size() < 7 || parts[0] != "BRICK") {
    throw SpecError(quoted + " is not a brick name: expected BRICK/<layer>/"
                             "in:<shape>/.../grad:<0|1>/<backend>/<dtype>/"
                             "<mode>");
  }
  try {
    BrickCase c;
    Brick& b = c.brick;
    bool found = false;
    for (const auto& [op, attrs] : Attributes()) {
      if (parts[1] == ToString(op)) {
        b.op = op;
        found = true;
      }
    }
    if (!found) throw SpecError("'" + parts[1] + "' is not a layer type");
    const std::vector<std::string>& attrs = Attributes().at(b.op);
    // op, in, the attributes, grad, backend, dtype, mode
    if (parts.size() != attrs.size() + 7) {
      std::string expected = "BRICK/" + parts[1] + "/in:<shape>";
      for (const std::string& a : attrs) expected += "/" + a + ":<value>";
      throw SpecError("expected " + expected +
                      "/grad:<0|1>/<backend>/<dtype>/<mode>");
    }
    auto value = [&](size_t i, const std::string& key) {
      const std::string& p = parts[i];
      if (p.rfind(key + ":", 0) != 0) {
        throw SpecError("segment '" + p + "' should start with '" + key + ":'");
      }
      return p.substr(key.size() + 1);
    };
    for (const std::string& s : Split(value(2, "in"), ',')) {
      b.inputs.push_back(ParseShape(s));
    }
    for (size_t k = 0; k < attrs.size(); ++k) {
      const std::string& a = attrs[k];
      const std::string v = value(3 + k, a);
      if (a == "units") b.units = PositiveInt(a, v);
      if (a == "kernel") b.kernel = PositiveInt(a, v);
      if (a == "stride") b.stride = PositiveInt(a, v);
      if (a == "pad") b.pad = PositiveInt(a, v, 0);
      if (a == "vocab") b.vocab = PositiveInt(a, v);
      if (a == "bias") b.bias = PositiveInt(a, v, 0) != 0;
      if (a == "cell") {
        if (v == "rnn") b.cell = Cell::kRnn;
        else if (v == "lstm") b.cell = Cell::kLstm;
        else if (v == "gru") b.cell = Cell::kGru;
        else throw SpecError("'" + v + "' is not a cell: expected rnn, lstm or gru");
      }
    }
    const size_t k = 3 + attrs.size();
    b.input_grad = PositiveInt("grad", value(k, "grad"), 0) != 0;
    c.backend = parts[k + 1];
    c.dtype = ParseDType(parts[k + 2]);
    c.mode = ParseMode(parts[k + 3]);
    const size_t want = b.op == Op::kAdd ? 2 : 1;
    if (b.inputs.size() != want) {
      throw SpecError(std::to_string(b.inputs.size()) + " input shapes, " +
                      parts[1] + " takes " + std::to_string(want));
    }
    return c;
  } catch (const SpecError& e) {
    throw SpecError(quoted + ": " + e.what());
  }
}

Graph Brick::BuildGraph(Mode mode) const {
  const bool train = mode == Mode::kTrain;
  Graph g;
  std::vector<int> in;
  if (op == Op::kEmbedding) {
    in.push_back(g.Tokens(inputs[0][0], inputs[0][1], vocab));
  } else {
    for (const Shape& s : inputs) in.push_back(g.Input(s, train && input_grad));
  }
  int y = -1;
  switch (op) {
    case Op::kDense: y = g.Dense(in[0], units, bias); break;
    case Op::kConv2d: y = g.Conv2d(in[0], units, kernel, stride, pad); break;
    case Op::kBatchNorm: y = g.BatchNorm(in[0]); break;
    case Op::kReLU: y = g.ReLU(in[0]); break;
    case Op::kMaxPool: y = g.MaxPool(in[0], kernel, stride, pad); break;
    case Op::kAdd: y = g.Add(in[0], in[1]); break;
    case Op::kGlobalAvgPool: y = g.GlobalAvgPool(in[0]); break;
    case Op::kEmbedding: y = g.Embedding(in[0], units); break;
    case Op::kRecurrent: y = g.Recurrent(in[0], cell, units); break;
    case Op::kSoftmaxCrossEntropy: g.SoftmaxCrossEntropy(in[0]); return g;
    default: PARADNN_CHECK(false, "not a brick layer");
  }
  if (train) g.MeanLoss(y);
  return g;
}

std::vector<Brick> BricksOf(const Graph& g, Mode mode) {
  const bool train = mode == Mode::kTrain;
  const std::vector<bool> needs_grad = g.NeedsGrad();
  std::vector<Brick> bricks;
  for (int i = 0; i < g.size(); ++i) {
    const Layer& l = g.layer(i);
    if (l.op == Op::kInput || l.op == Op::kTokens) continue;
    if (l.op == Op::kSoftmaxCrossEntropy && !train) continue;
    Brick b;
    b.op = l.op;
    for (int in : l.inputs) b.inputs.push_back(g.layer(in).shape);
    b.units = l.units;
    b.kernel = l.kernel;
    b.stride = l.stride;
    b.pad = l.pad;
    b.vocab = l.vocab;
    b.bias = l.bias;
    b.cell = l.cell;
    b.input_grad = train && l.op != Op::kEmbedding && needs_grad[l.inputs[0]];
    bricks.push_back(std::move(b));
  }
  return bricks;
}

}  // namespace paradnn
