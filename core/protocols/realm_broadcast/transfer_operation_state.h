// The per-buffer, per-copy and per-peer state of a TransferOperation, shared
// by the files that implement it (transfer_operation.cc and
// transfer_operation_windows.cc); nothing outside them includes it.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "core/protocols/realm_broadcast/transfer_operation.h"

namespace tensorwire::collectives {

struct TransferOperation::BufferState {
  Buffer mem;
  uint32_t lkey = 0;
  uint32_t rkey = 0;
  uint64_t written = 0;                // stream bytes landed here
  uint64_t registered = 0;             // windowed instances: the registered prefix
  std::vector<uint64_t> consumer_read; // by position in the graph's consumer list
  uint64_t reported_read = 0;          // the minimum last passed upstream
  std::optional<uint64_t> pool_offset; // IB buffers: where in the pool
  bool freed = false;
  bool complete = false;
};

struct TransferOperation::CopyState {
  bool ready = false;  // a network copy knows where to write once IB_READY came
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  std::vector<uint32_t> window_rkeys;  // into a windowed instance: by window
  uint64_t window_end = 0;             // ... and how far they reach
  uint64_t downstream_read = 0;  // network copy into an IB: from BYTES_READ
  uint64_t issued = 0;
  uint64_t completed = 0;
  std::deque<std::pair<uint64_t, TimeNs>> inflight;  // (bytes, issued at), in order
  bool finished = false;
  uint32_t in_consumer_index = 0;
};

struct TransferOperation::PeerState {
  QpHandle qp;
  Buffer recv_ring;
  uint32_t recv_lkey = 0;
  Buffer send_slots;
  uint32_t send_lkey = 0;
  std::vector<uint32_t> free_slots;
  std::deque<CollectiveMessage> backlog;    // waiting for a free send slot
  std::deque<SendWorkRequest> pending;      // refused by a full send queue
};

struct TransferOperation::Pool {
  explicit Pool(uint64_t bytes) : ib(bytes) {}
  IBMemory ib;
  Buffer backing;
};

// Which buffers the NIC touches, and how: written into by a network copy
// (`in`), read from by one (`out`). By buffer id.
struct TransferOperation::NetworkUse {
  explicit NetworkUse(const TransferGraph& graph)
      : in(graph.buffers.size(), false), out(graph.buffers.size(), false) {
    for (const TransferCopy& c : graph.copies) {
      if (!c.hop.network) continue;
      out[c.from] = true;
      in[c.to] = true;
    }
  }
  std::vector<bool> in;
  std::vector<bool> out;
};

}  // namespace tensorwire::collectives
