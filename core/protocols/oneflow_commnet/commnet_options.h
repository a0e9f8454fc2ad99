// Options of OneFlow's CommNet protocol, set from a scenario's
// [protocol.oneflow_commnet] table, and its bug zoo.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/channel_peers.h"

namespace tensorwire::oneflow {

// Deliberate bugs for the model checker's bug zoo (tests/model): each breaks a
// rule the design depends on, switched on at run time. kNone everywhere else.
enum class PlantedBug : uint8_t {
  kNone,
  // The receiver tells the sender its token may go when it posts the last
  // read, not when that read completes: the sender may deregister and reuse
  // the tensor while the NIC still reads it (an RC queue pair orders the read
  // request before the send, but not the read's data: verbs needs a fence).
  kReleaseAtReadPost,
  // The receive a READ_DONE consumed is not posted again (its credit still
  // goes back): the pool shrinks until a send finds no receive.
  kNoRepostOnReadDone,
};

const char* planted_bug_name(PlantedBug bug);
// "release_at_read_post", ...; false for an unknown name.
bool planted_bug_from_name(std::string_view name, PlantedBug& bug);
inline constexpr PlantedBug kPlantedBugs[] = {PlantedBug::kReleaseAtReadPost,
                                              PlantedBug::kNoRepostOnReadDone};

// Bounds a scenario may ask for.
inline constexpr int64_t kMinReceivePoolSize = 4;  // two data credits + two for credit messages
inline constexpr int64_t kMaxReceivePoolSize = 4096;
inline constexpr uint64_t kMaxEagerBytes = 64 * 1024;
inline constexpr uint64_t kMaxReadChunkBytes = uint64_t{1} << 30;
inline constexpr int64_t kMaxReadsInFlight = 256;

struct CommNetOptions {
  // Receives posted in advance per peer, each re-posted when its message has
  // been handled. Two are kept for credit messages; the rest are the data
  // credits a sender may spend before the peer returns some.
  uint32_t receive_pool_size = 64;
  // Tensors of at most this many bytes travel inline in one eager message
  // (one message instead of descriptor + read + READ_DONE, and no
  // registration). 4 KiB: below a round trip's worth of bandwidth, and it keeps
  // the pool (receive_pool_size slots of this plus a header, per peer) small.
  // 0: every tensor with content goes by RDMA read, as OneFlow's own does.
  uint64_t eager_max_bytes = 4096;
  // Each RDMA read moves at most this much (OneFlow's ibverbs comm net: 8 MiB).
  uint64_t read_chunk_bytes = uint64_t{8} << 20;
  // Reads one transfer keeps posted at once.
  uint32_t max_reads_in_flight = 4;
  // Which peers a rank opens a channel to at start (core/channel_peers.h):
  // only the ranks the workload pairs it with, so memory grows with the
  // traffic; "all" keeps the original's channel to every rank.
  ChannelScope channels = ChannelScope::kWorkloadPeers;
  PlantedBug planted_bug = PlantedBug::kNone;
};

}  // namespace tensorwire::oneflow
