// Where backends and drivers report what happened, for the Chrome trace and
// the results. Tracks are named ("node0/nic0 tx", "node1/copy0", "rank 3").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/clock.h"

namespace tensorwire {

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  // One slice [start_ns, start_ns + duration_ns) on `track`. `detail` is free
  // text shown in the trace viewer's args (tensor name, bytes, ...).
  virtual void slice(std::string_view track, std::string_view name, TimeNs start_ns,
                     TimeNs duration_ns, std::string_view detail) = 0;
  // A point in time (errors, meta-data updates).
  virtual void instant(std::string_view track, std::string_view name, TimeNs at_ns,
                       std::string_view detail) = 0;
  // A slice that is part of a chain of cause and effect: `flow_in` names the
  // message that caused it (0: none known), `flow_out` the slice itself, so
  // that a later slice may name it as its cause (0: none). Ids are unique in
  // a run. A sink that draws no arrows keeps the plain slice.
  virtual void causal_slice(std::string_view track, std::string_view name, TimeNs start_ns,
                            TimeNs duration_ns, std::string_view detail, uint64_t /*flow_in*/,
                            uint64_t /*flow_out*/) {
    slice(track, name, start_ns, duration_ns, detail);
  }
  // A counter's value from `at_ns` on ("node0/nic tx" utilisation 0.5); a
  // sink that draws no counter tracks drops it.
  virtual void counter(std::string_view /*track*/, TimeNs /*at_ns*/, double /*value*/) {}
};

// Discards everything; the default when no trace is asked for.
class NullTraceSink final : public TraceSink {
 public:
  void slice(std::string_view, std::string_view, TimeNs, TimeNs, std::string_view) override {}
  void instant(std::string_view, std::string_view, TimeNs, std::string_view) override {}
};

}  // namespace tensorwire
