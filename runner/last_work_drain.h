// The end of a rank's run on a real NIC: every rank keeps polling, and so keeps
// answering its peers, until every rank has got its own protocol work done,
// before anyone tears down. A protocol whose last messages wait for the peer's
// answer (the legacy protocol's ACKs) gets it, where a rank that stopped
// polling as soon as its own work was done would leave its peer waiting.
//
// Three stretches, all bounded by one deadline:
//   1. poll until this rank's own work is done, then arrive at one more
//      barrier ("this rank is drained");
//   2. keep polling until every rank has arrived: a peer's last messages still
//      come in and are answered;
//   3. once the barrier agreed, poll until this rank's work is done again. An
//      answer given in stretch 2 (an ACK posted for a peer's last message) is
//      work of this rank's whose send completion can still be in the
//      completion queue when the barrier's word comes. Every peer had its own
//      work done when it arrived, so what is left here is local completions,
//      which need no peer to poll. A barrier that failed (a peer died, its
//      deadline passed) ends the drain at once: the run has failed already.
//
// A template over the NIC's poll, the work count and the gate, so the loop is
// tested without a device (tests/backend_verbs/last_work_drain_test.cc).
#pragma once

#include <chrono>
#include <cstdint>
#include <thread>

#include "core/assert.h"
#include "core/status.h"

namespace tensorwire {

// `poll_nic()` returns a Result<uint32_t> of the events it handled;
// `outstanding_work()` the protocol's work in flight; `gate` offers
// phase_done(step, phase, agreed), poll() and waiting() as CoordinatorPhaseGate
// does. `drain_step_id` names the extra barrier (one past the workload's last
// step). Returns the events handled.
template <class PollNic, class OutstandingWork, class Gate>
uint64_t drain_last_work(PollNic&& poll_nic, OutstandingWork&& outstanding_work, Gate& gate,
                         uint64_t drain_step_id, std::chrono::steady_clock::time_point until) {
  uint64_t events = 0;
  bool arrived = false;
  bool barrier_over = false;
  bool everyone_drained = false;  // the barrier agreed
  while (std::chrono::steady_clock::now() < until) {
    auto n = poll_nic();
    if (!n.is_ok()) break;
    events += *n;
    if (!arrived && outstanding_work() == 0) {
      arrived = true;
      gate.phase_done(drain_step_id, 0, [&](const Status& st) {
        barrier_over = true;
        everyone_drained = st.is_ok();
      });
    }
    if (arrived && !barrier_over) gate.poll();
    if (barrier_over && (!everyone_drained || outstanding_work() == 0)) break;
  }
  // A barrier still pending is driven to its end before the coordinator
  // gathers the outcomes (bounded by the barrier's own deadline).
  while (gate.waiting()) {
    if (!gate.poll()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  TW_ASSERT(barrier_over || !arrived);
  return events;
}

}  // namespace tensorwire
