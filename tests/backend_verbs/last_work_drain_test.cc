// The end of a verbs rank's run (runner/last_work_drain.h), with a scripted NIC
// and barrier in place of the device and the coordinator: no device needed.
// The first test is the interleaving that once left a legacy-protocol rank
// with its last ACK's send completion unpolled ("1 protocol requests or
// responses still pending at the end").
#include "runner/last_work_drain.h"

#include <chrono>
#include <functional>

#include <gtest/gtest.h>

namespace tensorwire {
namespace {

using Clock = std::chrono::steady_clock;

// The drain barrier as the coordinator would run it: agreed once the peer has
// arrived too, handed over from poll().
struct ScriptedGate {
  void phase_done(uint64_t step_id, size_t phase_index, std::function<void(Status)> agreed) {
    ASSERT_EQ(agreed_, nullptr) << "arrived twice";
    step_id_seen = step_id;
    EXPECT_EQ(phase_index, 0u);
    agreed_ = std::move(agreed);
  }
  bool poll() {
    if (agreed_ == nullptr || !peer_arrived) return false;
    auto agreed = std::move(agreed_);
    agreed_ = nullptr;
    agreed(fails ? Status(StatusCode::kPeerGone, "rank 1 left") : Status::ok());
    return true;
  }
  bool waiting() const { return agreed_ != nullptr; }

  bool peer_arrived = false;  // the barrier's answer is in
  bool fails = false;         // ... and it is an error
  uint64_t step_id_seen = 0;

 private:
  std::function<void(Status)> agreed_;
};

// The NIC's polls, each a step of a script: what comes in, and what it does to
// this rank's outstanding work.
struct ScriptedNic {
  Result<uint32_t> poll() {
    ++polls;
    if (polls == fail_at_poll) return Status(StatusCode::kInternal, "the NIC failed");
    if (polls == peer_message_at_poll) {
      work = 1;  // the ACK for the peer's last message is posted ...
      gate->peer_arrived = true;  // ... the peer has its ACK and arrives
    }
    if (polls == ack_completion_at_poll) work = 0;  // the ACK's send completion
    return 1u;
  }
  ScriptedGate* gate = nullptr;
  size_t work = 0;
  int polls = 0;
  int peer_message_at_poll = 0;
  int ack_completion_at_poll = 0;
  int fail_at_poll = 0;
};

uint64_t drain(ScriptedNic& nic, ScriptedGate& gate, Clock::duration timeout) {
  return drain_last_work([&nic] { return nic.poll(); }, [&nic] { return nic.work; }, gate,
                         /*drain_step_id=*/6, Clock::now() + timeout);
}

TEST(LastWorkDrain, AnAckPostedAfterArrivingCompletesBeforeTheRankLeaves) {
  ScriptedGate gate;
  ScriptedNic nic;
  nic.gate = &gate;
  nic.peer_message_at_poll = 2;
  nic.ack_completion_at_poll = 5;
  const uint64_t events = drain(nic, gate, std::chrono::seconds(30));
  EXPECT_EQ(nic.work, 0u) << "left with this rank's own ACK completion still unpolled";
  EXPECT_EQ(nic.polls, 5);
  EXPECT_EQ(events, 5u);
  EXPECT_EQ(gate.step_id_seen, 6u);
  EXPECT_FALSE(gate.waiting());
}

TEST(LastWorkDrain, ARankWithNothingLeftLeavesAsSoonAsEveryoneArrived) {
  ScriptedGate gate;
  gate.peer_arrived = true;
  ScriptedNic nic;
  nic.gate = &gate;
  drain(nic, gate, std::chrono::seconds(30));
  EXPECT_EQ(nic.polls, 1);
  EXPECT_FALSE(gate.waiting());
}

TEST(LastWorkDrain, WorkThatNeverEndsStopsAtTheDeadline) {
  ScriptedGate gate;
  gate.peer_arrived = true;
  ScriptedNic nic;
  nic.gate = &gate;
  nic.work = 1;  // never arrives: its work never completes
  const Clock::time_point began = Clock::now();
  drain(nic, gate, std::chrono::milliseconds(20));
  EXPECT_GE(Clock::now() - began, std::chrono::milliseconds(20));
  EXPECT_EQ(gate.step_id_seen, 0u) << "arrived with work outstanding";
  EXPECT_EQ(nic.work, 1u);
}

TEST(LastWorkDrain, AFailedNicEndsTheDrainAndAPendingBarrierIsStillDrivenToItsEnd) {
  ScriptedGate gate;
  ScriptedNic nic;
  nic.gate = &gate;
  nic.fail_at_poll = 2;
  const uint64_t events = [&] {
    // Arrive on poll 1; poll 2 fails. The barrier is then driven by gate.poll()
    // alone, so let the peer arrive now.
    auto poll_then_peer = [&nic, &gate] {
      Result<uint32_t> r = nic.poll();
      if (!r.is_ok()) gate.peer_arrived = true;
      return r;
    };
    return drain_last_work(poll_then_peer, [&nic] { return nic.work; }, gate, 6,
                           Clock::now() + std::chrono::seconds(30));
  }();
  EXPECT_EQ(nic.polls, 2);
  EXPECT_EQ(events, 1u);
  EXPECT_FALSE(gate.waiting());
}

TEST(LastWorkDrain, WorkTakenOnAfterArrivingThatNeverCompletesStopsAtTheDeadline) {
  ScriptedGate gate;
  ScriptedNic nic;
  nic.gate = &gate;
  nic.peer_message_at_poll = 2;  // the ACK is posted; its completion never comes
  const Clock::time_point began = Clock::now();
  drain(nic, gate, std::chrono::milliseconds(20));
  EXPECT_GE(Clock::now() - began, std::chrono::milliseconds(20));
  EXPECT_EQ(gate.step_id_seen, 6u);
  EXPECT_EQ(nic.work, 1u);
  EXPECT_FALSE(gate.waiting());
}

TEST(LastWorkDrain, AFailedBarrierEndsTheDrainAtOnceWhateverWorkIsLeft) {
  ScriptedGate gate;
  gate.fails = true;
  ScriptedNic nic;
  nic.gate = &gate;
  nic.peer_message_at_poll = 2;  // work taken on, and the barrier fails
  const Clock::time_point began = Clock::now();
  drain(nic, gate, std::chrono::seconds(30));
  EXPECT_LT(Clock::now() - began, std::chrono::seconds(10)) << "waited for the deadline";
  EXPECT_EQ(nic.polls, 2);
  EXPECT_EQ(nic.work, 1u);
  EXPECT_FALSE(gate.waiting());
}

// drain_rank (runner/verbs_run.cc) gives a rank that did not finish a
// deadline of now: it polls nothing.
TEST(LastWorkDrain, ADeadlineOfNowPollsNothing) {
  ScriptedGate gate;
  ScriptedNic nic;
  nic.gate = &gate;
  EXPECT_EQ(drain(nic, gate, Clock::duration{0}), 0u);
  EXPECT_EQ(nic.polls, 0);
  EXPECT_EQ(gate.step_id_seen, 0u);
}

}  // namespace
}  // namespace tensorwire
