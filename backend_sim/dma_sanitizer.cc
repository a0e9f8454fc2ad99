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

DmaSanitizer::DmaSanitizer(uint32_t ranks) : ranges_(ranks), writes_(ranks, 0) {}

void DmaSanitizer::report(uint32_t rank, uint64_t base, uint64_t addr, uint64_t end,
                          const std::string& what, const InFlightDma& in_flight, TimeNs now_ns) {
  if (problems_.size() >= kMaxProblems) return;
  const DmaOp& op = in_flight.op;
  TW_ASSERT(base <= addr);
  const uint64_t lo = std::max(addr, in_flight.addr);
  const uint64_t hi = std::min(end, in_flight.end);
  TW_ASSERT_MSG(lo < hi, "only overlapping ranges are reported");
  std::string text = "DMA sanitizer: rank " + std::to_string(rank) + ": buffer " + hex(base) +
                     "+[" + std::to_string(lo - base) + "," + std::to_string(hi - base) + ") " +
                     what + " at " + format_duration_ns(now_ns) + " while " +
                     describe_dma(op) + (in_flight.write ? " still writes it" : " still reads it");
  Problem p = safety_problem(std::move(text), rank);
  const uint32_t other = op.initiator == rank ? op.peer : op.initiator;
  if (other != rank) p.peer = other;
  problems_.push_back(std::move(p));
}

void DmaSanitizer::report_dma(const DmaOp& op, const DmaRange& range, bool write,
                              const InFlightDma& in_flight, TimeNs now_ns) {
  TW_ASSERT(range.rank < ranges_.size() && (write || writes_[range.rank] > 0));
  report(range.rank, range.addr, range.addr, range.addr + range.length,
         std::string(write ? "written" : "read") + " by " + describe_dma(op), in_flight, now_ns);
}

void DmaSanitizer::on_free(uint32_t rank, uint64_t addr, uint64_t length, TimeNs now_ns) {
  const uint64_t end = addr + length;
  ranges_[rank].for_each_overlapping(addr, end, [&](const InFlightDma& e) {
    report(rank, addr, addr, end, "freed", e, now_ns);
  });
}

void DmaSanitizer::on_deregister(uint32_t rank, uint64_t addr, uint64_t length, TimeNs now_ns) {
  const uint64_t end = addr + length;
  ranges_[rank].for_each_overlapping(addr, end, [&](const InFlightDma& e) {
    report(rank, addr, addr, end, "deregistered", e, now_ns);
  });
}

void DmaSanitizer::on_cpu_access(uint32_t rank, uint64_t buffer_addr, uint64_t offset,
                                 uint64_t length, bool write, TimeNs now_ns) {
  if (length == 0) return;
  const uint64_t addr = buffer_addr + offset;
  const uint64_t end = addr + length;
  ranges_[rank].for_each_overlapping(addr, end, [&](const InFlightDma& e) {
    // A CPU read races a DMA write; a CPU write races both (it changes what a
    // DMA reads, or is overwritten by one).
    if (e.write || write) {
      report(rank, buffer_addr, addr, end, write ? "written by the CPU" : "read by the CPU", e,
             now_ns);
    }
  });
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
