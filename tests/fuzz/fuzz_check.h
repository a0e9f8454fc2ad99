// What a fuzz target asserts beyond "no crash": a property every input must
// keep (a decoded message encodes back to itself, an error names its source).
// A broken property aborts, so libFuzzer saves the input as a crash like any
// other; the message says which property broke.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(condition, what)                                                 \
  do {                                                                              \
    if (!(condition)) {                                                             \
      std::fprintf(stderr, "%s:%d: property broken: %s (%s)\n", __FILE__, __LINE__, \
                   what, #condition);                                               \
      std::abort();                                                                 \
    }                                                                               \
  } while (false)
