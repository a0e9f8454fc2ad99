// A transfer graph: which buffer copies to which. Realm's collective copy
// analysis produces one per broadcast: the source instance, the destination
// instances, the IB (intermediate) buffers on the way, and one copy (an
// XferDes) per edge. Every buffer but the source has exactly one producer; a
// buffer with several consumers is where the broadcast fans out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/protocols/realm_broadcast/cluster_topology.h"

namespace tensorwire::collectives {

enum class BufferRole : uint8_t {
  kSource,       // the source instance: holds every byte from the start
  kDestination,  // a destination instance: ends with every byte
  kIB,           // an intermediate buffer from the IB pool of its memory
};

const char* buffer_role_name(BufferRole role);

struct TransferBuffer {
  uint32_t id = 0;
  MemoryId memory;
  BufferRole role = BufferRole::kIB;
  std::optional<uint32_t> producer;  // copy id; none for the source
  std::vector<uint32_t> consumers;   // copy ids, in the order they were planned
  // IB buffers are rings of this many bytes, reused as consumers read; source
  // and destination instances hold the whole message.
  uint64_t ring_bytes = 0;
  // A destination instance that also feeds other buffers (the radix tree's
  // entry buffer on a node): signalled like an IB buffer, never freed as one.
  bool serves_as_ib() const { return role == BufferRole::kDestination && !consumers.empty(); }
  std::string name() const;  // "b3 ib node1/host"
};

struct TransferCopy {
  uint32_t id = 0;
  uint32_t from = 0;  // buffer ids
  uint32_t to = 0;
  PathHop hop;
  // The rank that runs it: the reading side's node (an RDMA write is posted
  // by the node that holds the data, a local copy by its node).
  uint32_t rank() const { return hop.from.node; }
};

struct TransferGraph {
  uint64_t bytes = 0;
  uint32_t source = 0;                 // buffer id of the source instance
  std::vector<uint32_t> destinations;  // buffer ids, in the order destinations were given
  std::vector<TransferBuffer> buffers;
  std::vector<TransferCopy> copies;

  // Copies on the longest chain from the source to a destination.
  uint32_t depth() const;
  // Copies from the source to buffer b.
  uint32_t depth_of(uint32_t buffer) const;
  // IB bytes allocated in each memory (sum of ring sizes), by memory.
  std::vector<std::pair<MemoryId, uint64_t>> ib_bytes_by_memory() const;
  uint64_t ib_bytes_total() const;
  uint32_t ib_buffer_count() const;
  // Bytes each link carries over the whole broadcast (indexed by LinkId).
  std::vector<uint64_t> link_bytes(const ClusterTopology& topology) const;
  // "" when the graph is well formed (one producer per non-source buffer,
  // every buffer reachable from the source, ids consistent), else what is not.
  std::string validate() const;
};

}  // namespace tensorwire::collectives
