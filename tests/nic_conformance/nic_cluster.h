// What the NIC conformance suite (nic_conformance.h) asks of a backend: a
// "NIC cluster fixture", a class that starts a few connected ranks and drives
// their progress, plus NicRig, the helpers every test body uses on top of it
// (regions, posting, recorded completions), written against core/ only.
#pragma once

#include <gtest/gtest.h>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/memory.h"
#include "core/nic.h"
#include "core/rank_env.h"
#include "core/status.h"

namespace tensorwire::nic_conformance {

// What a test asks of the cluster it starts. Both backends honour every field.
struct NicClusterOptions {
  uint32_t world = 2;
  uint32_t send_queue_depth = 16;
  // Receiver-not-ready retries before kRnrRetryExceeded; 7 retries forever.
  uint8_t rnr_retry_count = 7;
};

// A backend's cluster of connected ranks, one RankEnv each:
//   kBackend              a name for messages ("simulator", "verbs")
//   unavailable_reason()  why this backend cannot run here; empty when it can
//   start(options)        the ranks, every queue pair connected
//   env(r)                rank r's nic, memory, clock...
//   progress_until(done)  drives every rank's progress until done() holds;
//                         false when it never will (no event left, timeout)
//   diagnostics(r)        the backend's own account of rank r's errors, for
//                         failure messages ("" when it keeps none)
// Where the backends legitimately differ, the fixture says so in a trait
// with a comment; the test bodies read the trait and have no #ifdefs.
template <typename C>
concept NicClusterFixture = requires(C& cluster, const NicClusterOptions& options, RankId r,
                                     const std::function<bool()>& done) {
  { C::kBackend } -> std::convertible_to<const char*>;
  { C::unavailable_reason() } -> std::convertible_to<std::string>;
  { C::start(options) } -> std::same_as<Result<std::unique_ptr<C>>>;
  { cluster.env(r) } -> std::same_as<RankEnv>;
  { cluster.progress_until(done) } -> std::same_as<bool>;
  { cluster.diagnostics(r) } -> std::convertible_to<std::string>;
};

// The local sge for [offset, offset + length) of a region.
inline Sge sge_of(const MemoryRegion& region, uint64_t offset, uint32_t length) {
  return Sge{region.addr + offset, length, region.lkey};
}

// A recognisable byte pattern: no two seeds or offsets alike for long.
inline std::vector<std::byte> pattern(uint32_t seed, size_t length) {
  std::vector<std::byte> bytes(length);
  uint32_t x = seed * 2654435761u + 12345u;
  for (std::byte& b : bytes) {
    x = x * 1664525u + 1013904223u;
    b = std::byte(static_cast<uint8_t>(x >> 24));
  }
  return bytes;
}

// A started cluster and everything a test body does with it.
template <NicClusterFixture Cluster>
class NicRig {
 public:
  ::testing::AssertionResult start(const NicClusterOptions& options = {}) {
    Result<std::unique_ptr<Cluster>> started = Cluster::start(options);
    if (!started.is_ok()) {
      return ::testing::AssertionFailure()
             << Cluster::kBackend << " cluster did not start: " << started.status().to_string();
    }
    cluster_ = std::move(*started);
    completions_.assign(options.world, {});
    for (RankId r = 0; r < options.world; ++r) {
      nic(r).set_completion_handler(
          [this, r](const Completion& c) { completions_[r].push_back(c); });
    }
    return ::testing::AssertionSuccess();
  }

  Nic& nic(RankId r) { return cluster_->env(r).nic; }
  MemorySpace& memory(RankId r) { return cluster_->env(r).memory; }
  QpHandle qp(RankId r, RankId peer) { return nic(r).queue_pair_to(peer); }
  QpState state(RankId r, RankId peer) { return nic(r).queue_pair_state(qp(r, peer)); }
  std::string diagnostics(RankId r) { return cluster_->diagnostics(r); }

  // Zero-filled host memory of `bytes` on rank r, registered with `access`.
  MemoryRegion region(RankId r, uint64_t bytes, Access access) {
    Result<Buffer> buffer = memory(r).allocate(MemoryKind::kHostPinned, 0, bytes);
    EXPECT_TRUE(buffer.is_ok()) << buffer.status().to_string();
    if (!buffer.is_ok()) return {};
    Result<MemoryRegion> registered = nic(r).register_memory(*buffer, access);
    EXPECT_TRUE(registered.is_ok()) << registered.status().to_string();
    return registered.is_ok() ? *registered : MemoryRegion{};
  }
  // Writes pattern(seed) over the whole region; returns what was written.
  std::vector<std::byte> fill(RankId r, const MemoryRegion& region, uint32_t seed) {
    std::vector<std::byte> bytes = pattern(seed, region.length);
    EXPECT_TRUE(memory(r).write_bytes(buffer_of(region), 0, bytes).is_ok());
    return bytes;
  }
  std::vector<std::byte> read(RankId r, const MemoryRegion& region, uint64_t offset,
                              uint64_t length) {
    std::vector<std::byte> bytes(length);
    EXPECT_TRUE(memory(r).read_bytes(buffer_of(region), offset, bytes).is_ok());
    return bytes;
  }

  Status post(RankId from, RankId to, WorkOpcode opcode, Sge local, uint64_t wr_id,
              uint64_t remote_addr = 0, uint32_t rkey = 0, uint32_t imm = 0) {
    SendWorkRequest wr;
    wr.wr_id = wr_id;
    wr.opcode = opcode;
    wr.local = local;
    wr.remote_addr = remote_addr;
    wr.rkey = rkey;
    wr.imm_data = imm;
    return nic(from).post_send(qp(from, to), wr);
  }
  // A send, write or read whose remote side is [offset, +length) of `remote`.
  Status post_to(RankId from, RankId to, WorkOpcode opcode, Sge local, uint64_t wr_id,
                 const MemoryRegion& remote, uint64_t offset = 0, uint32_t imm = 0) {
    return post(from, to, opcode, local, wr_id, remote.addr + offset, remote.rkey, imm);
  }
  Status post_recv(RankId at, RankId from, Sge local, uint64_t wr_id) {
    return nic(at).post_recv(qp(at, from), RecvWorkRequest{wr_id, local});
  }

  std::vector<Completion>& completions(RankId r) { return completions_[r]; }
  // The completion of wr_id on rank r, or null.
  const Completion* completion(RankId r, uint64_t wr_id) const {
    for (const Completion& c : completions_[r]) {
      if (c.wr_id == wr_id) return &c;
    }
    return nullptr;
  }
  bool progress_until(const std::function<bool()>& done) {
    return cluster_->progress_until(done);
  }
  // Until rank r holds at least `count` completions.
  bool progress_until_count(RankId r, size_t count) {
    return progress_until([this, r, count] { return completions_[r].size() >= count; });
  }
  // Until every rank r holds at least counts[r] completions.
  bool progress_until_counts(const std::vector<size_t>& counts) {
    return progress_until([this, &counts] {
      for (size_t r = 0; r < counts.size(); ++r) {
        if (completions_[r].size() < counts[r]) return false;
      }
      return true;
    });
  }

 private:
  static Buffer buffer_of(const MemoryRegion& region) {
    return Buffer{region.addr, region.length, region.kind, region.device};
  }

  // Declared first, destroyed last: the handlers push here until the cluster is gone.
  std::vector<std::vector<Completion>> completions_;
  std::unique_ptr<Cluster> cluster_;
};

}  // namespace tensorwire::nic_conformance
