// The DMA sanitizer: AddressSanitizer's idea for the NIC and the copy
// engines. It keeps, per rank, the ranges every in-flight DMA reads and writes
// (each RDMA send / write / read and each copy, from post to the completion
// that ends it) and checks the simulator's memory events against them:
//   - memory freed or deregistered while a DMA that touches it is in flight;
//   - a DMA or a CPU access (read_bytes, write_bytes, cpu_copy) to a range an
//     in-flight DMA writes (a producer/consumer race), and a DMA or CPU write
//     to a range an in-flight DMA reads (the NIC or engine may still read it);
//   - two in-flight DMA writes to overlapping ranges;
//   - two live allocations that overlap.
// Each violation is a safety Problem naming the rank, the buffer range and
// both operations, kept in the order found (simulated time order), so a run
// is still a pure function of its inputs. Protocol-neutral: it watches the
// simulated hardware, never a protocol.
//
// Also flagged: a DMA write over a range an in-flight DMA reads (the
// simulator snapshots a source when the NIC takes it, so the bytes come out
// right here; on hardware the NIC may read the new ones). Deliberately not
// flagged: the buffer of a posted receive (the NIC owns it until the receive completes, but protocols
// legitimately recycle ring slots they re-post); host_view (a protocol's own
// view of host memory: whether it reads or writes is not known).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend_sim/dma_range_set.h"
#include "core/clock.h"
#include "core/problem.h"

namespace tensorwire::sim {

struct DmaRange {
  uint32_t rank = 0;
  uint64_t addr = 0;
  uint64_t length = 0;
};

class DmaSanitizer {
 public:
  // At most this many problems are kept: one planted bug can repeat its
  // violation on every step, and the first few say everything.
  static constexpr size_t kMaxProblems = 64;

  explicit DmaSanitizer(uint32_t ranks);

  // Ids for copies, apart from the transport's work request sequence numbers.
  uint64_t next_copy_id() { return kCopyIdBit | next_copy_++; }

  // DMA `id` starts: it reads `read` and writes `write` until end(id) (the
  // write side may end earlier, with end_write: the bytes have landed).
  // Inline: they run for every work request and copy, and the event loop's
  // rate must not notice (docs/PERFORMANCE.md). The overlap checks run only
  // where some DMA writes.
  void begin(uint64_t id, const DmaOp& op, const DmaRange& read, const DmaRange& write,
             TimeNs now_ns) {
    if (read.length > 0) {
      if (writes_[read.rank] > 0) check_dma(id, op, read, /*write=*/false, now_ns);
      ranges_[read.rank].add(read.addr, read.length, id, op, false);
    }
    if (write.length > 0) {
      // A write races every in-flight DMA of its range, reads too: the NIC
      // or engine still reading it may read either bytes.
      if (!ranges_[write.rank].empty()) check_dma(id, op, write, /*write=*/true, now_ns);
      ranges_[write.rank].add(write.addr, write.length, id, op, true);
      ++writes_[write.rank];
    }
  }
  void end_write(uint64_t id, uint32_t write_rank) { erase(write_rank, id, /*writes_only=*/true); }
  void end(uint64_t id, uint32_t read_rank, uint32_t write_rank) {
    erase(read_rank, id, false);
    if (write_rank != read_rank) erase(write_rank, id, false);
  }

  // Memory events of `rank`.
  void on_free(uint32_t rank, uint64_t addr, uint64_t length, TimeNs now_ns);
  void on_deregister(uint32_t rank, uint64_t addr, uint64_t length, TimeNs now_ns);
  // The CPU reads or writes [offset, +length) of the buffer at buffer_addr.
  void on_cpu_access(uint32_t rank, uint64_t buffer_addr, uint64_t offset, uint64_t length,
                     bool write, TimeNs now_ns);
  // A new allocation [addr, +length) overlaps the live one [other_addr, +other_length).
  void on_overlapping_allocation(uint32_t rank, uint64_t addr, uint64_t length,
                                 uint64_t other_addr, uint64_t other_length, TimeNs now_ns);

  const std::vector<Problem>& problems() const { return problems_; }
  size_t in_flight(uint32_t rank) const { return ranges_[rank].size(); }

 private:
  static constexpr uint64_t kCopyIdBit = 1ull << 63;
  // Reading what another DMA still writes, or writing what another DMA still
  // reads or writes; never the op against itself (a copy within one buffer is
  // the engine's business).
  void check_dma(uint64_t id, const DmaOp& op, const DmaRange& range, bool write, TimeNs now_ns) {
    ranges_[range.rank].for_each_overlapping(range.addr, range.addr + range.length,
                                             [&](const InFlightDma& e) {
      if ((e.write || write) && e.id != id) report_dma(op, range, write, e, now_ns);
    });
  }
  void report_dma(const DmaOp& op, const DmaRange& range, bool write, const InFlightDma& in_flight,
                  TimeNs now_ns);
  // [addr, end) of the buffer at `base` meets `in_flight`'s range.
  void report(uint32_t rank, uint64_t base, uint64_t addr, uint64_t end, const std::string& what,
              const InFlightDma& in_flight, TimeNs now_ns);
  void erase(uint32_t rank, uint64_t id, bool writes_only) {
    if (writes_only && writes_[rank] == 0) return;
    writes_[rank] -= ranges_[rank].erase(id, writes_only);
  }

  std::vector<DmaRangeSet> ranges_;  // per rank: every in-flight DMA's ranges there
  std::vector<uint64_t> writes_;            // per rank: how many of those write
  std::vector<Problem> problems_;
  uint64_t next_copy_ = 1;
};

// "RDMA write wr 17 (rank 0 -> rank 1, posted at 1.20 us)", "copy (rank 0, posted at 3 us)".
std::string describe_dma(const DmaOp& op);

}  // namespace tensorwire::sim
