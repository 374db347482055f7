#include "core/journal.h"

#include "core/flags.h"

namespace paradnn {

std::set<std::string> ReadJournal(const std::string& path) {
  std::set<std::string> names;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const size_t at = line.find("\"name\": \"");
    if (at == std::string::npos) continue;
    const size_t start = at + 9, end = line.find('"', start);
    if (end != std::string::npos && line.back() == '}') {
      names.insert(line.substr(start, end - start));
    }
  }
  return names;
}

void Journal::Open(const std::string& path) {
  // A line torn by a killed process is ended first: the next case's line
  // would otherwise join it, and read as the torn case's.
  bool torn = false;
  {
    std::ifstream in(path, std::ios::ate);
    if (in && in.tellg() > 0) {
      in.seekg(-1, std::ios::end);
      torn = in.get() != '\n';
    }
  }
  out_.open(path, std::ios::app);
  if (!out_) throw FlagError("--paradnn_resume=" + path + ": cannot write it");
  if (torn) out_ << "\n";
}

void Journal::Add(const std::string& name, bool error, double time_ms) {
  if (!out_.is_open()) return;
  out_ << "{\"name\": \"" << name
       << "\", \"error\": " << (error ? "true" : "false")
       << ", \"real_time_ms\": " << time_ms << "}" << std::endl;
}

}  // namespace paradnn
