// What a rank keeps per peer, and one rendezvous on each side: the sender's
// blocks (their destinations from CTS, their source vbufs, their writes) and
// the receiver's (their offered vbufs or the user's buffer, their copies to
// the GPU).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "core/protocols/mvapich2_gpu/mv2_rendezvous.h"

namespace tensorwire::mvapich2 {

struct Mv2Rendezvous::Peer {
  Peer(RankEnv env, RankId peer, const Mv2Options& o)
      : channel(env, peer, eager_config_of(o)),
        send_vbufs(env, Access::kNone, o.block_bytes, o.vbuf_count),
        recv_vbufs(env, Access::kLocalWrite | Access::kRemoteWrite, o.block_bytes, o.vbuf_count),
        send_staging(env, Access::kNone),
        recv_staging(env, Access::kLocalWrite | Access::kRemoteWrite) {}
  EagerChannel channel;
  VbufPool send_vbufs;  // staged sources of blocks to this peer
  VbufPool recv_vbufs;  // where this peer's blocks land, for a GPU the NIC cannot reach
  StagingCache send_staging;  // naive: whole-buffer sources
  StagingCache recv_staging;  // naive: whole-buffer destinations
  std::deque<std::pair<uint32_t, uint32_t>> queued_writes;  // (transfer, block), in order
};

// Where a block's bytes sit on its own side: a vbuf of the peer's pool, or a
// staging-cache entry (naive), or neither (the user's buffer).
struct StagingSlot {
  std::optional<uint32_t> vbuf;
  std::optional<uint32_t> cached;
  bool held() const { return vbuf || cached; }
};

struct Mv2Rendezvous::OutTransfer {
  struct Block {
    SendBlockState state = SendBlockState::kWaiting;
    bool has_dst = false;
    uint64_t dst = 0;
    uint32_t rkey = 0;
    StagingSlot source;
    bool fin_sent = false;
  };
  uint32_t id = 0;
  RankId peer = 0;
  Key key;
  PendingSend send;
  uint64_t bytes = 0;
  bool staged = false;      // the NIC cannot reach the source: blocks go through host
  MemoryRegion src_region;  // the user's buffer registered (length 0: none)
  uint64_t block_bytes = 0;  // 0 until the first CTS
  std::vector<Block> blocks;
  uint32_t copies_in_flight = 0;
  uint32_t writes_in_flight = 0;
  uint32_t finished = 0;
  Status failure;

  bool failed() const { return !failure.is_ok(); }
  uint64_t block_len(uint32_t b) const { return std::min(block_bytes, bytes - b * block_bytes); }
};

struct Mv2Rendezvous::InTransfer {
  struct Block {
    RecvBlockState state = RecvBlockState::kOffered;
    bool offered = false;
    StagingSlot landing;
  };
  RankId src = 0;
  uint32_t transfer = 0;
  Key key;
  PendingRecv recv;
  Tensor result;
  bool direct = false;      // blocks land in the user's buffer
  bool vbufs = false;       // blocks land in the peer's vbufs (else: direct, or naive staging)
  MemoryRegion dst_region;  // its registration (length 0: none)
  uint64_t bytes = 0;
  uint64_t block_bytes = 0;
  std::vector<Block> blocks;
  uint32_t next_offer = 0;  // the first block no CTS has offered
  uint32_t copies_in_flight = 0;
  uint32_t done = 0;
  Status failure;

  bool failed() const { return !failure.is_ok(); }
  uint64_t block_len(uint32_t b) const { return std::min(block_bytes, bytes - b * block_bytes); }
};

}  // namespace tensorwire::mvapich2
