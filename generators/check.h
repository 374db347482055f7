// Internal invariants: a failed check is a bug in paradnn, never bad input.
#pragma once

#include <cstdio>
#include <cstdlib>

#define PARADNN_CHECK(cond, msg)                                          \
  do {                                                                    \
    if (!(cond)) {                                                        \
      std::fprintf(stderr, "paradnn: internal error at %s:%d: %s (%s)\n", \
                   __FILE__, __LINE__, msg, #cond);                       \
      std::abort();                                                       \
    }                                                                     \
  } while (0)
