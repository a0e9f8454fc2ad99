#include "core/protocols/realm_broadcast/broadcast_invariants.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "core/assert.h"

namespace tensorwire::collectives {
namespace {
constexpr size_t kKeptViolations = 20;

std::string range(uint64_t begin, uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}
}  // namespace

BroadcastInvariants::BroadcastInvariants(const TransferGraph& graph)
    : graph_(graph), landed_(graph.buffers.size(), 0), read_(graph.copies.size(), 0),
      finished_(graph.copies.size(), false), freed_(graph.buffers.size(), false),
      complete_(graph.buffers.size(), false) {}

void BroadcastInvariants::violate(std::string what) {
  ++violation_count_;
  if (violations_.size() < kKeptViolations) violations_.push_back(std::move(what));
}

uint64_t BroadcastInvariants::min_consumer_read(uint32_t buffer) const {
  TW_ASSERT(buffer < graph_.buffers.size());
  uint64_t m = std::numeric_limits<uint64_t>::max();
  for (uint32_t c : graph_.buffers[buffer].consumers) m = std::min(m, read_[c]);
  return m;
}

void BroadcastInvariants::on_ib_allocated(uint32_t buffer, uint64_t in_use, uint64_t pool) {
  if (in_use > pool) {
    violate(graph_.buffers[buffer].name() + ": IB memory in use " + std::to_string(in_use) +
            " bytes is above its pool of " + std::to_string(pool));
  }
}

void BroadcastInvariants::on_ib_freed(uint32_t buffer) {
  TW_ASSERT(buffer < graph_.buffers.size());
  const TransferBuffer& b = graph_.buffers[buffer];
  if (freed_[buffer]) {
    violate(b.name() + ": freed twice");
    return;
  }
  freed_[buffer] = true;
  for (uint32_t c : b.consumers) {
    if (!finished_[c]) {
      violate(b.name() + ": freed while its consumer c" + std::to_string(c) +
              " has read only " + std::to_string(read_[c]) + " of " + std::to_string(graph_.bytes) +
              " bytes");
      return;
    }
  }
}

void BroadcastInvariants::on_chunk_issued(uint32_t copy, uint64_t begin, uint64_t end) {
  TW_ASSERT(copy < graph_.copies.size());
  TW_ASSERT_MSG(begin < end, "a chunk moves at least one byte");
  const TransferCopy& c = graph_.copies[copy];
  const std::string what = "c" + std::to_string(copy) + " moving " + range(begin, end) + ": ";
  if (end > landed_[c.from]) {
    violate(what + "reads " + graph_.buffers[c.from].name() + " where only " +
            std::to_string(landed_[c.from]) + " bytes have landed");
  }
  if (freed_[c.from]) violate(what + "reads " + graph_.buffers[c.from].name() + " after it was freed");
  if (freed_[c.to]) violate(what + "writes " + graph_.buffers[c.to].name() + " after it was freed");
  for (uint32_t ring_buffer : {c.from, c.to}) {
    const TransferBuffer& b = graph_.buffers[ring_buffer];
    if (b.role == BufferRole::kIB && b.ring_bytes > 0 &&
        begin % b.ring_bytes + (end - begin) > b.ring_bytes) {
      violate(what + "crosses the end of " + b.name() + "'s ring of " + std::to_string(b.ring_bytes) +
              " bytes");
    }
  }
  const TransferBuffer& out = graph_.buffers[c.to];
  if (out.role == BufferRole::kIB && end > out.ring_bytes) {
    // Ring bytes [begin, end) reuse stream bytes [begin - ring, end - ring).
    for (uint32_t consumer : out.consumers) {
      if (read_[consumer] < end - out.ring_bytes) {
        violate(what + "overwrites " + out.name() + " bytes up to stream offset " +
                std::to_string(end - out.ring_bytes) + " that its consumer c" +
                std::to_string(consumer) + " has read only to " + std::to_string(read_[consumer]));
        return;
      }
    }
  }
}

void BroadcastInvariants::on_chunk_done(uint32_t copy, uint64_t read) {
  TW_ASSERT(copy < graph_.copies.size());
  read_[copy] = std::max(read_[copy], read);
}

void BroadcastInvariants::on_bytes_landed(uint32_t buffer, uint64_t written) {
  TW_ASSERT(buffer < graph_.buffers.size());
  if (written > graph_.bytes) {
    violate(graph_.buffers[buffer].name() + ": " + std::to_string(written) +
            " bytes landed, the broadcast has " + std::to_string(graph_.bytes));
  }
  landed_[buffer] = std::max(landed_[buffer], written);
  const TransferBuffer& b = graph_.buffers[buffer];
  if (b.role == BufferRole::kIB && written > min_consumer_read(buffer) + b.ring_bytes) {
    violate(b.name() + ": " + std::to_string(written) + " bytes landed in a ring of " +
            std::to_string(b.ring_bytes) + " whose slowest consumer has read " +
            std::to_string(min_consumer_read(buffer)));
  }
}

void BroadcastInvariants::on_copy_finished(uint32_t copy) {
  TW_ASSERT(copy < graph_.copies.size());
  if (finished_[copy]) violate("c" + std::to_string(copy) + ": finished twice");
  finished_[copy] = true;
}

void BroadcastInvariants::on_destination_complete(uint32_t buffer, TimeNs) {
  TW_ASSERT(buffer < graph_.buffers.size());
  TW_ASSERT(graph_.buffers[buffer].role == BufferRole::kDestination);
  if (complete_[buffer]) violate(graph_.buffers[buffer].name() + ": completed twice");
  complete_[buffer] = true;
}

void BroadcastInvariants::check_at_end() {
  for (const TransferBuffer& b : graph_.buffers) {
    if (b.role == BufferRole::kIB && !freed_[b.id]) violate(b.name() + ": never freed");
  }
  for (uint32_t d : graph_.destinations) {
    if (!complete_[d] || landed_[d] != graph_.bytes) {
      violate(graph_.buffers[d].name() + ": ended with " + std::to_string(landed_[d]) + " of " +
              std::to_string(graph_.bytes) + " bytes");
    }
  }
}

void BroadcastInvariants::report_destination_mismatch(uint32_t buffer, const std::string& what) {
  // Kept even past the cap: there is at most one per destination, and wrong
  // bytes at a destination are what a user most needs to see.
  ++violation_count_;
  violations_.push_back(graph_.buffers[buffer].name() + ": " + what);
}

}  // namespace tensorwire::collectives
