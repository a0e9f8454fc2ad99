// An all-gather of byte strings of any size (up to a bound) through the
// coordinator, whose own all-gather carries at most kMaxGatherEntryBytes per
// rank: first every rank's length, then as many rounds of chunks as the
// longest needs. What a peer says its length is, is checked against the bound
// before anything is allocated for it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "launch/tcp_coordinator.h"
#include "core/status.h"

namespace tensorwire::launch {

inline constexpr uint64_t kMaxBlobBytes = 64ull << 20;

Result<std::vector<std::string>> all_gather_blobs(TcpCoordinator& coordinator,
                                                  std::string_view mine);

}  // namespace tensorwire::launch
