#include "core/counting_nic.h"

#include <utility>

namespace tensorwire {

Result<MemoryRegion> CountingNic::register_memory(const Buffer& buffer, Access access) {
  Result<MemoryRegion> region = inner().register_memory(buffer, access);
  if (region.is_ok()) {
    ++counters_.registrations;
    counters_.registered_bytes += buffer.length;
  }
  return region;
}

Status CountingNic::deregister_memory(const MemoryRegion& region) {
  Status st = inner().deregister_memory(region);
  if (st.is_ok()) ++counters_.deregistrations;
  return st;
}

Status CountingNic::post_send(QpHandle qp, const SendWorkRequest& wr) {
  Status st = inner().post_send(qp, wr);
  if (!st.is_ok()) return st;
  switch (wr.opcode) {
    case WorkOpcode::kSend:
      ++counters_.sends;
      counters_.bytes_posted += wr.local.length;
      break;
    case WorkOpcode::kRdmaWrite:
      ++counters_.rdma_writes;
      counters_.bytes_posted += wr.local.length;
      break;
    case WorkOpcode::kRdmaWriteWithImm:
      ++counters_.rdma_writes_with_imm;
      counters_.bytes_posted += wr.local.length;
      break;
    case WorkOpcode::kRdmaRead:
      ++counters_.rdma_reads;
      counters_.rdma_read_bytes += wr.local.length;
      break;
  }
  return st;
}

void CountingNic::set_completion_handler(CompletionHandler handler) {
  inner().set_completion_handler([this, handler = std::move(handler)](const Completion& c) {
    if (c.status != CompletionStatus::kSuccess) ++counters_.completions_error;
    if (handler) handler(c);
  });
}

}  // namespace tensorwire
