// Catch2, version 2 (one header) or 3 (a library and its headers): the tests
// include this and use version 3's names.
#pragma once

#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
using Catch::Approx;
#else
#include <catch2/catch.hpp>
#include <string>
namespace Catch::Matchers {
inline StdString::ContainsMatcher ContainsSubstring(const std::string& s) {
  return Contains(s);
}
}  // namespace Catch::Matchers
#endif
