// Which ranks a point-to-point protocol opens a channel (queue pair, posted
// receives, rings, registered buffers) to at start: the `channels` option
// every such protocol shares ([protocol.<name>] channels = "workload" | "all"),
// read once here so the spelling and the error are the same for all of them.
#pragma once

#include <cstdint>
#include <vector>

#include "core/nic.h"
#include "core/option_reader.h"
#include "core/rank_env.h"

namespace tensorwire {

enum class ChannelScope : uint8_t {
  // Every other rank, as the original systems connect every rank of the
  // cluster: a channel per peer, so memory grows with the square of the ranks.
  kAllRanks,
  // Only the ranks the workload pairs this rank with (RankEnv::peers), still
  // all at start, so every receive is posted before a peer's first message;
  // memory grows with the traffic. Every rank when the caller gives no peers.
  kWorkloadPeers,
};

// The option's name in a protocol's table (for its option_keys()).
inline constexpr const char* kChannelsOptionKey = "channels";

// `channels` from a protocol's options table: "all" or "workload"; `absent`
// when the key is not there. Any other value is rejected through the reader,
// which names the file, line and key.
ChannelScope read_channel_scope(const OptionReader& reader, ChannelScope absent);

// The ranks env's rank opens a channel to, in increasing order (the order
// channels are started, so the setup is the same on every run): env.peers
// under kWorkloadPeers when the caller gave them, else every other rank.
std::vector<RankId> channel_peers(ChannelScope scope, const RankEnv& env);

}  // namespace tensorwire
