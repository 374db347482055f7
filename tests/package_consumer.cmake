# Installs paradnn to a scratch prefix, runs the installed runner, and builds
# an example against it with find_package(paradnn), as a user's project
# would, then runs it.
#   cmake -DBUILD=... -DSOURCE=... -DWORK=... -P package_consumer.cmake
file(REMOVE_RECURSE ${WORK})
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE status OUTPUT_VARIABLE out
                  ERROR_VARIABLE out)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "failed: ${ARGV}\n${out}")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD} --prefix ${WORK}/prefix)
# The installed runner starts, and runs a case.
set(runner ${WORK}/prefix/bin/paradnn)
execute_process(COMMAND ${runner} --help RESULT_VARIABLE status
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 0 OR NOT out MATCHES "commands:")
  message(FATAL_ERROR "${runner} --help exited with ${status}:\n${out}\n${err}")
endif()
set(case FC/layers:1/nodes:8/input:8/output:2/batch:4/torch/fp32/infer)
execute_process(COMMAND ${runner} --paradnn_case=${case} --paradnn_threads=1
                        --benchmark_min_time=0.01
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 0 OR NOT out MATCHES "${case}")
  message(FATAL_ERROR "${runner} exited with ${status}:\n${out}\n${err}")
endif()
run(${CMAKE_COMMAND} -S ${SOURCE}/examples/010-existing-benchmark
    -B ${WORK}/build -DCMAKE_PREFIX_PATH=${WORK}/prefix)
run(${CMAKE_COMMAND} --build ${WORK}/build)
run(${CMAKE_COMMAND} -DBINARY=${WORK}/build/existing_benchmark
    -DCONFIG=${SOURCE}/configs/smoke.yaml -DOWN=BM_Accumulate -DMODE=flag
    -P ${SOURCE}/tests/examples.cmake)
