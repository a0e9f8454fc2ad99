// check's step-by-step text: lines in time order although slices arrive when
// they end, events at one instant in the order they were reported; and the
// tee hands every event to both sinks.
#include "report/text_trace_sink.h"

#include <gtest/gtest.h>

#include "report/chrome_trace_writer.h"

namespace tensorwire::report {
namespace {

TEST(TextTraceSink, LinesRunInTimeOrderThoughSlicesArriveWhenTheyEnd) {
  TextTraceSink t;
  t.instant("rank 0", "post", 100, "");
  t.instant("rank 1", "arrive", 300, "wr 7");
  // Reported at its end (after the instant at 300), it started at 50.
  t.slice("rank 0 nic", "write", 50, 260, "16 B");
  t.instant("rank 1", "poll", 300, "");
  EXPECT_EQ(t.text(),
            "50 ns  rank 0 nic  write (260 ns)  16 B\n"
            "100 ns  rank 0  post\n"
            "300 ns  rank 1  arrive  wr 7\n"
            "300 ns  rank 1  poll\n");
}

TEST(TextTraceSink, TheTeeHandsEveryEventToBothSinks) {
  TextTraceSink a;
  ChromeTraceWriter b;
  TeeTraceSink both(a, b);
  both.slice("track", "s", 10, 5, "");
  both.instant("track", "i", 12, "d");
  EXPECT_EQ(a.text(), "10 ns  track  s (5 ns)\n12 ns  track  i  d\n");
  EXPECT_EQ(b.event_count(), 2u);
}

}  // namespace
}  // namespace tensorwire::report
