#include "backend_sim/sim_copy_engine.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>

#include "core/assert.h"

namespace tensorwire::sim {

SimCopyEngine::SimCopyEngine(SimContext& context, SimMemorySpace& memory, uint32_t rank)
    : context_(context), memory_(memory), rank_(rank),
      engine_free_ns_(context.cluster.gpus_per_node, 0) {}

Status SimCopyEngine::submit(const Buffer& dst, uint64_t dst_offset, const Buffer& src,
                             uint64_t src_offset, uint64_t bytes, CopyDone done) {
  const bool host_to_host = !is_device(dst.kind) && !is_device(src.kind);
  for (const auto& [buffer, offset, what] :
       {std::tuple{dst, dst_offset, "dst"}, std::tuple{src, src_offset, "src"}}) {
    if (memory_.find(buffer.addr, buffer.length) == nullptr) {
      return {StatusCode::kInvalidArgument,
              std::string("copy engine: ") + what + " is not inside a live allocation"};
    }
    if (offset > buffer.length || bytes > buffer.length - offset) {
      return {StatusCode::kInvalidArgument,
              std::string("copy engine: ") + what + " range outside its buffer"};
    }
  }
  if (host_to_host) return submit_host_copy(dst, dst_offset, src, src_offset, bytes, std::move(done));
  const uint32_t gpu = is_device(src.kind) ? src.device : dst.device;
  if (gpu >= engine_free_ns_.size()) {
    return {StatusCode::kInvalidArgument, "copy engine: rank " + std::to_string(rank_) +
                                              " has no GPU " + std::to_string(gpu)};
  }
  // Device to device goes over NVLink where the node has it, else over PCIe.
  const bool nvlink = is_device(dst.kind) && is_device(src.kind) &&
                      context_.cluster.nvlink_bandwidth_bytes_per_s > 0;
  const double bandwidth = nvlink ? context_.cluster.nvlink_bandwidth_bytes_per_s
                                  : context_.cluster.pcie_bandwidth_bytes_per_s;
  const TimeNs latency = nvlink ? context_.cluster.nvlink_latency_ns : context_.cluster.pcie_latency_ns;
  const TimeNs start = std::max(context_.cpu_ready_ns(rank_), engine_free_ns_[gpu]);
  // Copy-engine noise (the cluster's jitter model) lengthens the copy itself:
  // the engine is busy for it, so the copies queued behind it wait too.
  const TimeNs busy_ns =
      transfer_time_ns(static_cast<double>(bytes), bandwidth) + context_.jitter.copy_ns();
  // One copy at a time per engine, in submission order: the engine's next
  // free time only moves forward (the cluster's costs were validated >= 0).
  TW_ASSERT_MSG(busy_ns >= 0 && latency >= 0, "a copy takes no negative time");
  TW_ASSERT(start >= context_.now());
  engine_free_ns_[gpu] = start + busy_ns;
  const TimeNs end = start + busy_ns + latency;
  context_.stats[rank_].copy_engine_bytes += bytes;
  context_.stats[rank_].copy_engine_copies += 1;
  context_.meter.add_copy(rank_, gpu, bytes, busy_ns);
  context_.ledger.add_copy(context_.transfer_tag, rank_, context_.now(), start, end);
  if (context_.tracing) {
    context_.trace.slice("node" + std::to_string(rank_) + "/copy" + std::to_string(gpu),
                         is_device(dst.kind) && is_device(src.kind) ? "device to device"
                         : is_device(dst.kind)                      ? "host to device"
                                                                    : "device to host",
                         start, end - start, std::to_string(bytes) + " bytes");
  }
  schedule_copy(end, dst, dst_offset, src, src_offset, bytes, std::move(done));
  return {};
}

Status SimCopyEngine::submit_host_copy(const Buffer& dst, uint64_t dst_offset, const Buffer& src,
                                       uint64_t src_offset, uint64_t bytes, CopyDone done) {
  // A memcpy on the rank's CPU, asynchronous like every other copy: it
  // completes when the CPU timeline has done it.
  const TimeNs cost_ns =
      transfer_time_ns(static_cast<double>(bytes), context_.cluster.host_memcpy_bandwidth_bytes_per_s);
  const TimeNs start = context_.cpu_ready_ns(rank_);
  const TimeNs end = context_.charge_cpu(rank_, cost_ns, "host to host copy");
  context_.ledger.add_copy(context_.transfer_tag, rank_, context_.now(), start, end);
  context_.stats[rank_].cpu_copy_bytes += bytes;
  context_.stats[rank_].cpu_copies += 1;
  schedule_copy(end, dst, dst_offset, src, src_offset, bytes, std::move(done));
  return {};
}

void SimCopyEngine::schedule_copy(TimeNs end, const Buffer& dst, uint64_t dst_offset,
                                  const Buffer& src, uint64_t src_offset, uint64_t bytes,
                                  CopyDone done) {
  TW_ASSERT_MSG(end >= context_.now(), "a copy completes no earlier than it was submitted");
  TW_ASSERT(done != nullptr);
  // The engine reads the source and writes the destination from submission
  // until the copy is done.
  const uint64_t id = context_.sanitizer.next_copy_id();
  context_.sanitizer.begin(id, DmaOp{DmaOpKind::kCopy, rank_, rank_, 0, context_.now()},
                           DmaRange{rank_, src.addr + src_offset, bytes},
                           DmaRange{rank_, dst.addr + dst_offset, bytes}, context_.now());
  // What the copy's callback posts was caused by what caused the copy (a
  // request staged through host memory still points at its write).
  // Likewise the transfer it works for.
  const uint64_t cause_seq = context_.cause_seq;
  const uint64_t tag = context_.transfer_tag;
  context_.events.schedule_at(
      end, rank_, "copy", context_.events.what(dst.addr, dst_offset, src.addr, src_offset, bytes),
      [this, id, dst, dst_offset, src, src_offset, bytes, cause_seq, tag, done = std::move(done)] {
        context_.sanitizer.end(id, rank_, rank_);
        if (context_.crashed[rank_]) return;
        Status st;
        if (bytes > 0) {
          if (memory_.find(src.addr + src_offset, bytes) == nullptr ||
              memory_.find(dst.addr + dst_offset, bytes) == nullptr) {
            st = Status(StatusCode::kInvalidArgument,
                        "copy engine: a buffer was freed before the copy finished");
          } else {
            // Empty spans when a side holds no bytes (timing-only mode).
            memory_.join_if_sparse(src.addr + src_offset, dst.addr + dst_offset, bytes);
            std::span<std::byte> from = memory_.bytes_at(src.addr + src_offset, bytes);
            std::span<std::byte> to = from.empty() ? from : memory_.bytes_at(dst.addr + dst_offset, bytes, true);
            if (!from.empty() && !to.empty()) std::memmove(to.data(), from.data(), bytes);
          }
        }
        const uint64_t outer = std::exchange(context_.cause_seq, cause_seq);
        const uint64_t outer_tag = std::exchange(context_.transfer_tag, tag);
        done(st);
        context_.cause_seq = outer;
        context_.transfer_tag = outer_tag;
      });
}

}  // namespace tensorwire::sim
