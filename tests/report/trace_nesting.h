// Test helper: checks that a Chrome trace draws well in Perfetto, i.e. that
// on every thread (pid, tid) any two "X" slices nest or are disjoint.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace tensorwire::testing_support {

// Times in the trace are microseconds with three decimals: back to whole ns.
inline int64_t trace_time_ns(const nlohmann::json& microseconds) {
  return std::llround(microseconds.get<double>() * 1000.0);
}

// The pairs of "X" events on one thread that overlap without nesting (one
// starts inside the other and ends after it), as text, at most `limit` of
// them; empty when every thread's slices nest.
inline std::vector<std::string> overlapping_slices(const nlohmann::json& trace,
                                                   size_t limit = 10) {
  struct Slice {
    int64_t start = 0;
    int64_t end = 0;
    std::string name;
  };
  std::map<std::pair<int64_t, int64_t>, std::vector<Slice>> threads;
  for (const nlohmann::json& e : trace.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    const int64_t start = trace_time_ns(e.at("ts"));
    threads[{e.at("pid").get<int64_t>(), e.at("tid").get<int64_t>()}].push_back(
        Slice{start, start + trace_time_ns(e.at("dur")), e.at("name").get<std::string>()});
  }
  std::vector<std::string> out;
  for (auto& [thread, slices] : threads) {
    std::sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
      return a.start != b.start ? a.start < b.start : a.end > b.end;
    });
    // Sorted by start, longer first: a slice must end by the end of every
    // earlier one still open, so a stack of open ends finds each bad pair.
    std::vector<const Slice*> open;
    for (const Slice& s : slices) {
      while (!open.empty() && open.back()->end <= s.start) open.pop_back();
      if (!open.empty() && open.back()->end < s.end && out.size() < limit) {
        out.push_back("pid " + std::to_string(thread.first) + " tid " +
                      std::to_string(thread.second) + ": '" + open.back()->name + "' [" +
                      std::to_string(open.back()->start) + ", " + std::to_string(open.back()->end) +
                      ") and '" + s.name + "' [" + std::to_string(s.start) + ", " +
                      std::to_string(s.end) + ")");
      }
      open.push_back(&s);
    }
  }
  return out;
}

}  // namespace tensorwire::testing_support
