// How a protocol reads its own options table ([protocol.<name>] in a
// scenario) without core/ knowing the file format: the scenario loader
// implements it over TOML. Every accessor returns nullopt for an absent key,
// or a value of the right type within the bounds, or throws the loader's
// error naming file:line:column and the key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"

namespace tensorwire {

class OptionReader {
 public:
  // What a key holds, for options that take more than one form (a name or a
  // number, a name or a list).
  enum class ValueType : uint8_t { kAbsent, kInteger, kString, kList, kOther };

  virtual ~OptionReader() = default;

  virtual ValueType type_of(std::string_view key) const = 0;

  virtual std::optional<int64_t> integer(std::string_view key, int64_t min, int64_t max) const = 0;
  virtual std::optional<bool> boolean(std::string_view key) const = 0;
  virtual std::optional<std::string> string(std::string_view key) const = 0;
  // A duration with a unit ("1.5us"), between 0 and max_ns.
  virtual std::optional<TimeNs> duration(std::string_view key, TimeNs max_ns) const = 0;
  // An integer, or a size with a unit ("16KiB"), at most max_bytes.
  virtual std::optional<uint64_t> bytes(std::string_view key, uint64_t max_bytes) const = 0;
  // A list of strings, at most max_items of them (possibly none).
  virtual std::optional<std::vector<std::string>> strings(std::string_view key,
                                                          size_t max_items) const = 0;
  // Rejects the value of `key` (or the table, when the key is absent).
  [[noreturn]] virtual void fail(std::string_view key, std::string_view what) const = 0;
  // Rejects item `index` of the list `key`, pointing at that item.
  [[noreturn]] virtual void fail_item(std::string_view key, size_t index,
                                      std::string_view what) const = 0;
  // Rejects the table for lacking `key`.
  [[noreturn]] virtual void fail_missing(std::string_view key) const = 0;
};

}  // namespace tensorwire
