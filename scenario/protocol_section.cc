#include "scenario/protocol_section.h"

#include <string>
#include <vector>

#include "core/assert.h"
#include "scenario/toml_option_reader.h"

namespace tensorwire {
namespace {

// [protocol] holds `name` and one table per registered protocol. A key that
// is some protocol's option is named as such: it moved into that protocol's
// table when the registry came. Returns the reader of the checked table.
TomlTableReader protocol_table_reader(const toml::table& table, const std::string& file,
                                      const std::vector<std::string_view>& allowed) {
  for (const auto& [key, value] : table) {
    const std::string_view k = key.str();
    if (find_protocol(k) != nullptr) continue;
    for (const ProtocolDescriptor* p : registered_protocols()) {
      for (std::string_view option : p->option_keys()) {
        if (option != k) continue;
        throw_scenario_error(file, value.source(), "protocol." + std::string(k),
                             "protocol options live in the protocol's own table: write it under "
                             "[protocol." + std::string(p->name()) + "]");
      }
    }
  }
  return TomlTableReader(table, "protocol", file, allowed);
}

std::any read_options_table(const TomlTableReader& r, const ProtocolDescriptor& p) {
  const toml::table* table = r.sub_table(p.name());
  if (table == nullptr) return p.default_options();
  const std::vector<std::string_view> keys = p.option_keys();
  if (keys.empty() && !table->empty()) {
    r.fail(p.name(), "protocol \"" + std::string(p.name()) + "\" takes no options");
  }
  TomlTableReader options(*table, "protocol." + std::string(p.name()), r.file(), keys);
  return p.read_options(TomlOptionReader(options));
}

bool runs_kind(const ProtocolDescriptor& p, std::string_view kind) {
  for (std::string_view k : p.workload_kinds()) {
    if (k == kind) return true;
  }
  return false;
}

}  // namespace

ProtocolConfig parse_protocol_section(const TomlTableReader& top, std::string_view workload_kind) {
  const ProtocolDescriptor* fallback = default_protocol_for(workload_kind);
  TW_ASSERT_MSG(fallback != nullptr, "every workload kind the loader accepts has a protocol");
  const toml::table* table = top.sub_table("protocol");
  if (table == nullptr) return protocol_config(fallback->name());
  std::vector<std::string_view> allowed = {"name"};
  for (const ProtocolDescriptor* p : registered_protocols()) allowed.push_back(p->name());
  const TomlTableReader r = protocol_table_reader(*table, top.file(), allowed);
  const ProtocolDescriptor* chosen = fallback;
  if (std::optional<std::string> name = r.string("name")) {
    chosen = find_protocol(*name);
    if (chosen == nullptr) {
      r.fail("name", "protocol '" + *name + "' is not available; use " +
                         registered_protocol_names());
    }
    if (!runs_kind(*chosen, workload_kind)) {
      r.fail("name", "protocol \"" + *name + "\" does not run workload kind \"" +
                         std::string(workload_kind) + "\" (\"" + std::string(fallback->name()) +
                         "\" does)");
    }
  }
  ProtocolConfig config{std::string(chosen->name()), {}};
  // Every protocol's table is checked, whichever one runs.
  for (const ProtocolDescriptor* p : registered_protocols()) {
    std::any options = read_options_table(r, *p);
    if (p == chosen) config.options = std::move(options);
  }
  TW_ASSERT(config.options.has_value());
  return config;
}

}  // namespace tensorwire
