// One long transfer on the receiver: the descriptor's remote range, the
// destination the reads land in (the result tensor, or a host proxy for a GPU
// the NIC cannot reach), and the chunked reads' progress.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "core/protocols/oneflow_commnet/commnet_rendezvous.h"

namespace tensorwire::oneflow {

struct CommNetRendezvous::ReadJob {
  RankId src = 0;
  uint32_t token = 0;
  Key key;
  PendingRecv recv;
  Tensor result;       // what the callback gets (its buffer: the destination)
  Buffer landing;      // where the reads land: result.buffer, or the host proxy
  MemoryRegion region;  // landing's registration (length 0: none yet)
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  uint64_t length = 0;
  uint64_t next_offset = 0;  // the next chunk to post
  uint64_t bytes_done = 0;   // bytes whose reads completed
  uint32_t in_flight = 0;
  bool release_sent = false;
  bool proxy = false;  // landing is a host proxy of a GPU destination
  Status failure;  // a read failed, the channel broke or the step aborted

  bool failed() const { return !failure.is_ok(); }
};

}  // namespace tensorwire::oneflow
