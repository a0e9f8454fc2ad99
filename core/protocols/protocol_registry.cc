#include "core/protocols/protocol_registry.h"

#include <array>

#include "core/assert.h"
// One include and one line below per protocol; nothing else names them.
#include "core/protocols/realm_broadcast/realm_broadcast_protocol.h"
#include "core/protocols/tf_verbs_zero_copy/tf_verbs_protocol.h"

namespace tensorwire {
namespace {

const std::array<const ProtocolDescriptor*, 2>& registry() {
  static const std::array<const ProtocolDescriptor*, 2> protocols = {
      &tf_verbs::tf_verbs_zero_copy_protocol(),
      &collectives::realm_collective_broadcast_protocol(),
  };
  return protocols;
}

}  // namespace

std::span<const ProtocolDescriptor* const> registered_protocols() { return registry(); }

const ProtocolDescriptor* find_protocol(std::string_view name) {
  for (const ProtocolDescriptor* p : registry()) {
    if (p->name() == name) return p;
  }
  return nullptr;
}

const ProtocolDescriptor& protocol_named(std::string_view name) {
  const ProtocolDescriptor* p = find_protocol(name);
  TW_ASSERT_MSG(p != nullptr, "a protocol name the loader accepted is registered");
  return *p;
}

const ProtocolDescriptor* default_protocol_for(std::string_view workload_kind) {
  for (const ProtocolDescriptor* p : registry()) {
    for (std::string_view kind : p->workload_kinds()) {
      if (kind == workload_kind) return p;
    }
  }
  return nullptr;
}

std::string registered_protocol_names() {
  std::string out;
  const auto protocols = registered_protocols();
  for (size_t i = 0; i < protocols.size(); ++i) {
    if (i > 0) out += i + 1 == protocols.size() ? " or " : ", ";
    out += "\"" + std::string(protocols[i]->name()) + "\"";
  }
  return out;
}

ProtocolConfig default_protocol_config() {
  const ProtocolDescriptor& p = *registry().front();
  return ProtocolConfig{std::string(p.name()), p.default_options()};
}

ProtocolConfig protocol_config(std::string_view name) {
  const ProtocolDescriptor& p = protocol_named(name);
  return ProtocolConfig{std::string(p.name()), p.default_options()};
}

}  // namespace tensorwire
