#include "scenario/scenario_include.h"

#include <filesystem>
#include <utility>
#include <vector>

#include "core/assert.h"
#include "scenario/text_file.h"
#include "scenario/toml_table_reader.h"

#ifndef TENSORWIRE_SOURCE_ROOT
#error "scenario/meson.build passes -DTENSORWIRE_SOURCE_ROOT"
#endif

namespace tensorwire {
namespace {

constexpr std::string_view kIncludeKey = "include";

// The named files, as written: one string, or an array of strings.
std::vector<std::string> included_names(const toml::table& root, const std::string& file) {
  const toml::node* node = root.get(kIncludeKey);
  if (node == nullptr) return {};
  const std::string_view what = "expected a file name or an array of file names, found ";
  if (const auto* one = node->as_string()) return {one->get()};
  const toml::array* many = node->as_array();
  if (many == nullptr)
    throw_scenario_error(file, node->source(), kIncludeKey,
                         std::string(what) + toml_type_name(*node));
  if (many->size() > kMaxIncludes) {
    throw_scenario_error(file, node->source(), kIncludeKey,
                         "names " + std::to_string(many->size()) + " files (at most " +
                             std::to_string(kMaxIncludes) + ")");
  }
  std::vector<std::string> names;
  for (size_t i = 0; i < many->size(); ++i) {
    const toml::node& entry = *many->get(i);
    const auto* name = entry.as_string();
    if (name == nullptr) {
      throw_scenario_error(file, entry.source(), indexed_path(std::string(kIncludeKey), i),
                           std::string(what) + toml_type_name(entry));
    }
    names.push_back(name->get());
  }
  return names;
}

// `name` beside the scenario, else among the shipped scenarios; "" if neither.
std::string find_included_file(const std::string& name, const std::string& base_dir) {
  namespace fs = std::filesystem;
  std::error_code ignored;
  const fs::path beside = fs::path(base_dir.empty() ? "." : base_dir) / name;
  if (fs::is_regular_file(beside, ignored)) return beside.string();
  const fs::path shipped = fs::path(TENSORWIRE_SOURCE_ROOT) / "scenarios" / name;
  if (fs::is_regular_file(shipped, ignored)) return shipped.string();
  return "";
}

// Moves every key of `from` that `into` lacks into it; tables present in both
// merge key by key. `path` is the dotted key of `into` (for messages).
void merge_missing(toml::table& into, toml::table&& from, const std::string& path,
                   const std::string& file) {
  for (auto&& [key, node] : from) {
    const std::string key_path =
        path.empty() ? std::string(key.str()) : path + "." + std::string(key.str());
    toml::node* mine = into.get(key.str());
    if (mine == nullptr) {
      node.visit([&](auto&& value) { into.insert(key, std::move(value)); });
      continue;
    }
    if (mine->is_table() != node.is_table()) {
      throw_scenario_error(file, mine->source(), key_path,
                           std::string("is ") + toml_type_name(*mine) + " here but " +
                               toml_type_name(node) + " in an included file");
    }
    if (mine->is_table()) {
      merge_missing(*mine->as_table(), std::move(*node.as_table()), key_path, file);
    }
  }
}

toml::table read_included_file(const std::string& name, const toml::node& where,
                               const std::string& file, const std::string& base_dir) {
  const std::string path = find_included_file(name, base_dir);
  if (path.empty()) {
    throw_scenario_error(file, where.source(), kIncludeKey,
                         "no file '" + name + "' beside the scenario or in the shipped scenarios/");
  }
  Result<std::string> text = read_text_file(path);
  if (!text) throw_scenario_error(file, where.source(), kIncludeKey, text.status().message());
  toml::table included = parse_toml_document(*text, path);
  if (const toml::node* nested = included.get(kIncludeKey)) {
    throw_scenario_error(path, nested->source(), kIncludeKey,
                         "an included file may not include others (includes do not nest)");
  }
  return included;
}

}  // namespace

void merge_includes(toml::table& root, const std::string& file, const std::string& base_dir) {
  const std::vector<std::string> names = included_names(root, file);
  if (names.empty()) return;
  for (const std::string& name : names) {
    const toml::node& where = *root.get(kIncludeKey);
    merge_missing(root, read_included_file(name, where, file, base_dir), "", file);
  }
  root.erase(kIncludeKey);
  TW_ASSERT(!root.contains(kIncludeKey));
}

}  // namespace tensorwire
