#include "report/coverage_summary.h"

#include <gtest/gtest.h>

#include <string>

namespace tensorwire::report {
namespace {

Coverage sample() {
  Coverage c;
  c.declare("paths", "zero copy");
  c.declare("paths", "staging copy");
  c.declare("messages sent", "REQUEST");
  c.count("paths", "zero copy", 4);
  c.count("messages sent", "REQUEST");
  return c;
}

TEST(CoverageSummary, SaysPerGroupHowManyOfHowManyAndNamesTheUnreached) {
  EXPECT_EQ(coverage_summary_text(sample()),
            "coverage        paths 1 of 2, messages sent 1 of 1\n"
            "never reached   paths: staging copy\n");
}

TEST(CoverageSummary, SaysNoneWhenEverythingWasReachedAndNothingWhenEmpty) {
  Coverage c = sample();
  c.count("paths", "staging copy");
  EXPECT_EQ(coverage_summary_text(c),
            "coverage        paths 2 of 2, messages sent 1 of 1\nnever reached   none\n");
  EXPECT_EQ(coverage_summary_text(Coverage{}), "");
}

TEST(CoverageSummary, WrapsLongListsUnderTheValueColumn) {
  Coverage c;
  for (int i = 0; i < 12; ++i) c.declare("paths", "a path with a long name " + std::to_string(i));
  const std::string text = coverage_summary_text(c);
  size_t start = 0;
  int lines = 0;
  for (size_t end = text.find('\n'); end != std::string::npos; end = text.find('\n', start)) {
    EXPECT_LE(end - start, 100u) << text;
    if (lines > 1) {
      EXPECT_EQ(text.substr(start, 18), std::string(18, ' ')) << text;
    }
    start = end + 1;
    ++lines;
  }
  EXPECT_GT(lines, 3) << text;
  EXPECT_NE(text.find("a path with a long name 11\n"), std::string::npos) << text;
}

TEST(CoverageJson, HasDeclaredReachedAndTheUnreachedPerGroup) {
  const nlohmann::ordered_json j = coverage_json(sample());
  EXPECT_EQ(j["paths"]["declared"], 2);
  EXPECT_EQ(j["paths"]["reached"], 1);
  EXPECT_EQ(j["paths"]["never_reached"], nlohmann::ordered_json::array({"staging copy"}));
  EXPECT_EQ(j["messages sent"]["never_reached"].size(), 0u);
}

}  // namespace
}  // namespace tensorwire::report
