// JSON text written straight into a string, byte for byte as nlohmann's
// dump() writes the same values (integers in decimal, strings escaped with
// text that is not valid UTF-8 replaced by U+FFFD), and the results file's
// layout of a nlohmann value. The results JSON writes its big, regular parts
// (a run's steps of tensor records, its ranks) with these, without building a
// JSON tree for them: at 256 nodes the tree cost more than writing the text.
#pragma once

#include <charconv>
#include <concepts>
#include <cstddef>
#include <cstring>
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

// Text gathered in a small buffer and appended to `out` a buffer at a time
// (and when destroyed). For the many small records of the bulk parts: each
// `out +=` of a key, a digit string or a bracket is a length check, a
// capacity check and a copy call of its own, and a 256-node run's 81,280
// records made over a million of them, most of the results file's cost.
// Writes what it is given in order, byte for byte as the append_ functions
// above would.
class BufferedText {
 public:
  explicit BufferedText(std::string& out) : out_(out) {}
  BufferedText(const BufferedText&) = delete;
  BufferedText& operator=(const BufferedText&) = delete;
  ~BufferedText() { flush(); }

  // A literal: its length is known where it is written.
  template <size_t N>
  void literal(const char (&text)[N]) {
    static_assert(N >= 1 && N - 1 <= kBytes);
    room(N - 1);
    std::memcpy(buffer_ + used_, text, N - 1);
    used_ += N - 1;
  }
  void character(char c) {
    room(1);
    buffer_[used_++] = c;
  }
  template <std::integral T>
  void integer(T value) {
    static_assert(sizeof(T) <= 8, "kMaxDigits holds a 64-bit integer's digits");
    room(kMaxDigits);
    used_ = static_cast<size_t>(std::to_chars(buffer_ + used_, buffer_ + kBytes, value).ptr - buffer_);
  }
  // `text` as append_string writes it.
  void string(std::string_view text);
  // Everything so far goes to `out`.
  void flush() {
    out_.append(buffer_, used_);
    used_ = 0;
  }

 private:
  static constexpr size_t kBytes = 512;
  static constexpr size_t kMaxDigits = 20;  // a 64-bit integer, sign included
  void room(size_t bytes) {
    if (kBytes - used_ < bytes) flush();
  }
  std::string& out_;
  size_t used_ = 0;
  char buffer_[kBytes];
};

// `j`, sitting at `depth`, in the results file's layout: indented a member
// per line while depth < kIndentedDepth, on one line below (and any empty
// object or array on one line).
void append_layout(std::string& out, const nlohmann::ordered_json& j, int depth);

}  // namespace tensorwire::report::json_text
