// MVAPICH2-GPU's entry in the protocol registry:
// [protocol] name = "mvapich2_gpu", options in [protocol.mvapich2_gpu].
#pragma once

#include <any>

#include "core/protocols/mvapich2_gpu/mv2_options.h"
#include "core/protocols/protocol_descriptor.h"

namespace tensorwire::mvapich2 {

const ProtocolDescriptor& mvapich2_gpu_protocol();

// This protocol's options inside a ProtocolConfig's std::any (asserts the type).
Mv2Options& options_of(std::any& options);
const Mv2Options& options_of(const std::any& options);

}  // namespace tensorwire::mvapich2
