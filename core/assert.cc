#include "core/assert.h"

#include <cstdio>
#include <cstdlib>

namespace tensorwire {

void assertion_failed(const char* condition, const char* file, int line, const char* why) {
  // stdio, not iostreams: it must work however broken the program's state is.
  std::fprintf(stderr, "%s:%d: assertion failed: %s%s%s%s\n", file, line, condition,
               why != nullptr ? " (" : "", why != nullptr ? why : "", why != nullptr ? ")" : "");
  std::fflush(stderr);
  std::abort();
}

}  // namespace tensorwire
