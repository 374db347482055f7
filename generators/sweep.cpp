#include "generators/sweep.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "generators/declared.h"
#include "generators/yaml_text.h"

namespace paradnn {
namespace {

// Far beyond the paper's grids (9,720 FC cases), short of exhausting memory.
constexpr size_t kMaxCases = 1000000;

class Parser {
 public:
  Parser(std::string source, std::vector<std::string> backends)
      : source_(std::move(source)), backends_(std::move(backends)) {}

  Sweep Parse(const std::string& text) {
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::ParserException& e) {
      Fail(e.mark, "invalid YAML: " + e.msg);
    }
    if (!root.IsMap()) {
      Fail(root.Mark(), "expected a mapping with a 'sweeps' list");
    }
    Sweep sweep;
    Defaults defaults;
    for (const auto& kv : root) {
      const std::string key = kv.first.Scalar();
      const YAML::Node& v = kv.second;
      if (key == "seed") {
        sweep.seed = static_cast<uint64_t>(Integer(v, "seed", 0));
      } else if (key == "threads") {
        sweep.threads = static_cast<int>(Integer(v, "threads", 1));
      } else if (key == "mlperf_org" || key == "mlperf_system" ||
                 key == "mlperf_status") {
        if (!v.IsScalar() || v.Scalar().empty()) {
          Fail(v.Mark(), YamlText(v) + " is not a valid " + key +
                             ": expected a non-empty name");
        }
        (key == "mlperf_org"      ? sweep.mlperf_org
         : key == "mlperf_system" ? sweep.mlperf_system
                                  : sweep.mlperf_status) = v.Scalar();
      } else if (key == "families") {
        // Family files, each relative to this config's folder.
        for (const std::string& file : List<std::string>(
                 v, key, [](const std::string& f) { return f; })) {
          Load(file, v);
        }
      } else if (!ReadDefault(key, v, defaults) && key != "sweeps") {
        Fail(kv.first.Mark(),
             "unknown key '" + key +
                 "': expected seed, threads, backends, dtypes, modes, "
                 "families, mlperf_org, mlperf_system, mlperf_status or "
                 "sweeps");
      }
    }
    const YAML::Node sweeps = root["sweeps"];
    if (!sweeps) Fail(root.Mark(), "missing 'sweeps': expected a list");
    if (!sweeps.IsSequence() || sweeps.size() == 0) {
      Fail(sweeps.Mark(), "'sweeps' should be a non-empty list of grids");
    }
    std::set<std::string> seen;
    for (const YAML::Node& grid : sweeps) {
      for (Case& c : Expand(grid, defaults, &sweep.invalid)) {
        if (seen.insert(c.Name()).second) sweep.cases.push_back(std::move(c));
      }
    }
    return sweep;
  }

 private:
  struct Defaults {
    std::vector<std::string> backends = {"torch"};
    std::vector<DType> dtypes = {DType::kFp32};
    std::vector<Mode> modes = {Mode::kTrain};
  };

  // "file:line:col" of a node, for messages.
  std::string Where(const YAML::Mark& mark) const {
    std::ostringstream out;
    out << source_;
    if (!mark.is_null()) out << ":" << mark.line + 1 << ":" << mark.column + 1;
    return out.str();
  }

  // Loads the family file `file` (relative to this config's folder), where
  // `at` names it; returns its family's name.
  std::string Load(const std::string& file, const YAML::Node& at) {
    const std::string folder =
        std::filesystem::path(source_).parent_path().string();
    const std::filesystem::path path =
        std::filesystem::path(file).is_absolute() || folder.empty()
            ? std::filesystem::path(file)
            : std::filesystem::path(folder) / file;
    try {
      return LoadFamilyFile(path.string());
    } catch (const SpecError& e) {
      Fail(at.Mark(), e.what());
    }
  }

  [[noreturn]] void Fail(const YAML::Mark& mark, const std::string& what) {
    throw ConfigError(Where(mark) + ": error: " + what);
  }

  int64_t Integer(const YAML::Node& n, const std::string& key, int64_t min) {
    int64_t v = 0;
    if (!n.IsScalar() || !YAML::convert<int64_t>::decode(n, v) || v < min) {
      Fail(n.Mark(), YamlText(n) + " is not a valid " + key +
                         ": expected an integer of at least " +
                         std::to_string(min));
    }
    return v;
  }

  // A scalar or a list of scalars, each checked by `check`.
  template <typename T, typename Check>
  std::vector<T> List(const YAML::Node& n, const std::string& key,
                      Check check) {
    std::vector<YAML::Node> items;
    if (n.IsScalar()) {
      items.push_back(n);
    } else if (n.IsSequence() && n.size() > 0) {
      for (const YAML::Node& item : n) items.push_back(item);
    } else {
      Fail(n.Mark(), YamlText(n) + " is not a valid " + key +
                         ": expected a value or a non-empty list");
    }
    std::vector<T> out;
    for (const YAML::Node& item : items) {
      if (!item.IsScalar()) {
        Fail(item.Mark(), YamlText(item) + " is not a valid " + key +
                              ": expected a single value");
      }
      try {
        out.push_back(check(item.Scalar()));
      } catch (const SpecError& e) {
        Fail(item.Mark(), e.what());
      }
    }
    return out;
  }

  bool ReadDefault(const std::string& key, const YAML::Node& v, Defaults& d) {
    if (key == "backends") {
      d.backends = List<std::string>(v, key, [&](const std::string& s) {
        if (std::find(backends_.begin(), backends_.end(), s) ==
            backends_.end()) {
          std::string known;
          for (const std::string& b : backends_) {
            known += (known.empty() ? "" : ", ") + b;
          }
          throw SpecError("'" + s + "' is not a backend: expected one of " +
                          known);
        }
        return s;
      });
    } else if (key == "dtypes") {
      d.dtypes = List<DType>(v, key, ParseDType);
    } else if (key == "modes") {
      d.modes = List<Mode>(v, key, ParseMode);
    } else {
      return false;
    }
    return true;
  }

  // Values of one family parameter: a value, a list, or a range.
  std::vector<std::string> Values(const ParamDef& def, const YAML::Node& n) {
    if (!n.IsMap()) {
      return List<std::string>(n, def.key, [&](const std::string& s) {
        return CanonicalValue(def, s);
      });
    }
    if (!def.choices.empty()) {
      Fail(n.Mark(), YamlText(n) + " is not a valid " + def.key +
                         ": a range needs integers; expected one of the "
                         "choices or a list of them");
    }
    int64_t from = 0, to = 0, times = 0, step = 0;
    for (const auto& kv : n) {
      const std::string k = kv.first.Scalar();
      if (k == "from") {
        from = Integer(kv.second, def.key + " 'from'", 1);
      } else if (k == "to") {
        to = Integer(kv.second, def.key + " 'to'", 1);
      } else if (k == "times") {
        times = Integer(kv.second, def.key + " 'times'", 2);
      } else if (k == "step") {
        step = Integer(kv.second, def.key + " 'step'", 1);
      } else {
        Fail(kv.first.Mark(), "unknown key '" + k + "' in the range of " +
                                  def.key +
                                  ": expected from, to, and times "
                                  "or step");
      }
    }
    if (!n["from"] || !n["to"] || (times > 0) == (step > 0)) {
      Fail(n.Mark(), YamlText(n) + " is not a valid range of " + def.key +
                         ": expected {from: A, to: B, times: K} or "
                         "{from: A, to: B, step: K}");
    }
    if (from > to) {
      Fail(n.Mark(), YamlText(n) + " is an empty range of " + def.key +
                         ": expected 'from' at most 'to'");
    }
    std::vector<std::string> out;
    for (int64_t v = from; v <= to;) {
      if (out.size() == kMaxCases) {
        Fail(n.Mark(), YamlText(n) + " expands to more than " +
                           std::to_string(kMaxCases) + " values of " + def.key);
      }
      out.push_back(std::to_string(v));
      if (times > 0) {
        if (v > std::numeric_limits<int64_t>::max() / times) break;
        v *= times;
      } else {
        if (v > std::numeric_limits<int64_t>::max() - step) break;
        v += step;
      }
    }
    return out;
  }

  // The grid's cases; points whose values do not fit together (heads that
  // do not divide d_model) go to `invalid`, each with where and why.
  std::vector<Case> Expand(const YAML::Node& grid, Defaults d,
                           std::vector<std::string>* invalid) {
    if (!grid.IsMap()) {
      Fail(grid.Mark(), YamlText(grid) +
                            " is not a grid: expected a mapping "
                            "with 'family' and its parameters");
    }
    // A model of a file of its own (an ONNX file): the file's family.
    const YAML::Node onnx = grid["onnx"];
    const YAML::Node family_node = onnx ? onnx : grid["family"];
    if (!family_node) Fail(grid.Mark(), "grid without 'family' or 'onnx'");
    const FamilyDef* def =
        FindFamily(onnx ? Load(onnx.Scalar(), onnx) : family_node.Scalar());
    if (def == nullptr) {
      std::string names;
      for (const FamilyDef& f : Families()) {
        names += (names.empty() ? "" : ", ") + f.name;
      }
      Fail(family_node.Mark(), YamlText(family_node) +
                                   " is not a model family: expected one of " +
                                   names);
    }
    std::vector<std::vector<std::string>> axes(def->params.size());
    for (const auto& kv : grid) {
      const std::string key = kv.first.Scalar();
      if (key == "family" || key == "onnx" || ReadDefault(key, kv.second, d)) {
        continue;
      }
      auto it = std::find_if(def->params.begin(), def->params.end(),
                             [&](const ParamDef& p) { return p.key == key; });
      if (it == def->params.end()) {
        std::string keys;
        for (const ParamDef& p : def->params) keys += p.key + ", ";
        Fail(kv.first.Mark(), "unknown key '" + key + "' for " + def->name +
                                  ": expected " + keys +
                                  "backends, dtypes or modes");
      }
      axes[it - def->params.begin()] = Values(*it, kv.second);
    }
    for (size_t i = 0; i < axes.size(); ++i) {
      if (axes[i].empty() && !def->params[i].default_value.empty()) {
        axes[i] = {def->params[i].default_value};
      }
      if (axes[i].empty()) {
        Fail(grid.Mark(), def->name + " grid without '" + def->params[i].key +
                              "': every parameter without a default needs a "
                              "value, a list or a range");
      }
    }
    double count = d.backends.size() * d.dtypes.size() * d.modes.size();
    for (const auto& axis : axes) count *= axis.size();
    if (count > kMaxCases) {
      Fail(grid.Mark(), def->name + " grid of " +
                            std::to_string(int64_t(count)) +
                            " cases: expected at most " +
                            std::to_string(kMaxCases) + " per grid");
    }
    std::vector<Mode> modes;
    for (Mode m : d.modes) {
      if (std::find(def->modes.begin(), def->modes.end(), m) !=
          def->modes.end()) {
        modes.push_back(m);
      } else {
        invalid->push_back(Where(grid.Mark()) + ": skipped " + def->name +
                           " in mode " + ToString(m) + ": " + def->modes_why);
      }
    }
    std::vector<Case> cases;
    std::vector<size_t> at(axes.size(), 0);
    while (true) {
      std::vector<std::string> values;
      for (size_t i = 0; i < axes.size(); ++i) values.push_back(axes[i][at[i]]);
      try {
        ModelSpec model = ModelSpec::Make(def->name, values);
        for (const std::string& b : d.backends) {
          for (DType t : d.dtypes) {
            for (Mode m : modes) cases.push_back({model, b, t, m});
          }
        }
      } catch (const SpecError& e) {
        invalid->push_back(Where(grid.Mark()) + ": skipped " + e.what());
      }
      // Odometer over the axes, last parameter fastest.
      size_t i = axes.size();
      while (i > 0 && ++at[i - 1] == axes[i - 1].size()) at[--i] = 0;
      if (i == 0) break;
    }
    return cases;
  }

  std::string source_;
  std::vector<std::string> backends_;
};

}  // namespace

Sweep ParseSweep(const std::string& text, const std::string& source,
                 const std::vector<std::string>& backends) {
  return Parser(source, backends).Parse(text);
}

Sweep LoadSweep(const std::string& path,
                const std::vector<std::string>& backends) {
  std::ifstream in(path);
  if (!in) {
    throw ConfigError(
        path + ": error: cannot open the config file: " + std::strerror(errno));
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParseSweep(text.str(), path, backends);
}

}  // namespace paradnn
