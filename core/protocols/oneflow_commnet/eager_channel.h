// One peer's eager messages (CommNet's "Eager Message"): the shared eager
// channel (core/protocols/eager_channel.h: receives posted in advance,
// credits, send slots, a FIFO per peer) over CommNet's wire format, every
// message type of the protocol on it, an eager tensor's content inline.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/protocols/eager_channel.h"
#include "core/protocols/oneflow_commnet/commnet_message.h"
#include "core/protocols/oneflow_commnet/commnet_options.h"
#include "core/protocols/oneflow_commnet/work_request_id.h"

namespace tensorwire::oneflow {

struct CommNetWire {
  using Message = oneflow::Message;
  using MessageType = oneflow::MessageType;
  using Decoded = oneflow::Decoded;
  static constexpr size_t kMessageTypes = oneflow::kMessageTypes;
  static constexpr MessageType kCredit = MessageType::kCredit;
  static constexpr MessageType kInlineContent = MessageType::kEagerTensor;
  static size_t index(MessageType type) { return message_type_index(type); }
  static size_t max_header_size() { return oneflow::max_header_size(); }
  static Result<std::vector<std::byte>> encode_header(const Message& m) { return oneflow::encode_header(m); }
  static Result<Decoded> decode(std::span<const std::byte> bytes) { return oneflow::decode(bytes); }
  static uint64_t receive_wr_id(RankId peer, uint32_t slot) {
    return WorkRequestId{WorkKind::kReceive, peer, slot}.pack();
  }
  static uint64_t send_wr_id(RankId peer, uint32_t slot) {
    return WorkRequestId{WorkKind::kSend, peer, slot}.pack();
  }
};

using EagerChannel = protocols::EagerChannel<CommNetWire>;
using Arrival = EagerChannel::Arrival;
using MessageHandler = EagerChannel::MessageHandler;
using protocols::InlineContent;

// The options' pool and slot size; the planted no_repost_on_read_done keeps a
// READ_DONE's receive from being re-posted.
inline EagerChannel::SkipRepost skip_repost_of(const CommNetOptions& o) {
  if (o.planted_bug != PlantedBug::kNoRepostOnReadDone) return nullptr;
  return [](const Message& m) { return m.type == MessageType::kReadDone; };
}
inline protocols::EagerChannelConfig eager_config_of(const CommNetOptions& o) {
  return {o.receive_pool_size, o.eager_max_bytes};
}

}  // namespace tensorwire::oneflow
