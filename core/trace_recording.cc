#include "core/trace_recording.h"

#include <utility>

namespace tensorwire {

void TraceRecording::add(TraceEvent event) {
  if (events_.size() >= max_events_) {
    ++dropped_;
    return;
  }
  events_.push_back(std::move(event));
}

void TraceRecording::slice(std::string_view track, std::string_view name, TimeNs start_ns,
                           TimeNs duration_ns, std::string_view detail) {
  add(TraceEvent{std::string(track), std::string(name), std::string(detail), start_ns,
                 duration_ns, false});
}

void TraceRecording::instant(std::string_view track, std::string_view name, TimeNs at_ns,
                             std::string_view detail) {
  add(TraceEvent{std::string(track), std::string(name), std::string(detail), at_ns, 0, true});
}

void replay_trace_events(const std::vector<TraceEvent>& events, TimeNs shift_ns, TraceSink& sink) {
  for (const TraceEvent& e : events) {
    if (e.instant) {
      sink.instant(e.track, e.name, e.start_ns + shift_ns, e.detail);
    } else {
      sink.slice(e.track, e.name, e.start_ns + shift_ns, e.duration_ns, e.detail);
    }
  }
}

}  // namespace tensorwire
