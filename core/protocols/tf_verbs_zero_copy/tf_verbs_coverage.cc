#include "core/protocols/tf_verbs_zero_copy/tf_verbs_coverage.h"

#include <iterator>

#include "core/protocols/tf_verbs_zero_copy/rdma_message.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_rendezvous.h"

namespace tensorwire::tf_verbs {
namespace {

constexpr const char* kPathNames[] = {
    "first request (no cached meta-data)",
    "meta-data cache hit",
    "meta-data update of equal byte size keeps the destination",
    "meta-data update of a new size reallocates the destination",
    "zero copy: the NIC reads the sent tensor",
    "host source cloned by the CPU",
    "GPU source cloned on the GPU (GPUDirect)",
    "GPU source staged to host (no GPUDirect)",
    "string tensor serialized",
    "string tensor deserialized",
    "dead or empty tensor: 0-byte write",
    "dead tensor received",
    "GPU destination written by the NIC (GPUDirect)",
    "GPU destination through a host proxy (no GPUDirect)",
    "Recv before Send: request parked",
    "Send before Recv: tensor waits for the request",
    "pool buffer reused",
    "pool buffer larger than asked (size off its class)",
    "channel failed",
    "Send failed: the Recv is told",
    "request withdrawn",
    "withdrawal answered by the sender",
    "request timed out",
    "step aborted",
    "request for an aborted step answered",
};
static_assert(std::size(kPathNames) == kTfVerbsPaths, "every path has a name");

constexpr wire::RdmaMessageType kMessageTypes[] = {
    wire::RdmaMessageType::kTensorRequest, wire::RdmaMessageType::kMetaDataUpdate,
    wire::RdmaMessageType::kTensorReRequest, wire::RdmaMessageType::kErrorStatus};
static_assert(std::size(kMessageTypes) == kTfVerbsMessageTypes);

// The options that change what the protocol does, one item per setting.
constexpr const char* kTimeoutOff = "request_timeout off";
constexpr const char* kTimeoutOn = "request_timeout on";
constexpr const char* kRingDefault = "control_ring_size default";
constexpr const char* kRingOther = "control_ring_size other than the default";

// Every item, at 0.
Coverage declaration() {
  Coverage c;
  add_transition_coverage(c, transition_tables_of(RendezvousStats{}));
  for (wire::RdmaMessageType t : kMessageTypes) {
    c.declare(kCoverageMessagesSent, wire::rdma_message_type_name(t));
  }
  for (wire::RdmaMessageType t : kMessageTypes) {
    c.declare(kCoverageMessagesReceived, wire::rdma_message_type_name(t));
  }
  for (const char* name : kPathNames) c.declare(kCoveragePaths, name);
  for (const char* name : {kTimeoutOff, kTimeoutOn, kRingDefault, kRingOther}) {
    c.declare(kCoverageOptions, name);
  }
  return c;
}

}  // namespace

const char* tf_verbs_path_name(TfVerbsPath path) {
  const auto i = static_cast<size_t>(path);
  return i < kTfVerbsPaths ? kPathNames[i] : "?";
}

Coverage tf_verbs_declared_coverage(const TfVerbsOptions& options) {
  // Built once: every run starts from a copy.
  static const Coverage kDeclared = declaration();
  Coverage c = kDeclared;
  c.count(kCoverageOptions, options.request_timeout_ns > 0 ? kTimeoutOn : kTimeoutOff);
  c.count(kCoverageOptions,
          options.control_ring_size == TfVerbsOptions{}.control_ring_size ? kRingDefault : kRingOther);
  return c;
}

void add_tf_verbs_coverage(Coverage& into, const RendezvousStats& stats) {
  // Only what was reached: every item is declared (declaration() above), and
  // a model checker's execution reaches a few of them, each counted by name.
  for (size_t i = 0; i < kTfVerbsMessageTypes; ++i) {
    if (stats.messages_sent[i] == 0) continue;
    into.count(kCoverageMessagesSent, wire::rdma_message_type_name(kMessageTypes[i]),
               stats.messages_sent[i]);
  }
  for (size_t i = 0; i < kTfVerbsMessageTypes; ++i) {
    if (stats.messages_received[i] == 0) continue;
    into.count(kCoverageMessagesReceived, wire::rdma_message_type_name(kMessageTypes[i]),
               stats.messages_received[i]);
  }
  for (size_t i = 0; i < kTfVerbsPaths; ++i) {
    if (stats.paths[i] != 0) into.count(kCoveragePaths, kPathNames[i], stats.paths[i]);
  }
}

}  // namespace tensorwire::tf_verbs
