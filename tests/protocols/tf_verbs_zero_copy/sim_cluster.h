// A simulated cluster with one RdmaRendezvous per rank, plus helpers to make
// source tensors with known content and to check what arrived. Used by the
// integration and property tests of the zero-copy verbs protocol.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend_sim/simulator.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_rendezvous.h"
#include "core/trace_sink.h"

namespace tensorwire::tf_verbs::testing {

// What a Recv's done callback reported (and how often it ran).
struct RecvRecord {
  int calls = 0;
  Status status;
  Tensor tensor;
};

class SimCluster {
 public:
  explicit SimCluster(Cluster config = {}, TfVerbsOptions options = {},
                      bool payload = true, uint64_t seed = 1);
  ~SimCluster();

  sim::Simulator& sim() { return *sim_; }
  RdmaRendezvous& rdv(RankId r) { return *rdv_[r]; }
  RankEnv env(RankId r) { return sim_->env(r); }
  uint32_t size() const { return static_cast<uint32_t>(rdv_.size()); }

  // A DMA-able source tensor on rank r filled with a pattern of `content_seed`.
  Tensor make_tensor(RankId r, MemoryKind kind, uint32_t device, DataType dtype,
                     TensorShape shape, uint64_t content_seed);
  static Tensor make_string_tensor(TensorShape shape, uint64_t content_seed);
  static Tensor make_dead_tensor(DataType dtype, TensorShape shape);
  // ok when `got` on rank r equals `sent` (meta-data and bytes / strings).
  Status check_same(RankId r, const Tensor& got, const Tensor& sent_pattern,
                    uint64_t content_seed);

  // Recv whose outcome lands in `record`.
  void recv(RankId dst, RankId src, const std::string& name, uint64_t step_id, RecvArgs args,
            RecvRecord& record);

 private:
  NullTraceSink trace_;
  std::unique_ptr<sim::Simulator> sim_;
  std::vector<std::unique_ptr<RdmaRendezvous>> rdv_;
  std::vector<std::pair<RankId, Buffer>> sources_;
};

std::vector<std::byte> pattern_bytes(uint64_t seed, uint64_t bytes);
std::vector<std::string> pattern_strings(uint64_t seed, uint64_t count);

}  // namespace tensorwire::tf_verbs::testing
