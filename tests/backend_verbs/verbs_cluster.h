// Several ranks in one process, each with its own VerbsNic on the device the
// environment names, connected through a coordinator on 127.0.0.1. Set-up
// runs one thread per rank (each rank's connect_verbs_nic blocks until the
// whole mesh is up, as separate processes would); after that the test drives
// every rank's progress loop from its own thread, one rank after the other.
//
// The device comes from TENSORWIRE_RDMA_DEVICE and the rank's IPv4 address
// from TENSORWIRE_RDMA_ADDR (scripts/with_rdma.sh sets both). Without them,
// or when the device does not open, the tests skip.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend_verbs/verbs_nic.h"
#include "backend_verbs/verbs_nic_factory.h"

namespace tensorwire::verbs::testing {

// Why RDMA tests cannot run here; empty when they can.
const std::string& rdma_unavailable_reason();

#define TENSORWIRE_SKIP_WITHOUT_RDMA()                                                \
  do {                                                                                \
    const std::string& why = ::tensorwire::verbs::testing::rdma_unavailable_reason(); \
    if (!why.empty()) GTEST_SKIP() << why;                                            \
  } while (0)

class VerbsCluster {
 public:
  // Small queues, the environment's device and address.
  static VerbsNicOptions default_options();

  // `world` ranks connected to each other; the error of the first rank that
  // failed otherwise.
  static Result<std::unique_ptr<VerbsCluster>> start(uint32_t world,
                                                     const VerbsNicOptions& options);
  ~VerbsCluster();

  uint32_t world_size() const { return static_cast<uint32_t>(nics_.size()); }
  VerbsNic& nic(RankId r) { return *nics_[r]; }
  std::vector<Completion>& completions(RankId r) { return completions_[r]; }
  // The completion of wr_id on rank r, or null.
  const Completion* completion(RankId r, uint64_t wr_id) const;

  // Zero-filled host memory of `bytes`, registered on rank r; the cluster
  // owns the memory (freed after the NICs are gone).
  MemoryRegion region(RankId r, uint64_t bytes, Access access);
  // The bytes of a region made by region().
  std::span<std::byte> bytes_of(const MemoryRegion& region);

  // Closes rank r's NIC (its peers see the connection drop).
  void close_rank(RankId r) { nics_[r].reset(); }

  // Runs every rank's progress() until `done` holds; false after `timeout`.
  bool progress_until(const std::function<bool()>& done,
                      std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Until rank r holds at least `count` completions.
  bool progress_until_count(RankId r, size_t count,
                            std::chrono::milliseconds timeout = std::chrono::seconds(10));

  Status post(RankId from, RankId to, WorkOpcode opcode, const MemoryRegion& local, uint32_t length,
              uint64_t wr_id, uint64_t remote_addr = 0, uint32_t rkey = 0, uint32_t imm = 0);
  Status post_recv(RankId at, RankId from, const MemoryRegion& local, uint32_t length,
                   uint64_t wr_id);

 private:
  VerbsCluster() = default;

  // Declared first, destroyed last: the NICs deregister before it is freed.
  std::vector<std::unique_ptr<std::byte[]>> memory_;
  std::vector<std::unique_ptr<launch::TcpCoordinator>> coordinators_;
  std::vector<std::unique_ptr<VerbsNic>> nics_;
  std::vector<std::vector<Completion>> completions_;
};

// A recognisable byte pattern: byte i of a buffer seeded with `seed`.
std::byte pattern_byte(uint32_t seed, size_t i);
void fill_pattern(std::span<std::byte> bytes, uint32_t seed);

}  // namespace tensorwire::verbs::testing
