// Registration windows: an instance the network writes into, registered piece
// by piece as the stream reaches it rather than whole before the broadcast
// starts (BroadcastOptions::registration_window_bytes).
//
// Why: the NIC may write only into registered memory, and registering costs
// the CPU per page (1 GiB: about 16 ms in the simulator's model, more on real
// GPUs). Registered whole, that cost comes before the first byte can land; in
// windows it overlaps with the bytes landing in the windows before. The
// receiver keeps two windows registered ahead of the bytes landed: the first
// when it places the instance (its rkey travels in IB_READY), each later one
// announced by WINDOW_READY, in order. The writer never writes past the last
// window announced and never lets a chunk cross a window's end (each window is
// its own memory region with its own rkey); the receiver treats a write past
// its registered windows as malformed.
#include <algorithm>
#include <limits>
#include <string>

#include "core/assert.h"
#include "core/protocols/realm_broadcast/transfer_operation.h"
#include "core/protocols/realm_broadcast/transfer_operation_state.h"

namespace tensorwire::collectives {

void TransferOperation::mark_windowed(const NetworkUse& network) {
  windowed_.assign(graph_.buffers.size(), false);
  const uint64_t window = options_.registration_window_bytes;
  if (window == 0 || graph_.bytes <= window) return;
  for (const TransferBuffer& b : graph_.buffers) {
    // An instance the network also reads from needs one lkey over all of it.
    windowed_[b.id] = b.role != BufferRole::kIB && network.in[b.id] && !network.out[b.id];
  }
}

Status TransferOperation::register_first_window(uint32_t buffer) {
  BufferState& s = buffers_.at(buffer);
  TW_ASSERT_MSG(windowed_[buffer] && s.registered == 0, "the first window is registered once");
  const uint64_t bytes = std::min(options_.registration_window_bytes, graph_.bytes);
  const Buffer window{s.mem.addr, bytes, s.mem.kind, s.mem.device};
  Result<MemoryRegion> region =
      env_.nic.register_memory(window, Access::kLocalWrite | Access::kRemoteWrite);
  if (!region) return region.status();
  regions_.push_back(*region);
  s.rkey = region->rkey;
  s.registered = bytes;
  return {};
}

// Registers and announces windows until two lie ahead of the bytes landed (or
// the instance is registered to its end).
void TransferOperation::top_up_windows(uint32_t buffer) {
  BufferState& s = buffers_.at(buffer);
  const uint64_t window = options_.registration_window_bytes;
  TW_ASSERT_MSG(windowed_[buffer] && s.registered > 0, "windows follow the first one");
  const auto producer = std::find_if(graph_.copies.begin(), graph_.copies.end(), [&](const TransferCopy& c) {
    return c.to == buffer && c.hop.network;
  });
  TW_ASSERT_MSG(producer != graph_.copies.end(), "a windowed instance is written by the network");
  while (status_.is_ok() && s.registered < graph_.bytes && s.registered < s.written + 2 * window) {
    const uint64_t bytes = std::min(window, graph_.bytes - s.registered);
    const Buffer piece{s.mem.addr + s.registered, bytes, s.mem.kind, s.mem.device};
    Result<MemoryRegion> region =
        env_.nic.register_memory(piece, Access::kLocalWrite | Access::kRemoteWrite);
    if (!region) {
      fail(region.status());
      return;
    }
    regions_.push_back(*region);
    CollectiveMessage m;
    m.type = CollectiveMessageType::kWindowReady;
    m.copy = producer->id;
    m.window_offset = s.registered;
    m.window_bytes = bytes;
    m.rkey = region->rkey;
    s.registered += bytes;
    send_message(producer->rank(), m);
  }
}

// The writer's side: the next window, right after the last, of the size the
// options give (the last one shorter).
Status TransferOperation::on_window_ready(uint32_t copy, const CollectiveMessage& m) {
  const TransferCopy& c = graph_.copies[copy];
  CopyState& s = copies_.at(copy);
  if (!windowed_[c.to]) return {StatusCode::kMalformedMessage, "WINDOW_READY for a target registered whole"};
  if (!s.ready) return {StatusCode::kMalformedMessage, "WINDOW_READY before IB_READY"};
  const uint64_t expected = std::min(options_.registration_window_bytes, graph_.bytes - s.window_end);
  if (s.window_end >= graph_.bytes || m.window_offset != s.window_end || m.window_bytes != expected) {
    return {StatusCode::kMalformedMessage,
            "WINDOW_READY for [" + std::to_string(m.window_offset) + ", +" + std::to_string(m.window_bytes) +
                "), expected the next window at " + std::to_string(s.window_end)};
  }
  s.window_rkeys.push_back(m.rkey);
  s.window_end += m.window_bytes;
  TW_ASSERT(s.window_rkeys.size() * options_.registration_window_bytes >= s.window_end);
  return {};
}

uint64_t TransferOperation::room_to_window_end(uint32_t copy, uint64_t off_out) const {
  const TransferCopy& c = graph_.copies[copy];
  if (!c.hop.network || !windowed_[c.to] || bug_ == PlantedCollectiveBug::kChunkAcrossWindows) {
    return std::numeric_limits<uint64_t>::max();
  }
  const uint64_t window = options_.registration_window_bytes;
  return window - off_out % window;
}

uint32_t TransferOperation::window_rkey(uint32_t copy, uint64_t off_out) const {
  const CopyState& s = copies_.at(copy);
  const uint64_t index = off_out / options_.registration_window_bytes;
  // try_issue writes only below window_end, and windows are contiguous.
  TW_ASSERT_MSG(off_out < s.window_end && index < s.window_rkeys.size(), "a chunk inside an announced window");
  return s.window_rkeys[index];
}

}  // namespace tensorwire::collectives
