#include "core/protocols/protocol_registry.h"

#include <algorithm>
#include <array>
#include <vector>

#include "core/assert.h"
// One include and one line below per protocol; nothing else names them.
#include "core/protocols/mvapich2_gpu/mvapich2_gpu_protocol.h"
#include "core/protocols/oneflow_commnet/oneflow_commnet_protocol.h"
#include "core/protocols/realm_broadcast/realm_broadcast_protocol.h"
#include "core/protocols/tf_verbs_legacy/tf_verbs_legacy_protocol.h"
#include "core/protocols/tf_verbs_zero_copy/tf_verbs_protocol.h"

namespace tensorwire {
namespace {

const std::array<const ProtocolDescriptor*, 5>& registry() {
  static const std::array<const ProtocolDescriptor*, 5> protocols = {
      &tf_verbs::tf_verbs_zero_copy_protocol(),
      &collectives::realm_collective_broadcast_protocol(),
      &oneflow::oneflow_commnet_protocol(),
      &mvapich2::mvapich2_gpu_protocol(),
      &tf_legacy::tf_verbs_legacy_protocol(),
  };
  return protocols;
}

// "a", "b" or "c".
std::string quoted_alternatives(const std::vector<std::string_view>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += "\"" + std::string(names[i]) + "\"";
  }
  return out;
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
  std::vector<std::string_view> names;
  for (const ProtocolDescriptor* p : registered_protocols()) names.push_back(p->name());
  return quoted_alternatives(names);
}

std::string registered_workload_kinds() {
  std::vector<std::string_view> kinds;
  for (const ProtocolDescriptor* p : registered_protocols()) {
    for (std::string_view kind : p->workload_kinds()) {
      if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
    }
  }
  TW_ASSERT_MSG(!kinds.empty(), "every protocol runs some workload kind");
  return quoted_alternatives(kinds);
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
