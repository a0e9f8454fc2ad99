// Where a zero-copy Recv waits (core/transfer_breakdown.h), computed by hand
// for one 1 MiB host tensor, Recv first, on the default cluster (12.5 GB/s,
// 1.5 us one way, registration 5 us + 60 ns per 4 KiB page).
#include <gtest/gtest.h>

#include <string>

#include "core/trace_sink.h"
#include "runner/simulation_run.h"
#include "scenario/scenario_loader.h"

namespace tensorwire {
namespace {

RunReport run_one_tensor(uint32_t steps) {
  const std::string text =
      "[cluster]\nnodes = 2\n"
      "[protocol]\nname = \"tf_verbs_zero_copy\"\n"
      "[workload]\nkind = \"tensors\"\nsteps = " + std::to_string(steps) + "\n"
      "[[workload.tensor]]\nname = \"w\"\nsrc = 0\ndst = 1\ndtype = \"float32\"\n"
      "shape = [262144]\norder = \"recv_first\"\n";
  const Scenario scenario = load_scenario_string(text, "breakdown.toml");
  NullTraceSink trace;
  return run_simulation(scenario, SimulationOptions{}, trace);
}

TEST(ZeroCopyBreakdown, ASteadyStateRecvWaitsForRequestSendRegistrationAndWire) {
  const RunReport r = run_one_tensor(2);
  ASSERT_TRUE(r.passed());
  ASSERT_EQ(r.workload.steps.size(), 2u);
  // Step 2: the meta-data is cached, so one request and one write.
  const TransferResult& t = r.workload.steps[1].transfers.at(0);
  ASSERT_TRUE(t.breakdown.has_value());
  const TransferBreakdown& b = *t.breakdown;
  // The request: a send of under 63 bytes (5 ns at 12.5 GB/s) and one latency.
  EXPECT_EQ(b.control_messages, 1u);
  EXPECT_EQ(b.control_ns, 5 + 1500);
  // The Send comes 5 us after the Recv (recv_first): the request waits at
  // the sender for the rest of it, which no work of the transfer covers.
  EXPECT_EQ(b.other_ns, 5000 - 1505);
  // The sender registers the 1 MiB source (5 us + 256 pages x 60 ns) before
  // its NIC can put the write on the wire.
  EXPECT_EQ(b.queueing_ns, 5000 + 256 * 60);
  // 1 MiB at 12.5 GB/s, rounded up, and one latency.
  EXPECT_EQ(b.wire_ns, 83'887 + 1500);
  EXPECT_EQ(b.copies_ns, 0);
  EXPECT_EQ(b.total_ns(), t.done_ns - t.recv_called_ns);
}

}  // namespace
}  // namespace tensorwire
