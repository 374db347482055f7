# Runs an example binary on the smoke sweep and checks that both its own
# benchmark and paradnn's cases ran.
#   cmake -DBINARY=... -DCONFIG=... -DOWN=BM_x -DMODE=flag|env -P examples.cmake
if(MODE STREQUAL "env")
  set(ENV{PARADNN_CONFIG} ${CONFIG})
  set(ENV{PARADNN_THREADS} 1)
  set(args)
else()
  set(args --paradnn_config=${CONFIG} --paradnn_threads=1)
endif()
execute_process(
  COMMAND ${BINARY} ${args} --benchmark_min_time=0.01
          "--benchmark_filter=${OWN}|FC/"
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${BINARY} exited with ${status}\n${out}\n${err}")
endif()
foreach(expected "${OWN}" "FC/layers:2/nodes:32/input:64/output:10/batch:8/torch/fp32/train")
  string(FIND "${out}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "no ${expected} in the output of ${BINARY}:\n${out}")
  endif()
endforeach()
string(FIND "${err}" "paradnn: 2 passed, 0 skipped, 0 failed" at)
if(at EQUAL -1)
  message(FATAL_ERROR "no summary line from ${BINARY}:\n${err}")
endif()
