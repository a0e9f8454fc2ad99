// A transfer's breakdown (core/transfer_breakdown.h): the partition itself,
// its results JSON keys and its summary section.
#include <gtest/gtest.h>

#include "core/transfer_breakdown.h"
#include "report/results_json.h"
#include "report/transfer_breakdown_summary.h"
#include "tests/report/sample_report.h"

namespace tensorwire::report {
namespace {

using testing_support::sample_report;

TEST(TransferBreakdown, TheHighestKindActiveOwnsEachInstant) {
  // [0,100): queueing 0-30 under control 10-50, wire 40-70 under a copy
  // 60-80; nothing from 80 to 90; a wire interval past the window's end.
  const std::vector<TransferActivity> a = {{ActivityKind::kQueueing, 0, 30},
                                           {ActivityKind::kControl, 10, 50},
                                           {ActivityKind::kWire, 40, 70},
                                           {ActivityKind::kCopy, 60, 80},
                                           {ActivityKind::kWire, 90, 150}};
  const TransferBreakdown b = partition_transfer_time(a, 0, 100, 1);
  EXPECT_EQ(b.queueing_ns, 10);  // 0-10
  EXPECT_EQ(b.control_ns, 30);   // 10-40
  EXPECT_EQ(b.wire_ns, 20 + 10); // 40-60, 90-100
  EXPECT_EQ(b.copies_ns, 20);    // 60-80
  EXPECT_EQ(b.other_ns, 10);     // 80-90
  EXPECT_EQ(b.total_ns(), 100);
  EXPECT_EQ(b.control_messages, 1u);
}

TEST(TransferBreakdown, AnEmptyWindowIsAllZeros) {
  const TransferBreakdown b = partition_transfer_time({{ActivityKind::kWire, 0, 10}}, 5, 5, 0);
  EXPECT_EQ(b.total_ns(), 0);
}

RunReport with_breakdown() {
  RunReport r = sample_report();
  TransferBreakdown b;
  b.control_messages = 2;
  b.control_ns = 1'000;
  b.wire_ns = 2'500;
  b.other_ns = 500;
  r.workload.steps[1].transfers[1].breakdown = b;
  return r;
}

TEST(TransferBreakdown, ResultsCarryItWhereTheBackendMeasuredIt) {
  const auto tensors = results_json(with_breakdown()).at("steps")[1].at("per_tensor");
  EXPECT_FALSE(tensors[0].contains("breakdown"));
  const auto& b = tensors[1].at("breakdown");
  EXPECT_EQ(b.at("control_messages"), 2);
  EXPECT_EQ(b.at("control_ns"), 1'000);
  EXPECT_EQ(b.at("queueing_ns"), 0);
  EXPECT_EQ(b.at("wire_ns"), 2'500);
  EXPECT_EQ(b.at("copies_ns"), 0);
  EXPECT_EQ(b.at("other_ns"), 500);
  EXPECT_EQ(tensors[1].at("latency_ns"), 4'000);
}

TEST(TransferBreakdown, SummaryListsTensorsOrSumsPhases) {
  const RunReport r = with_breakdown();
  const std::string rows = transfer_breakdown_section(r);
  EXPECT_NE(rows.find("'bias'"), std::string::npos) << rows;
  EXPECT_NE(rows.find("control 2 msgs"), std::string::npos) << rows;
  const std::string phases = transfer_breakdown_section(r, /*max_tensor_rows=*/0);
  EXPECT_NE(phases.find("phase 'tensors' (1 Recvs, summed)"), std::string::npos) << phases;
  EXPECT_EQ(transfer_breakdown_section(sample_report()), "");
}

}  // namespace
}  // namespace tensorwire::report
