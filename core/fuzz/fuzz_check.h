// fuzz/fuzz_check.h — what every fuzz target shares: a property check that stops the fuzzer.
#pragma once

#include <cstdio>
#include <cstdlib>

// A property the code under test promises; a violation is a finding like a crash (libFuzzer
// saves the input as crash-*).
#define PAAM_FUZZ_CHECK(cond)                                                        \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::fprintf(stderr, "%s:%d: property violated: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                  \
    }                                                                                \
  } while (0)
