// The legacy TensorFlow verbs protocol's entry in the protocol registry:
// [protocol] name = "tf_verbs_legacy", options in [protocol.tf_verbs_legacy].
#pragma once

#include <any>

#include "core/protocols/protocol_descriptor.h"
#include "core/protocols/tf_verbs_legacy/legacy_options.h"

namespace tensorwire::tf_legacy {

const ProtocolDescriptor& tf_verbs_legacy_protocol();

// This protocol's options inside a ProtocolConfig's std::any (asserts the type).
LegacyOptions& options_of(std::any& options);
const LegacyOptions& options_of(const std::any& options);

}  // namespace tensorwire::tf_legacy
