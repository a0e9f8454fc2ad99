#include "report/chrome_trace_writer.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/content_hash.h"
#include "tests/report/trace_nesting.h"

namespace tensorwire::report {
namespace {

using nlohmann::json;
using testing_support::overlapping_slices;

json parsed(const ChromeTraceWriter& w) { return json::parse(w.to_json()); }

// The events of one phase ("X", "i", "M"), in file order.
std::vector<json> events_with_phase(const json& trace, const std::string& ph) {
  std::vector<json> out;
  for (const json& e : trace.at("traceEvents")) {
    if (e.at("ph") == ph) out.push_back(e);
  }
  return out;
}

// thread name -> (pid, tid), from the "thread_name" metadata.
std::map<std::string, std::pair<int64_t, int64_t>> threads(const json& trace) {
  std::map<std::string, std::pair<int64_t, int64_t>> out;
  for (const json& e : events_with_phase(trace, "M")) {
    if (e.at("name") == "thread_name") {
      out[e.at("args").at("name").get<std::string>()] = {e.at("pid").get<int64_t>(),
                                                          e.at("tid").get<int64_t>()};
    }
  }
  return out;
}

TEST(NodeOfTrack, ReadsTheNodeFromNodeAndRankPrefixes) {
  EXPECT_EQ(node_of_track("node0/nic tx to node1"), 0u);
  EXPECT_EQ(node_of_track("node12/copy3"), 12u);
  EXPECT_EQ(node_of_track("node3"), 3u);
  EXPECT_EQ(node_of_track("rank 7"), 7u);
  EXPECT_EQ(node_of_track("rank 7/cpu"), 7u);
}

TEST(NodeOfTrack, RejectsNamesThatAreNotANodeOrRank) {
  EXPECT_FALSE(node_of_track(""));
  EXPECT_FALSE(node_of_track("nodes/x"));
  EXPECT_FALSE(node_of_track("node1x/y"));
  EXPECT_FALSE(node_of_track("rank "));
  EXPECT_FALSE(node_of_track("rank7"));
  EXPECT_FALSE(node_of_track("node9999999999/overflow"));
  EXPECT_FALSE(node_of_track("switch"));
}

TEST(ChromeTraceWriter, AnEmptyTraceIsValidJson) {
  ChromeTraceWriter w;
  const json trace = parsed(w);
  ASSERT_TRUE(trace.at("traceEvents").is_array());
  EXPECT_TRUE(trace.at("traceEvents").empty());
  EXPECT_EQ(trace.at("displayTimeUnit"), "ns");
}

TEST(ChromeTraceWriter, OneThreadPerTrackGroupedIntoOneProcessPerNode) {
  ChromeTraceWriter w;
  w.slice("node0/nic tx to node1", "RDMA write", 0, 10, "");
  w.slice("node1/nic rx from node0", "RDMA write", 5, 10, "");
  w.instant("rank 0", "META_DATA_UPDATE", 7, "");
  w.slice("node0/copy0", "copy", 20, 5, "");
  w.slice("node0/nic tx to node1", "send", 30, 1, "");  // a track seen before
  w.slice("fabric", "mystery", 40, 1, "");
  EXPECT_EQ(w.track_count(), 5u);
  EXPECT_EQ(w.event_count(), 6u);

  const json trace = parsed(w);
  const auto t = threads(trace);
  ASSERT_EQ(t.size(), 5u);
  // tids in first-seen order, pids from the node.
  EXPECT_EQ(t.at("node0/nic tx to node1"), std::make_pair(int64_t{0}, int64_t{1}));
  EXPECT_EQ(t.at("node1/nic rx from node0"), std::make_pair(int64_t{1}, int64_t{2}));
  EXPECT_EQ(t.at("rank 0"), std::make_pair(int64_t{0}, int64_t{3}));
  EXPECT_EQ(t.at("node0/copy0"), std::make_pair(int64_t{0}, int64_t{4}));
  EXPECT_EQ(t.at("fabric"),
            std::make_pair(ChromeTraceWriter::kOtherProcessId, int64_t{5}));

  std::map<int64_t, std::string> process_names;
  for (const json& e : events_with_phase(trace, "M")) {
    if (e.at("name") == "process_name") {
      process_names[e.at("pid").get<int64_t>()] = e.at("args").at("name").get<std::string>();
    }
  }
  EXPECT_EQ(process_names, (std::map<int64_t, std::string>{
                               {0, "node 0"}, {1, "node 1"},
                               {ChromeTraceWriter::kOtherProcessId, "other"}}));

  // Each slice sits on its track's thread.
  const auto slices = events_with_phase(trace, "X");
  ASSERT_EQ(slices.size(), 5u);
  EXPECT_EQ(slices[3].at("name"), "send");
  EXPECT_EQ(slices[3].at("tid"), 1);
  EXPECT_EQ(slices[3].at("pid"), 0);
}

// Two transfers in flight on one queue pair overlap without nesting; drawn as
// "X" events on one thread, Perfetto would cut them wrongly (issue 18, #4).
TEST(ChromeTraceWriter, SlicesThatOverlapWithoutNestingGetLanesOfTheirOwn) {
  ChromeTraceWriter w;
  const std::string qp = "node0/nic tx to node1";
  w.slice(qp, "a", 0, 100, "");
  w.slice(qp, "b", 50, 100, "");  // [50, 150): overlaps a
  w.slice(qp, "c", 60, 10, "");   // inside a and b
  w.instant(qp, "error", 55, "");
  w.slice(qp, "d", 100, 100, "");  // [100, 200): starts as a ends, overlaps b
  w.slice(qp, "e", 120, 40, "");   // [120, 160): inside d, overlaps b
  w.slice(qp, "f", 10, 190, "");   // [10, 200): overlaps a, holds the rest: lane 2, with b
  w.slice("node0/copy0", "g", 0, 10, "");
  w.slice("node0/copy0", "h", 2, 5, "");  // nested: no lane needed
  EXPECT_EQ(w.track_count(), 2u);

  const json trace = parsed(w);
  EXPECT_EQ(overlapping_slices(trace), std::vector<std::string>{});
  const auto t = threads(trace);
  // The track keeps its tid; lanes come after every track's own tid, in the
  // same process, sorted right after their track.
  EXPECT_EQ(t, (std::map<std::string, std::pair<int64_t, int64_t>>{
                   {qp, {0, 1}}, {qp + " #2", {0, 3}}, {"node0/copy0", {0, 2}}}));
  std::map<int64_t, int64_t> sort_index;
  for (const json& e : events_with_phase(trace, "M")) {
    if (e.at("name") == "thread_sort_index") {
      sort_index[e.at("tid").get<int64_t>()] = e.at("args").at("sort_index").get<int64_t>();
    }
  }
  EXPECT_EQ(sort_index, (std::map<int64_t, int64_t>{{1, 1}, {3, 2}, {2, 3}}));
  // Every call is still there, in call order; the instant stays on the track.
  std::string names;
  std::map<std::string, int64_t> tid;
  for (const json& e : trace.at("traceEvents")) {
    if (e.at("ph") == "M") continue;
    names += e.at("name").get<std::string>() + " ";
    tid[e.at("name").get<std::string>()] = e.at("tid").get<int64_t>();
  }
  EXPECT_EQ(names, "a b c error d e f g h ");
  EXPECT_EQ(tid, (std::map<std::string, int64_t>{{"a", 1}, {"b", 3}, {"c", 1}, {"error", 1},
                                                 {"d", 1}, {"e", 1}, {"f", 3}, {"g", 2},
                                                 {"h", 2}}));
}

TEST(ChromeTraceWriter, TimesAreMicrosecondsWithNanosecondDecimals) {
  ChromeTraceWriter w;
  w.slice("node0/nic tx to node1", "RDMA write", 1500, 250, "");
  w.slice("node0/nic tx to node1", "RDMA write", 3'000'000'007, 0, "");
  w.instant("rank 0", "queue pair error", -1500, "");
  const std::string text = w.to_json();
  EXPECT_NE(text.find("\"ts\":1.500,\"dur\":0.250"), std::string::npos) << text;
  EXPECT_NE(text.find("\"ts\":3000000.007,\"dur\":0.000"), std::string::npos) << text;
  EXPECT_NE(text.find("\"ts\":-1.500"), std::string::npos) << text;

  const json trace = json::parse(text);
  const auto slices = events_with_phase(trace, "X");
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_DOUBLE_EQ(slices[0].at("ts").get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(slices[0].at("dur").get<double>(), 0.25);
}

TEST(ChromeTraceWriter, InstantsHaveThreadScopeAndNoDuration) {
  ChromeTraceWriter w;
  w.instant("rank 1", "recv failed", 42'000, "ABORTED: step 3");
  const json trace = parsed(w);
  const auto instants = events_with_phase(trace, "i");
  ASSERT_EQ(instants.size(), 1u);
  EXPECT_EQ(instants[0].at("s"), "t");
  EXPECT_EQ(instants[0].at("name"), "recv failed");
  EXPECT_EQ(instants[0].at("pid"), 1);
  EXPECT_DOUBLE_EQ(instants[0].at("ts").get<double>(), 42.0);
  EXPECT_FALSE(instants[0].contains("dur"));
  EXPECT_EQ(instants[0].at("args").at("detail"), "ABORTED: step 3");
}

TEST(ChromeTraceWriter, DetailGoesToArgsOnlyWhenThereIsOne) {
  ChromeTraceWriter w;
  w.slice("node0/copy0", "copy", 0, 1, "grad/conv1 4096 B");
  w.slice("node0/copy0", "copy", 1, 1, "");
  const auto slices = events_with_phase(parsed(w), "X");
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(slices[0].at("args").at("detail"), "grad/conv1 4096 B");
  EXPECT_FALSE(slices[1].contains("args"));
}

TEST(ChromeTraceWriter, EscapesStringsAndReplacesInvalidUtf8) {
  ChromeTraceWriter w;
  const std::string nasty = std::string("quote\" back\\slash\nnew\ttab\x01 ctl ") + "\xc3\xa9" +
                            " bad:" + "\xff" + "\xc3";
  w.slice(nasty, nasty, 0, 1, nasty);
  const json trace = parsed(w);  // throws (fails the test) on broken JSON
  const std::string expected =
      std::string("quote\" back\\slash\nnew\ttab\x01 ctl ") + "\xc3\xa9" + " bad:\xef\xbf\xbd\xef\xbf\xbd";
  const auto slices = events_with_phase(trace, "X");
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_EQ(slices[0].at("name"), expected);
  EXPECT_EQ(slices[0].at("args").at("detail"), expected);
  EXPECT_EQ(threads(trace).begin()->first, expected);
}

TEST(ChromeTraceWriter, MetadataGoesToOtherDataInOrderAndCanBeReplaced) {
  ChromeTraceWriter w;
  w.set_metadata("scenario", "quickstart");
  w.set_metadata("seed", "1");
  w.set_metadata("seed", "7");
  const std::string text = w.to_json();
  EXPECT_NE(text.find("\"otherData\":{\"scenario\":\"quickstart\",\"seed\":\"7\"}"),
            std::string::npos)
      << text;
}

TEST(ChromeTraceWriter, ContentHashIsTheHashOfTheText) {
  ChromeTraceWriter w;
  w.slice("node0/copy0", "copy", 0, 1, "x");
  EXPECT_EQ(w.content_hash(), fnv1a_64(w.to_json()));
  const uint64_t before = w.content_hash();
  w.slice("node0/copy0", "copy", 1, 1, "x");
  EXPECT_NE(w.content_hash(), before);
}

TEST(ChromeTraceWriter, HandlesAHundredThousandSlices) {
  ChromeTraceWriter w;
  for (int i = 0; i < 100'000; ++i) {
    w.slice("node" + std::to_string(i % 32) + "/nic tx to node" + std::to_string((i + 1) % 32),
            "RDMA write", i * 100, 90, "tensor " + std::to_string(i));
  }
  const json trace = parsed(w);
  EXPECT_EQ(events_with_phase(trace, "X").size(), 100'000u);
  EXPECT_EQ(threads(trace).size(), 32u);
}

using Call = std::tuple<bool, std::string, std::string, int64_t, int64_t, std::string>;

void replay(ChromeTraceWriter& w, const std::vector<Call>& calls) {
  for (const auto& [is_instant, track, name, start_ns, duration_ns, detail] : calls) {
    if (is_instant) {
      w.instant(track, name, start_ns, detail);
    } else {
      w.slice(track, name, start_ns, duration_ns, detail);
    }
  }
}

RC_GTEST_PROP(ChromeTraceWriter, SameCallsGiveTheSameBytesAndParseableJsonWithOneEventPerCall,
              (const std::vector<Call>& calls)) {
  ChromeTraceWriter a;
  ChromeTraceWriter b;
  replay(a, calls);
  replay(b, calls);
  const std::string text = a.to_json();
  RC_ASSERT(text == b.to_json());
  RC_ASSERT(a.content_hash() == b.content_hash());
  const json trace = json::parse(text);
  size_t timed = 0;
  for (const json& e : trace.at("traceEvents")) {
    if (e.at("ph") != "M") ++timed;
  }
  RC_ASSERT(timed == calls.size());
}

using Interval = std::pair<uint16_t, uint16_t>;  // start, duration

// Whatever the slices, on every thread they nest or are disjoint, none is
// lost, and every thread of a track sits in that track's process.
RC_GTEST_PROP(ChromeTraceWriter, SlicesOnEveryThreadNestOrAreDisjoint,
              (const std::vector<Interval>& slices)) {
  ChromeTraceWriter w;
  for (size_t i = 0; i < slices.size(); ++i) {
    const auto [start, duration] = slices[i];
    w.slice("node" + std::to_string(i % 3) + "/nic tx to node9", "s", start, duration % 2000, "");
  }
  const json trace = parsed(w);
  const std::vector<std::string> bad = overlapping_slices(trace);
  RC_ASSERT(bad.empty());
  RC_ASSERT(events_with_phase(trace, "X").size() == slices.size());
  for (const auto& [name, thread] : threads(trace)) {
    RC_ASSERT(name.rfind("node" + std::to_string(thread.first) + "/", 0) == 0u);
  }
}

TEST(TraceNesting, FindsSlicesThatOverlapWithoutNesting) {
  const auto slice = [](int64_t tid, double ts, double dur) {
    return json{{"ph", "X"}, {"name", "s"}, {"pid", 0}, {"tid", tid}, {"ts", ts}, {"dur", dur}};
  };
  json trace = {{"traceEvents", json::array({slice(1, 0, 1), slice(1, 0.25, 0.5),
                                             slice(1, 1, 1), slice(2, 0.5, 1)})}};
  EXPECT_TRUE(overlapping_slices(trace).empty()) << "nested, touching, or on another thread";
  trace["traceEvents"].push_back(slice(1, 1.5, 1));
  EXPECT_EQ(overlapping_slices(trace),
            std::vector<std::string>{"pid 0 tid 1: 's' [1000, 2000) and 's' [1500, 2500)"});
}

}  // namespace
}  // namespace tensorwire::report
