#include "model/schedule_file.h"

#include <algorithm>
#include <charconv>
#include <sstream>
#include <string_view>

namespace tensorwire::model {
namespace {

// Version 2: an injected fault is a choice point of its own (it strikes, then
// the next event is chosen). Version 1 ran the first ready event, then the
// fault; its schedules without faults replay the same, those with faults do
// not.
constexpr const char* kMagic = "tensorwire-schedule 2";
constexpr const char* kMagicV1 = "tensorwire-schedule 1";
constexpr uint64_t kMaxChoices = 100'000'000;

template <typename T>
bool parse_number(std::string_view text, T& out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && ec == std::errc() && ptr == text.data() + text.size();
}

// One line, without its line ending: "\n" or "\r\n" (a file saved on Windows).
bool read_line(std::istream& in, std::string& line) {
  if (!std::getline(in, line)) return false;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return true;
}

}  // namespace

std::string schedule_file_text(const ScheduleFile& s) {
  std::ostringstream out;
  out << kMagic << "\n"
      << "scenario " << s.scenario << "\n"
      << "seed " << s.seed << "\n"
      << "strategy " << s.strategy << "\n"
      << "outcome " << s.outcome << "\n"
      << "faults " << fault_list_text(s.faults) << "\n"
      << "planted_bug " << s.planted_bug << "\n"
      << "choices " << s.choices.size() << "\n";
  for (size_t i = 0; i < s.choices.size(); ++i) {
    out << s.choices[i] << ((i + 1) % 32 == 0 || i + 1 == s.choices.size() ? "\n" : " ");
  }
  return out.str();
}

Result<ScheduleFile> parse_schedule_file(const std::string& text, const std::string& file) {
  std::istringstream in(text);
  std::string line;
  size_t line_no = 0;
  const auto error = [&](const std::string& what) {
    return Status(StatusCode::kInvalidArgument,
                  file + ":" + std::to_string(line_no) + ": " + what);
  };
  ScheduleFile s;
  auto next = [&](std::string_view key, std::string& value) -> bool {
    if (!read_line(in, line)) return false;
    ++line_no;
    if (line.rfind(std::string(key) + " ", 0) != 0) return false;
    value = line.substr(key.size() + 1);
    return true;
  };
  if (!read_line(in, line) || (++line_no, line != kMagic && line != kMagicV1)) {
    return error(std::string("not a schedule file (the first line must be '") + kMagic + "')");
  }
  const bool v1 = line == kMagicV1;
  std::string value;
  if (!next("scenario", value)) return error("expected 'scenario PATH'");
  s.scenario = value;
  if (!next("seed", value) || !parse_number(value, s.seed)) return error("expected 'seed N'");
  if (!next("strategy", value)) return error("expected 'strategy NAME'");
  s.strategy = value;
  if (!next("outcome", value)) return error("expected 'outcome WHAT'");
  s.outcome = value;
  if (!next("faults", value) || !parse_fault_list(value, s.faults)) {
    return error("expected 'faults none' or a list such as 'faults qp_error,reg_fail,crash'");
  }
  if (v1 && !s.faults.empty()) {
    return error(std::string("a '") + kMagicV1 + "' schedule with faults on offer does not replay on this " +
                 "version (a fault now strikes before the next event, not after it); run check again " +
                 "for a '" + kMagic + "' schedule");
  }
  if (!next("planted_bug", value) || value.empty()) return error("expected 'planted_bug NAME' (none for none)");
  s.planted_bug = value;
  uint64_t count = 0;
  if (!next("choices", value) || !parse_number(value, count) || count > kMaxChoices) {
    return error("expected 'choices N' with N at most " + std::to_string(kMaxChoices));
  }
  s.choices.reserve(std::min<uint64_t>(count, 1u << 16));  // the file may lie about its size
  while (read_line(in, line)) {
    ++line_no;
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
      uint32_t choice = 0;
      if (!parse_number(word, choice)) return error("'" + word + "' is not a choice (a whole number)");
      if (s.choices.size() == count) return error("more choices than the " + std::to_string(count) + " announced");
      s.choices.push_back(choice);
    }
  }
  if (s.choices.size() != count) {
    return error(std::to_string(s.choices.size()) + " choices, the file announced " + std::to_string(count));
  }
  return s;
}

}  // namespace tensorwire::model
