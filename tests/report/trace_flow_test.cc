// The Chrome trace's flow arrows (from each message to what its handling
// posted: a tensor request to the write it caused) and its utilisation
// counter tracks, from the writer alone and through a whole simulated run.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/chrome_trace_writer.h"
#include "runner/simulation_run.h"
#include "scenario/scenario_loader.h"

namespace tensorwire::report {
namespace {

using nlohmann::json;

std::vector<json> with_phase(const json& trace, const std::string& ph) {
  std::vector<json> out;
  for (const json& e : trace.at("traceEvents")) {
    if (e.at("ph") == ph) out.push_back(e);
  }
  return out;
}

// The "X" slice on the same thread starting at the same time as `flow_end`.
std::string slice_name_at(const json& trace, const json& flow_end) {
  for (const json& e : with_phase(trace, "X")) {
    if (e.at("pid") == flow_end.at("pid") && e.at("tid") == flow_end.at("tid") &&
        e.at("ts") == flow_end.at("ts")) {
      return e.at("name");
    }
  }
  return "(no slice)";
}

TEST(TraceFlows, ACausalSliceDrawsAnArrowFromItsCause) {
  ChromeTraceWriter w;
  w.causal_slice("node1/nic tx to node0", "send", 100, 10, "", 0, 7);
  w.causal_slice("node0/nic tx to node1", "rdma write with imm", 500, 80, "", 7, 9);
  w.causal_slice("node0/nic tx to node1", "rdma write", 700, 5, "", 42, 10);  // cause never seen
  const json trace = json::parse(w.to_json());
  const std::vector<json> starts = with_phase(trace, "s");
  const std::vector<json> ends = with_phase(trace, "f");
  ASSERT_EQ(starts.size(), 1u);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(starts[0].at("id"), ends[0].at("id"));
  EXPECT_EQ(ends[0].at("bp"), "e");
  EXPECT_EQ(slice_name_at(trace, starts[0]), "send");
  EXPECT_EQ(slice_name_at(trace, ends[0]), "rdma write with imm");
}

TEST(TraceFlows, CountersBecomeACounterTrackInTheirNodesProcess) {
  ChromeTraceWriter w;
  w.counter("node3/nic tx", 1500, 0.5);
  w.counter("node3/nic tx", 2500, 0);
  const json trace = json::parse(w.to_json());
  const std::vector<json> counters = with_phase(trace, "C");
  ASSERT_EQ(counters.size(), 2u);
  EXPECT_EQ(counters[0].at("name"), "node3/nic tx utilisation");
  EXPECT_EQ(counters[0].at("pid"), 3);
  EXPECT_DOUBLE_EQ(counters[0].at("args").at("utilisation").get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(counters[1].at("ts").get<double>(), 2.5);
  EXPECT_EQ(with_phase(trace, "M").front().at("args").at("name"), "node 3")
      << "the counter's process is named";
}

TEST(TraceFlows, ASmallRunHasAnArrowFromEachRequestToItsWriteAndUtilisationCounters) {
  const Scenario scenario = load_scenario_string(
      "name = \"pp\"\n[cluster]\nnodes = 2\n[workload]\nkind = \"tensors\"\nsteps = 3\n"
      "[[workload.tensor]]\nname = \"w\"\nsrc = 0\ndst = 1\ndtype = \"uint8\"\nshape = [65536]\n"
      // The Recv comes after the Send: each request finds its tensor ready, so
      // its handler posts the write (a write posted later, from a Send call
      // that finds a request waiting, is outside any handler: no arrow).
      "recv_offset = \"50us\"\n",
      "pp.toml", "");
  ChromeTraceWriter chrome;
  const RunReport report = run_simulation(scenario, SimulationOptions{}, chrome);
  ASSERT_TRUE(report.passed());
  const json trace = json::parse(chrome.to_json());  // valid JSON, or this throws
  std::map<int64_t, json> starts;
  for (const json& s : with_phase(trace, "s")) {
    EXPECT_TRUE(starts.emplace(s.at("id").get<int64_t>(), s).second) << "one start per id";
  }
  const std::vector<json> ends = with_phase(trace, "f");
  ASSERT_EQ(starts.size(), ends.size());
  size_t request_to_write = 0;
  for (const json& f : ends) {
    const auto s = starts.find(f.at("id").get<int64_t>());
    ASSERT_NE(s, starts.end()) << "every finish has its start: " << f.dump();
    EXPECT_LE(s->second.at("ts").get<double>(), f.at("ts").get<double>());
    if (slice_name_at(trace, s->second) == "send" &&
        slice_name_at(trace, f) == "rdma write with imm") {
      ++request_to_write;
    }
  }
  // Each step's one tensor: its request (rank 1 -> 0) caused its write (0 -> 1).
  EXPECT_EQ(request_to_write, 3u);
  size_t tx_counters = 0;
  for (const json& c : with_phase(trace, "C")) {
    const double u = c.at("args").at("utilisation").get<double>();
    EXPECT_GE(u, 0.0);
    EXPECT_LE(u, 1.0);
    tx_counters += c.at("name") == "node0/nic tx utilisation";
  }
  EXPECT_GE(tx_counters, 6u) << "busy and idle again, once per step at least";
}

}  // namespace
}  // namespace tensorwire::report
