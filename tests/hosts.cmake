# Installs paradnn, builds the host of tests/hosts/ (the examples) in one
# variant and checks, in both styles, that the host's own benchmark and
# paradnn's CNN cases list and run, the JSON is valid, the MLPerf log is
# written (own main), a plain run of the BENCHMARK_MAIN() host registers
# and loads nothing of paradnn's, no LibTorch or oneDNN is linked, and a
# second Google Benchmark in the process stops the run; with Debian's, that
# the installed runner runs; with 1.9.1, that a host with its own yaml-cpp
# of another version runs its benchmark and paradnn's cases.
#   cmake -DSOURCE=<paradnn> -DBUILD=<paradnn build> -DWORK=<scratch>
#         -DSOURCES=<Google Benchmark sources> -DVARIANT=<name> -P hosts.cmake
cmake_minimum_required(VERSION 3.21)
set(flags "-fvisibility=hidden -fno-exceptions -fno-rtti")
set(fetch OFF)
set(yaml "")
if(VARIANT STREQUAL "debian")
  set(benchmark system)
  set(paradnn package)
  set(order paradnn_first)
  set(flags "")
elseif(VARIANT STREQUAL "vendored-1.7.1")
  set(benchmark ${SOURCES}/benchmark-1.7.1)
  set(paradnn package)
  set(order paradnn_first)
elseif(VARIANT STREQUAL "vendored-1.9.1")
  set(benchmark ${SOURCES}/benchmark-1.9.1)
  set(paradnn package)
  set(order benchmark_first)
  # And a host with its own static yaml-cpp of another version.
  set(yaml ${SOURCES}/yaml-cpp-0.8.0)
elseif(VARIANT STREQUAL "vendored-1.9.1-subdirectory")
  set(benchmark ${SOURCES}/benchmark-1.9.1)
  set(paradnn ${SOURCE})
  set(order benchmark_first)
elseif(VARIANT STREQUAL "fetched-main-lto")
  # Google Benchmark's main branch (scripts/host_sources.sh), fetched
  # the FetchContent way, everything built with link-time optimization.
  set(benchmark ${SOURCES}/benchmark-main)
  set(fetch ON)
  set(paradnn package)
  set(order benchmark_first)
  set(flags "${flags} -flto -O3")
else()
  message(FATAL_ERROR "no variant ${VARIANT}")
endif()
if(NOT benchmark STREQUAL "system" AND NOT EXISTS ${benchmark}/CMakeLists.txt)
  message(FATAL_ERROR "no Google Benchmark sources in ${benchmark}: run "
                      "scripts/host_sources.sh (scripts/setup.sh --test)")
endif()
if(yaml AND NOT EXISTS ${yaml}/CMakeLists.txt)
  message(FATAL_ERROR "no yaml-cpp sources in ${yaml}: run "
                      "scripts/host_sources.sh (scripts/setup.sh --test)")
endif()

set(work ${WORK}/${VARIANT})
file(REMOVE_RECURSE ${work})
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE status OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "failed (${status}): ${ARGV}\n${out}\n${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
  set(err "${err}" PARENT_SCOPE)
endfunction()
function(expect text what)
  string(FIND "${text}" "${what}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${VARIANT}: no '${what}' in:\n${text}")
  endif()
endfunction()
function(expect_not text what)
  string(FIND "${text}" "${what}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "${VARIANT}: '${what}' should not be in:\n${text}")
  endif()
endfunction()

run(${CMAKE_COMMAND} --install ${BUILD} --prefix ${work}/prefix)
find_program(ccache ccache)
# Paths relative to paradnn's source, which holds this work folder: the
# next clone's host builds find these compilations cached.
set(ENV{CCACHE_BASEDIR} ${SOURCE})
run(${CMAKE_COMMAND} -S ${SOURCE}/tests/hosts -B ${work}/build
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${work}/prefix
    -DCMAKE_CXX_FLAGS=${flags} -DCMAKE_CXX_COMPILER_LAUNCHER=${ccache}
    -DHOST_BENCHMARK=${benchmark} -DHOST_PARADNN=${paradnn}
    -DHOST_ORDER=${order} -DHOST_FETCH=${fetch} -DHOST_YAML=${yaml})
run(${CMAKE_COMMAND} --build ${work}/build -j 2)

# The installed runner starts, and runs a case.
if(VARIANT STREQUAL "debian")
  set(runner ${work}/prefix/bin/paradnn)
  run(${runner} --help)
  expect("${out}" "commands:")
  set(case FC/layers:1/nodes:8/input:8/output:2/batch:4/torch/fp32/infer)
  run(${runner} --paradnn_case=${case} --paradnn_threads=1
      --benchmark_min_time=0.01)
  expect("${out}" ${case})
endif()

set(config ${SOURCE}/configs/smoke.yaml)
set(cnn CNN/block:residual/blocks:1/filters:4/image:32/output:10/batch:2/torch/fp32/train)
set(own_main BM_Accumulate)       # examples/010-existing-benchmark
set(benchmark_main BM_StringCopy)  # examples/020-benchmark-main
foreach(style own_main benchmark_main)
  set(host ${work}/build/host_${style})
  set(own ${${style}})
  set(run_args --benchmark_filter=${own}|CNN/ --benchmark_min_time=0.01
               --benchmark_format=json)
  run(ldd ${host})
  foreach(library libtorch libdnnl libc10)
    expect_not("${out}" ${library})
  endforeach()
  if(style STREQUAL "own_main")
    set(env ${CMAKE_COMMAND} -E env)
    set(args --paradnn_config=${config} --paradnn_threads=1
             --paradnn_mllog=${work}/mllog)
  else()
    set(env ${CMAKE_COMMAND} -E env PARADNN_CONFIG=${config}
            PARADNN_THREADS=1)
    set(args)
    # Without PARADNN_CONFIG or PARADNN_CASE the host is as it was.
    run(${host} --benchmark_list_tests)
    expect("${out}" ${own})
    expect_not("${out}" CNN/)
    # Nothing of paradnn's: its lines all start "paradnn:". Not the bare
    # word, which Google Benchmark's "Running PATH" line has wherever the
    # clone's folder is named after the project.
    run(${host} --benchmark_filter=${own} --benchmark_min_time=0.01)
    expect_not("${err}" "paradnn:")
    # And loads nothing of paradnn's: not libparadnn, nor its dependencies.
    # The loader's log names what it loads (libc, which every host loads),
    # and libparadnn as soon as PARADNN_CONFIG asks for cases.
    run(${CMAKE_COMMAND} -E env LD_DEBUG=files ${host} --benchmark_list_tests)
    expect("${err}" "file=libc.so.6")
    foreach(library libparadnn libyaml-cpp libboost libgomp)
      expect_not("${err}" ${library})
    endforeach()
    run(${CMAKE_COMMAND} -E env LD_DEBUG=files PARADNN_CONFIG=${config}
        ${host} --benchmark_list_tests)
    expect("${err}" "file=libc.so.6")
    expect("${err}" "libparadnn")
  endif()
  run(${env} ${host} ${args} --benchmark_list_tests)
  expect("${out}" ${own})
  expect("${out}" ${cnn})
  # Google Benchmark's main lists in JSON when asked; earlier ones print
  # the names either way.
  run(${env} ${host} ${args} --benchmark_list_tests --benchmark_format=json)
  expect("${out}" ${cnn})
  run(${env} ${host} ${args} ${run_args})
  expect("${err}" "paradnn: 4 passed, 0 skipped, 0 failed")
  string(JSON count LENGTH "${out}" benchmarks)
  if(NOT count EQUAL 5)
    message(FATAL_ERROR "${VARIANT} ${style}: ${count} runs, not 5:\n${out}")
  endif()
  set(names)
  math(EXPR last "${count} - 1")
  foreach(i RANGE ${last})
    string(JSON name GET "${out}" benchmarks ${i} name)
    string(JSON flop ERROR_VARIABLE none GET "${out}" benchmarks ${i}
           flop_per_step)
    if(name MATCHES "^CNN/" AND NOT flop GREATER 0)
      message(FATAL_ERROR "${VARIANT} ${style}: ${name} has no FLOP count")
    endif()
    list(APPEND names ${name})
  endforeach()
  expect("${names}" ${own})
  expect("${names}" ${cnn}/real_time)
  # Rounds (the default outside the tests): the case's 3 rounds in forked
  # processes of this host, its interval on each row.
  # (What the rounds spread by is remembered in the cache folder: this
  # test's, not the user's.)
  run(${CMAKE_COMMAND} -E env PARADNN_ROUNDS=3 PARADNN_CASE=${cnn}
      PARADNN_THREADS=1 XDG_CACHE_HOME=${work}/cache ${host}
      --benchmark_filter=CNN/ --benchmark_format=json)
  expect("${err}" "paradnn: 1 passed, 0 skipped, 0 failed")
  # Read as text: Google Benchmark 1.7 writes a counter's cv over rounds
  # where it is 0 as a bare nan, which is not JSON.
  expect("${out}" "${cnn}/iterations:1/repeats:3/manual_time_median")
  if(NOT out MATCHES "\"rounds\": 3(\\.0+e\\+00)?," OR
     NOT out MATCHES "\"step_ms_low\": [0-9.e+-]+,")
    message(FATAL_ERROR "${VARIANT} ${style}: no rounds in:\n${out}")
  endif()
endforeach()
# A bricks run in this Google Benchmark too: every brick, then the model,
# each in one call of the steps asked for.
run(${work}/build/host_own_main --paradnn_case=${cnn} --paradnn_threads=1
    --paradnn_steps=4 --paradnn_bricks --benchmark_filter=CNN/|BRICK/
    --benchmark_format=json)
expect("${err}" "against 1 plain runs, uncalibrated")
# Google Benchmark writes the cv of a zero (a ReLU's FLOP/s) as NaN.
string(REGEX REPLACE ": -?(nan|NaN)" ": null" out "${out}")
string(JSON count LENGTH "${out}" benchmarks)
math(EXPR last "${count} - 1")
set(bricks)
set(model_at -1)
foreach(i RANGE ${last})
  string(JSON name GET "${out}" benchmarks ${i} name)
  string(JSON steps GET "${out}" benchmarks ${i} iterations)
  if(NOT steps EQUAL 4)
    message(FATAL_ERROR "${VARIANT}: ${name} ran ${steps} steps, not 4")
  elseif(name MATCHES "^CNN/")
    set(model_at ${i})
  elseif(name MATCHES "^BRICK/")
    list(APPEND bricks ${name})
  endif()
endforeach()
list(LENGTH bricks brick_count)
set(unique ${bricks})
list(REMOVE_DUPLICATES unique)
list(LENGTH unique unique_count)
if(brick_count EQUAL 0 OR NOT unique_count EQUAL brick_count OR
   NOT model_at EQUAL last)
  message(FATAL_ERROR "${VARIANT}: the model at ${model_at} of ${count}, "
                      "bricks: ${bricks}\n${out}")
endif()
# A second Google Benchmark in the process (Debian's shared one, preloaded
# beside the host's static copy): paradnn says so and stops.
if(NOT benchmark STREQUAL "system")
  file(GLOB shared /usr/lib/*/libbenchmark.so.1*)
  list(GET shared 0 shared)
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env LD_PRELOAD=${shared}
            ${work}/build/host_own_main --benchmark_list_tests
    RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 2)
    message(FATAL_ERROR "${VARIANT}: two Google Benchmarks, status ${status}")
  endif()
  expect("${err}" "two Google Benchmark libraries in this process")
  expect("${err}" "${shared}")
endif()

# A host with its own yaml-cpp (0.8.0, static) runs its benchmark with it
# and paradnn's cases with paradnn's (0.7.0, shared, opened RTLD_LOCAL): the
# host exports none of its copy's symbols for libparadnn to bind to.
if(yaml)
  set(host ${work}/build/host_own_yaml)
  run(nm -D --defined-only ${host})
  expect_not("${out}" YAML)
  run(${CMAKE_COMMAND} -E env PARADNN_CONFIG=${config} PARADNN_THREADS=1
      ${host} --benchmark_filter=BM_OwnYaml|CNN/ --benchmark_min_time=0.01
      --benchmark_format=json)
  expect("${err}" "paradnn: 4 passed, 0 skipped, 0 failed")
  string(JSON name GET "${out}" benchmarks 0 name)
  string(JSON error ERROR_VARIABLE none GET "${out}" benchmarks 0
         error_occurred)
  if(NOT name STREQUAL "BM_OwnYaml" OR error)
    message(FATAL_ERROR "${VARIANT}: the host's own yaml-cpp benchmark:\n${out}")
  endif()
  expect("${out}" ${cnn})
endif()

string(REPLACE "/" "_" cnn_dir ${cnn})
string(REPLACE ":" "-" cnn_dir ${cnn_dir})
if(NOT EXISTS ${work}/mllog/${cnn_dir}/result_0.txt)
  message(FATAL_ERROR "${VARIANT}: no MLPerf log in ${work}/mllog/${cnn_dir}")
endif()
message(STATUS "${VARIANT}: both styles list and run their own and the CNN cases")
