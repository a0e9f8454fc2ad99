// The zero-copy TensorFlow verbs protocol's entry in the protocol registry:
// [protocol] name = "tf_verbs_zero_copy", options in [protocol.tf_verbs_zero_copy].
#pragma once

#include <any>

#include "core/protocols/protocol_descriptor.h"
#include "core/protocols/tf_verbs_zero_copy/tf_verbs_options.h"

namespace tensorwire::tf_verbs {

const ProtocolDescriptor& tf_verbs_zero_copy_protocol();

// This protocol's options inside a ProtocolConfig's std::any (asserts the
// type): for tests and benchmarks that set them in code.
TfVerbsOptions& options_of(std::any& options);
const TfVerbsOptions& options_of(const std::any& options);

}  // namespace tensorwire::tf_verbs
