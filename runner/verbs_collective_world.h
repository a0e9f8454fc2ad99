// The CollectiveWorld (core/collective.h) of one rank in its own process on a
// real RDMA device: it drives this rank only (local_ranks() is {rank}), runs
// the progress loop until this rank's part is over and then, still serving
// its peers, until every rank's is (a coordinator barrier), and all-gathers
// the ranks' parts through the coordinator. With gpu_as_host its memory gives
// host memory for GPU allocations (backend_verbs/host_stand_in_memory.h).
//
// What stops the loop early (the NIC failing, a peer lost) is kept in
// problems() for the runner; a part that never ends is bounded by the phase
// timeout, after which the rank joins the barrier anyway, so the ranks still
// meet and gather what each found.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "backend_verbs/host_stand_in_memory.h"
#include "backend_verbs/verbs_rank_env.h"
#include "core/collective.h"
#include "launch/tcp_coordinator.h"

namespace tensorwire {

struct VerbsCollectiveWorldOptions {
  RankId rank = 0;
  uint32_t world = 1;
  bool gpu_as_host = false;
  // Bound on this rank's part, and on the barrier after it.
  std::chrono::milliseconds part_timeout{60'000};
  // Busy-poll this many idle turns before sleeping a little between turns.
  uint32_t idle_spins_before_sleep = 256;
};

class VerbsCollectiveWorld final : public CollectiveWorld {
 public:
  VerbsCollectiveWorld(verbs::VerbsRankEnv& env, launch::TcpCoordinator& coordinator,
                       VerbsCollectiveWorldOptions options);

  uint32_t world_size() const override { return options_.world; }
  std::vector<RankId> local_ranks() const override { return {options_.rank}; }
  RankEnv env(RankId rank) override;
  // Without a view of the other ranks, idle cannot be told from waiting:
  // runs until the part timeout.
  void run_until_idle() override;
  void run_until_done(const std::function<bool()>& done) override;
  Result<std::vector<std::string>> all_gather(std::string_view mine) override;
  void record_end() override;

  // When record_end() was called, on this rank's clock (0 before).
  TimeNs end_ns() const { return end_ns_; }
  uint64_t events() const { return events_; }
  const std::vector<Problem>& problems() const { return problems_; }

 private:
  // One turn of the progress loop; false when the rank cannot go on.
  bool turn(uint32_t& idle_turns);
  bool peers_still_there();

  verbs::VerbsRankEnv& env_;
  launch::TcpCoordinator& coordinator_;
  VerbsCollectiveWorldOptions options_;
  verbs::HostStandInMemory stand_in_;
  TimeNs end_ns_ = 0;
  uint64_t events_ = 0;
  std::vector<Problem> problems_;
  std::chrono::steady_clock::time_point next_peer_watch_{};
  bool coordinator_failed_ = false;
};

}  // namespace tensorwire
