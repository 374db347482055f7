#include "generators/expr.h"

#include <map>

#include "tests/catch.h"

namespace paradnn {
namespace {

using Catch::Matchers::ContainsSubstring;

// nodes 256, block 'bottleneck', blocks [3, 4, 6, 3].
Value Eval(const std::string& text) {
  static const std::map<std::string, Binding> names = {
      {"nodes", {int64_t{256}, {}}},
      {"block", {std::string("bottleneck"), {}}},
      {"blocks", {int64_t{0}, {3, 4, 6, 3}}}};
  return Expr::Parse(text).Evaluate([](const std::string& n) -> const Binding* {
    const auto it = names.find(n);
    return it == names.end() ? nullptr : &it->second;
  });
}

int64_t Int(const std::string& text) { return std::get<int64_t>(Eval(text)); }

TEST_CASE("expressions: precedence, power, choices, groups and text",
          "[expr]") {
  CHECK(Int("nodes * 2 + 1") == 513);
  CHECK(Int("1 + nodes * 2") == 513);
  CHECK(Int("(1 + nodes) * 2") == 514);
  CHECK(Int("2 * 2^3^2") == 1024);  // 2^(3^2), then times 2
  CHECK(Int("-2^2") == -4);
  CHECK(Int("7 / 2 + 7 % 2") == 4);
  CHECK(Int("-7 / 2") == -3);  // towards zero
  CHECK(Int("blocks[2] + blocks[1 + 2]") == 9);
  CHECK(Int("block == 'bottleneck' ? 4 * nodes : nodes") == 1024);
  CHECK(Int("block != 'bottleneck' ? 4 : nodes > 100 ? 2 : 3") == 2);
  CHECK(Int("1 < 2 && 2 <= 2 && !(3 >= 4) || 0") == 1);
  CHECK(Int("0 || 0 == 1") == 0);
  CHECK(std::get<std::string>(Eval("nodes > 1 ? block : 'x'")) == "bottleneck");
  CHECK(Expr::Parse("blocks[i] * nodes + blocks[0]").Names() ==
        std::vector<std::string>{"blocks", "i", "nodes"});
}

TEST_CASE("expressions say what is wrong and where", "[expr]") {
  CHECK_THROWS_WITH(Expr::Parse("nodes *"),
                    "'nodes *': at 8, the end: expected a number, a name, "
                    "'text' or '('");
  CHECK_THROWS_WITH(Expr::Parse("(nodes"),
                    ContainsSubstring("at 7, the end: expected ')'"));
  CHECK_THROWS_WITH(Expr::Parse("nodes nodes"),
                    ContainsSubstring("at 7, 'n': expected an operator"));
  CHECK_THROWS_WITH(Expr::Parse("99999999999999999999"),
                    ContainsSubstring("expected a number below 2^63"));
  CHECK_THROWS_WITH(Eval("width * 2"),
                    "'width * 2': 'width' names no parameter or variable");
  CHECK_THROWS_WITH(Eval("nodes / (nodes - 256)"),
                    ContainsSubstring("divides by zero"));
  CHECK_THROWS_WITH(Eval("blocks + 1"),
                    ContainsSubstring("'blocks' has one value per group"));
  CHECK_THROWS_WITH(Eval("blocks[4]"),
                    ContainsSubstring("expected an index below 4"));
  CHECK_THROWS_WITH(Eval("block * 2"),
                    ContainsSubstring("'bottleneck' where an integer belongs"));
  CHECK_THROWS_WITH(Eval("block == 2"),
                    ContainsSubstring("a text and a number"));
  CHECK_THROWS_WITH(Eval("nodes^9"), ContainsSubstring("overflows 64 bits"));
  CHECK(Int("(0 - 1)^1000000001") == -1);
}

}  // namespace
}  // namespace paradnn
