#include "report/json_text.h"

namespace tensorwire::report::json_text {
namespace {

constexpr auto kReplace = nlohmann::json::error_handler_t::replace;

// Printable ASCII that nlohmann writes as it is: no quote, backslash or
// control character (below 0x20), nothing from 0x7f up.
bool writes_verbatim(std::string_view text) {
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b >= 0x7f || b == '"' || b == '\\') return false;
  }
  return true;
}

void append_indent(std::string& out, int depth) {
  out.append(2 * static_cast<size_t>(depth), ' ');
}

}  // namespace

void append_string(std::string& out, std::string_view text) {
  if (!writes_verbatim(text)) {
    // Escapes and UTF-8 checks are rare (names are ASCII): nlohmann's own
    // serializer writes them, so the bytes are its bytes.
    out += nlohmann::ordered_json(text).dump(-1, ' ', false, kReplace);
    return;
  }
  out += '"';
  out += text;
  out += '"';
}

void BufferedText::string(std::string_view text) {
  if (text.size() + 2 > kBytes || !writes_verbatim(text)) {
    flush();
    append_string(out_, text);
    return;
  }
  room(text.size() + 2);
  buffer_[used_++] = '"';
  std::memcpy(buffer_ + used_, text.data(), text.size());
  used_ += text.size();
  buffer_[used_++] = '"';
}

void append_double(std::string& out, double value) {
  // Rare enough (a resource's utilisation) to leave to nlohmann's own writer.
  out += nlohmann::ordered_json(value).dump();
}

void append_member_start(std::string& out, std::string_view key, int depth, bool first) {
  out += first ? "\n" : ",\n";
  append_indent(out, depth + 1);
  append_string(out, key);
  out += ": ";
}

void append_element_start(std::string& out, int depth, bool first) {
  out += first ? "\n" : ",\n";
  append_indent(out, depth + 1);
}

void append_close(std::string& out, int depth, char bracket) {
  out += '\n';
  append_indent(out, depth);
  out += bracket;
}

void append_layout(std::string& out, const nlohmann::ordered_json& j, int depth) {
  if (depth >= kIndentedDepth || !j.is_structured() || j.empty()) {
    out += j.dump(-1, ' ', false, kReplace);
    return;
  }
  const bool object = j.is_object();
  out += object ? '{' : '[';
  bool first = true;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (object) {
      append_member_start(out, it.key(), depth, first);
    } else {
      append_element_start(out, depth, first);
    }
    first = false;
    append_layout(out, *it, depth + 1);
  }
  append_close(out, depth, object ? '}' : ']');
}

}  // namespace tensorwire::report::json_text
