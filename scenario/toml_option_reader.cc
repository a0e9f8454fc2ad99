#include "scenario/toml_option_reader.h"

namespace tensorwire {

OptionReader::ValueType TomlOptionReader::type_of(std::string_view key) const {
  const toml::node* node = table_.get(key);
  if (node == nullptr) return ValueType::kAbsent;
  if (node->is_integer()) return ValueType::kInteger;
  if (node->is_string()) return ValueType::kString;
  if (node->is_array()) return ValueType::kList;
  return ValueType::kOther;
}

std::optional<std::vector<std::string>> TomlOptionReader::strings(std::string_view key,
                                                                  size_t max_items) const {
  if (!table_.has(key)) return std::nullopt;
  const toml::array* list = table_.array(key);  // throws for a value of another type
  if (list->size() > max_items) {
    table_.fail(key, "at most " + std::to_string(max_items) + " items");
  }
  std::vector<std::string> out;
  out.reserve(list->size());
  for (size_t i = 0; i < list->size(); ++i) {
    out.push_back(
        toml_string(table_.file(), *list->get(i), indexed_path(table_.key_path(key), i)));
  }
  return out;
}

void TomlOptionReader::fail_item(std::string_view key, size_t index, std::string_view what) const {
  const toml::array* list = table_.array(key);
  if (list == nullptr || index >= list->size()) table_.fail(key, what);
  throw_scenario_error(table_.file(), list->get(index)->source(),
                       indexed_path(table_.key_path(key), index), what);
}

}  // namespace tensorwire
