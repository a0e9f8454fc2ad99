// OneFlow CommNet's entry in the protocol registry:
// [protocol] name = "oneflow_commnet", options in [protocol.oneflow_commnet].
#pragma once

#include <any>

#include "core/protocols/oneflow_commnet/commnet_options.h"
#include "core/protocols/protocol_descriptor.h"

namespace tensorwire::oneflow {

const ProtocolDescriptor& oneflow_commnet_protocol();

// This protocol's options inside a ProtocolConfig's std::any (asserts the type).
CommNetOptions& options_of(std::any& options);
const CommNetOptions& options_of(const std::any& options);

}  // namespace tensorwire::oneflow
