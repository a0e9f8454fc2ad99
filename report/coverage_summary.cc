#include "report/coverage_summary.h"

#include <string_view>

namespace tensorwire::report {
namespace {

constexpr std::string_view kIndent = "                ";  // the summaries' value column
constexpr size_t kWidth = 100;

// `head` then `items` separated by ", ", wrapped under the value column.
std::string wrapped(std::string line, const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string piece = items[i] + (i + 1 < items.size() ? "," : "");
    if (line.size() + 1 + piece.size() > kWidth && line.size() > kIndent.size() + 24) {
      out += line + "\n";
      line = std::string(kIndent) + "  ";
    } else if (line.back() != ' ') {
      line += " ";
    }
    line += piece;
  }
  return out + line + "\n";
}

std::vector<std::string> unreached_items(const CoverageGroup& g) {
  std::vector<std::string> names;
  for (const CoverageItem& i : g.items) {
    if (i.count == 0) names.push_back(i.name);
  }
  return names;
}

}  // namespace

std::string coverage_summary_text(const Coverage& coverage) {
  if (coverage.empty()) return "";
  std::vector<std::string> totals;
  for (const CoverageGroup& g : coverage.groups()) {
    totals.push_back(g.name + " " + std::to_string(g.reached()) + " of " +
                     std::to_string(g.items.size()));
  }
  std::string out = wrapped("coverage        ", totals);
  bool any = false;
  for (const CoverageGroup& g : coverage.groups()) {
    const std::vector<std::string> names = unreached_items(g);
    if (names.empty()) continue;
    out += wrapped((any ? std::string(kIndent) : "never reached   ") + g.name + ":", names);
    any = true;
  }
  if (!any) out += "never reached   none\n";
  return out;
}

nlohmann::ordered_json coverage_json(const Coverage& coverage) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const CoverageGroup& g : coverage.groups()) {
    j[g.name] = nlohmann::ordered_json{{"declared", g.items.size()},
                                       {"reached", g.reached()},
                                       {"never_reached", unreached_items(g)}};
  }
  return j;
}

}  // namespace tensorwire::report
