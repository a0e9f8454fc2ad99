#include "model/schedule_file.h"

#include <algorithm>
#include <charconv>
#include <iomanip>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>

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

// A name on one line: line breaks (a TOML string may hold them) as spaces.
std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  std::replace(text.begin(), text.end(), '\r', ' ');
  return text;
}

// "0x" and exactly 16 hex digits.
bool parse_hash(std::string_view text, uint64_t& out) {
  if (text.size() != 18 || text.substr(0, 2) != "0x") return false;
  text.remove_prefix(2);
  const bool hex = std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  });
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out, 16);
  return hex && ec == std::errc() && ptr == text.data() + text.size();
}

// The file's lines in order, numbered, with one line of look-ahead for the
// optional fields.
class LineReader {
 public:
  LineReader(const std::string& text, const std::string& file) : in_(text), file_(file) {}

  bool next_line() {
    ++line_no_;
    if (pending_) {
      line = std::move(*pending_);
      pending_.reset();
      return true;
    }
    return read_line(in_, line);
  }
  // The next line as "KEY VALUE"; false when it is not, and then, if
  // `optional`, the line is left for the next read.
  bool field(std::string_view key, std::string& value, bool optional = false) {
    const bool read = next_line();
    if (read && line.rfind(std::string(key) + " ", 0) == 0) {
      // A value is one line as the writer writes it: a '\r' left inside
      // (not the line's CRLF end) reads as a space, so what is read writes
      // back, and a name compares with one_line() of the scenario's name.
      value = one_line(line.substr(key.size() + 1));
      return true;
    }
    if (optional) {
      if (read) pending_ = line;
      --line_no_;
    }
    return false;
  }
  Status error(const std::string& what) const {
    return Status(StatusCode::kInvalidArgument, file_ + ":" + std::to_string(line_no_) + ": " + what);
  }

  std::string line;

 private:
  std::istringstream in_;
  const std::string& file_;
  std::optional<std::string> pending_;
  size_t line_no_ = 0;
};

// The optional scenario_name and scenario_hash lines.
Status parse_scenario_identity(LineReader& r, ScheduleFile& s) {
  std::string value;
  if (r.field("scenario_name", value, true)) {
    if (value.empty()) return r.error("expected 'scenario_name NAME'");
    s.scenario_name = value;
  }
  if (r.field("scenario_hash", value, true)) {
    uint64_t hash = 0;
    if (!parse_hash(value, hash)) {
      return r.error("expected 'scenario_hash 0x' and 16 hex digits, not '" + value + "'");
    }
    s.scenario_hash = hash;
  }
  return Status::ok();
}

// The choices after their count: whole numbers, as many as announced.
Status parse_choices(LineReader& r, uint64_t count, std::vector<uint32_t>& choices) {
  choices.reserve(std::min<uint64_t>(count, 1u << 16));  // the file may lie about its size
  while (r.next_line()) {
    std::istringstream words(r.line);
    std::string word;
    while (words >> word) {
      uint32_t choice = 0;
      if (!parse_number(word, choice)) return r.error("'" + word + "' is not a choice (a whole number)");
      if (choices.size() == count) return r.error("more choices than the " + std::to_string(count) + " announced");
      choices.push_back(choice);
    }
  }
  if (choices.size() != count) {
    return r.error(std::to_string(choices.size()) + " choices, the file announced " + std::to_string(count));
  }
  return Status::ok();
}

}  // namespace

std::string schedule_file_text(const ScheduleFile& s) {
  std::ostringstream out;
  out << kMagic << "\n"
      << "scenario " << one_line(s.scenario) << "\n";
  if (s.scenario_name && !s.scenario_name->empty()) out << "scenario_name " << one_line(*s.scenario_name) << "\n";
  if (s.scenario_hash) out << "scenario_hash " << scenario_hash_text(*s.scenario_hash) << "\n";
  out << "seed " << s.seed << "\n"
      << "strategy " << one_line(s.strategy) << "\n"
      << "outcome " << one_line(s.outcome) << "\n"
      << "faults " << fault_list_text(s.faults) << "\n";
  if (s.max_faults != 1) out << "max_faults " << s.max_faults << "\n";
  out << "planted_bug " << one_line(s.planted_bug) << "\n"
      << "choices " << s.choices.size() << "\n";
  for (size_t i = 0; i < s.choices.size(); ++i) {
    out << s.choices[i] << ((i + 1) % 32 == 0 || i + 1 == s.choices.size() ? "\n" : " ");
  }
  return out.str();
}

std::string scenario_hash_text(uint64_t hash) {
  std::ostringstream out;
  out << "0x" << std::hex << std::setw(16) << std::setfill('0') << hash;
  return out.str();
}

std::string scenario_mismatch(const ScheduleFile& schedule, const ScenarioIdentity& scenario) {
  const bool name_differs =
      schedule.scenario_name && *schedule.scenario_name != one_line(scenario.name);
  const bool hash_differs = schedule.scenario_hash && *schedule.scenario_hash != scenario.hash;
  if (!name_differs && !hash_differs) return {};
  return "the schedule was recorded for scenario '" + schedule.scenario_name.value_or("?") +
         "' (hash " + (schedule.scenario_hash ? scenario_hash_text(*schedule.scenario_hash) : "?") +
         "); this is '" + one_line(scenario.name) + "' (hash " + scenario_hash_text(scenario.hash) + ")";
}

Result<ScheduleFile> parse_schedule_file(const std::string& text, const std::string& file) {
  LineReader r(text, file);
  ScheduleFile s;
  if (!r.next_line() || (r.line != kMagic && r.line != kMagicV1)) {
    return r.error(std::string("not a schedule file (the first line must be '") + kMagic + "')");
  }
  const bool v1 = r.line == kMagicV1;
  std::string value;
  if (!r.field("scenario", value)) return r.error("expected 'scenario PATH'");
  s.scenario = value;
  if (Status st = parse_scenario_identity(r, s); !st.is_ok()) return st;
  if (!r.field("seed", value) || !parse_number(value, s.seed)) return r.error("expected 'seed N'");
  if (!r.field("strategy", value)) return r.error("expected 'strategy NAME'");
  s.strategy = value;
  if (!r.field("outcome", value)) return r.error("expected 'outcome WHAT'");
  s.outcome = value;
  if (!r.field("faults", value) || !parse_fault_list(value, s.faults)) {
    return r.error("expected 'faults none' or a list such as 'faults qp_error,reg_fail,crash'");
  }
  if (v1 && !s.faults.empty()) {
    return r.error(std::string("a '") + kMagicV1 + "' schedule with faults on offer does not replay on this " +
                   "version (a fault now strikes before the next event, not after it); run check again " +
                   "for a '" + kMagic + "' schedule");
  }
  if (r.field("max_faults", value, true)) {
    if (!parse_number(value, s.max_faults) || s.max_faults < 1 || s.max_faults > kMaxFaultsPerExecution) {
      return r.error("expected 'max_faults N' with N from 1 to " + std::to_string(kMaxFaultsPerExecution));
    }
  }
  if (!r.field("planted_bug", value) || value.empty()) return r.error("expected 'planted_bug NAME' (none for none)");
  s.planted_bug = value;
  uint64_t count = 0;
  if (!r.field("choices", value) || !parse_number(value, count) || count > kMaxChoices) {
    return r.error("expected 'choices N' with N at most " + std::to_string(kMaxChoices));
  }
  if (Status st = parse_choices(r, count, s.choices); !st.is_ok()) return st;
  return s;
}

}  // namespace tensorwire::model
