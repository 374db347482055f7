// The paradnn runner: a ready Google Benchmark binary with paradnn's flags,
// and the commands that work on results (kCommands below; `paradnn --help`
// lists them, `paradnn COMMAND --help` explains one).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "adapters/mlperf/reader.h"
#include "adapters/mlperf/side_by_side.h"
#include "analysis/calibrate.h"
#include "analysis/compare.h"
#include "analysis/merge.h"
#include "analysis/report.h"
#include "core/flags.h"
#include "generators/cost.h"
#include "generators/declared.h"
#include "importers/onnx.h"
#include "machine/host.h"
#include "paradnn/paradnn.h"
#include "records/results.h"

namespace {

struct Command {
  const char* name;
  const char* summary;  // one line, for `paradnn --help`
  const char* usage;    // synopsis, then what it does and its options
  int (*run)(const Command& self, int argc, char** argv);
};

// A command's own help: on stdout, exit status 0.
int PrintUsage(const Command& c) {
  std::cout << "usage: paradnn " << c.usage;
  return 0;
}

// A command used wrongly: its usage on stderr, exit status 2.
int UsageError(const Command& c) {
  std::cerr << "usage: paradnn " << c.usage;
  return 2;
}

int MlperfSummary(const Command& self, int argc, char** argv) {
  std::string dir, format = "json";
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--format=", 0) == 0) {
      format = arg.substr(9);
    } else if (dir.empty() && arg[0] != '-') {
      dir = arg;
    } else {
      std::cerr << "paradnn mlperf-summary: unexpected argument '" << arg
                << "'\n";
      return UsageError(self);
    }
  }
  if (dir.empty() || (format != "json" && format != "csv")) {
    return UsageError(self);
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

// Runs the twins the results lack, in one run of this binary: each at the
// submission's batch per accelerator or, where the cost model says that
// needs more than 80% of the available memory, at the largest halving of
// it that fits. Returns the results file (OUT/twins.json), or "" when
// nothing was run.
std::string RunTwins(const std::vector<paradnn::TwinComparison>& twins,
                     const std::string& backend, int steps,
                     const std::vector<std::string>& files,
                     const std::string& out) {
  std::string cases;
  for (const std::string& f : files) cases += " --paradnn_families=" + f;
  const size_t families = cases.size();
  for (const paradnn::TwinComparison& t : twins) {
    if (!t.here.empty()) continue;
    int64_t batch = t.twin.Int("batch");
    auto memory = [&](int64_t b) {
      return paradnn::ComputeCost(paradnn::RunModel(*t.model, b).BuildGraph(),
                                  paradnn::Mode::kTrain, paradnn::DType::kFp32)
          .memory;
    };
    const double limit = 0.8 * paradnn::AvailableMemory();
    while (batch > 1 && memory(batch) > limit) batch /= 2;
    if (memory(batch) > limit) {
      std::cerr << "mlperf-report: the " << t.model->benchmark
                << " twin needs about " << memory(batch) / 1073741824.0
                << " GiB at batch 1: not run\n";
      continue;
    }
    if (batch < t.twin.Int("batch")) {
      std::cerr << "mlperf-report: the " << t.model->benchmark
                << " twin runs at batch " << batch << ", not "
                << t.twin.Str("batch") << ": memory\n";
    }
    cases += " --paradnn_case=" + paradnn::RunModel(*t.model, batch).Name() +
             "/" + backend + "/fp32/train";
  }
  if (cases.size() == families) return "";
  const std::string file = out + "/twins.json";
  const std::string cmd =
      std::filesystem::read_symlink("/proc/self/exe").string() + cases +
      " --paradnn_steps=" + std::to_string(steps) +
      " --benchmark_format=json --benchmark_out=" + file +
      " --benchmark_out_format=json > /dev/null";
  if (std::system(cmd.c_str()) != 0) {
    std::cerr << "mlperf-report: a twin failed (its error is above)\n";
  }
  return file;
}

int MlperfReport(const Command& self, int argc, char** argv) {
  std::string mlperf, results, out, backend = "onednn";
  bool run = false;
  int steps = 3;
  std::vector<std::pair<std::string, std::string>> twins;  // benchmark, file
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--run") {
      run = true;
      continue;
    }
    if (flag == "--twin" && i + 1 < argc) {
      const std::string v = argv[++i];
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == v.size()) {
        std::cerr << "paradnn mlperf-report: --twin " << v
                  << ": expected BENCHMARK=FILE.onnx\n";
        return UsageError(self);
      }
      twins.emplace_back(v.substr(0, eq), v.substr(eq + 1));
      continue;
    }
    if (flag == "--steps" && i + 1 < argc) {
      steps = std::atoi(argv[++i]);
      continue;
    }
    std::string* target = flag == "--mlperf"    ? &mlperf
                          : flag == "--results" ? &results
                          : flag == "--backend" ? &backend
                          : flag == "-o"        ? &out
                                                : nullptr;
    if (target == nullptr || i + 1 == argc) {
      std::cerr << "paradnn mlperf-report: unexpected argument '" << flag
                << "'\n";
      return UsageError(self);
    }
    *target = argv[++i];
  }
  if (mlperf.empty() || results.empty() || out.empty() || steps <= 0) {
    return UsageError(self);
  }
  if (!std::filesystem::is_directory(mlperf)) {
    std::cerr << "paradnn mlperf-report: " << mlperf << ": not a folder\n";
    return 2;
  }
  try {
    std::vector<std::string> files;
    for (const auto& [benchmark, file] : twins) {
      const std::string family = paradnn::LoadFamilyFile(file);
      paradnn::UseTwin(benchmark, family + "/batch:1", file);
      files.push_back(std::filesystem::absolute(file).string());
    }
    const auto real = paradnn::SummarizeMlperf(mlperf);
    auto synthetic = paradnn::ReadResults(results).cases;
    std::filesystem::create_directories(out);
    std::vector<std::string> more;
    if (run) {
      const std::string twins = RunTwins(paradnn::CompareTwins(real, synthetic),
                                         backend, steps, files, out);
      if (!twins.empty()) {
        for (const auto& c : paradnn::ReadResults(twins).cases) {
          synthetic.push_back(c);
        }
        more.push_back(twins);
      }
    }
    const auto report = paradnn::MakeSideBySide(real, synthetic);
    std::ofstream(out + "/side_by_side.md") << report.markdown;
    std::ofstream(out + "/side_by_side.csv") << report.csv;
    // The page: the results' report with the MLPerf section.
    paradnn::ReportOptions page;
    page.results = results;
    page.extra_results = more;
    page.mlperf = mlperf;
    page.out = out;
    for (const std::string& note : paradnn::WriteReport(page)) {
      std::cerr << "mlperf-report: " << note << "\n";
    }
    std::cout << "wrote " << out << "/side_by_side.md, side_by_side.csv and "
              << "index.html (" << real.size() << " MLPerf benchmarks, "
              << synthetic.size() << " synthetic cases)\n";
  } catch (const std::exception& e) {
    std::cerr << "paradnn mlperf-report: " << e.what() << "\n";
    return 2;
  }
  return 0;
}

int CalibrateCommand(const Command& self, int argc, char** argv) {
  std::string out;
  int threads = paradnn::UsableCpus();
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-o" && i + 1 < argc) {
      out = argv[++i];
    } else if (arg.rfind("--threads=", 0) == 0) {
      threads = std::atoi(arg.c_str() + 10);
    } else {
      std::cerr << "paradnn calibrate: unexpected argument '" << arg << "'\n";
      return UsageError(self);
    }
  }
  if (threads <= 0) {
    std::cerr << "paradnn calibrate: --threads needs a positive count\n";
    return 2;
  }
  const std::string json = paradnn::PlatformJson(paradnn::Calibrate(threads));
  if (out.empty()) {
    std::cout << json;
  } else {
    std::ofstream(out) << json;
    std::cerr << "calibrate: wrote " << out << "\n";
  }
  return 0;
}

int ReportCommand(const Command& self, int argc, char** argv) {
  paradnn::ReportOptions o;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    std::string* target = arg == "--vs"         ? &o.vs
                          : arg == "--a"        ? &o.a_select
                          : arg == "--b"        ? &o.b_select
                          : arg == "--platform" ? &o.platform
                          : arg == "--color"    ? &o.color
                          : arg == "--bricks"   ? &o.bricks
                          : arg == "--profile"  ? &o.profile
                          : arg == "--mlperf"   ? &o.mlperf
                          : arg == "--slo"      ? &o.slo
                          : arg == "-o"         ? &o.out
                                                : nullptr;
    if (target != nullptr && i + 1 < argc) {
      *target = argv[++i];
    } else if (arg == "--scaling" && i + 1 < argc) {
      o.scaling.push_back(argv[++i]);
    } else if (arg == "--no-plots") {
      o.plots = false;
    } else if (target == nullptr && o.results.empty() && arg[0] != '-') {
      o.results = arg;
    } else {
      std::cerr << "paradnn report: unexpected argument '" << arg << "'\n";
      return UsageError(self);
    }
  }
  if (o.results.empty() || o.out.empty() ||
      o.a_select.empty() != o.b_select.empty()) {
    return UsageError(self);
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

int MergeCommand(const Command& self, int argc, char** argv) {
  std::vector<std::string> files;
  std::string out, config;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-o" && i + 1 < argc) {
      out = argv[++i];
    } else if (arg == "--config" && i + 1 < argc) {
      config = argv[++i];
    } else if (arg[0] != '-') {
      files.push_back(arg);
    } else {
      std::cerr << "paradnn merge: unexpected argument '" << arg << "'\n";
      return UsageError(self);
    }
  }
  if (files.empty() || out.empty()) return UsageError(self);
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

int CompareCommand(const Command& self, int argc, char** argv) {
  std::string a_file, b_file;
  paradnn::Turns turns;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    std::string* target = arg == "--vs"      ? &b_file
                          : arg == "--a"     ? &turns.a_sel
                          : arg == "--b"     ? &turns.b_sel
                          : arg == "--run-a" ? &turns.run_a
                          : arg == "--run-b" ? &turns.run_b
                          : arg == "-o"      ? &turns.out
                                             : nullptr;
    double* number = arg == "--budget"   ? &turns.budget_s
                     : arg == "--margin" ? &turns.margin
                                         : nullptr;
    if (target != nullptr && i + 1 < argc) {
      *target = argv[++i];
    } else if (number != nullptr && i + 1 < argc) {
      *number = std::atof(argv[++i]);
    } else if (arg == "--rounds" && i + 1 < argc) {
      turns.rounds = std::atoi(argv[++i]);
    } else if (arg == "--max-rounds" && i + 1 < argc) {
      turns.max_rounds = std::atoi(argv[++i]);
    } else if (target == nullptr && a_file.empty() && arg[0] != '-') {
      a_file = arg;
    } else {
      std::cerr << "paradnn compare: unexpected argument '" << arg << "'\n";
      return UsageError(self);
    }
  }
  const bool measure = !turns.run_a.empty() || !turns.run_b.empty();
  if (turns.a_sel.empty() != turns.b_sel.empty() || turns.rounds < 1 ||
      turns.max_rounds < turns.rounds || turns.margin < 0 ||
      turns.margin >= 1 ||
      (measure ? turns.run_a.empty() || turns.run_b.empty() ||
                     turns.out.empty() || !a_file.empty()
               : a_file.empty())) {
    return UsageError(self);
  }
  try {
    if (measure) {
      const paradnn::TurnsResult r = paradnn::MeasureInTurns(turns);
      if (r.a_file.empty() || r.b_file.empty()) return 1;
      a_file = r.a_file;
      b_file = r.b_file;
      if (r.budget_spent) {
        std::cerr << "compare: the time budget was spent after " << r.rounds
                  << " rounds; the undecided cases stay undecided "
                     "(--budget SECONDS)\n";
      }
    }
    const auto a = paradnn::ReadRounds(a_file);
    const auto b = b_file.empty() ? a : paradnn::ReadRounds(b_file);
    const auto pairs = paradnn::Pair(a, turns.a_sel, b, turns.b_sel);
    if (pairs.empty()) {
      std::cerr << "paradnn compare: A and B have no case in common\n";
      return 2;
    }
    auto [a_label, b_label] =
        paradnn::StackLabels(a_file, b_file.empty() ? a_file : b_file,
                             measure               ? turns.run_a
                             : turns.a_sel.empty() ? a_file
                                                   : turns.a_sel,
                             measure               ? turns.run_b
                             : turns.b_sel.empty() ? b_file
                                                   : turns.b_sel);
    const std::string text = paradnn::CompareText(
        pairs, a_label, b_label, turns.margin,
        measure ? paradnn::kTurnsConfidence : paradnn::kRoundsConfidence);
    std::cout << text;
    if (measure) std::ofstream(turns.out + "/compare.txt") << text;
  } catch (const std::exception& e) {
    std::cerr << "paradnn compare: " << e.what() << "\n";
    return 2;
  }
  return 0;
}

// Per ONNX file: what it is, which of its nodes map onto the layer graph
// and which not (with why), and the graph they make.
int OnnxCheckCommand(const Command& self, int argc, char** argv) {
  std::vector<std::string> files;
  int64_t batch = 1;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--operators") {
      try {
        std::cout << paradnn::OnnxOperatorsMarkdown();
      } catch (const std::exception& e) {
        std::cerr << "paradnn onnx-check: " << e.what() << "\n";
        return 2;
      }
      return 0;
    }
    if (arg.rfind("--batch=", 0) == 0) {
      batch = std::atoll(arg.c_str() + 8);
    } else if (arg.rfind("--", 0) == 0) {
      std::cerr << "paradnn onnx-check: unexpected argument '" << arg << "'\n";
      return UsageError(self);
    } else {
      files.push_back(arg);
    }
  }
  if (files.empty()) return UsageError(self);
  if (batch <= 0) {
    std::cerr << "paradnn onnx-check: --batch needs a positive count\n";
    return 2;
  }
  int status = 0;
  for (const std::string& file : files) {
    paradnn::OnnxModel m;
    try {
      m = paradnn::ReadOnnx(file, batch);
    } catch (const std::exception& e) {
      std::cerr << "paradnn onnx-check: " << e.what() << "\n";
      status = 2;
      continue;
    }
    std::map<std::string, int> ops;
    std::vector<const paradnn::OnnxNode*> unsupported;
    for (const paradnn::OnnxNode& n : m.nodes) {
      ++ops[n.op_type];
      if (!n.unsupported.empty()) unsupported.push_back(&n);
    }
    std::cout << file << ": " << m.nodes.size() << " nodes, opset " << m.opset
              << ", from " << (m.producer.empty() ? "?" : m.producer)
              << "\n  operators:";
    for (const auto& [op, count] : ops) std::cout << " " << op << " " << count;
    std::cout << "\n";
    for (const paradnn::OnnxNode* n : unsupported) {
      std::cout << "  unsupported: " << n->unsupported << "\n";
    }
    if (m.graph) {
      int64_t params = 0;
      for (const paradnn::ParamTensor& p : m.graph->Params()) {
        params += paradnn::Elements(p.shape);
      }
      std::cout << "  graph: " << m.graph->size() << " layers, " << params
                << " parameters (the file's, as its layers read them: "
                << m.initializer_params << ")\n";
    } else {
      std::cout << "  no graph: " << m.why_no_graph << "\n";
      status = std::max(status, 1);
    }
  }
  return status;
}

int HelpCommand(const Command& self, int argc, char** argv);

const Command kCommands[] = {
    {"calibrate", "measure this machine's peak FLOP/s and memory bandwidth",
     "calibrate [-o platform.json] [--threads=N]\n\n"
     "Measures, on every backend that loads, its library's own GEMM in each\n"
     "of fp32, TF32, fp16 and bf16 it runs (the best of six shapes), and\n"
     "takes each device's fastest as that device's peak (a CPU, a GPU); the\n"
     "host memory's bandwidth (a STREAM triad) and each GPU's memory\n"
     "bandwidth and name. These are the roofs of the report's roofline and\n"
     "the denominators of flops_util and bandwidth_util\n"
     "(--paradnn_platform=FILE).\n\n"
     "  -o FILE        write the platform file here (default: stdout)\n"
     "  --threads=N    threads to measure with (default: the CPUs this\n"
     "                 process may use)\n",
     CalibrateCommand},
    {"report", "draw the HTML report of a results file",
     "report RESULTS.json [--vs OTHER.json] [--a SELECTOR --b SELECTOR]\n"
     "               [--platform P.json] [--color PARAM]\n"
     "               [--bricks BRICKS.json] [--profile PROFILE.json]\n"
     "               [--scaling OTHER.json]...\n"
     "               [--slo ttft_ms=MS,tpot_ms=MS] [--no-plots] -o DIR\n\n"
     "Writes DIR/index.html: roofline, heat maps of utilization, which\n"
     "parameters matter, where step time goes, and A-vs-B speedups.\n\n"
     "  --vs FILE      compare with the cases of another results file\n"
     "  --a SEL, --b SEL  compare the cases whose names contain SEL (e.g.\n"
     "                 --a /onednn/ --b /torch/), matched by the rest of the\n"
     "                 name\n"
     "  --platform FILE  peaks from paradnn calibrate, for the roofline\n"
     "  --color PARAM  the parameter that colors the speedup-vs-params plot\n"
     "                 (default: batch)\n"
     "  --bricks FILE  a --paradnn_bricks_out file: constructed against\n"
     "                 measured model times, errors per family and group\n"
     "  --profile FILE a --paradnn_profile_out file: each layer against its\n"
     "                 roof, the layer kinds furthest below theirs\n"
     "  --mlperf DIR   real MLPerf training results: each beside its\n"
     "                 model's twin, drawn on the synthetic plots\n"
     "  --scaling FILE results of the same cases at another world size\n"
     "                 (data-parallel runs; repeatable): throughput,\n"
     "                 all-reduce share and efficiency against ranks\n"
     "  --slo LIMITS   LLM cases against latency limits, e.g.\n"
     "                 ttft_ms=2000,tpot_ms=100 (MLPerf Inference's Server\n"
     "                 limits for llama3.1-8b): which cases meet them\n"
     "  --no-plots     write each plot's gnuplot script and data but not\n"
     "                 its SVG (where gnuplot is not installed)\n"
     "  -o DIR         output folder\n",
     ReportCommand},
    {"compare", "compare two things in rounds, each ratio with its interval",
     "compare A.json [--vs B.json] [--a SEL --b SEL] [--margin M]\n"
     "       compare --run-a 'COMMAND' --run-b 'COMMAND' -o DIR [--rounds R]\n"
     "               [--max-rounds N] [--budget SECONDS] [--a SEL --b SEL]\n\n"
     "Decides each case: B faster, slower, equivalent (within the margin)\n"
     "or undecided, by B's step time over A's with its 90% interval from\n"
     "both sides' rounds (--paradnn_rounds) and the spread of their\n"
     "groups' rounds (98% at every look where --run-a/--run-b add rounds\n"
     "until decided); per family, backend, data type and mode, the\n"
     "geometric mean of the ratios with its interval and the verdicts'\n"
     "counts. Two files of two stacks (distribution, compiler, libraries,\n"
     "as their contexts name them) are labelled by what each stack has of\n"
     "its own.\n\n"
     "  --vs FILE      B's results (default: A's file, with --a and --b)\n"
     "  --a SEL, --b SEL  compare the cases whose names contain SEL (e.g.\n"
     "                 --a /torch/ --b /onednn/), paired by the rest\n"
     "  --margin M     equivalent: the ratio's interval inside 1 +- M\n"
     "                 (default: 0.05; 0 decides every difference)\n"
     "  --run-a CMD, --run-b CMD  measure first, the commands taking turns\n"
     "                 (A B, then B A, ...), one process a round, with\n"
     "                 PARADNN_ROUNDS=1, BENCHMARK_OUT and COMPARE_ROUND (the\n"
     "                 round, 1, 2, ...) in their environment: R rounds of\n"
     "                 every case, then more rounds of the undecided cases\n"
     "                 only (BENCHMARK_FILTER) until each is decided; the\n"
     "                 rounds go into DIR/a.json and DIR/b.json (results\n"
     "                 with intervals), the table into DIR/compare.txt\n"
     "  --rounds R     first rounds of each side (default: 3)\n"
     "  --max-rounds N rounds of a side at most (default: 20)\n"
     "  --budget SECONDS  no round starts after this long (default: three\n"
     "                 times what the first rounds took)\n"
     "  -o DIR         where the rounds, their logs and the results go\n",
     CompareCommand},
    {"merge", "merge the results of sharded runs into one file",
     "merge A.json B.json ... -o ALL.json [--config SWEEP.yaml]\n\n"
     "Merges Google Benchmark JSON files of one sweep's shards, checking that\n"
     "their contexts agree; names duplicates and, given the sweep, the cases\n"
     "no file has.\n\n"
     "  -o FILE        merged results\n"
     "  --config FILE  the sweep the shards ran, to list missing cases\n",
     MergeCommand},
    {"onnx-check", "say which nodes of ONNX files map onto the layer graph",
     "onnx-check FILE.onnx ... [--batch=N]\n"
     "onnx-check --operators\n\n"
     "Reads each file with the ONNX library (checked, its shapes inferred)\n"
     "and maps its nodes onto the layer graph, as a sweep of the file\n"
     "would: prints its operators, each node that cannot be mapped and\n"
     "why, and the graph they make at N examples (default: 1) with its\n"
     "parameters. Exit status 1 where a file's model cannot be made, 2\n"
     "where a file cannot be read.\n\n"
     "  --batch=N      the batch of the graph built (the file's first input's\n"
     "                 first dimension)\n"
     "  --operators    print the table of the operators that map, each with\n"
     "                 its first opset, what it maps onto and when "
     "(markdown)\n",
     OnnxCheckCommand},
    {"mlperf-summary", "summarize a folder of MLPerf training results",
     "mlperf-summary DIR [--format=json|csv]\n\n"
     "Reads every MLPerf training result log under DIR (the submission\n"
     "layout <org>/results/<system>/<benchmark>/result_N.txt) and prints per\n"
     "run the time to train, batch size and throughput, and per benchmark\n"
     "the score by MLPerf's rule.\n",
     MlperfSummary},
    {"mlperf-report", "put MLPerf results beside synthetic results",
     "mlperf-report --mlperf DIR --results RESULTS.json -o OUT\n"
     "               [--twin BENCHMARK=FILE.onnx ...]\n"
     "               [--run [--backend NAME] [--steps N]]\n\n"
     "Writes OUT/side_by_side.md and .csv: each MLPerf result under DIR\n"
     "beside its model's synthetic twin (sizes against the published ones,\n"
     "the twin's samples/s in RESULTS.json against one accelerator's), or\n"
     "where no family expresses the model, the cases nearest in size; and\n"
     "OUT/index.html, RESULTS.json's report with the MLPerf models drawn\n"
     "on its plots.\n\n"
     "  --run          run the twins RESULTS.json lacks here first (at the\n"
     "                 submission's batch per accelerator, halved until the\n"
     "                 cost model's memory estimate fits), into "
     "OUT/twins.json\n"
     "  --backend NAME the twins' backend (default: onednn)\n"
     "  --steps N      timed steps per twin (default: 3)\n"
     "  --twin BENCHMARK=FILE.onnx\n"
     "                 the model of an ONNX file as BENCHMARK's twin (resnet,\n"
     "                 bert, ...) in place of the built-in one; the page\n"
     "                 names the file and the twin it replaced\n",
     MlperfReport},
    {"help", "this text, or a command's: paradnn help COMMAND",
     "help [COMMAND]\n", HelpCommand},
};

const Command* FindCommand(const std::string& name) {
  for (const Command& c : kCommands) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

std::string CommandNames() {
  std::string names;
  for (const Command& c : kCommands) {
    names += std::string(names.empty() ? "" : ", ") + c.name;
  }
  return names;
}

int PrintHelp() {
  std::cout << "usage: paradnn [--paradnn_* flags] [--benchmark_* flags]\n"
               "       paradnn COMMAND [--help | arguments]\n\n"
               "Runs a sweep of synthetic models (default: the built-in\n"
               "configs/quickstart.yaml) as Google Benchmark cases named\n"
               "FAMILY/key:value/.../backend/dtype/mode.\n\ncommands:\n";
  for (const Command& c : kCommands) {
    std::cout << "  " << c.name << std::string(16 - std::strlen(c.name), ' ')
              << c.summary << "\n";
  }
  std::cout << "\n"
            << paradnn::FlagsHelp()
            << "Google Benchmark's own flags: paradnn --benchmark_help\n";
  return 0;
}

int HelpCommand(const Command& self, int argc, char** argv) {
  if (argc == 2) return PrintHelp();
  const Command* c = argc == 3 ? FindCommand(argv[2]) : nullptr;
  if (c == nullptr) {
    std::cerr << "paradnn help: no command '" << (argc > 2 ? argv[2] : "")
              << "'; commands: " << CommandNames() << "\n";
    return UsageError(self);
  }
  return PrintUsage(*c);
}

bool AsksForHelp(int argc, char** argv, int from) {
  for (int i = from; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 ||
        std::strcmp(argv[i], "-h") == 0) {
      return true;
    }
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  // ONNX files as families: in sweeps, and in the results a report reads.
  paradnn::UseOnnxFamilies();
  if (argc > 1 && argv[1][0] != '-') {
    const Command* c = FindCommand(argv[1]);
    if (c == nullptr) {
      std::cerr << "paradnn: no command '" << argv[1]
                << "'; commands: " << CommandNames() << " (paradnn --help)\n";
      return 2;
    }
    if (AsksForHelp(argc, argv, 2)) return PrintUsage(*c);
    return c->run(*c, argc, argv);
  }
  if (AsksForHelp(argc, argv, 1)) return PrintHelp();
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--benchmark_help") == 0) {
      // Google Benchmark prints its flags and exits on --help.
      char help[] = "--help";
      char* args[] = {argv[0], help, nullptr};
      int count = 2;
      benchmark::Initialize(&count, args);
    }
  }
  paradnn_register(&argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks(paradnn::DisplayReporter());
  benchmark::Shutdown();
  return paradnn::Finish();
}
