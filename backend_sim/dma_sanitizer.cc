#include "backend_sim/dma_sanitizer.h"

#include <algorithm>
#include <cstdio>

#include "core/assert.h"
#include "core/units_format.h"

namespace tensorwire::sim {
namespace {

const char* op_name(DmaOpKind kind) {
  switch (kind) {
    case DmaOpKind::kSend: return "send";
    case DmaOpKind::kRdmaWrite: return "RDMA write";
    case DmaOpKind::kRdmaWriteWithImm: return "RDMA write with immediate";
    case DmaOpKind::kRdmaRead: return "RDMA read";
    case DmaOpKind::kCopy: return "copy";
  }
  return "DMA";
}

std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

bool overlaps(uint64_t a, uint64_t a_end, uint64_t b, uint64_t b_end) {
  return a < b_end && b < a_end;
}

}  // namespace

std::string describe_dma(const DmaOp& op) {
  std::string text = op_name(op.kind);
  if (op.kind == DmaOpKind::kCopy) {
    text += " (rank " + std::to_string(op.initiator);
  } else {
    text += " wr " + std::to_string(op.wr_id) + " (rank " + std::to_string(op.initiator) +
            " -> rank " + std::to_string(op.peer);
  }
  text += ", posted at " + format_duration_ns(op.posted_ns) + ")";
  return text;
}

DmaSanitizer::DmaSanitizer(uint32_t ranks) : ranges_(ranks) {}

void DmaSanitizer::report(uint32_t rank, uint64_t base, uint64_t addr, uint64_t end,
                          const std::string& what, const Entry& in_flight, TimeNs now_ns) {
  if (problems_.size() >= kMaxProblems) return;
  TW_ASSERT(base <= addr);
  const uint64_t lo = std::max(addr, in_flight.addr);
  const uint64_t hi = std::min(end, in_flight.end);
  TW_ASSERT_MSG(lo < hi, "only overlapping ranges are reported");
  std::string text = "DMA sanitizer: rank " + std::to_string(rank) + ": buffer " + hex(base) +
                     "+[" + std::to_string(lo - base) + "," + std::to_string(hi - base) + ") " +
                     what + " at " + format_duration_ns(now_ns) + " while " +
                     describe_dma(in_flight.op) + (in_flight.write ? " still writes it" : " still reads it");
  Problem p = safety_problem(std::move(text), rank);
  const uint32_t other = in_flight.op.initiator == rank ? in_flight.op.peer : in_flight.op.initiator;
  if (other != rank) p.peer = other;
  problems_.push_back(std::move(p));
}

void DmaSanitizer::check_dma(uint64_t id, const DmaOp& op, const DmaRange& range, bool write,
                             TimeNs now_ns) {
  const uint64_t end = range.addr + range.length;
  for (const Entry& e : ranges_[range.rank]) {
    // Reading or writing what another DMA still writes; never the op against itself
    // (a copy within one buffer is the engine's business).
    if (!e.write || e.id == id || !overlaps(range.addr, end, e.addr, e.end)) continue;
    report(range.rank, range.addr, range.addr, end,
           std::string(write ? "written" : "read") + " by " + describe_dma(op), e, now_ns);
  }
}

void DmaSanitizer::begin(uint64_t id, const DmaOp& op, const DmaRange& read,
                         const DmaRange& write, TimeNs now_ns) {
  TW_ASSERT(read.rank < ranges_.size() && write.rank < ranges_.size());
  if (read.length > 0) {
    check_dma(id, op, read, /*write=*/false, now_ns);
    ranges_[read.rank].push_back(Entry{read.addr, read.addr + read.length, id, op, false});
  }
  if (write.length > 0) {
    check_dma(id, op, write, /*write=*/true, now_ns);
    ranges_[write.rank].push_back(Entry{write.addr, write.addr + write.length, id, op, true});
  }
}

void DmaSanitizer::erase(std::vector<Entry>& entries, uint64_t id, bool writes_only) {
  // Order does not matter to the checks, and a problem names the ops it
  // finds, whatever their order here: swap-remove.
  for (size_t i = 0; i < entries.size();) {
    if (entries[i].id == id && (entries[i].write || !writes_only)) {
      entries[i] = entries.back();
      entries.pop_back();
    } else {
      ++i;
    }
  }
}

void DmaSanitizer::end_write(uint64_t id, uint32_t write_rank) {
  TW_ASSERT(write_rank < ranges_.size());
  erase(ranges_[write_rank], id, /*writes_only=*/true);
}

void DmaSanitizer::end(uint64_t id, uint32_t read_rank, uint32_t write_rank) {
  TW_ASSERT(read_rank < ranges_.size() && write_rank < ranges_.size());
  erase(ranges_[read_rank], id, false);
  if (write_rank != read_rank) erase(ranges_[write_rank], id, false);
}

void DmaSanitizer::on_free(uint32_t rank, uint64_t addr, uint64_t length, TimeNs now_ns) {
  const uint64_t end = addr + length;
  for (const Entry& e : ranges_[rank]) {
    if (overlaps(addr, end, e.addr, e.end)) report(rank, addr, addr, end, "freed", e, now_ns);
  }
}

void DmaSanitizer::on_deregister(uint32_t rank, uint64_t addr, uint64_t length, TimeNs now_ns) {
  const uint64_t end = addr + length;
  for (const Entry& e : ranges_[rank]) {
    if (overlaps(addr, end, e.addr, e.end)) report(rank, addr, addr, end, "deregistered", e, now_ns);
  }
}

void DmaSanitizer::on_cpu_access(uint32_t rank, uint64_t buffer_addr, uint64_t offset,
                                 uint64_t length, bool write, TimeNs now_ns) {
  if (length == 0) return;
  const uint64_t addr = buffer_addr + offset;
  const uint64_t end = addr + length;
  for (const Entry& e : ranges_[rank]) {
    // A CPU read races a DMA write; a CPU write races both (it changes what a
    // DMA reads, or is overwritten by one).
    if ((e.write || write) && overlaps(addr, end, e.addr, e.end)) {
      report(rank, buffer_addr, addr, end, write ? "written by the CPU" : "read by the CPU", e,
             now_ns);
    }
  }
}

void DmaSanitizer::on_overlapping_allocation(uint32_t rank, uint64_t addr, uint64_t length,
                                             uint64_t other_addr, uint64_t other_length,
                                             TimeNs now_ns) {
  TW_ASSERT(rank < ranges_.size());
  if (problems_.size() >= kMaxProblems) return;
  problems_.push_back(safety_problem(
      "DMA sanitizer: rank " + std::to_string(rank) + ": allocation " + hex(addr) + "+[0," +
          std::to_string(length) + ") at " + format_duration_ns(now_ns) +
          " overlaps the live allocation " + hex(other_addr) + "+[0," +
          std::to_string(other_length) + ")",
      rank));
}

}  // namespace tensorwire::sim
