#include "scenario/scenario_override.h"

#include <cstdio>
#include <optional>
#include <utility>
#include <vector>

#include "core/assert.h"
#include "scenario/scenario.h"
#include "scenario/toml_table_reader.h"

namespace tensorwire {
namespace {

// One step of a key path: a key, and for an array of tables which entry.
struct PathStep {
  std::string key;
  enum class Index { kNone, kOne, kEvery } index = Index::kNone;
  size_t entry = 0;  // kOne only
};

bool is_bare_key_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

[[noreturn]] void fail_override(const ScenarioOverride& o, const std::string& what) {
  throw ScenarioError(o.source() + ": " + what);
}

PathStep parse_step(std::string_view text, const ScenarioOverride& o) {
  PathStep step;
  const size_t bracket = text.find('[');
  step.key = std::string(text.substr(0, bracket));
  if (step.key.empty()) fail_override(o, "an empty key in '" + o.key + "'");
  for (char c : step.key) {
    if (!is_bare_key_char(c))
      fail_override(o, "'" + step.key + "' is not a key (letters, digits, _ and -)");
  }
  if (bracket == std::string_view::npos) return step;
  const std::string_view index = text.substr(bracket);
  if (index == "[*]") {
    step.index = PathStep::Index::kEvery;
    return step;
  }
  unsigned long long entry = 0;
  int used = 0;
  const std::string index_text(index);
  if (std::sscanf(index_text.c_str(), "[%llu]%n", &entry, &used) != 1 ||
      static_cast<size_t>(used) != index_text.size() || index_text[1] == '-' ||
      index_text[1] == '+') {
    fail_override(o, "'" + index_text + "' is not an index ([0], [1], ... or [*] for every entry)");
  }
  step.index = PathStep::Index::kOne;
  step.entry = static_cast<size_t>(entry);
  return step;
}

std::vector<PathStep> parse_path(const ScenarioOverride& o) {
  std::vector<PathStep> steps;
  size_t start = 0;
  while (true) {
    const size_t dot = o.key.find('.', start);
    steps.push_back(parse_step(std::string_view(o.key).substr(start, dot - start), o));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (steps.back().index != PathStep::Index::kNone) {
    fail_override(o, "the key ends in an index: set a key inside the entry, or the whole array");
  }
  return steps;
}

// VALUE as a TOML basic string: quotes, backslashes and control bytes escaped.
std::string quoted_toml_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20 || byte == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", byte);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// A fresh node for VALUE whose source is the override (so that the loader's
// errors about it name the flag): a TOML value when VALUE is exactly one,
// otherwise VALUE as a string.
toml::table value_document(const ScenarioOverride& o) {
  try {
    toml::table doc = toml::parse("v = " + o.value, o.source());
    if (doc.size() == 1 && doc.contains("v")) return doc;
  } catch (const toml::parse_error&) {
    // Not a TOML value: a bare word such as 200Gbps is meant as a string.
  }
  return toml::parse("v = " + quoted_toml_string(o.value), o.source());
}

void set_at(toml::table& table, std::span<const PathStep> path, const ScenarioOverride& o);

// Follows `step` from `table` to the tables it names (one, or every entry).
std::vector<toml::table*> step_into(toml::table& table, const PathStep& step,
                                    const ScenarioOverride& o) {
  toml::node* node = table.get(step.key);
  if (step.index == PathStep::Index::kNone) {
    if (node == nullptr) node = table.insert(step.key, toml::table{}).first->second.as_table();
    if (!node->is_table()) {
      fail_override(o, "'" + step.key + "' is " + toml_type_name(*node) + ", not a table");
    }
    return {node->as_table()};
  }
  toml::array* array = node == nullptr ? nullptr : node->as_array();
  if (array == nullptr) fail_override(o, "'" + step.key + "' is not an array of tables here");
  std::vector<toml::table*> entries;
  for (size_t i = 0; i < array->size(); ++i) {
    if (step.index == PathStep::Index::kOne && i != step.entry) continue;
    toml::table* entry = array->get(i)->as_table();
    if (entry == nullptr) fail_override(o, "'" + step.key + "' holds values, not tables");
    entries.push_back(entry);
  }
  if (entries.empty()) {
    fail_override(o, "'" + step.key + "' has " + std::to_string(array->size()) + " entries");
  }
  return entries;
}

void set_at(toml::table& table, std::span<const PathStep> path, const ScenarioOverride& o) {
  TW_ASSERT(!path.empty());
  if (path.size() == 1) {
    toml::table doc = value_document(o);
    toml::node& value = *doc.get("v");
    // The key carries the flag as its source too, so "unknown key" names it.
    toml::key key(path[0].key, toml::source_region(value.source()));
    value.visit([&](auto&& v) { table.insert_or_assign(std::move(key), std::move(v)); });
    return;
  }
  for (toml::table* inner : step_into(table, path[0], o)) set_at(*inner, path.subspan(1), o);
}

}  // namespace

std::string ScenarioOverride::source() const {
  return std::string(kCommandLineSourcePrefix) + key + "=" + value;
}

Result<ScenarioOverride> parse_scenario_override(std::string_view text) {
  const size_t equals = text.find('=');
  if (equals == std::string_view::npos) {
    return Status(StatusCode::kInvalidArgument, "'" + std::string(text) + "' is not KEY=VALUE");
  }
  ScenarioOverride o{std::string(text.substr(0, equals)), std::string(text.substr(equals + 1))};
  if (o.key.empty())
    return Status(StatusCode::kInvalidArgument,
                  "'" + std::string(text) + "' has no KEY before '='");
  return o;
}

void apply_scenario_overrides(toml::table& root, std::span<const ScenarioOverride> overrides) {
  for (const ScenarioOverride& o : overrides) {
    const std::vector<PathStep> path = parse_path(o);
    set_at(root, path, o);
  }
}

}  // namespace tensorwire
