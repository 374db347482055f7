// Integer expressions of a declared family's parameters (generators/
// declared.h): "nodes * 2", "b == 0 && group > 0 ? 2 : 1", "blocks[group]",
// "block == 'bottleneck'".
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace paradnn {

// An integer or a string (a choice parameter's value, a quoted literal).
using Value = std::variant<int64_t, std::string>;

// What a name stands for where an expression is evaluated: a value, or
// one per group (a parameter with groups, read as name[index]).
struct Binding {
  Value value;
  std::vector<int64_t> groups;
};
// The binding of a name, or nullptr where it has none.
using Scope = std::function<const Binding*(const std::string& name)>;

// Thrown for text that is no expression, and for one that cannot be
// evaluated (an unknown name, a division by zero); says what and where.
class ExprError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A parsed expression. Operators, loosest first: c ? a : b, ||, &&,
// == != < <= > >=, + -, * / % (integer division, towards zero), unary -
// and !, ^ (power, right to left); operands: integers, names, name[expr],
// 'text', parentheses. Comparisons and logic give 1 or 0.
class Expr {
 public:
  // Throws ExprError naming the position and what was expected.
  static Expr Parse(const std::string& text);
  Value Evaluate(const Scope& scope) const;
  // The value, which must be an integer.
  int64_t Int(const Scope& scope) const;
  // Names it reads, each once, in order.
  std::vector<std::string> Names() const;
  const std::string& text() const { return text_; }

  struct Node;

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;
};

// "text" of a value, as an error message quotes it.
std::string ToText(const Value& v);

}  // namespace paradnn
