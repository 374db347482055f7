#include "core/flags.h"

#include <algorithm>
#include <boost/program_options.hpp>
#include <cctype>
#include <sstream>

#include "generators/spec.h"

namespace paradnn {
namespace po = boost::program_options;

namespace {

constexpr char kPrefix[] = "--paradnn_";

// "a,b," gives a, b.
std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out = Split(s, ',');
  out.erase(std::remove(out.begin(), out.end(), std::string()), out.end());
  return out;
}

// Flags given as text and parsed after (lists, sizes).
struct Texts {
  std::string backends, dtypes, modes, max_memory, l3_bytes;
};

po::options_description Describe(Options& o, Texts& t) {
  po::options_description d("paradnn flags");
  d.add_options()("paradnn_help", po::bool_switch(&o.help),
                  "print these flags")(
      "paradnn_config", po::value(&o.config)->value_name("FILE"),
      "YAML sweep (default: the built-in configs/quickstart.yaml)")(
      "paradnn_case", po::value(&o.cases)->value_name("NAME")->composing(),
      "run this case, given by canonical name; repeatable")(
      "paradnn_families",
      po::value(&o.families)->value_name("FILE")->composing(),
      "a family file (YAML) or an ONNX file (.onnx) whose family cases "
      "and sweeps may name; repeatable")(
      "paradnn_backends", po::value(&t.backends)->value_name("LIST"),
      "comma-separated backends, replacing the config's")(
      "paradnn_dtypes", po::value(&t.dtypes)->value_name("LIST"),
      "comma-separated data types (fp32, bf16, fp16), replacing the config's")(
      "paradnn_modes", po::value(&t.modes)->value_name("LIST"),
      "comma-separated modes (train, infer), replacing the config's")(
      "paradnn_threads", po::value(&o.threads)->value_name("N"),
      "intra-op threads (default: the config's, else the CPUs this "
      "process may use: affinity mask and cgroup quota)")(
      "paradnn_seed", po::value(&o.seed)->value_name("N"),
      "seed of weights and inputs")(
      "paradnn_max_memory", po::value(&t.max_memory)->value_name("SIZE"),
      "skip cases whose estimated memory exceeds this (e.g. 8G; default: "
      "80% of available memory)")(
      "paradnn_progress", po::value(&o.progress)->value_name("BOOL"),
      "print progress lines on stderr (default: true)")(
      "paradnn_platform", po::value(&o.platform)->value_name("FILE"),
      "platform file with peak FLOP/s (paradnn calibrate): adds flops_util")(
      "paradnn_steps", po::value(&o.steps)->value_name("N"),
      "run every case for exactly this many timed steps, so that benchmark "
      "time follows each case's work (a brick's rounded up to a multiple of "
      "the kinds of caches its steps take turns at; default: Google "
      "Benchmark's min_time)")(
      "paradnn_case_timeout", po::value(&o.case_timeout)->value_name("SECONDS"),
      "skip a case whose preparation and warm-up step took longer than "
      "this many seconds, before timing it")(
      "paradnn_isolate", po::bool_switch(&o.isolate),
      "run each case in a child process (a fork of this one), so that a "
      "crash fails that case only")(
      "paradnn_rounds", po::value(&o.rounds)->value_name("R"),
      "measure every case in R rounds, each case in a fresh process each "
      "round, the cases in a new random order each round: step_ms is the "
      "median of its rounds, step_ms_low and step_ms_high its interval "
      "(default: 3; 1 runs every case once, in this process; a round warms "
      "up until its steps settle, then times --paradnn_steps steps, by "
      "default at least a tenth of a second of them)")(
      "paradnn_display", po::value(&o.display)->value_name("ROWS"),
      "with rounds, what the console shows: 'cases' (default: one row a "
      "case, its median, interval, rates and an unstable mark, and a "
      "summary at the end) or 'rounds' (every round's row and Google "
      "Benchmark's aggregates, as in the JSON output)")(
      "paradnn_test_stretch", po::value(&o.test_stretch)->value_name("F"),
      "stretch every timed step by the factor F (a spin of F - 1 times the "
      "step, inside the timed region), on any backend: a known difference "
      "for checking a comparison (default: 1)")(
      "paradnn_onnx_weights", po::bool_switch(&o.onnx_weights),
      "start ONNX files' cases from the weights in the files (their "
      "parameters' values; batch norm's running statistics too) instead "
      "of values made from the seed, so that their outputs are the "
      "model's")(
      "paradnn_fuse", po::value(&o.fuse)->value_name("BOOL"),
      "inference runs each convolution or dense layer with the batch norm, "
      "activations and residual add after it as one unit, on backends that "
      "fuse (oneDNN), as inference engines do (default: true; false runs "
      "every layer on its own, for comparing the two)")(
      "paradnn_pin", po::bool_switch(&o.pin),
      "place each OpenMP thread of a case (LibTorch's, OpenBLAS's, oneDNN's) "
      "on a CPU of its own, in the order of the CPUs this process may use")(
      "paradnn_profile", po::bool_switch(&o.profile),
      "after timing, run each case's steps again under the backend's "
      "profiler and report the share of step time per operation class "
      "(time_gemm_frac, time_elementwise_frac, time_movement_frac, "
      "time_optimizer_frac, time_other_frac)")(
      "paradnn_profile_out", po::value(&o.profile_out)->value_name("FILE"),
      "write every case's operations (self time per step, calls, class) "
      "as JSON (implies --paradnn_profile)")(
      "paradnn_counters", po::bool_switch(&o.counters),
      "after timing, run each case's steps again counting this process's "
      "perf events: cpu_ms_per_step always; cycles_per_step, "
      "instructions_per_step, ipc and llc_misses_per_step where the CPU "
      "exposes them (said once where it does not)")(
      "paradnn_shard", po::value(&o.shard)->value_name("I/N"),
      "run shard I of N (I/N, 0-based) of the sweep, balanced by estimated "
      "time (default: from SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX)")(
      "paradnn_shard_count", po::value(&o.shard_count)->value_name("N"),
      "the number of shards for a Kubernetes Indexed Job")(
      "paradnn_resume", po::value(&o.resume)->value_name("FILE"),
      "journal file: cases recorded there are not run again, and every "
      "case that finishes is appended")(
      "paradnn_bricks", po::bool_switch(&o.bricks),
      "also register every unique layer of the sweep on its own "
      "(BRICK/...), estimate every model's step time from them, and run the "
      "models plainly after the bricks to check the estimates")(
      "paradnn_bricks_granularity",
      po::value(&o.bricks_granularity)->value_name("G"),
      "bricks of up to this many consecutive layers, each reading only the "
      "one before (default: 1, one layer per brick)")(
      "paradnn_bricks_out", po::value(&o.bricks_out)->value_name("FILE"),
      "write the constructed and measured step times as JSON "
      "(implies --paradnn_bricks)")(
      "paradnn_bricks_db", po::value(&o.bricks_db)->value_name("FILE"),
      "bricks measured before: those measured in this context (CPU, "
      "threads, L3, library, paradnn version) are not run again; the bricks "
      "this run measures are added (implies --paradnn_bricks)")(
      "paradnn_bricks_estimate_only", po::bool_switch(&o.bricks_estimate_only),
      "estimate the models' step times from their bricks without running "
      "the models (implies --paradnn_bricks)")(
      "paradnn_bricks_check", po::value(&o.bricks_check)->value_name("N"),
      "after the bricks, run N of the sweep's models, chosen at random (by "
      "the seed), plainly: the estimates' error against them, per family, "
      "and a calibration of the others' estimates (implies "
      "--paradnn_bricks_estimate_only)")(
      "paradnn_l3_bytes", po::value(&t.l3_bytes)->value_name("SIZE"),
      "the L3 a core reads (e.g. 32M), for bricks' cold steps and estimates "
      "(default: the kernel's, else a bricks database's of this CPU, else "
      "measured)")(
      "paradnn_dist_timeout", po::value(&o.dist_timeout)->value_name("SECONDS"),
      "data-parallel runs (RANK/WORLD_SIZE, srun, mpirun): how long the "
      "rendezvous and every collective wait for the other ranks before the "
      "case fails (default: 60)")(
      "paradnn_all_ranks", po::bool_switch(&o.all_ranks),
      "data-parallel runs: every rank prints its results and writes its "
      "outputs (files of rank R > 0 get a .rankR suffix); by default only "
      "rank 0 does")(
      "paradnn_mllog", po::value(&o.mllog)->value_name("DIR"),
      "write an MLPerf training-style log per case run into this folder")(
      "paradnn_mlperf_package", po::value(&o.mlperf_package)->value_name("DIR"),
      "write an MLPerf results package (systems/, results/) into this folder")(
      "paradnn_mlperf_org", po::value(&o.mlperf_org)->value_name("NAME"),
      "submitter in MLPerf outputs (default: the config's mlperf_org, "
      "else paradnn)")(
      "paradnn_mlperf_system", po::value(&o.mlperf_system)->value_name("NAME"),
      "system in MLPerf outputs (default: the config's mlperf_system, else "
      "the host name)")(
      "paradnn_mlperf_status",
      po::value(&o.mlperf_status)->value_name("STATUS"),
      "submission status in MLPerf outputs (default: the config's "
      "mlperf_status, else onprem)");
  return d;
}

}  // namespace

int64_t ParseSize(const std::string& text) {
  size_t end = 0;
  double v = 0;
  try {
    v = std::stod(text, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  double scale = 1;
  std::string suffix = text.substr(end);
  if (suffix == "K" || suffix == "k") scale = 1024.0;
  if (suffix == "M" || suffix == "m") scale = 1024.0 * 1024;
  if (suffix == "G" || suffix == "g") scale = 1024.0 * 1024 * 1024;
  if (end == 0 || v <= 0 || (!suffix.empty() && scale == 1)) {
    throw FlagError("'" + text +
                    "' is not a memory size: expected a positive number "
                    "with an optional K, M or G suffix");
  }
  return static_cast<int64_t>(v * scale);
}

Options ParseFlags(int* argc, char** argv) {
  Options o;
  Texts t;
  po::options_description desc = Describe(o, t);

  std::vector<std::string> ours;
  if (argc != nullptr) {
    int kept = 1;
    for (int i = 1; i < *argc; ++i) {
      std::string arg = argv[i];
      if (arg.rfind(kPrefix, 0) != 0) {
        argv[kept++] = argv[i];
        continue;
      }
      ours.push_back(arg);
      // "--paradnn_x value": the value is ours too, except after a switch.
      const po::option_description* option =
          desc.find_nothrow(arg.substr(2), false);
      const bool takes_value =
          option == nullptr || option->semantic()->max_tokens() > 0;
      if (arg.find('=') == std::string::npos && takes_value && i + 1 < *argc) {
        ours.push_back(argv[++i]);
      }
    }
    *argc = kept;
    argv[kept] = nullptr;
  }

  po::variables_map vm;
  try {
    const po::parsed_options given =
        po::command_line_parser(ours).options(desc).run();
    for (const po::option& option : given.options) {
      std::string value = "true";
      if (!option.value.empty()) value = option.value.back();
      o.given.emplace_back(option.string_key, value);
    }
    po::store(given, vm);
    po::store(po::parse_environment(
                  desc,
                  [&](const std::string& env) -> std::string {
                    if (env.rfind("PARADNN_", 0) != 0) return "";
                    std::string name = "paradnn_" + env.substr(8);
                    std::transform(name.begin(), name.end(), name.begin(),
                                   ::tolower);
                    return desc.find_nothrow(name, false) ? name : "";
                  }),
              vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw FlagError(std::string(e.what()) + " (see --paradnn_help)");
  }
  if (o.bricks_check > 0) o.bricks_estimate_only = true;
  if (!o.bricks_out.empty() || !o.bricks_db.empty() || o.bricks_estimate_only)
    o.bricks = true;
  if (!o.profile_out.empty()) o.profile = true;
  o.backends = SplitList(t.backends);
  o.dtypes = SplitList(t.dtypes);
  o.modes = SplitList(t.modes);
  if (!t.max_memory.empty()) o.max_memory = ParseSize(t.max_memory);
  if (!t.l3_bytes.empty()) o.l3_bytes = ParseSize(t.l3_bytes);
  // Given values must be positive (a seed may be 0).
  auto check = [](bool given, bool ok, const std::string& flag,
                  const std::string& value, const char* expected) {
    if (given && !ok) {
      throw FlagError("--" + flag + "=" + value + ": expected " + expected);
    }
  };
  check(vm.count("paradnn_threads"), o.threads > 0, "paradnn_threads",
        std::to_string(o.threads), "a positive thread count");
  auto seconds = [&](const std::string& flag, double value) {
    std::ostringstream text;
    text << value;
    check(vm.count(flag), value > 0, flag, text.str(),
          "a positive number of seconds");
  };
  seconds("paradnn_case_timeout", o.case_timeout);
  seconds("paradnn_dist_timeout", o.dist_timeout);
  check(vm.count("paradnn_rounds"), o.rounds > 0, "paradnn_rounds",
        std::to_string(o.rounds), "a positive number of rounds");
  if (o.display != "cases" && o.display != "rounds") {
    throw FlagError("--paradnn_display=" + o.display +
                    ": expected 'cases' or 'rounds'");
  }
  {
    std::ostringstream text;
    text << o.test_stretch;
    check(vm.count("paradnn_test_stretch"), o.test_stretch >= 1,
          "paradnn_test_stretch", text.str(), "a factor of 1 or more");
  }
  check(vm.count("paradnn_steps"), o.steps > 0, "paradnn_steps",
        std::to_string(o.steps), "a positive step count");
  check(vm.count("paradnn_bricks_granularity"), o.bricks_granularity > 0,
        "paradnn_bricks_granularity", std::to_string(o.bricks_granularity),
        "a positive number of layers");
  check(vm.count("paradnn_bricks_check"), o.bricks_check > 0,
        "paradnn_bricks_check", std::to_string(o.bricks_check),
        "a positive number of models");
  check(vm.count("paradnn_seed"), o.seed >= 0, "paradnn_seed",
        std::to_string(o.seed), "a non-negative seed");
  return o;
}

std::string FlagsHelp() {
  Options o;
  Texts t;
  std::ostringstream out;
  out << Describe(o, t)
      << "\nEach flag can also be set as PARADNN_<NAME> in the environment "
         "(PARADNN_CONFIG=...).\nAll other flags are Google Benchmark's "
         "(--benchmark_filter, --benchmark_format, --benchmark_out, ...).\n";
  return out.str();
}

}  // namespace paradnn
