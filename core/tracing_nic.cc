#include "core/tracing_nic.h"

#include <algorithm>
#include <string>
#include <utility>

namespace tensorwire {
namespace {

std::string node_track(RankId rank, const char* what, RankId peer) {
  return "node" + std::to_string(rank) + what + std::to_string(peer);
}

}  // namespace

TracingNic::TracingNic(Nic& inner, const Clock& clock, TraceSink& trace)
    : ForwardingNic(inner), clock_(clock), trace_(trace), posted_(inner.world_size()) {}

Result<MemoryRegion> TracingNic::register_memory(const Buffer& buffer, Access access) {
  const TimeNs began = clock_.now_ns();
  Result<MemoryRegion> region = inner().register_memory(buffer, access);
  trace_.slice("rank " + std::to_string(rank()) + "/cpu", "register memory", began,
               clock_.now_ns() - began,
               std::to_string(buffer.length) + " bytes" + (region.is_ok() ? "" : ", failed"));
  return region;
}

Status TracingNic::deregister_memory(const MemoryRegion& region) {
  const TimeNs began = clock_.now_ns();
  Status st = inner().deregister_memory(region);
  trace_.slice("rank " + std::to_string(rank()) + "/cpu", "deregister memory", began,
               clock_.now_ns() - began,
               std::to_string(region.length) + " bytes" + (st.is_ok() ? "" : ", failed"));
  return st;
}

Status TracingNic::post_send(QpHandle qp, const SendWorkRequest& wr) {
  const TimeNs posted_ns = clock_.now_ns();
  Status st = inner().post_send(qp, wr);
  const TimeNs post_call_ns = clock_.now_ns() - posted_ns;
  // The inner NIC has checked the handle: it names a peer below world_size.
  if (st.is_ok() && qp.id >= 1 && qp.id - 1 < posted_.size()) {
    posted_[qp.id - 1].push_back(
        Posted{wr.wr_id, wr.opcode, wr.local.length, posted_ns, post_call_ns});
  }
  return st;
}

void TracingNic::set_completion_handler(CompletionHandler handler) {
  inner().set_completion_handler([this, handler = std::move(handler)](const Completion& c) {
    trace_completion(c);
    if (handler) handler(c);
  });
}

void TracingNic::trace_completion(const Completion& c) {
  const TimeNs now = clock_.now_ns();
  const RankId me = rank();
  const bool ok = c.status == CompletionStatus::kSuccess;
  const std::string failed = ok ? "" : std::string(", failed: ") + completion_status_name(c.status);
  if (c.opcode == CompletionOpcode::kRecv || c.opcode == CompletionOpcode::kRecvRdmaWithImm) {
    std::string detail = "rank " + std::to_string(c.peer) + " -> rank " + std::to_string(me) +
                         ", " + std::to_string(c.byte_len) + " bytes";
    if (c.has_imm) detail += ", imm " + std::to_string(c.imm_data);
    trace_.instant(node_track(me, "/nic rx from node", c.peer),
                   c.opcode == CompletionOpcode::kRecv ? "recv" : "recv rdma with imm", now,
                   detail + failed);
    return;
  }
  if (c.peer >= posted_.size()) return;
  std::deque<Posted>& queue = posted_[c.peer];
  auto it = std::find_if(queue.begin(), queue.end(),
                         [&c](const Posted& p) { return p.wr_id == c.wr_id; });
  if (it == queue.end()) return;  // posted before this NIC was in place
  const Posted p = *it;
  queue.erase(it);
  trace_.slice(node_track(me, "/nic tx to node", c.peer), work_opcode_name(p.opcode), p.posted_ns,
               now - p.posted_ns,
               "rank " + std::to_string(me) + " -> rank " + std::to_string(c.peer) + ", " +
                   std::to_string(p.bytes) + " bytes, the post took " +
                   std::to_string(p.post_call_ns / 1000) + " us" + failed);
}

}  // namespace tensorwire
