#include "launch/blob_all_gather.h"

#include <algorithm>
#include <charconv>

#include "launch/coordinator_frame.h"

namespace tensorwire::launch {

Result<std::vector<std::string>> all_gather_blobs(TcpCoordinator& coordinator,
                                                  std::string_view mine) {
  if (mine.size() > kMaxBlobBytes) {
    return Status(StatusCode::kInvalidArgument,
                  "all_gather_blobs: " + std::to_string(mine.size()) + " bytes exceed the " +
                      std::to_string(kMaxBlobBytes) + " allowed");
  }
  Result<std::vector<std::string>> lengths = coordinator.all_gather(std::to_string(mine.size()));
  if (!lengths.is_ok()) return lengths.status();
  std::vector<uint64_t> sizes;
  uint64_t longest = 0;
  for (size_t r = 0; r < lengths->size(); ++r) {
    const std::string& text = (*lengths)[r];
    uint64_t n = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
        n > kMaxBlobBytes) {
      return Status(StatusCode::kMalformedMessage,
                    "all_gather_blobs: rank " + std::to_string(r) +
                        " announced a length that is not a number up to " +
                        std::to_string(kMaxBlobBytes));
    }
    sizes.push_back(n);
    longest = std::max(longest, n);
  }
  std::vector<std::string> blobs(sizes.size());
  for (uint64_t offset = 0; offset < longest; offset += kMaxGatherEntryBytes) {
    const std::string_view chunk =
        offset < mine.size() ? mine.substr(offset, kMaxGatherEntryBytes) : std::string_view();
    Result<std::vector<std::string>> round = coordinator.all_gather(chunk);
    if (!round.is_ok()) return round.status();
    for (size_t r = 0; r < sizes.size(); ++r) {
      const uint64_t want =
          offset < sizes[r] ? std::min<uint64_t>(kMaxGatherEntryBytes, sizes[r] - offset) : 0;
      if ((*round)[r].size() != want) {
        return Status(StatusCode::kMalformedMessage,
                      "all_gather_blobs: rank " + std::to_string(r) + " sent " +
                          std::to_string((*round)[r].size()) + " bytes at offset " +
                          std::to_string(offset) + " where " + std::to_string(want) +
                          " were due");
      }
      blobs[r] += (*round)[r];
    }
  }
  return blobs;
}

}  // namespace tensorwire::launch
