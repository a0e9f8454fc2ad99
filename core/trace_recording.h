// A TraceSink that keeps what it is told, to be replayed into another sink
// later, shifted in time: how a rank of a verbs run carries its trace events
// through the coordinator's all-gather to the rank that writes the one trace
// file of the whole run.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/trace_sink.h"

namespace tensorwire {

struct TraceEvent {
  std::string track;
  std::string name;
  std::string detail;
  TimeNs start_ns = 0;
  TimeNs duration_ns = 0;  // 0 for an instant
  bool instant = false;
};

class TraceRecording final : public TraceSink {
 public:
  // Keeps at most `max_events`; later ones are counted in dropped() only, so a
  // long run cannot grow without bound.
  explicit TraceRecording(size_t max_events = 1'000'000) : max_events_(max_events) {}

  void slice(std::string_view track, std::string_view name, TimeNs start_ns, TimeNs duration_ns,
             std::string_view detail) override;
  void instant(std::string_view track, std::string_view name, TimeNs at_ns,
               std::string_view detail) override;

  const std::vector<TraceEvent>& events() const { return events_; }
  std::vector<TraceEvent> take_events() { return std::move(events_); }
  size_t dropped() const { return dropped_; }

 private:
  void add(TraceEvent event);

  size_t max_events_;
  size_t dropped_ = 0;
  std::vector<TraceEvent> events_;
};

// Tells `sink` every event, in order, each moved by `shift_ns`.
void replay_trace_events(const std::vector<TraceEvent>& events, TimeNs shift_ns, TraceSink& sink);

}  // namespace tensorwire
