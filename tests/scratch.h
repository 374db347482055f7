// Test scratch: every file a test writes goes under one folder per test
// process, created on first use in the system's temporary folder and removed
// when the process exits, so a test run leaves nothing in the work tree or in
// /tmp.
#pragma once

#include <filesystem>
#include <string>

namespace paradnn::test {

// This process's scratch folder.
const std::filesystem::path& ScratchDir();

// A path in the scratch folder; its parent folders exist.
std::filesystem::path Scratch(const std::string& name);

// The repository's test data (tests/data/...).
std::filesystem::path TestData(const std::string& name);

}  // namespace paradnn::test
