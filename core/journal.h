// --paradnn_resume's journal: a line per finished case, appended as each
// ends, so that a sweep killed midway and started again runs only the
// cases it had not finished.
#pragma once

#include <fstream>
#include <set>
#include <string>

namespace paradnn {

// The names of the cases a journal records; a torn last line (the process
// killed while writing it) is skipped.
std::set<std::string> ReadJournal(const std::string& path);

class Journal {
 public:
  // Appends to `path` from now on; throws FlagError when it cannot.
  void Open(const std::string& path);
  bool is_open() const { return out_.is_open(); }
  // One line per finished case, flushed: a killed sweep loses at most the
  // case in flight.
  void Add(const std::string& name, bool error, double time_ms);

 private:
  std::ofstream out_;
};

}  // namespace paradnn
