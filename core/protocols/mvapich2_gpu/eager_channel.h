// One peer's control channel (MVAPICH2's eager vbufs): the shared eager
// channel (core/protocols/eager_channel.h: receives posted in advance,
// credits, send slots, a FIFO per peer) over MVAPICH2's wire format. Every
// message of the protocol (REQUEST, EAGER, RTS, CTS, FIN, ERROR, CREDIT)
// travels here; the rendezvous' content goes by RDMA write.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/protocols/eager_channel.h"
#include "core/protocols/mvapich2_gpu/mv2_message.h"
#include "core/protocols/mvapich2_gpu/mv2_options.h"
#include "core/protocols/mvapich2_gpu/work_request_id.h"

namespace tensorwire::mvapich2 {

struct Mv2Wire {
  using Message = mvapich2::Message;
  using MessageType = mvapich2::MessageType;
  using Decoded = mvapich2::Decoded;
  static constexpr size_t kMessageTypes = mvapich2::kMessageTypes;
  static constexpr MessageType kCredit = MessageType::kCredit;
  static constexpr MessageType kInlineContent = MessageType::kEager;
  static size_t index(MessageType type) { return message_type_index(type); }
  static size_t max_header_size() { return mvapich2::max_header_size(); }
  static Result<std::vector<std::byte>> encode_header(const Message& m) { return mvapich2::encode_header(m); }
  static Result<Decoded> decode(std::span<const std::byte> bytes) { return mvapich2::decode(bytes); }
  static uint64_t receive_wr_id(RankId peer, uint32_t slot) {
    return WorkRequestId{WorkKind::kReceive, peer, slot}.pack();
  }
  static uint64_t send_wr_id(RankId peer, uint32_t slot) {
    return WorkRequestId{WorkKind::kSend, peer, slot}.pack();
  }
};

using EagerChannel = protocols::EagerChannel<Mv2Wire>;
using Arrival = EagerChannel::Arrival;
using MessageHandler = EagerChannel::MessageHandler;
using protocols::InlineContent;

inline protocols::EagerChannelConfig eager_config_of(const Mv2Options& o) {
  return {o.receive_pool_size, o.eager_max_bytes};
}

}  // namespace tensorwire::mvapich2
