// Minimal NIC and memory fakes for unit tests of the protocol's building
// blocks (RdmaMemoryMgr): registration and allocation bookkeeping only, no
// traffic. Integration tests use backend_sim instead.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "core/memory.h"
#include "core/nic.h"

namespace tensorwire::tf_verbs::testing {

class FakeMemory final : public MemorySpace {
 public:
  Result<Buffer> allocate(MemoryKind kind, uint32_t device, uint64_t bytes) override {
    if (fail_next_allocation) {
      fail_next_allocation = false;
      return Status(StatusCode::kOutOfMemory, "fake allocation failure");
    }
    Buffer b{next_addr_, bytes, kind, device};
    next_addr_ += (bytes == 0 ? 1 : bytes) + 4096;  // gaps: adjacent buffers never touch
    live[b.addr] = b;
    ++allocations;
    return b;
  }
  void free(const Buffer& buffer) override {
    live.erase(buffer.addr);
    ++frees;
  }
  bool holds_payload() const override { return false; }
  std::span<std::byte> host_view(const Buffer&) override { return {}; }
  Status cpu_copy(const Buffer&, uint64_t, const Buffer&, uint64_t, uint64_t) override {
    return Status::ok();
  }
  Status write_bytes(const Buffer&, uint64_t, std::span<const std::byte>) override {
    return Status::ok();
  }
  Status read_bytes(const Buffer&, uint64_t, std::span<std::byte>) override {
    return Status::ok();
  }

  std::map<uint64_t, Buffer> live;
  uint64_t allocations = 0;
  uint64_t frees = 0;
  bool fail_next_allocation = false;

 private:
  uint64_t next_addr_ = 0x10000;
};

class FakeNic final : public Nic {
 public:
  RankId rank() const override { return 0; }
  uint32_t world_size() const override { return 2; }
  QpHandle queue_pair_to(RankId peer) const override { return QpHandle{peer}; }
  QpState queue_pair_state(QpHandle) const override { return QpState::kReadyToSend; }
  uint32_t send_queue_depth() const override { return 16; }
  Result<MemoryRegion> register_memory(const Buffer& buffer, Access access) override {
    if (!is_nic_reachable(buffer.kind)) {
      return Status(StatusCode::kInvalidArgument, "not registrable");
    }
    MemoryRegion r{buffer.addr, buffer.length, next_key_, next_key_ + 1, access, buffer.kind,
                   buffer.device};
    next_key_ += 2;
    registered[r.addr] = r;
    ++registrations;
    return r;
  }
  Status deregister_memory(const MemoryRegion& region) override {
    registered.erase(region.addr);
    ++deregistrations;
    return Status::ok();
  }
  Status post_send(QpHandle, const SendWorkRequest&) override { return Status::ok(); }
  Status post_recv(QpHandle, const RecvWorkRequest&) override { return Status::ok(); }
  void set_completion_handler(CompletionHandler) override {}

  std::map<uint64_t, MemoryRegion> registered;
  uint64_t registrations = 0;
  uint64_t deregistrations = 0;

 private:
  uint32_t next_key_ = 100;
};

}  // namespace tensorwire::tf_verbs::testing
