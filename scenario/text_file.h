// Reading a scenario or model file whole, with a size cap so that pointing the
// loader at a huge file is an error rather than an out-of-memory.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace tensorwire {

inline constexpr uint64_t kMaxScenarioFileBytes = 16ull << 20;  // 16 MiB

// The file's bytes, or why it cannot be read (the caller names the path).
Result<std::string> read_text_file(const std::string& path);

}  // namespace tensorwire
