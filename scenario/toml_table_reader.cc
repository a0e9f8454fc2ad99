#include "scenario/toml_table_reader.h"

#include <algorithm>
#include <span>
#include <utility>

#include "scenario/scenario.h"
#include "scenario/scenario_limits.h"
#include "scenario/units.h"

namespace tensorwire {
namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The allowed key a typo most likely meant, or "" when none is close.
std::string_view closest_key(std::string_view key, std::span<const std::string_view> allowed) {
  std::string_view best;
  size_t best_distance = 3;  // at most two edits
  for (std::string_view candidate : allowed) {
    size_t d = edit_distance(key, candidate);
    if (d < best_distance) {
      best = candidate;
      best_distance = d;
    }
  }
  return best;
}

std::string join_keys(std::span<const std::string_view> allowed) {
  std::string s;
  for (std::string_view k : allowed) {
    if (!s.empty()) s += ", ";
    s += k;
  }
  return s;
}

// Keys are quoted in messages when they hold anything unusual.
std::string shown_key(std::string_view key) {
  bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
  return plain ? std::string(key) : "\"" + std::string(key) + "\"";
}

}  // namespace

[[noreturn]] void throw_scenario_error(const std::string& file, const toml::source_region& where,
                                       std::string_view key_path, std::string_view what) {
  // toml++ numbers lines and columns from 1; 0 means "unknown" (a table made
  // implicitly with no text of its own): point at the start of the file.
  // A value merged in from another file (an include) or typed on the command
  // line (`--set KEY=VALUE`, whose text is its whole source) names where it came from.
  const std::string& source = where.path && !where.path->empty() ? *where.path : file;
  std::string message = source + ": ";
  if (!source.starts_with(kCommandLineSourcePrefix)) {
    const uint64_t line = where.begin.line == 0 ? 1 : where.begin.line;
    const uint64_t column = where.begin.line == 0 ? 1 : where.begin.column;
    message = source + ":" + std::to_string(line) + ":" + std::to_string(column) + ": ";
  }
  if (!key_path.empty()) message += std::string(key_path) + ": ";
  message += what;
  throw ScenarioError(message);
}

const char* toml_type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a floating-point number";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

std::string indexed_path(std::string_view array_path, size_t index) {
  return std::string(array_path) + "[" + std::to_string(index) + "]";
}

int64_t toml_integer(const std::string& file, const toml::node& node, std::string_view key_path,
                     int64_t min, int64_t max) {
  const auto* v = node.as_integer();
  if (v == nullptr) {
    throw_scenario_error(file, node.source(), key_path,
                         std::string("expected an integer, found ") + toml_type_name(node));
  }
  int64_t x = v->get();
  if (x < min || x > max) {
    throw_scenario_error(file, node.source(), key_path,
                         std::to_string(x) + " is out of range (allowed " + std::to_string(min) +
                             " to " + std::to_string(max) + ")");
  }
  return x;
}

std::string toml_string(const std::string& file, const toml::node& node,
                        std::string_view key_path) {
  const auto* v = node.as_string();
  if (v == nullptr) {
    throw_scenario_error(file, node.source(), key_path,
                         std::string("expected a string, found ") + toml_type_name(node));
  }
  return v->get();
}

bool toml_boolean(const std::string& file, const toml::node& node, std::string_view key_path) {
  const auto* v = node.as_boolean();
  if (v == nullptr) {
    throw_scenario_error(file, node.source(), key_path,
                         std::string("expected true or false, found ") + toml_type_name(node));
  }
  return v->get();
}

TomlTableReader::TomlTableReader(const toml::table& table, std::string path,
                                 const std::string& file,
                                 std::initializer_list<std::string_view> allowed)
    : TomlTableReader(table, std::move(path), file,
                      std::span<const std::string_view>(allowed.begin(), allowed.size())) {}

TomlTableReader::TomlTableReader(const toml::table& table, std::string path,
                                 const std::string& file,
                                 std::span<const std::string_view> allowed)
    : table_(table), path_(std::move(path)), file_(file) {
  // Report the first unknown key in the text, not in the table's sorted order.
  const toml::key* first = nullptr;
  for (const auto& [key, value] : table_) {
    (void)value;
    if (std::find(allowed.begin(), allowed.end(), key.str()) != allowed.end()) continue;
    if (first == nullptr || key.source().begin < first->source().begin) first = &key;
  }
  if (first == nullptr) return;
  std::string what = "unknown key";
  std::string_view guess = closest_key(first->str(), allowed);
  if (!guess.empty()) {
    what += " (did you mean '" + std::string(guess) + "'?)";
  } else {
    what += " (allowed here: " + join_keys(allowed) + ")";
  }
  throw_scenario_error(file_, first->source(), key_path(first->str()), what);
}

std::string TomlTableReader::key_path(std::string_view key) const {
  return path_.empty() ? shown_key(key) : path_ + "." + shown_key(key);
}

const toml::node* TomlTableReader::get(std::string_view key) const { return table_.get(key); }

void TomlTableReader::fail(std::string_view key, std::string_view what) const {
  const toml::node* node = get(key);
  throw_scenario_error(file_, node != nullptr ? node->source() : table_.source(), key_path(key),
                       what);
}

void TomlTableReader::fail_missing(std::string_view key) const {
  std::string where = path_.empty() ? "at the top level" : "in [" + path_ + "]";
  throw_scenario_error(file_, table_.source(), key_path(key), "missing required key " + where);
}

void TomlTableReader::fail_table(std::string_view what) const {
  throw_scenario_error(file_, table_.source(), path_, what);
}

std::optional<std::string> TomlTableReader::string(std::string_view key) const {
  const toml::node* node = get(key);
  if (node == nullptr) return std::nullopt;
  return toml_string(file_, *node, key_path(key));
}

std::optional<int64_t> TomlTableReader::integer(std::string_view key, int64_t min,
                                                int64_t max) const {
  const toml::node* node = get(key);
  if (node == nullptr) return std::nullopt;
  return toml_integer(file_, *node, key_path(key), min, max);
}

std::optional<bool> TomlTableReader::boolean(std::string_view key) const {
  const toml::node* node = get(key);
  if (node == nullptr) return std::nullopt;
  return toml_boolean(file_, *node, key_path(key));
}

std::optional<TimeNs> TomlTableReader::duration(std::string_view key, TimeNs max_ns) const {
  std::optional<std::string> text = string(key);
  if (!text) return std::nullopt;
  Result<TimeNs> ns = parse_duration_ns(*text);
  if (!ns) fail(key, ns.status().message());
  if (*ns > max_ns) {
    fail(key, "'" + *text + "' is too long (at most " + std::to_string(max_ns) + " ns)");
  }
  return *ns;
}

std::optional<double> TomlTableReader::bandwidth(std::string_view key) const {
  std::optional<std::string> text = string(key);
  if (!text) return std::nullopt;
  Result<double> rate = parse_bandwidth_bytes_per_s(*text);
  if (!rate) fail(key, rate.status().message());
  if (*rate < scenario_limits::kMinBandwidthBytesPerS ||
      *rate > scenario_limits::kMaxBandwidthBytesPerS) {
    fail(key, "'" + *text + "' is out of range (allowed 1MB/s to 100TB/s)");
  }
  return *rate;
}

std::optional<uint64_t> TomlTableReader::bytes(std::string_view key, uint64_t max_bytes) const {
  const toml::node* node = get(key);
  if (node == nullptr) return std::nullopt;
  uint64_t value = 0;
  if (node->is_integer()) {
    value = static_cast<uint64_t>(
        toml_integer(file_, *node, key_path(key), 0, static_cast<int64_t>(max_bytes)));
  } else if (const auto* text = node->as_string()) {
    Result<uint64_t> parsed = parse_bytes(text->get());
    if (!parsed) fail(key, parsed.status().message());
    value = *parsed;
  } else {
    fail(key, std::string("expected a size (an integer or a string like \"16KiB\"), found ") +
                  toml_type_name(*node));
  }
  if (value > max_bytes) {
    fail(key,
         std::to_string(value) + " bytes is too large (at most " + std::to_string(max_bytes) + ")");
  }
  return value;
}

std::optional<DataType> TomlTableReader::data_type(std::string_view key) const {
  std::optional<std::string> name = string(key);
  if (!name) return std::nullopt;
  std::optional<DataType> dtype = data_type_from_name(*name);
  if (!dtype) {
    fail(key, "unknown data type '" + *name +
                  "' (known: float32, float16, bfloat16, float64, int32, int64, uint8, bool, "
                  "string)");
  }
  return dtype;
}

std::optional<TensorShape> TomlTableReader::shape(std::string_view key) const {
  const toml::array* dims = array(key);
  if (dims == nullptr) return std::nullopt;
  if (dims->size() > static_cast<size_t>(scenario_limits::kMaxShapeDims)) {
    fail(key, "a shape has at most " + std::to_string(scenario_limits::kMaxShapeDims) +
                  " dimensions, this one " + std::to_string(dims->size()));
  }
  TensorShape shape;
  for (size_t i = 0; i < dims->size(); ++i) {
    shape.dims.push_back(toml_integer(file_, *dims->get(i), indexed_path(key_path(key), i), 0,
                                      static_cast<int64_t>(scenario_limits::kMaxTensorBytes)));
  }
  if (!shape.num_elements()) fail(key, "the number of elements overflows");
  return shape;
}

std::optional<std::vector<uint32_t>> TomlTableReader::rank_list(std::string_view key,
                                                                uint32_t nodes) const {
  const toml::array* list = array(key);
  if (list == nullptr) return std::nullopt;
  std::vector<uint32_t> ranks;
  for (size_t i = 0; i < list->size(); ++i) {
    const toml::node& node = *list->get(i);
    std::string path = indexed_path(key_path(key), i);
    auto rank = static_cast<uint32_t>(toml_integer(file_, node, path, 0, nodes - 1));
    if (std::find(ranks.begin(), ranks.end(), rank) != ranks.end()) {
      throw_scenario_error(file_, node.source(), path,
                           "rank " + std::to_string(rank) + " is listed twice");
    }
    ranks.push_back(rank);
  }
  return ranks;
}

const toml::table* TomlTableReader::sub_table(std::string_view key) const {
  const toml::node* node = get(key);
  if (node == nullptr) return nullptr;
  if (!node->is_table()) {
    fail(key, std::string("expected a table, found ") + toml_type_name(*node));
  }
  return node->as_table();
}

const toml::array* TomlTableReader::array(std::string_view key) const {
  const toml::node* node = get(key);
  if (node == nullptr) return nullptr;
  if (!node->is_array()) {
    fail(key, std::string("expected an array, found ") + toml_type_name(*node));
  }
  return node->as_array();
}

const toml::array* TomlTableReader::array_of_tables(std::string_view key) const {
  const toml::node* node = get(key);
  if (node == nullptr) return nullptr;
  const toml::array* list = node->as_array();
  if (list == nullptr) {
    fail(key,
         "expected an array of tables ([[" + key_path(key) + "]]), found " + toml_type_name(*node));
  }
  for (size_t i = 0; i < list->size(); ++i) {
    const toml::node& element = *list->get(i);
    if (!element.is_table()) {
      throw_scenario_error(file_, element.source(), indexed_path(key_path(key), i),
                           std::string("expected a table, found ") + toml_type_name(element));
    }
  }
  return list;
}

}  // namespace tensorwire

namespace tensorwire {
namespace {

std::string_view trim(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

// The text before the first '=' outside quotes, trimmed; empty when the line
// has none before a comment.
std::string_view key_before_equals(std::string_view line) {
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote != 0) {
      if (quote == '"' && c == '\\') {
        ++i;  // an escape in a basic string
      } else if (c == quote) {
        quote = 0;
      }
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#') {
      return {};
    } else if (c == '=') {
      return trim(line.substr(0, i));
    }
  }
  return {};
}

// A table header ("[cluster]", "[[workload.tensor]]") without its comment.
bool is_header(std::string_view trimmed) { return !trimmed.empty() && trimmed.front() == '['; }
std::string_view header_text(std::string_view trimmed) {
  return trim(trimmed.substr(0, trimmed.find('#')));
}

}  // namespace

std::string key_on_line(std::string_view text, uint64_t line) {
  std::string_view header;
  std::string_view rest = text;
  for (uint64_t n = 1; n <= line && !rest.empty(); ++n) {
    const size_t end = rest.find('\n');
    const std::string_view current = trim(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    if (n < line) {
      if (is_header(current)) header = header_text(current);
      continue;
    }
    if (is_header(current)) return {};  // an error in a header: no key
    const std::string_view key = key_before_equals(current);
    if (key.empty()) return {};
    return header.empty() ? std::string(key) : std::string(header) + " " + std::string(key);
  }
  return {};
}

toml::table parse_toml_document(std::string_view text, const std::string& file) {
  try {
    return toml::parse(text, std::string_view(file));
  } catch (const toml::parse_error& e) {
    throw_scenario_error(file, e.source(), key_on_line(text, e.source().begin.line),
                         "TOML syntax error: " + std::string(e.description()));
  }
}

}  // namespace tensorwire
