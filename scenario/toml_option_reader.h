// core/'s OptionReader over one table of a scenario file: how a protocol
// reads its own options ([protocol.<name>]) and a collective protocol its own
// [workload] table, with the loader's file:line:column errors.
#pragma once

#include "core/option_reader.h"
#include "scenario/toml_table_reader.h"

namespace tensorwire {

class TomlOptionReader final : public OptionReader {
 public:
  // `table` must outlive the reader.
  explicit TomlOptionReader(const TomlTableReader& table) : table_(table) {}

  ValueType type_of(std::string_view key) const override;
  std::optional<int64_t> integer(std::string_view key, int64_t min, int64_t max) const override {
    return table_.integer(key, min, max);
  }
  std::optional<bool> boolean(std::string_view key) const override { return table_.boolean(key); }
  std::optional<std::string> string(std::string_view key) const override {
    return table_.string(key);
  }
  std::optional<TimeNs> duration(std::string_view key, TimeNs max_ns) const override {
    return table_.duration(key, max_ns);
  }
  std::optional<uint64_t> bytes(std::string_view key, uint64_t max_bytes) const override {
    return table_.bytes(key, max_bytes);
  }
  std::optional<std::vector<std::string>> strings(std::string_view key,
                                                  size_t max_items) const override;
  [[noreturn]] void fail(std::string_view key, std::string_view what) const override {
    table_.fail(key, what);
  }
  [[noreturn]] void fail_item(std::string_view key, size_t index,
                              std::string_view what) const override;
  [[noreturn]] void fail_missing(std::string_view key) const override {
    table_.fail_missing(key);
  }

 private:
  const TomlTableReader& table_;
};

}  // namespace tensorwire
