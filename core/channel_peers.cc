#include "core/channel_peers.h"

#include <optional>
#include <string>

#include "core/assert.h"

namespace tensorwire {

ChannelScope read_channel_scope(const OptionReader& reader, ChannelScope absent) {
  const std::optional<std::string> channels = reader.string(kChannelsOptionKey);
  if (!channels) return absent;
  if (*channels == "workload") return ChannelScope::kWorkloadPeers;
  if (*channels == "all") return ChannelScope::kAllRanks;
  reader.fail(kChannelsOptionKey,
              "must be \"all\" (a channel to every rank) or \"workload\" (only to the ranks the "
              "workload pairs it with), not \"" + *channels + "\"");
  // fail() throws the loader's error; a reader that returned would be a bug.
  TW_UNREACHABLE("OptionReader::fail returned");
}

std::vector<RankId> channel_peers(ChannelScope scope, const RankEnv& env) {
  const RankId self = env.nic.rank();
  const uint32_t world = env.nic.world_size();
  std::vector<RankId> peers;
  if (scope == ChannelScope::kWorkloadPeers && env.peers != nullptr) {
    for (RankId peer : *env.peers) {
      TW_ASSERT_MSG(peer != self && peer < world, "a workload peer is another rank of the cluster");
      TW_ASSERT_MSG(peers.empty() || peers.back() < peer, "workload peers come sorted, once each");
      peers.push_back(peer);
    }
    return peers;
  }
  peers.reserve(world > 0 ? world - 1 : 0);
  for (RankId peer = 0; peer < world; ++peer) {
    if (peer != self) peers.push_back(peer);
  }
  return peers;
}

}  // namespace tensorwire
