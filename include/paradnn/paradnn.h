// paradnn: ParaDnn's parameterized synthetic models as Google Benchmark
// cases, on pluggable backends, in the benchmark binary you already have.
//
// In a benchmark binary with its own main:
//
//   #include <benchmark/benchmark.h>
//   #include <paradnn/paradnn.h>
//
//   int main(int argc, char** argv) {
//     paradnn_register(&argc, argv);  // takes the --paradnn_* flags
//     benchmark::Initialize(&argc, argv);
//     if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
//     benchmark::RunSpecifiedBenchmarks(paradnn::DisplayReporter());
//     return paradnn::Finish();  // "paradnn: N passed, M skipped, K failed"
//   }
//
// In a binary that uses BENCHMARK_MAIN(), at file scope:
//
//   PARADNN_REGISTER_STATIC();
//
// which registers nothing unless PARADNN_CONFIG=sweep.yaml or
// PARADNN_CASE=NAME is set in the environment (every flag is read from
// PARADNN_<NAME> there), and then prints the summary at exit.
//
// Flags (each also read from PARADNN_<NAME> in the environment):
//   --paradnn_config=FILE     YAML sweep (default: the built-in quickstart)
//   --paradnn_case=NAME       one case by canonical name, repeatable
//   --paradnn_backends=A,B    replace the config's backends
//   --paradnn_dtypes=fp32,bf16, --paradnn_modes=train,infer
//   --paradnn_threads=N       intra-op threads (default: the usable CPUs)
//   --paradnn_steps=N         exactly N timed steps per case
//   --paradnn_isolate         each case in a child process
//   --paradnn_mllog=DIR       an MLPerf training-style log per case run
//   --paradnn_help            all flags
//
// Case names are canonical and parse back to the same case, e.g.
//   FC/layers:4/nodes:1024/input:2000/output:1000/batch:256/torch/fp32/train
// so --benchmark_filter=FC/ selects a family and --paradnn_case=NAME
// reproduces one result.
//
// The functions below are compiled into your binary, against your Google
// Benchmark (1.7 to main, with or without exceptions and RTTI): the CMake
// target paradnn::paradnn adds their sources to yours. They call paradnn's
// core (paradnn/core.h, libparadnn, which has no Google Benchmark in it),
// opening it only when a case is asked for: a binary with
// PARADNN_REGISTER_STATIC() and nothing asked loads nothing of paradnn.
// Backends are loaded on the first case that needs them.
#pragma once

#include <benchmark/benchmark.h>

#include <vector>

#include "paradnn/core.h"

namespace paradnn {

// What RegisterBenchmark returns in this Google Benchmark version.
using Benchmarks = std::vector<decltype(benchmark::RegisterBenchmark(
    "", static_cast<void (*)(benchmark::State&)>(nullptr)))>;

// Removes the --paradnn_* flags from argv, expands the sweep and registers
// one benchmark per case; returns them so callers can chain settings
// (->Repetitions(3), ...). On bad input it prints the file, line, value and
// what was expected, registers nothing and exits with status 2.
Benchmarks Register(int* argc, char** argv);

// For PARADNN_REGISTER_STATIC(): Register() with flags from PARADNN_*
// environment variables, only when PARADNN_CONFIG or PARADNN_CASE asks for
// cases; prints the summary at exit. Returns the number registered.
int RegisterFromEnvironment();

// Google Benchmark's display reporter (as --benchmark_format chose it) that
// also writes the MLPerf outputs and the journal the flags ask for, and
// names the backends in the context; pass it to
// benchmark::RunSpecifiedBenchmarks().
benchmark::BenchmarkReporter* DisplayReporter();

// Releases the last prepared model, prints
// "paradnn: N passed, M skipped, K failed" on stderr and returns the exit
// status: 1 when a case failed, else 0.
int Finish();

namespace internal {
// The core's functions, libparadnn opened on first use (paradnn/core.h).
const core::Api& Core();
}  // namespace internal

}  // namespace paradnn

inline paradnn::Benchmarks paradnn_register(int* argc, char** argv) {
  return paradnn::Register(argc, argv);
}

#define PARADNN_REGISTER_STATIC()                 \
  static const int paradnn_static_registration_ = \
      ::paradnn::RegisterFromEnvironment()
