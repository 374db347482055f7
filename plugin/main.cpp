// The paradnn runner: a ready Google Benchmark binary with paradnn's flags,
// and the subcommands that work on results.
//   paradnn [--paradnn_* flags] [--benchmark_* flags]
//   paradnn mlperf-summary DIR [--format=json|csv]
//   paradnn mlperf-report --mlperf DIR --results RESULTS.json -o OUT
//   paradnn calibrate [-o platform.json] [--threads=N]
//   paradnn report RESULTS.json [--vs B.json] [--a SEL --b SEL] -o DIR
//   paradnn merge A.json B.json ... -o ALL.json [--config SWEEP.yaml]
#include <benchmark/benchmark.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

#include "adapters/mlperf/reader.h"
#include "adapters/mlperf/side_by_side.h"
#include "analysis/calibrate.h"
#include "analysis/merge.h"
#include "analysis/report.h"
#include "paradnn/paradnn.h"

namespace {

int MlperfSummary(int argc, char** argv) {
  std::string dir, format = "json";
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--format=", 0) == 0) {
      format = arg.substr(9);
    } else if (dir.empty()) {
      dir = arg;
    } else {
      std::cerr << "paradnn mlperf-summary: unexpected argument '" << arg
                << "'\n";
      return 2;
    }
  }
  if (dir.empty() || (format != "json" && format != "csv")) {
    std::cerr << "usage: paradnn mlperf-summary DIR [--format=json|csv]\n";
    return 2;
  }
  if (!std::filesystem::is_directory(dir)) {
    std::cerr << "paradnn mlperf-summary: " << dir << ": not a folder\n";
    return 2;
  }
  const auto results = paradnn::SummarizeMlperf(dir);
  for (const auto& b : results) {
    if (!b.system_problem.empty()) std::cerr << b.system_problem << "\n";
    for (const auto& r : b.runs) {
      for (const std::string& p : r.problems) std::cerr << p << "\n";
    }
  }
  std::cout << (format == "json" ? paradnn::MlperfSummaryJson(results)
                                 : paradnn::MlperfSummaryCsv(results));
  return 0;
}

// paradnn mlperf-report --mlperf DIR --results RESULTS.json -o OUT
int MlperfReport(int argc, char** argv) {
  std::string mlperf, results, out;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--mlperf") {
      mlperf = argv[i + 1];
    } else if (flag == "--results") {
      results = argv[i + 1];
    } else if (flag == "-o") {
      out = argv[i + 1];
    }
  }
  if (mlperf.empty() || results.empty() || out.empty() || argc % 2 != 0) {
    std::cerr << "usage: paradnn mlperf-report --mlperf DIR --results "
                 "RESULTS.json -o OUT\n";
    return 2;
  }
  if (!std::filesystem::is_directory(mlperf)) {
    std::cerr << "paradnn mlperf-report: " << mlperf << ": not a folder\n";
    return 2;
  }
  try {
    const auto real = paradnn::SummarizeMlperf(mlperf);
    const auto synthetic = paradnn::ReadResults(results).cases;
    const auto report = paradnn::MakeSideBySide(real, synthetic);
    std::filesystem::create_directories(out);
    std::ofstream(out + "/side_by_side.md") << report.markdown;
    std::ofstream(out + "/side_by_side.csv") << report.csv;
    std::cout << "wrote " << out << "/side_by_side.md and side_by_side.csv ("
              << real.size() << " MLPerf benchmarks, " << synthetic.size()
              << " synthetic cases)\n";
  } catch (const std::exception& e) {
    std::cerr << "paradnn mlperf-report: " << e.what() << "\n";
    return 2;
  }
  return 0;
}

// paradnn calibrate [-o platform.json] [--threads N]
int CalibrateCommand(int argc, char** argv) {
  std::string out;
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-o" && i + 1 < argc) {
      out = argv[++i];
    } else if (arg.rfind("--threads=", 0) == 0) {
      threads = std::atoi(arg.c_str() + 10);
    } else {
      std::cerr << "usage: paradnn calibrate [-o platform.json] "
                   "[--threads=N]\n";
      return 2;
    }
  }
  if (threads <= 0) {
    std::cerr << "paradnn calibrate: --threads needs a positive count\n";
    return 2;
  }
  const std::string json =
      paradnn::PlatformJson(paradnn::Calibrate(threads));
  if (out.empty()) {
    std::cout << json;
  } else {
    std::ofstream(out) << json;
    std::cerr << "calibrate: wrote " << out << "\n";
  }
  return 0;
}

// paradnn report RESULTS.json [--vs OTHER.json] [--a SEL --b SEL]
//                [--platform P.json] [--color PARAM] -o DIR
int ReportCommand(int argc, char** argv) {
  paradnn::ReportOptions o;
  const std::string usage =
      "usage: paradnn report RESULTS.json [--vs OTHER.json] [--a SELECTOR "
      "--b SELECTOR] [--platform P.json] [--color PARAM] -o DIR\n";
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    std::string* target = arg == "--vs"         ? &o.vs
                          : arg == "--a"        ? &o.a_select
                          : arg == "--b"        ? &o.b_select
                          : arg == "--platform" ? &o.platform
                          : arg == "--color"    ? &o.color
                          : arg == "-o"         ? &o.out
                                                : nullptr;
    if (target != nullptr && i + 1 < argc) {
      *target = argv[++i];
    } else if (target == nullptr && o.results.empty() && arg[0] != '-') {
      o.results = arg;
    } else {
      std::cerr << usage;
      return 2;
    }
  }
  if (o.results.empty() || o.out.empty() ||
      o.a_select.empty() != o.b_select.empty()) {
    std::cerr << usage;
    return 2;
  }
  try {
    for (const std::string& note : paradnn::WriteReport(o)) {
      std::cerr << "report: " << note << "\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "paradnn report: " << e.what() << "\n";
    return 2;
  }
  std::cerr << "report: wrote " << o.out << "/index.html\n";
  return 0;
}

// paradnn merge A.json B.json ... -o ALL.json [--config SWEEP.yaml]
int MergeCommand(int argc, char** argv) {
  std::vector<std::string> files;
  std::string out, config;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-o" && i + 1 < argc) {
      out = argv[++i];
    } else if (arg == "--config" && i + 1 < argc) {
      config = argv[++i];
    } else {
      files.push_back(arg);
    }
  }
  if (files.empty() || out.empty()) {
    std::cerr << "usage: paradnn merge A.json B.json ... -o ALL.json "
                 "[--config SWEEP.yaml]\n";
    return 2;
  }
  try {
    const paradnn::Merged m = paradnn::MergeResults(files, config);
    for (const std::string& d : m.duplicates) {
      std::cerr << "merge: duplicate: " << d << "\n";
    }
    for (const std::string& c : m.missing) {
      std::cerr << "merge: missing: " << c << "\n";
    }
    std::ofstream(out) << m.results.dump(2) << "\n";
    std::cerr << "merge: " << m.results["benchmarks"].size() << " runs from "
              << files.size() << " files into " << out << ", "
              << m.duplicates.size() << " duplicates, " << m.missing.size()
              << " missing\n";
  } catch (const std::exception& e) {
    std::cerr << "paradnn merge: " << e.what() << "\n";
    return 2;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "merge") == 0) {
    return MergeCommand(argc, argv);
  }
  if (argc > 1 && std::strcmp(argv[1], "report") == 0) {
    return ReportCommand(argc, argv);
  }
  if (argc > 1 && std::strcmp(argv[1], "calibrate") == 0) {
    return CalibrateCommand(argc, argv);
  }
  if (argc > 1 && std::strcmp(argv[1], "mlperf-report") == 0) {
    return MlperfReport(argc, argv);
  }
  if (argc > 1 && std::strcmp(argv[1], "mlperf-summary") == 0) {
    return MlperfSummary(argc, argv);
  }
  paradnn_register(&argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks(paradnn::DisplayReporter());
  benchmark::Shutdown();
  return paradnn::Finish();
}
