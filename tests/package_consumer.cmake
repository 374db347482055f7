# Installs paradnn to a scratch prefix and builds an example against it with
# find_package(paradnn), as a user's project would, then runs it.
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
run(${CMAKE_COMMAND} -S ${SOURCE}/examples/010-existing-benchmark
    -B ${WORK}/build -DCMAKE_PREFIX_PATH=${WORK}/prefix)
run(${CMAKE_COMMAND} --build ${WORK}/build)
run(${CMAKE_COMMAND} -DBINARY=${WORK}/build/existing_benchmark
    -DCONFIG=${SOURCE}/configs/smoke.yaml -DOWN=BM_Accumulate -DMODE=flag
    -P ${SOURCE}/tests/examples.cmake)
