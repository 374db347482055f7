// Finding and opening paradnn's modules (backends, the communicator): a
// leaf that the backend table and the distributed world both use, so that
// neither folder includes the other.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace paradnn {

// The folders of PARADNN_BACKEND_PATH (colon-separated), in order.
std::vector<std::filesystem::path> UserModuleFolders();

// Opens a module of paradnn's (libparadnn_backend_<module>.so,
// libparadnn_comm_<name>.so) from PARADNN_BACKEND_PATH, beside libparadnn
// (its paradnn/ folder), or the build and install trees' module folders;
// nullptr and the reason in *error when there is none or it does not load.
// A loaded module stays loaded: its code may still run.
void* OpenModule(const std::string& file, std::string* error);

}  // namespace paradnn
