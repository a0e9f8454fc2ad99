// Options of the zero-copy verbs protocol, set from a scenario's
// [protocol.tf_verbs_zero_copy] table.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/channel_peers.h"
#include "core/clock.h"

namespace tensorwire::tf_verbs {

// Deliberate bugs, planted for the model checker's bug zoo (tests/model): each
// is a mistake the original design guards against, switched on at run time so
// a test can show the checker finds it. kNone everywhere else.
enum class PlantedBug : uint8_t {
  kNone,
  kStaleReRequestAddress,   // the sender writes to the original request's address after a re-request
  kSkipClone,               // the sender writes the caller's tensor instead of a clone
  kReuseRequestIndex,       // a request_index is handed out while still outstanding
  kFreeProxyBeforeCopy,     // the receiver frees the host proxy before the GPU copy is done
  kNoReallocOnSizeChange,   // the receiver caches new meta-data but keeps the old buffer
  kDestroyResponseEarly,    // the response lets go of its source right after posting the write
  kUnregisteredSource,      // the sender writes from a source it never registered
  // Found only by the simulator's DMA sanitizer (the simulated NIC reads a
  // source when it posts it, so the bytes still arrive right):
  kSendDoneBeforeWrite,     // the caller may reuse its source while the write still reads it
  kDeregisterSourceEarly,   // the source's registration goes right after posting its write
  kPoolOverlap,             // the pool hands out a registered buffer still in use
  // Found when a timeout or an abort races with the sender's write (check
  // --faults timeout or abort): the sanitizer names the write into freed memory.
  kFreeOnWithdraw,          // a withdrawing Recv frees its destination before the peer confirms
  // A producer/consumer race between the copy engine and the NIC:
  kWriteBeforeStagingCopy,  // the write from a GPU's staging copy is posted before the copy finished
  // Reached only with a string tensor whose string size changes while its
  // shape does not (model_strings.toml has one; `check --swarm` draws them):
  kIgnoreProtoSize,         // the sender misses a string tensor's new proto_size: no update
};

const char* planted_bug_name(PlantedBug bug);
// "stale_re_request_address", ...; false for an unknown name.
bool planted_bug_from_name(std::string_view name, PlantedBug& bug);
// Every bug but kNone, for listings and tests.
inline constexpr PlantedBug kPlantedBugs[] = {
    PlantedBug::kStaleReRequestAddress, PlantedBug::kSkipClone,
    PlantedBug::kReuseRequestIndex,     PlantedBug::kFreeProxyBeforeCopy,
    PlantedBug::kNoReallocOnSizeChange, PlantedBug::kDestroyResponseEarly,
    PlantedBug::kUnregisteredSource,    PlantedBug::kSendDoneBeforeWrite,
    PlantedBug::kDeregisterSourceEarly, PlantedBug::kPoolOverlap,
    PlantedBug::kFreeOnWithdraw,        PlantedBug::kWriteBeforeStagingCopy,
    PlantedBug::kIgnoreProtoSize};

// The most control_ring_size a scenario may ask for: the simulator's
// timing-only mode gives bytes to buffers up to 8 MiB, which holds a ring this
// size of the largest control message.
inline constexpr int64_t kMaxControlRingSize = 4096;

struct TfVerbsOptions {
  // Receive buffers pre-posted per peer for control messages and write-with-imm
  // completions (the original had one message buffer per direction).
  uint32_t control_ring_size = 64;
  // A Recv that gets no answer for this long fails with kAborted-like timeout
  // error; 0 disables (faults still surface through QP errors).
  TimeNs request_timeout_ns = 0;
  // Which peers a rank opens a channel to at start (core/channel_peers.h). The
  // default is the "state only for what is used": at 1024 nodes
  // every-rank channels take gigabytes the run never touches.
  ChannelScope channels = ChannelScope::kWorkloadPeers;
  PlantedBug planted_bug = PlantedBug::kNone;
};

}  // namespace tensorwire::tf_verbs
