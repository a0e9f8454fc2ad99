#include "report/chrome_trace_writer.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <set>

#include "report/content_hash.h"

namespace tensorwire::report {
namespace {

// Parses the decimal number at the start of `s` followed by '/' or the end.
// At most 9 digits, so it always fits and never overflows.
std::optional<uint32_t> leading_number(std::string_view s) {
  size_t digits = 0;
  uint32_t value = 0;
  while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') {
    if (digits == 9) return std::nullopt;
    value = value * 10 + static_cast<uint32_t>(s[digits] - '0');
    ++digits;
  }
  if (digits == 0) return std::nullopt;
  if (digits < s.size() && s[digits] != '/') return std::nullopt;
  return value;
}

void append_integer(std::string& out, int64_t value) {
  std::array<char, 24> buf{};
  auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), value);
  (void)ec;  // 24 chars always hold an int64
  out.append(buf.data(), end);
}

// Length of the valid UTF-8 sequence starting at s[i], or 0 if there is none.
size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(i);
  size_t length = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;  // allowed range of the second byte (excludes overlongs, surrogates)
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    length = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    length = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    length = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + length > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < length; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return length;
}

// Where a slice ends; a negative duration counts as none, and the sum
// saturates instead of overflowing.
TimeNs slice_end(TimeNs start_ns, TimeNs duration_ns) {
  if (duration_ns <= 0) return start_ns;
  if (start_ns > std::numeric_limits<TimeNs>::max() - duration_ns) {
    return std::numeric_limits<TimeNs>::max();
  }
  return start_ns + duration_ns;
}

// The first lane that can take the slice [start, end) of a track whose
// earlier slices all start at or before `start`. Each lane holds the ends of
// its open slices, innermost last (they nest, so the ends only shrink): those
// ended by `start` close, and the slice fits if the innermost one left
// contains it. open.size() means a new lane.
size_t first_fitting_lane(std::vector<std::vector<TimeNs>>& open, TimeNs start, TimeNs end) {
  for (size_t lane = 0; lane < open.size(); ++lane) {
    std::vector<TimeNs>& ends = open[lane];
    while (!ends.empty() && ends.back() <= start) ends.pop_back();
    if (ends.empty() || ends.back() >= end) return lane;
  }
  return open.size();
}

// Every trace event on a line of its own, a comma before all but the first.
void begin_event(std::string& out, bool& first) {
  out += first ? "\n" : ",\n";
  first = false;
}

}  // namespace

std::optional<uint32_t> node_of_track(std::string_view track) {
  constexpr std::string_view kNode = "node";
  constexpr std::string_view kRank = "rank ";
  if (track.substr(0, kNode.size()) == kNode) return leading_number(track.substr(kNode.size()));
  if (track.substr(0, kRank.size()) == kRank) return leading_number(track.substr(kRank.size()));
  return std::nullopt;
}

void append_json_string(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const size_t length = utf8_sequence_length(text, i);
      if (length == 0) {
        out += "\\ufffd";
        ++i;
      } else {
        out.append(text.substr(i, length));
        i += length;
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xf];
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  out += '"';
}

void append_microseconds(std::string& out, int64_t time_ns) {
  // Integer arithmetic only: no floating-point rounding, same text everywhere.
  uint64_t magnitude = static_cast<uint64_t>(time_ns);
  if (time_ns < 0) {
    out += '-';
    magnitude = 0 - magnitude;
  }
  std::array<char, 24> buf{};
  auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), magnitude / 1000);
  (void)ec;
  out.append(buf.data(), end);
  const uint64_t fraction = magnitude % 1000;
  out += '.';
  out += static_cast<char>('0' + fraction / 100);
  out += static_cast<char>('0' + fraction / 10 % 10);
  out += static_cast<char>('0' + fraction % 10);
}

namespace {

// A process's name ("node N", or "other") and its place in the viewer.
void append_process_records(std::string& out, bool& first, int64_t pid) {
  begin_event(out, first);
  out += "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":";
  append_integer(out, pid);
  out += ",\"tid\":0,\"args\":{\"name\":";
  append_json_string(out, pid == ChromeTraceWriter::kOtherProcessId ? "other"
                                                                     : "node " + std::to_string(pid));
  out += "}}";
  begin_event(out, first);
  out += "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":";
  append_integer(out, pid);
  out += ",\"tid\":0,\"args\":{\"sort_index\":";
  append_integer(out, pid);
  out += "}}";
}

// A track's name and its place within its process.
void append_thread_records(std::string& out, bool& first, int64_t pid, int64_t tid,
                           int64_t sort_index, std::string_view name) {
  begin_event(out, first);
  out += "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":";
  append_integer(out, pid);
  out += ",\"tid\":";
  append_integer(out, tid);
  out += ",\"args\":{\"name\":";
  append_json_string(out, name);
  out += "}}";
  begin_event(out, first);
  out += "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":";
  append_integer(out, pid);
  out += ",\"tid\":";
  append_integer(out, tid);
  out += ",\"args\":{\"sort_index\":";
  append_integer(out, sort_index);
  out += "}}";
}

}  // namespace

void ChromeTraceWriter::slice(std::string_view track, std::string_view name, TimeNs start_ns,
                              TimeNs duration_ns, std::string_view detail) {
  add(track, name, start_ns, duration_ns, detail, false);
}

void ChromeTraceWriter::instant(std::string_view track, std::string_view name, TimeNs at_ns,
                                std::string_view detail) {
  add(track, name, at_ns, 0, detail, true);
}

void ChromeTraceWriter::causal_slice(std::string_view track, std::string_view name,
                                     TimeNs start_ns, TimeNs duration_ns, std::string_view detail,
                                     uint64_t flow_in, uint64_t flow_out) {
  add(track, name, start_ns, duration_ns, detail, false);
  events_.back().flow_in = flow_in;
  events_.back().flow_out = flow_out;
  has_flows_ = has_flows_ || flow_in != 0;
}

void ChromeTraceWriter::counter(std::string_view track, TimeNs at_ns, double value) {
  auto known = counter_names_.find(track);
  if (known == counter_names_.end()) {
    known = counter_names_.emplace(std::string(track), name_index(std::string(track) + " utilisation"))
                .first;
  }
  const uint32_t name = known->second;
  if (name >= last_counter_of_name_.size()) last_counter_of_name_.resize(name + 1, SIZE_MAX);
  // Several changes at one instant (a step posting many writes at once) are
  // one value to the viewer: the last one stands.
  const size_t last = last_counter_of_name_[name];
  if (last != SIZE_MAX && counters_[last].at_ns == at_ns) {
    counters_[last].value = value;
    return;
  }
  const std::optional<uint32_t> node = node_of_track(track);
  last_counter_of_name_[name] = counters_.size();
  counters_.push_back(Counter{at_ns, value, node ? int64_t{*node} : kOtherProcessId, name});
}

void ChromeTraceWriter::set_metadata(std::string_view key, std::string_view value) {
  for (auto& [k, v] : metadata_) {
    if (k == key) {
      v = std::string(value);
      return;
    }
  }
  metadata_.emplace_back(std::string(key), std::string(value));
}

uint32_t ChromeTraceWriter::track_index(std::string_view track) {
  if (last_track_ < tracks_.size() && tracks_[last_track_].name == track) return last_track_;
  auto it = track_ids_.find(track);
  if (it == track_ids_.end()) {
    const auto index = static_cast<uint32_t>(tracks_.size());
    const std::optional<uint32_t> node = node_of_track(track);
    tracks_.push_back(Track{std::string(track), node ? int64_t{*node} : kOtherProcessId,
                            index + 1});  // tid 0 is left to the process itself
    it = track_ids_.emplace(std::string(track), index).first;
  }
  last_track_ = it->second;
  return it->second;
}

uint32_t ChromeTraceWriter::name_index(std::string_view name) {
  auto it = name_ids_.find(name);
  if (it != name_ids_.end()) return it->second;
  const auto index = static_cast<uint32_t>(names_.size());
  names_.emplace_back(name);
  name_ids_.emplace(std::string(name), index);
  return index;
}

void ChromeTraceWriter::add(std::string_view track, std::string_view name, TimeNs start_ns,
                            TimeNs duration_ns, std::string_view detail, bool is_instant) {
  Event e;
  e.start_ns = start_ns;
  e.duration_ns = duration_ns;
  e.track = track_index(track);
  e.name = name_index(name);
  e.is_instant = is_instant;
  // A detail longer than 4 GiB cannot happen in practice; clamp rather than wrap.
  const size_t size = std::min<size_t>(detail.size(), std::numeric_limits<uint32_t>::max());
  e.detail_offset = details_.size();
  e.detail_size = static_cast<uint32_t>(size);
  details_.append(detail.substr(0, size));
  events_.push_back(e);
}

std::string ChromeTraceWriter::to_json() const {
  std::string out;
  append_json(out);
  return out;
}

void ChromeTraceWriter::append_json(std::string& out) const {
  out.reserve(out.size() + 256 + tracks_.size() * 200 + events_.size() * 120 + details_.size());
  out += "{\"displayTimeUnit\":\"ns\",\"otherData\":{";
  for (size_t i = 0; i < metadata_.size(); ++i) {
    if (i > 0) out += ',';
    append_json_string(out, metadata_[i].first);
    out += ':';
    append_json_string(out, metadata_[i].second);
  }
  out += "},\n\"traceEvents\":[";
  bool first = true;
  // Processes in node order (a std::set, so the order is the numbers').
  std::set<int64_t> processes;
  for (const Track& t : tracks_) processes.insert(t.pid);
  for (const Counter& c : counters_) processes.insert(c.pid);
  for (const int64_t pid : processes) append_process_records(out, first, pid);
  // Threads in first-seen order, each track's extra lanes right after it.
  const Lanes lanes = lay_out_lanes();
  int64_t sort_index = 0;
  for (size_t i = 0; i < tracks_.size(); ++i) {
    const Track& t = tracks_[i];
    append_thread_records(out, first, t.pid, t.tid, ++sort_index, t.name);
    for (uint32_t lane = 1; lane < lanes.count[i]; ++lane) {
      append_thread_records(out, first, t.pid, int64_t{lanes.first_tid[i]} + lane - 1,
                            ++sort_index, t.name + " #" + std::to_string(lane + 1));
    }
  }
  for (size_t i = 0; i < events_.size(); ++i) {
    begin_event(out, first);
    append_event(out, events_[i], tid_of(lanes, i));
  }
  if (has_flows_) append_flows(out, first, lanes);
  append_counters(out, first);
  out += "\n]}\n";
}

ChromeTraceWriter::Lanes ChromeTraceWriter::lay_out_lanes() const {
  Lanes lanes;
  lanes.of_event.assign(events_.size(), 0);
  lanes.count.assign(tracks_.size(), 1);
  lanes.first_tid.assign(tracks_.size(), 0);
  const auto end_of = [](const Event& e) { return slice_end(e.start_ns, e.duration_ns); };
  std::vector<uint32_t> order;  // the slices by track, start, longer first, then call order
  for (size_t i = 0; i < events_.size(); ++i) {
    if (!events_[i].is_instant) order.push_back(static_cast<uint32_t>(i));
  }
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const Event& x = events_[a];
    const Event& y = events_[b];
    if (x.track != y.track) return x.track < y.track;
    if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
    if (end_of(x) != end_of(y)) return end_of(x) > end_of(y);
    return a < b;
  });
  std::vector<std::vector<TimeNs>> open;  // per lane of the track at hand
  uint32_t track = UINT32_MAX;
  for (const uint32_t i : order) {
    const Event& e = events_[i];
    if (e.track != track) {
      open.clear();
      track = e.track;
    }
    const size_t lane = first_fitting_lane(open, e.start_ns, end_of(e));
    if (lane == open.size()) open.emplace_back();
    open[lane].push_back(end_of(e));
    lanes.of_event[i] = static_cast<uint32_t>(lane);
    lanes.count[track] = std::max(lanes.count[track], static_cast<uint32_t>(lane + 1));
  }
  // Extra lanes get the tids after every track's own, in track then lane order.
  auto next_tid = static_cast<uint32_t>(tracks_.size() + 1);
  for (size_t t = 0; t < tracks_.size(); ++t) {
    lanes.first_tid[t] = next_tid;
    next_tid += lanes.count[t] - 1;
  }
  return lanes;
}

int64_t ChromeTraceWriter::tid_of(const Lanes& lanes, size_t event) const {
  const uint32_t track = events_[event].track;
  const uint32_t lane = lanes.of_event[event];
  return lane == 0 ? int64_t{tracks_[track].tid} : int64_t{lanes.first_tid[track]} + lane - 1;
}

void ChromeTraceWriter::append_event(std::string& out, const Event& e, int64_t tid) const {
  const Track& t = tracks_[e.track];
  out += e.is_instant ? "{\"ph\":\"i\",\"s\":\"t\",\"name\":" : "{\"ph\":\"X\",\"name\":";
  append_json_string(out, names_[e.name]);
  out += ",\"pid\":";
  append_integer(out, t.pid);
  out += ",\"tid\":";
  append_integer(out, tid);
  out += ",\"ts\":";
  append_microseconds(out, e.start_ns);
  if (!e.is_instant) {
    out += ",\"dur\":";
    append_microseconds(out, e.duration_ns);
  }
  if (e.detail_size > 0) {
    out += ",\"args\":{\"detail\":";
    append_json_string(out, std::string_view(details_).substr(e.detail_offset, e.detail_size));
    out += '}';
  }
  out += '}';
}

void ChromeTraceWriter::append_flows(std::string& out, bool& first, const Lanes& lanes) const {
  // Lookup only (never iterated): the slice each causal id names.
  std::unordered_map<uint64_t, size_t> slice_of;
  for (size_t i = 0; i < events_.size(); ++i) {
    if (events_[i].flow_out != 0) slice_of.emplace(events_[i].flow_out, i);
  }
  auto append_end = [&](const char* ph, size_t event, uint64_t id) {
    const Event& e = events_[event];
    begin_event(out, first);
    out += "{\"ph\":\"";
    out += ph;
    // "f" binds to the slice enclosing its time stamp, the caused slice's start.
    out += ph[0] == 'f' ? "\",\"bp\":\"e\"" : "\"";
    out += ",\"name\":\"caused\",\"cat\":\"cause\",\"id\":";
    append_integer(out, static_cast<int64_t>(id));
    out += ",\"pid\":";
    append_integer(out, tracks_[e.track].pid);
    out += ",\"tid\":";
    append_integer(out, tid_of(lanes, event));
    out += ",\"ts\":";
    append_microseconds(out, e.start_ns);
    out += '}';
  };
  for (size_t i = 0; i < events_.size(); ++i) {
    const Event& e = events_[i];
    if (e.flow_in == 0) continue;
    const auto cause = slice_of.find(e.flow_in);
    if (cause == slice_of.end() || events_[cause->second].start_ns > e.start_ns) continue;
    // One id per arrow: the caused slice's own (a cause may cause several).
    const uint64_t id = e.flow_out != 0 ? e.flow_out : e.flow_in;
    append_end("s", cause->second, id);
    append_end("f", i, id);
  }
}

void ChromeTraceWriter::append_counters(std::string& out, bool& first) const {
  for (const Counter& c : counters_) {
    begin_event(out, first);
    out += "{\"ph\":\"C\",\"name\":";
    append_json_string(out, names_[c.name]);
    out += ",\"pid\":";
    append_integer(out, c.pid);
    out += ",\"tid\":0,\"ts\":";
    append_microseconds(out, c.at_ns);
    out += ",\"args\":{\"utilisation\":";
    std::array<char, 32> buf{};
    // Shortest round-trip text: the same bytes for the same double everywhere.
    auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), c.value);
    (void)ec;  // 32 chars hold any double
    out.append(buf.data(), end);
    out += "}}";
  }
}

uint64_t ChromeTraceWriter::content_hash() const { return fnv1a_64(to_json()); }

}  // namespace tensorwire::report
