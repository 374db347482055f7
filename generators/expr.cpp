#include "generators/expr.h"

#include <algorithm>
#include <cctype>
#include <limits>

namespace paradnn {

struct Expr::Node {
  enum Kind { kNumber, kString, kName, kIndex, kUnary, kBinary, kChoice };
  Kind kind = kNumber;
  int64_t number = 0;
  std::string text;  // string literal, name, or operator
  std::vector<std::shared_ptr<const Node>> args;
};

namespace {

using NodePtr = std::shared_ptr<const Expr::Node>;
using Node = Expr::Node;

// Recursive descent, one function per precedence level.
class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  NodePtr Whole() {
    NodePtr n = Choice();
    Skip();
    if (at_ != s_.size()) Fail("an operator or the end");
    return n;
  }

 private:
  [[noreturn]] void Fail(const std::string& expected) const {
    const std::string found =
        at_ < s_.size() ? "'" + s_.substr(at_, 1) + "'" : "the end";
    throw ExprError("'" + s_ + "': at " + std::to_string(at_ + 1) + ", " +
                    found + ": expected " + expected);
  }

  void Skip() {
    while (at_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[at_])))
      ++at_;
  }

  // Takes `op` if it comes next (and is not the start of a longer one).
  bool Take(const std::string& op) {
    Skip();
    if (s_.compare(at_, op.size(), op) != 0) return false;
    const char next = at_ + op.size() < s_.size() ? s_[at_ + op.size()] : 0;
    if ((op == "<" || op == ">" || op == "!") && next == '=') return false;
    if ((op == "&" && next == '&') || (op == "|" && next == '|')) return false;
    at_ += op.size();
    return true;
  }

  static NodePtr Make(Node::Kind kind, std::string text,
                      std::vector<NodePtr> args) {
    auto n = std::make_shared<Node>();
    n->kind = kind;
    n->text = std::move(text);
    n->args = std::move(args);
    return n;
  }

  NodePtr Choice() {
    NodePtr c = Binary(0);
    if (!Take("?")) return c;
    NodePtr a = Choice();
    if (!Take(":")) Fail("':' of 'c ? a : b'");
    NodePtr b = Choice();
    return Make(Node::kChoice, "?", {c, a, b});
  }

  // Levels of left-associative binary operators, loosest first.
  NodePtr Binary(size_t level) {
    static const std::vector<std::vector<std::string>> kLevels = {
        {"||"},
        {"&&"},
        {"==", "!=", "<=", ">=", "<", ">"},
        {"+", "-"},
        {"*", "/", "%"}};
    if (level == kLevels.size()) return Unary();
    NodePtr left = Binary(level + 1);
    while (true) {
      std::string op;
      for (const std::string& o : kLevels[level]) {
        if (Take(o)) {
          op = o;
          break;
        }
      }
      if (op.empty()) return left;
      left = Make(Node::kBinary, op, {left, Binary(level + 1)});
    }
  }

  NodePtr Unary() {
    if (Take("-")) return Make(Node::kUnary, "-", {Unary()});
    if (Take("!")) return Make(Node::kUnary, "!", {Unary()});
    NodePtr base = Primary();
    if (Take("^")) return Make(Node::kBinary, "^", {base, Unary()});
    return base;
  }

  NodePtr Primary() {
    Skip();
    if (at_ >= s_.size()) Fail("a number, a name, 'text' or '('");
    const char c = s_[at_];
    if (c == '(') {
      ++at_;
      NodePtr n = Choice();
      if (!Take(")")) Fail("')'");
      return n;
    }
    if (c == '\'') {
      const size_t end = s_.find('\'', at_ + 1);
      if (end == std::string::npos) Fail("a closing quote");
      NodePtr n = Make(Node::kString, s_.substr(at_ + 1, end - at_ - 1), {});
      at_ = end + 1;
      return n;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      int64_t v = 0;
      while (at_ < s_.size() &&
             std::isdigit(static_cast<unsigned char>(s_[at_]))) {
        const int digit = s_[at_++] - '0';
        if (v > (std::numeric_limits<int64_t>::max() - digit) / 10) {
          Fail("a number below 2^63");
        }
        v = v * 10 + digit;
      }
      auto n = std::make_shared<Node>();
      n->number = v;
      return n;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const size_t start = at_;
      while (at_ < s_.size() &&
             (std::isalnum(static_cast<unsigned char>(s_[at_])) ||
              s_[at_] == '_')) {
        ++at_;
      }
      const std::string name = s_.substr(start, at_ - start);
      if (!Take("[")) return Make(Node::kName, name, {});
      NodePtr index = Choice();
      if (!Take("]")) Fail("']'");
      return Make(Node::kIndex, name, {index});
    }
    Fail("a number, a name, 'text' or '('");
  }

  const std::string& s_;
  size_t at_ = 0;
};

void Names(const Node& n, std::vector<std::string>* out) {
  if ((n.kind == Node::kName || n.kind == Node::kIndex) &&
      std::find(out->begin(), out->end(), n.text) == out->end()) {
    out->push_back(n.text);
  }
  for (const NodePtr& a : n.args) Names(*a, out);
}

class Evaluator {
 public:
  Evaluator(const std::string& text, const Scope& scope)
      : text_(text), scope_(scope) {}

  Value Eval(const Node& n) const {
    switch (n.kind) {
      case Node::kNumber:
        return n.number;
      case Node::kString:
        return n.text;
      case Node::kName: {
        const Binding& b = Bound(n.text);
        if (!b.groups.empty()) {
          Fail("'" + n.text + "' has one value per group: " + n.text +
               "[index]");
        }
        return b.value;
      }
      case Node::kIndex: {
        const Binding& b = Bound(n.text);
        const int64_t i = Int(*n.args[0], "an index");
        if (b.groups.empty()) Fail("'" + n.text + "' has no groups to index");
        if (i < 0 || i >= static_cast<int64_t>(b.groups.size())) {
          Fail(n.text + "[" + std::to_string(i) +
               "]: expected an index below " + std::to_string(b.groups.size()));
        }
        return b.groups[i];
      }
      case Node::kUnary: {
        const int64_t v = Int(*n.args[0], "an integer");
        return n.text == "-" ? -v : int64_t{v == 0};
      }
      case Node::kChoice:
        return Int(*n.args[0], "a condition") != 0 ? Eval(*n.args[1])
                                                   : Eval(*n.args[2]);
      case Node::kBinary:
        return Binary(n);
    }
    return int64_t{0};
  }

  int64_t Int(const Node& n, const char* what) const {
    const Value v = Eval(n);
    if (const int64_t* i = std::get_if<int64_t>(&v)) return *i;
    Fail("'" + std::get<std::string>(v) + "' where " + what + " belongs");
  }

 private:
  [[noreturn]] void Fail(const std::string& why) const {
    throw ExprError("'" + text_ + "': " + why);
  }

  const Binding& Bound(const std::string& name) const {
    const Binding* b = scope_(name);
    if (b == nullptr) Fail("'" + name + "' names no parameter or variable");
    return *b;
  }

  Value Binary(const Node& n) const {
    const std::string& op = n.text;
    if (op == "==" || op == "!=") {
      const Value a = Eval(*n.args[0]), b = Eval(*n.args[1]);
      if (a.index() != b.index()) {
        Fail("compares " + ToText(a) + " with " + ToText(b) +
             ": a text and a number");
      }
      return int64_t{(a == b) == (op == "==")};
    }
    if (op == "&&") {
      return int64_t{Int(*n.args[0], "a condition") != 0 &&
                     Int(*n.args[1], "a condition") != 0};
    }
    if (op == "||") {
      return int64_t{Int(*n.args[0], "a condition") != 0 ||
                     Int(*n.args[1], "a condition") != 0};
    }
    const int64_t a = Int(*n.args[0], "an integer");
    const int64_t b = Int(*n.args[1], "an integer");
    if (op == "<") return int64_t{a < b};
    if (op == "<=") return int64_t{a <= b};
    if (op == ">") return int64_t{a > b};
    if (op == ">=") return int64_t{a >= b};
    int64_t r = 0;
    if (op == "+" && !__builtin_add_overflow(a, b, &r)) return r;
    if (op == "-" && !__builtin_sub_overflow(a, b, &r)) return r;
    if (op == "*" && !__builtin_mul_overflow(a, b, &r)) return r;
    if (op == "/" || op == "%") {
      if (b == 0) Fail("divides by zero");
      if (a == std::numeric_limits<int64_t>::min() && b == -1)
        Fail("overflows");
      return op == "/" ? a / b : a % b;
    }
    if (op == "^") {
      if (b < 0) Fail("a negative power");
      // 0, 1 and -1 to any power; any other base overflows within 63.
      if (a == 0 || a == 1) return b == 0 ? int64_t{1} : a;
      if (a == -1) return b % 2 == 0 ? int64_t{1} : int64_t{-1};
      r = 1;
      for (int64_t k = 0; k < b; ++k) {
        if (__builtin_mul_overflow(r, a, &r)) Fail("overflows 64 bits");
      }
      return r;
    }
    Fail("overflows 64 bits");
  }

  const std::string& text_;
  const Scope& scope_;
};

}  // namespace

Expr Expr::Parse(const std::string& text) {
  Expr e;
  e.text_ = text;
  e.root_ = Parser(e.text_).Whole();
  return e;
}

Value Expr::Evaluate(const Scope& scope) const {
  return Evaluator(text_, scope).Eval(*root_);
}

int64_t Expr::Int(const Scope& scope) const {
  return Evaluator(text_, scope).Int(*root_, "an integer");
}

std::vector<std::string> Expr::Names() const {
  std::vector<std::string> out;
  paradnn::Names(*root_, &out);
  return out;
}

std::string ToText(const Value& v) {
  if (const int64_t* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  return "'" + std::get<std::string>(v) + "'";
}

}  // namespace paradnn
