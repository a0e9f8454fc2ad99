// A stable 64-bit hash of output bytes, so two runs can be compared by a short
// number (printed by the CLI, compared by the determinism tests). FNV-1a: tiny,
// fixed by its definition, identical on every platform; not for security.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tensorwire::report {

uint64_t fnv1a_64(std::string_view bytes);

// "0x" and 16 lower-case hex digits.
std::string format_hash(uint64_t hash);

}  // namespace tensorwire::report
