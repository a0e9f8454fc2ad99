// JSON text written straight into a string, byte for byte as nlohmann's
// dump() writes the same values (integers in decimal, strings escaped with
// text that is not valid UTF-8 replaced by U+FFFD), and the results file's
// layout of a nlohmann value. The results JSON writes its big, regular parts
// (a run's steps of tensor records, its ranks) with these, without building a
// JSON tree for them: at 256 nodes the tree cost more than writing the text.
#pragma once

#include <charconv>
#include <concepts>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tensorwire::report::json_text {

// Objects and arrays above this depth are laid out a member per line,
// indented; deeper ones each on one line. The records of a run's tensors sit
// at this depth (steps, a step, its per_tensor list, a record): a 256-node
// run has 81,280 of them, and laid out a field per line they made a 43 MB
// file whose formatting and writing were a fifth of the run.
inline constexpr int kIndentedDepth = 4;

// `value` as nlohmann's dump() writes an integer.
template <std::integral T>
void append_integer(std::string& out, T value) {
  char digits[24];
  const auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), value);
  out.append(digits, end);
}

// `value` as nlohmann's dump() writes a double (shortest round trip, "1.0"
// for a whole number, null for NaN and infinities).
void append_double(std::string& out, double value);

inline void append_bool(std::string& out, bool value) { out += value ? "true" : "false"; }

// `text` quoted and escaped as nlohmann's dump() writes a string (non-ASCII
// kept as UTF-8, invalid UTF-8 replaced by U+FFFD).
void append_string(std::string& out, std::string_view text);

// `"key": ` at `depth`'s indentation, after the separator from the member
// before (`first`: none): how a member of an indented object starts.
void append_member_start(std::string& out, std::string_view key, int depth, bool first);
// The line break and indentation before an indented array's element.
void append_element_start(std::string& out, int depth, bool first);
// The line break, indentation and `}` or `]` that close an indented value at
// `depth` that had members.
void append_close(std::string& out, int depth, char bracket);

// `j`, sitting at `depth`, in the results file's layout: indented a member
// per line while depth < kIndentedDepth, on one line below (and any empty
// object or array on one line).
void append_layout(std::string& out, const nlohmann::ordered_json& j, int depth);

}  // namespace tensorwire::report::json_text
