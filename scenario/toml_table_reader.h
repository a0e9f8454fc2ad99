// Checked access to one table of a parsed TOML file. Every accessor either
// returns a value of the right type within the stated bounds, or throws a
// ScenarioError "file:line:column: key.path: what is wrong" pointing at the
// offending value (or at the table, for a missing key).
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string_view>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/tensor.h"

namespace tensorwire {

// The source name of a value typed on the command line: "--set KEY=VALUE".
// Its errors name it without a line and column.
inline constexpr std::string_view kCommandLineSourcePrefix = "--set ";

// Throws ScenarioError naming `file` and the start of `where` (or the file or
// command-line override the value at `where` came from, when it has its own).
[[noreturn]] void throw_scenario_error(const std::string& file, const toml::source_region& where,
                                       std::string_view key_path, std::string_view what);

// "integer", "string", "array", ... for messages.
const char* toml_type_name(const toml::node& node);

// The element of an array, for messages: "workload.tensor[2]".
std::string indexed_path(std::string_view array_path, size_t index);

// Values inside arrays, where there is no table to read from.
int64_t toml_integer(const std::string& file, const toml::node& node, std::string_view key_path,
                     int64_t min, int64_t max);
std::string toml_string(const std::string& file, const toml::node& node, std::string_view key_path);
bool toml_boolean(const std::string& file, const toml::node& node, std::string_view key_path);

class TomlTableReader {
 public:
  // Rejects any key not in `allowed` at once (naming the closest allowed key),
  // so a typo is reported as a typo rather than as a missing key.
  TomlTableReader(const toml::table& table, std::string path, const std::string& file,
                  std::initializer_list<std::string_view> allowed);
  TomlTableReader(const toml::table& table, std::string path, const std::string& file,
                  std::span<const std::string_view> allowed);

  const toml::table& table() const { return table_; }
  const std::string& file() const { return file_; }
  // "cluster.nodes" for key "nodes" in table "cluster"; "seed" at the root.
  std::string key_path(std::string_view key) const;

  const toml::node* get(std::string_view key) const;
  bool has(std::string_view key) const { return get(key) != nullptr; }

  // Each returns nullopt / nullptr when the key is absent.
  std::optional<std::string> string(std::string_view key) const;
  std::optional<int64_t> integer(std::string_view key, int64_t min, int64_t max) const;
  std::optional<bool> boolean(std::string_view key) const;
  // A duration string ("1.5us") between 0 and max_ns.
  std::optional<TimeNs> duration(std::string_view key, TimeNs max_ns) const;
  // A bandwidth string ("100Gbps") within scenario_limits' bounds.
  std::optional<double> bandwidth(std::string_view key) const;
  // An integer, or a string with a unit ("16KiB"), at most max_bytes.
  std::optional<uint64_t> bytes(std::string_view key, uint64_t max_bytes) const;
  std::optional<DataType> data_type(std::string_view key) const;
  // A shape: an array of non-negative integers.
  std::optional<TensorShape> shape(std::string_view key) const;
  // A list of ranks (integers in [0, nodes)), distinct, in file order.
  std::optional<std::vector<uint32_t>> rank_list(std::string_view key, uint32_t nodes) const;
  const toml::table* sub_table(std::string_view key) const;
  const toml::array* array(std::string_view key) const;
  // An array whose every element is a table: [[key]] or key = [{...}, ...].
  const toml::array* array_of_tables(std::string_view key) const;

  template <typename T>
  T required(std::optional<T> value, std::string_view key) const {
    if (!value) fail_missing(key);
    return *std::move(value);
  }

  // At the key's value when present, else at the table.
  [[noreturn]] void fail(std::string_view key, std::string_view what) const;
  [[noreturn]] void fail_missing(std::string_view key) const;
  // At the table itself, naming its own path.
  [[noreturn]] void fail_table(std::string_view what) const;

 private:
  const toml::table& table_;
  std::string path_;
  const std::string& file_;
};

}  // namespace tensorwire

namespace tensorwire {

// Parses a whole TOML document; a syntax error becomes a ScenarioError at the
// position toml++ reports, naming the key on that line when it has one:
// "FILE:LINE:COL: [cluster] nic_bandwidth: TOML syntax error: ...".
toml::table parse_toml_document(std::string_view text, const std::string& file);

// The key assigned on `line` (from 1) of `text` with the header of its table,
// "[cluster] nic_bandwidth" ("name" before any header); empty when the line
// assigns no key (a header, a comment, the inside of a multi-line value).
std::string key_on_line(std::string_view text, uint64_t line);

}  // namespace tensorwire
