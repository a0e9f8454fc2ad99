// The step-by-step account of a failing execution (`check`'s .steps.txt): every
// slice and instant as one line, in time order. Slices are reported when they
// end, so the order they arrive in is not time order; the lines are sorted by
// their start (stable: events at one instant keep the order they were reported
// in). Also TeeTraceSink, which hands every event to two sinks.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/trace_sink.h"

namespace tensorwire::report {

class TextTraceSink final : public TraceSink {
 public:
  void slice(std::string_view track, std::string_view name, TimeNs start_ns, TimeNs duration_ns,
             std::string_view detail) override;
  void instant(std::string_view track, std::string_view name, TimeNs at_ns,
               std::string_view detail) override;
  // Every line, in time order.
  std::string text() const;

 private:
  struct Line {
    TimeNs at_ns = 0;
    std::string text;
  };
  std::vector<Line> lines_;
};

class TeeTraceSink final : public TraceSink {
 public:
  TeeTraceSink(TraceSink& a, TraceSink& b) : a_(a), b_(b) {}
  void slice(std::string_view track, std::string_view name, TimeNs start_ns, TimeNs duration_ns,
             std::string_view detail) override;
  void instant(std::string_view track, std::string_view name, TimeNs at_ns,
               std::string_view detail) override;
  void causal_slice(std::string_view track, std::string_view name, TimeNs start_ns,
                    TimeNs duration_ns, std::string_view detail, uint64_t flow_in,
                    uint64_t flow_out) override;
  void counter(std::string_view track, TimeNs at_ns, double value) override;

 private:
  TraceSink& a_;
  TraceSink& b_;
};

}  // namespace tensorwire::report
