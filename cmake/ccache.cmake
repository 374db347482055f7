# Compilations through ccache where it is installed, with paths relative to
# `root` (CCACHE_BASEDIR), so that another clone of the same code (a fresh
# one for each CI run) finds them cached too. A macro: the launcher is set
# in the caller's scope. Where debug info is built, -fdebug-prefix-map of
# the same root keeps the working folder out of ccache's hash.
macro(paradnn_use_ccache root)
  find_program(PARADNN_CCACHE ccache)
  if(PARADNN_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
    set(CMAKE_CXX_COMPILER_LAUNCHER ${CMAKE_COMMAND} -E env
        CCACHE_BASEDIR=${root} ${PARADNN_CCACHE})
  endif()
endmacro()
