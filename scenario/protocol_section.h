// The [protocol] table: which registered protocol runs the scenario, and its
// options from [protocol.<name>] (read by the protocol itself, through an
// OptionReader over TOML, with file:line:column errors).
//   [protocol]
//   name = "tf_verbs_zero_copy"        # default: the first protocol for the workload kind
//   [protocol.tf_verbs_zero_copy]
//   control_ring_size = 64
// Tables of other registered protocols may sit beside it (so that switching
// `name` needs no other edit); each is checked, only the named one is used.
#pragma once

#include <string_view>

#include "core/protocols/protocol_registry.h"
#include "scenario/toml_table_reader.h"

namespace tensorwire {

// `top` is the file's root table; `workload_kind` the [workload] kind.
ProtocolConfig parse_protocol_section(const TomlTableReader& top, std::string_view workload_kind);

}  // namespace tensorwire
