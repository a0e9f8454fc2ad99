// A TraceSink that keeps every slice and instant and writes them as Chrome
// trace-event JSON (opens in Perfetto and chrome://tracing).
//
// Each distinct track name becomes one thread, numbered in the order it was
// first seen. Slices on one track that overlap without nesting (two transfers
// in flight on one queue pair) would be drawn wrongly as "X" events on one
// thread, so such a slice moves to a lane of its own: a thread "<track> #2",
// "#3", ... sorted right after the track, so that on every thread the slices
// nest or are disjoint; tracks are grouped into one process per node: "node3/nic tx to
// node1", "node3/copy0", "rank 3" and "rank 3/cpu" all land in process 3 (the
// simulator runs one rank per node). Other names go to a process "other".
// Causal slices become flow arrows ("s" at the slice that caused, "f" bound to
// the slice it caused, one id per arrow); counters become a counter track
// ("C") per name in its node's process ("node0/nic tx utilisation").
// Output is a pure function of the calls made: same calls, same bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/trace_sink.h"

namespace tensorwire::report {

// The node a track belongs to: N for "nodeN", "nodeN/...", "rank N" and
// "rank N/..."; nullopt for anything else.
std::optional<uint32_t> node_of_track(std::string_view track);

// Appends `text` as a JSON string literal (quotes included). Bytes that are
// not valid UTF-8 become U+FFFD, so the output always parses.
void append_json_string(std::string& out, std::string_view text);

// Appends `time_ns` as microseconds with three decimals: 1500 -> "1.500".
void append_microseconds(std::string& out, int64_t time_ns);

class ChromeTraceWriter final : public TraceSink {
 public:
  // The process id of tracks that name no node.
  static constexpr int64_t kOtherProcessId = 1'000'000;

  void slice(std::string_view track, std::string_view name, TimeNs start_ns, TimeNs duration_ns,
             std::string_view detail) override;
  void instant(std::string_view track, std::string_view name, TimeNs at_ns,
               std::string_view detail) override;
  void causal_slice(std::string_view track, std::string_view name, TimeNs start_ns,
                    TimeNs duration_ns, std::string_view detail, uint64_t flow_in,
                    uint64_t flow_out) override;
  void counter(std::string_view track, TimeNs at_ns, double value) override;

  // Free-form facts about the run (scenario, seed, mode) written under
  // "otherData", in the order they were set; a repeated key replaces its value.
  void set_metadata(std::string_view key, std::string_view value);

  size_t event_count() const { return events_.size(); }
  size_t track_count() const { return tracks_.size(); }

  // The whole trace as JSON, one event per line.
  std::string to_json() const;
  void append_json(std::string& out) const;
  // fnv1a_64 over to_json(): equal hashes, equal files.
  uint64_t content_hash() const;

 private:
  struct Track {
    std::string name;
    int64_t pid = 0;
    uint32_t tid = 0;
  };
  struct Event {
    TimeNs start_ns = 0;
    TimeNs duration_ns = 0;
    size_t detail_offset = 0;  // into details_
    uint32_t detail_size = 0;
    uint32_t track = 0;        // index into tracks_
    uint32_t name = 0;         // index into names_
    bool is_instant = false;
    uint64_t flow_in = 0;   // the causal id of the slice that caused it (0: none)
    uint64_t flow_out = 0;  // its own causal id (0: none)
  };
  struct Counter {
    TimeNs at_ns = 0;
    double value = 0;
    int64_t pid = 0;
    uint32_t name = 0;  // into names_: "<track> utilisation"
  };
  // Lookup-only maps (never iterated, so their order cannot reach the output).
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using IndexMap = std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>>;

  // The thread each event is drawn on: lane 0 is the track's own thread,
  // lane k > 0 the thread "<track> #k+1".
  struct Lanes {
    std::vector<uint32_t> of_event;  // per event; instants are always in lane 0
    std::vector<uint32_t> count;     // per track, at least 1
    std::vector<uint32_t> first_tid;  // per track: the tid of its lane 1
  };
  // Greedy and deterministic: a track's slices in order of start (longer
  // first, then call order) each take the first lane whose open slices all
  // contain it.
  Lanes lay_out_lanes() const;
  int64_t tid_of(const Lanes& lanes, size_t event) const;

  uint32_t track_index(std::string_view track);
  uint32_t name_index(std::string_view name);
  void add(std::string_view track, std::string_view name, TimeNs start_ns, TimeNs duration_ns,
           std::string_view detail, bool is_instant);
  // One slice or instant as a trace event, without the separator before it.
  void append_event(std::string& out, const Event& e, int64_t tid) const;
  // An arrow from the slice that caused each causal slice to it, in the
  // order the caused slices were reported; causes never reported draw none.
  void append_flows(std::string& out, bool& first, const Lanes& lanes) const;
  void append_counters(std::string& out, bool& first) const;

  std::vector<Track> tracks_;
  IndexMap track_ids_;
  std::vector<std::string> names_;
  IndexMap name_ids_;
  std::string details_;  // every detail text back to back
  std::vector<Event> events_;
  std::vector<Counter> counters_;
  std::vector<size_t> last_counter_of_name_;  // by name index; SIZE_MAX: none yet
  IndexMap counter_names_;                    // a counter's track -> its name's index
  bool has_flows_ = false;
  std::vector<std::pair<std::string, std::string>> metadata_;
  // The last track looked up: consecutive events often share one.
  uint32_t last_track_ = UINT32_MAX;
};

}  // namespace tensorwire::report
