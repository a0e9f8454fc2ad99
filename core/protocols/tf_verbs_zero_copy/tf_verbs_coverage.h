// What the zero-copy verbs protocol declares worth reaching (core/coverage.h):
// RdmaTensorRequest's and RdmaTensorResponse's states and transitions, the
// four control message types sent and received, the paths through the design
// (meta-data cache hit and update, zero copy, clones, staging, host proxy,
// string tensors, pool reuse, withdrawal, timeout, abort) and the options that
// change what it does. The requests and responses count paths by TfVerbsPath
// into RendezvousStats (an array, cheap on the hot path); the names are made
// only when a run asks for its coverage.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/coverage.h"
#include "core/protocols/tf_verbs_zero_copy/tf_verbs_options.h"

namespace tensorwire::tf_verbs {

struct RendezvousStats;

enum class TfVerbsPath : uint8_t {
  kFirstRequest,           // no cached meta-data: the request names no destination
  kMetaDataCacheHit,       // the request names a destination sized from the cache
  kUpdateKeepsBuffer,      // META_DATA_UPDATE of equal byte size: the destination stays
  kUpdateReallocates,      // META_DATA_UPDATE of another size or layout: a new destination
  kZeroCopyWrite,          // the NIC reads the caller's tensor itself
  kCpuClone,               // a host source is cloned before the update's round trip
  kGpuClone,               // a GPUDirect source is cloned on its GPU
  kStagingCopy,            // a GPU source without GPUDirect is staged to host memory
  kStringSerialized,       // DT_STRING: serialized into a proto buffer and written
  kStringDeserialized,     // DT_STRING: parsed out of the proto buffer on arrival
  kZeroByteWrite,          // a dead or empty tensor: the 0-byte write-with-imm
  kDeadTensorReceived,     // a dead tensor delivered (meta-data only)
  kGpuDirectDestination,   // the NIC writes into the destination GPU itself
  kHostProxy,              // a GPU the NIC cannot reach: host proxy, then a copy
  kRecvBeforeSend,         // a request waits (parked) for the application's Send
  kSendBeforeRecv,         // a sent tensor waits for the peer's request
  kPoolReuse,              // a registered buffer comes back out of the pool
  kPoolSizeOffClass,       // a pool buffer longer than asked (size off its class)
  kChannelFailed,          // a channel closed on a QP error or malformed input
  kSendFailed,             // the application's Send failed: the Recv learns it
  kWithdrawal,             // a waiting request withdrawn (re-request without destination)
  kWithdrawalAnswered,     // the sender dropped a response its requester withdrew
  kRequestTimedOut,        // request_timeout fired
  kStepAborted,            // abort_step failed the step's pending work
  kRequestForAbortedStep,  // a request for an aborted step answered with ERROR_STATUS
  kCount,
};
inline constexpr size_t kTfVerbsPaths = static_cast<size_t>(TfVerbsPath::kCount);
// The control message types, by wire value - 1 (RdmaMessageType).
inline constexpr size_t kTfVerbsMessageTypes = 4;

const char* tf_verbs_path_name(TfVerbsPath path);

// Every item at 0, except the options group's items `options` selects.
Coverage tf_verbs_declared_coverage(const TfVerbsOptions& options);
// Counts one rank's messages and paths into `into`, which holds the
// declaration (its transitions come from transition_tables()).
void add_tf_verbs_coverage(Coverage& into, const RendezvousStats& stats);

}  // namespace tensorwire::tf_verbs
