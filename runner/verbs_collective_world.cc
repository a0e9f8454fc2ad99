#include "runner/verbs_collective_world.h"

#include <thread>

#include "core/assert.h"
#include "launch/blob_all_gather.h"

namespace tensorwire {

using WallClock = std::chrono::steady_clock;

VerbsCollectiveWorld::VerbsCollectiveWorld(verbs::VerbsRankEnv& env,
                                           launch::TcpCoordinator& coordinator,
                                           VerbsCollectiveWorldOptions options)
    : env_(env), coordinator_(coordinator), options_(options), stand_in_(env.memory()) {}

RankEnv VerbsCollectiveWorld::env(RankId rank) {
  TW_ASSERT_MSG(rank == options_.rank, "a verbs world drives only its own rank");
  RankEnv e = env_.env();
  if (!options_.gpu_as_host) return e;
  return RankEnv{e.nic, e.clock, e.copy_engine, stand_in_, e.trace};
}

void VerbsCollectiveWorld::run_until_idle() {
  run_until_done([] { return false; });
}

// Whether every peer is still there, looked at once a millisecond (a closed
// connection means a rank died: waiting for its part would be in vain).
bool VerbsCollectiveWorld::peers_still_there() {
  const WallClock::time_point now = WallClock::now();
  if (now < next_peer_watch_) return true;
  next_peer_watch_ = now + std::chrono::milliseconds(1);
  Status st = coordinator_.watch_peers();
  if (st.is_ok()) return true;
  problems_.push_back(status_problem("rank " + std::to_string(options_.rank) + ": " + st.message(),
                                     st, options_.rank));
  coordinator_failed_ = true;
  return false;
}

bool VerbsCollectiveWorld::turn(uint32_t& idle_turns) {
  Result<uint32_t> n = env_.poll();
  if (!n.is_ok()) {
    problems_.push_back(status_problem("rank " + std::to_string(options_.rank) +
                                           ": the NIC failed: " + n.status().message(),
                                       n.status(), options_.rank));
    return false;
  }
  events_ += *n;
  if (*n > 0) {
    idle_turns = 0;
  } else if (++idle_turns > options_.idle_spins_before_sleep) {
    // Ranks sharing few cores must leave some to the others.
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return true;
}

// Until this rank's part is over (or its time is up), then on, answering
// the peers' messages and completing its last work, until every rank has
// arrived at the barrier that says the same of its part.
void VerbsCollectiveWorld::run_until_done(const std::function<bool()>& done) {
  const WallClock::time_point part_deadline = WallClock::now() + options_.part_timeout;
  bool arrived = false;
  bool nic_ok = true;
  uint32_t idle_turns = 0;
  while (!coordinator_failed_) {
    if (nic_ok) nic_ok = turn(idle_turns);
    if (!peers_still_there()) return;
    if (!arrived && (!nic_ok || done() || WallClock::now() > part_deadline)) {
      arrived = true;
      if (Status st = coordinator_.start_barrier(options_.part_timeout); !st.is_ok()) {
        problems_.push_back(status_problem("rank " + std::to_string(options_.rank) +
                                               ": the barrier after the broadcast: " + st.message(),
                                           st, options_.rank));
        return;
      }
    }
    if (!arrived) continue;
    if (std::optional<Status> agreed = coordinator_.poll_barrier()) {
      if (!agreed->is_ok()) {
        problems_.push_back(status_problem("rank " + std::to_string(options_.rank) +
                                               ": the barrier after the broadcast: " +
                                               agreed->message(),
                                           *agreed, options_.rank));
      }
      return;
    }
    if (!nic_ok) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

Result<std::vector<std::string>> VerbsCollectiveWorld::all_gather(std::string_view mine) {
  return launch::all_gather_blobs(coordinator_, mine);
}

void VerbsCollectiveWorld::record_end() {
  TW_ASSERT_MSG(end_ns_ == 0, "a run ends once");
  end_ns_ = env_.clock().now_ns();
}

}  // namespace tensorwire
