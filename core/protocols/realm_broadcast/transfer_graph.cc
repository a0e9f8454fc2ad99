#include "core/protocols/realm_broadcast/transfer_graph.h"

#include <algorithm>
#include <map>

namespace tensorwire::collectives {

const char* buffer_role_name(BufferRole role) {
  switch (role) {
    case BufferRole::kSource: return "source";
    case BufferRole::kDestination: return "destination";
    case BufferRole::kIB: return "ib";
  }
  return "?";
}

std::string TransferBuffer::name() const {
  return "b" + std::to_string(id) + " " + buffer_role_name(role) + " " + memory.name();
}

uint32_t TransferGraph::depth_of(uint32_t buffer) const {
  uint32_t d = 0;
  // Bounded walk: a malformed graph with a cycle must not loop forever.
  for (size_t guard = 0; guard <= buffers.size() && buffer < buffers.size(); ++guard) {
    const auto& producer = buffers[buffer].producer;
    if (!producer || *producer >= copies.size()) break;
    buffer = copies[*producer].from;
    ++d;
  }
  return d;
}

uint32_t TransferGraph::depth() const {
  uint32_t d = 0;
  for (uint32_t b : destinations) d = std::max(d, depth_of(b));
  return d;
}

std::vector<std::pair<MemoryId, uint64_t>> TransferGraph::ib_bytes_by_memory() const {
  std::map<MemoryId, uint64_t> by;
  for (const TransferBuffer& b : buffers) {
    if (b.role == BufferRole::kIB) by[b.memory] += b.ring_bytes;
  }
  return {by.begin(), by.end()};
}

uint64_t TransferGraph::ib_bytes_total() const {
  uint64_t total = 0;
  for (const TransferBuffer& b : buffers) {
    if (b.role == BufferRole::kIB) total += b.ring_bytes;
  }
  return total;
}

uint32_t TransferGraph::ib_buffer_count() const {
  return static_cast<uint32_t>(std::count_if(buffers.begin(), buffers.end(), [](const auto& b) {
    return b.role == BufferRole::kIB;
  }));
}

std::vector<uint64_t> TransferGraph::link_bytes(const ClusterTopology& topology) const {
  std::vector<uint64_t> bytes_by_link(topology.link_count(), 0);
  for (const TransferCopy& c : copies) {
    for (const PathHop::Use& use : c.hop.uses) bytes_by_link.at(use.link.value) += bytes;
  }
  return bytes_by_link;
}

std::string TransferGraph::validate() const {
  if (source >= buffers.size() || buffers[source].role != BufferRole::kSource) {
    return "the source is not a source buffer";
  }
  for (uint32_t i = 0; i < buffers.size(); ++i) {
    const TransferBuffer& b = buffers[i];
    if (b.id != i) return "buffer " + std::to_string(i) + " has id " + std::to_string(b.id);
    if ((b.role == BufferRole::kSource) == b.producer.has_value()) {
      return b.name() + ": a source has no producer and every other buffer exactly one";
    }
    if (b.producer && (*b.producer >= copies.size() || copies[*b.producer].to != i)) {
      return b.name() + ": its producer does not write to it";
    }
    if (b.role == BufferRole::kIB && b.consumers.empty()) return b.name() + ": an IB with no consumer";
    for (uint32_t c : b.consumers) {
      if (c >= copies.size() || copies[c].from != i) return b.name() + ": a consumer reads elsewhere";
    }
  }
  for (uint32_t i = 0; i < copies.size(); ++i) {
    const TransferCopy& c = copies[i];
    if (c.id != i) return "copy " + std::to_string(i) + " has id " + std::to_string(c.id);
    if (c.from >= buffers.size() || c.to >= buffers.size()) return "a copy names no buffer";
    const auto& consumers = buffers[c.from].consumers;
    if (std::count(consumers.begin(), consumers.end(), i) != 1) {
      return "copy " + std::to_string(i) + " is not listed once among its input's consumers";
    }
    if (buffers[c.to].producer != i) {
      return "copy " + std::to_string(i) + " writes a buffer whose producer is another copy";
    }
    if (buffers[c.from].memory != c.hop.from || buffers[c.to].memory != c.hop.to) {
      return "copy " + std::to_string(c.id) + " moves between other memories than its buffers'";
    }
  }
  for (uint32_t i = 0; i < buffers.size(); ++i) {
    // An acyclic chain has fewer copies than there are buffers.
    if (depth_of(i) >= buffers.size()) return buffers[i].name() + " is on a cycle";
    uint32_t b = i;
    while (buffers[b].producer) b = copies[*buffers[b].producer].from;
    if (b != source) return buffers[i].name() + " is not fed from the source";
  }
  for (uint32_t d : destinations) {
    if (d >= buffers.size() || buffers[d].role != BufferRole::kDestination) {
      return "destination list names a buffer that is not a destination";
    }
  }
  return "";
}

}  // namespace tensorwire::collectives
