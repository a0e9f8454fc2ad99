// Every protocol tensorwire knows, keyed by the scenario's [protocol] name.
// Adding a protocol is one line in protocol_registry.cc (see
// docs/ARCHITECTURE.md, "Adding a protocol"); nothing else outside its folder
// names it.
#pragma once

#include <any>
#include <span>
#include <string>
#include <string_view>

#include "core/protocols/protocol_descriptor.h"

namespace tensorwire {

// Every registered protocol, in registration order.
std::span<const ProtocolDescriptor* const> registered_protocols();
// nullptr for a name no protocol has.
const ProtocolDescriptor* find_protocol(std::string_view name);
// The descriptor of a registered name; asserts it is one.
const ProtocolDescriptor& protocol_named(std::string_view name);
// The first registered protocol that runs workload `kind`; nullptr if none.
const ProtocolDescriptor* default_protocol_for(std::string_view workload_kind);
// "a", "b" or "c": the registered names, for messages.
std::string registered_protocol_names();
// "tensors", "parameter_server" or "broadcast": every workload kind some
// registered protocol runs, in registration order, for messages.
std::string registered_workload_kinds();

// A scenario's protocol: its name and its options (of the protocol's own type).
struct ProtocolConfig {
  std::string name;
  std::any options;

  const ProtocolDescriptor& descriptor() const { return protocol_named(name); }
};

// The default: the first registered protocol with its default options.
ProtocolConfig default_protocol_config();
// `name` with its default options; asserts the name is registered.
ProtocolConfig protocol_config(std::string_view name);

}  // namespace tensorwire
