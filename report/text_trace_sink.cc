#include "report/text_trace_sink.h"

#include <algorithm>

#include "core/assert.h"

namespace tensorwire::report {

void TextTraceSink::slice(std::string_view track, std::string_view name, TimeNs start_ns,
                          TimeNs duration_ns, std::string_view detail) {
  TW_ASSERT(duration_ns >= 0);
  std::string line = std::to_string(start_ns) + " ns  " + std::string(track) + "  " +
                     std::string(name) + " (" + std::to_string(duration_ns) + " ns)";
  if (!detail.empty()) line += "  " + std::string(detail);
  lines_.push_back({start_ns, std::move(line)});
}

void TextTraceSink::instant(std::string_view track, std::string_view name, TimeNs at_ns,
                            std::string_view detail) {
  std::string line = std::to_string(at_ns) + " ns  " + std::string(track) + "  " + std::string(name);
  if (!detail.empty()) line += "  " + std::string(detail);
  lines_.push_back({at_ns, std::move(line)});
}

std::string TextTraceSink::text() const {
  std::vector<const Line*> ordered;
  ordered.reserve(lines_.size());
  for (const Line& l : lines_) ordered.push_back(&l);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const Line* a, const Line* b) { return a->at_ns < b->at_ns; });
  std::string out;
  for (const Line* l : ordered) out += l->text + "\n";
  return out;
}

void TeeTraceSink::slice(std::string_view track, std::string_view name, TimeNs start_ns,
                         TimeNs duration_ns, std::string_view detail) {
  a_.slice(track, name, start_ns, duration_ns, detail);
  b_.slice(track, name, start_ns, duration_ns, detail);
}

void TeeTraceSink::instant(std::string_view track, std::string_view name, TimeNs at_ns,
                           std::string_view detail) {
  a_.instant(track, name, at_ns, detail);
  b_.instant(track, name, at_ns, detail);
}

void TeeTraceSink::causal_slice(std::string_view track, std::string_view name, TimeNs start_ns,
                                TimeNs duration_ns, std::string_view detail, uint64_t flow_in,
                                uint64_t flow_out) {
  a_.causal_slice(track, name, start_ns, duration_ns, detail, flow_in, flow_out);
  b_.causal_slice(track, name, start_ns, duration_ns, detail, flow_in, flow_out);
}

void TeeTraceSink::counter(std::string_view track, TimeNs at_ns, double value) {
  a_.counter(track, at_ns, value);
  b_.counter(track, at_ns, value);
}

}  // namespace tensorwire::report
