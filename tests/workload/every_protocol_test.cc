// The protocol property tests, written once for every protocol (UCX's habit:
// one test body over every transport). Each body runs over every registered
// point-to-point protocol, reached through the registry by name only, so a
// new protocol is held to them the moment it is registered.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>
#include <vector>

#include "core/protocols/protocol_registry.h"
#include "core/trace_sink.h"
#include "runner/simulation_run.h"
#include "scenario/scenario_loader.h"

namespace tensorwire {
namespace {

std::vector<std::string> point_to_point_protocols() {
  std::vector<std::string> names;
  for (const ProtocolDescriptor* p : registered_protocols()) {
    if (p->shape() == ProtocolShape::kPointToPoint) names.emplace_back(p->name());
  }
  return names;
}

struct TensorSpec {
  uint32_t src = 0;
  uint32_t dst = 1;
  uint32_t elements = 1;
  std::string src_memory = "host";
  std::string dst_memory = "host";
  std::string order = "recv_first";
};

// A tensors scenario of `specs`, `steps` steps, run by `protocol`.
std::string scenario_text(const std::string& protocol, uint32_t nodes, uint32_t steps,
                          const std::vector<TensorSpec>& specs) {
  // GPU 0 of every node has GPUDirect, GPU 1 stages through host memory.
  std::string gpu_direct;
  for (uint32_t n = 0; n < nodes; ++n) gpu_direct += n == 0 ? "[true, false]" : ", [true, false]";
  std::string s = "[cluster]\nnodes = " + std::to_string(nodes) +
                  "\ngpus_per_node = 2\ngpu_direct = [" + gpu_direct + "]\n"
                  "[protocol]\nname = \"" + protocol + "\"\n"
                  "[workload]\nkind = \"tensors\"\nsteps = " + std::to_string(steps) + "\n";
  for (size_t i = 0; i < specs.size(); ++i) {
    const TensorSpec& t = specs[i];
    s += "[[workload.tensor]]\nname = \"t" + std::to_string(i) + "\"\nsrc = " +
         std::to_string(t.src) + "\ndst = " + std::to_string(t.dst) +
         "\ndtype = \"float32\"\nshape = [" + std::to_string(t.elements) + "]\nsrc_memory = \"" +
         t.src_memory + "\"\ndst_memory = \"" + t.dst_memory + "\"\norder = \"" + t.order + "\"\n";
  }
  return s;
}

RunReport run_text(const std::string& text) {
  const Scenario scenario = load_scenario_string(text, "every_protocol.toml");
  NullTraceSink trace;
  return run_simulation(scenario, SimulationOptions{}, trace);
}

std::string problems_of(const RunReport& r) {
  std::string s;
  for (const Problem& p : r.problems) s += "  " + problem_line(p) + "\n";
  return s;
}

class EveryProtocol : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryProtocol, DeliversEveryTensorCheckedAndEndsQuiescent) {
  const std::vector<TensorSpec> specs = {
      {0, 1, 4096, "host", "gpu1", "recv_first"},
      {1, 0, 1, "gpu0", "host", "send_first"},
      {0, 1, 0, "host", "host", "same_time"}};
  const RunReport r = run_text(scenario_text(GetParam(), 2, 3, specs));
  EXPECT_TRUE(r.passed()) << problems_of(r);
  EXPECT_TRUE(r.workload.finished);
  size_t verified = 0;
  for (const StepResult& s : r.workload.steps) {
    for (const TransferResult& t : s.transfers) verified += t.verified ? 1 : 0;
  }
  EXPECT_EQ(verified, 9u);
  // Its counters and state machines reach the reports by name.
  ASSERT_EQ(r.protocol_counters.size(), 2u);
  EXPECT_GT(counter_total(r.protocol_counters[0], CounterRole::kControlMessage) +
                counter_total(r.protocol_counters[1], CounterRole::kControlMessage),
            0u);
  EXPECT_FALSE(r.transitions.empty());
}

TEST_P(EveryProtocol, ASeedReplaysTheSameRun) {
  const std::string text =
      scenario_text(GetParam(), 3, 2,
                    {{0, 1, 1000, "host", "host", "same_time"}, {2, 1, 77, "gpu1", "gpu0", "same_time"}});
  const RunReport a = run_text(text);
  const RunReport b = run_text(text);
  EXPECT_EQ(a.end_ns, b.end_ns);
  EXPECT_EQ(a.events_processed, b.events_processed);
  ASSERT_EQ(a.protocol_counters.size(), b.protocol_counters.size());
  for (size_t r = 0; r < a.protocol_counters.size(); ++r) {
    ASSERT_EQ(a.protocol_counters[r].size(), b.protocol_counters[r].size());
    for (size_t i = 0; i < a.protocol_counters[r].size(); ++i) {
      EXPECT_EQ(a.protocol_counters[r][i].value, b.protocol_counters[r][i].value);
    }
  }
}

// Every done Recv's wait splits into parts that sum to its latency exactly
// (core/transfer_breakdown.h); a tensor landing in GPU memory the NIC cannot
// reach is copied there within the wait; a large tensor spends time on the wire.
TEST_P(EveryProtocol, EveryRecvWaitSplitsIntoPartsThatSumToItsLatency) {
  const std::vector<TensorSpec> specs = {{0, 1, 1 << 18, "host", "host", "recv_first"},
                                         {1, 0, 1 << 16, "gpu0", "gpu1", "recv_first"},
                                         {0, 1, 1, "host", "gpu0", "send_first"},
                                         {0, 1, 0, "host", "host", "same_time"}};
  const RunReport r = run_text(scenario_text(GetParam(), 2, 2, specs));
  ASSERT_TRUE(r.passed()) << problems_of(r);
  size_t checked = 0;
  for (const StepResult& s : r.workload.steps) {
    for (const TransferResult& t : s.transfers) {
      ASSERT_TRUE(t.breakdown.has_value()) << t.name;
      const TransferBreakdown& b = *t.breakdown;
      EXPECT_EQ(b.total_ns(), t.done_ns - t.recv_called_ns) << t.name;
      for (TimeNs part : {b.control_ns, b.queueing_ns, b.wire_ns, b.copies_ns, b.other_ns}) {
        EXPECT_GE(part, 0) << t.name;
      }
      if (t.name == "t0") {
        EXPECT_GT(b.wire_ns, 0) << "a 1 MiB tensor crosses the wire";
      }
      if (t.name == "t1") {
        EXPECT_GT(b.copies_ns, 0) << "staged through host memory";
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2 * specs.size());
}

INSTANTIATE_TEST_SUITE_P(Registered, EveryProtocol,
                         ::testing::ValuesIn(point_to_point_protocols()),
                         [](const auto& info) { return info.param; });

// Property: over random tensor sets (sizes, memories, call orders, ranks),
// every registered point-to-point protocol delivers every tensor, checked,
// and leaves no work outstanding.
RC_GTEST_PROP(EveryProtocolProperty, EveryRecvGetsTheBytesThatWereSent, ()) {
  const uint32_t nodes = *rc::gen::inRange<uint32_t>(2, 4);
  const uint32_t steps = *rc::gen::inRange<uint32_t>(1, 3);
  const auto specs = *rc::gen::container<std::vector<TensorSpec>>(
      *rc::gen::inRange<size_t>(1, 5), rc::gen::exec([nodes] {
        TensorSpec t;
        t.src = *rc::gen::inRange<uint32_t>(0, nodes);
        t.dst = (t.src + *rc::gen::inRange<uint32_t>(1, nodes)) % nodes;
        t.elements = *rc::gen::element<uint32_t>(0, 1, 3, 1024, 70000);
        t.src_memory = *rc::gen::element<std::string>("host", "host_pageable", "gpu0", "gpu1");
        t.dst_memory = *rc::gen::element<std::string>("host", "host_pageable", "gpu0", "gpu1");
        t.order = *rc::gen::element<std::string>("recv_first", "send_first", "same_time");
        return t;
      }));
  for (const std::string& protocol : point_to_point_protocols()) {
    const RunReport r = run_text(scenario_text(protocol, nodes, steps, specs));
    RC_ASSERT(r.passed());
    RC_ASSERT(r.workload.finished);
    for (const StepResult& s : r.workload.steps) {
      for (const TransferResult& t : s.transfers) RC_ASSERT(t.verified);
    }
  }
}

}  // namespace
}  // namespace tensorwire
