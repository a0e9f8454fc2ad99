#include "core/protocol_counters.h"

#include <array>

#include "core/assert.h"

namespace tensorwire {
namespace {

constexpr std::array<std::pair<CounterRole, const char*>, 6> kRoleNames = {{
    {CounterRole::kControlMessage, "control_message"},
    {CounterRole::kContentTransfer, "content_transfer"},
    {CounterRole::kCopy, "copy"},
    {CounterRole::kRegistration, "registration"},
    {CounterRole::kProblem, "problem"},
    {CounterRole::kOther, "other"},
}};

}  // namespace

uint64_t counter_value(const ProtocolCounters& counters, std::string_view name) {
  for (const ProtocolCounter& c : counters) {
    if (c.name == name) return c.value;
  }
  return 0;
}

uint64_t counter_total(const ProtocolCounters& counters, CounterRole role) {
  uint64_t total = 0;
  for (const ProtocolCounter& c : counters) {
    if (c.role == role) total += c.value;
  }
  return total;
}

void add_counters(ProtocolCounters& into, const ProtocolCounters& from) {
  for (const ProtocolCounter& c : from) {
    bool found = false;
    for (ProtocolCounter& t : into) {
      if (t.name != c.name) continue;
      TW_ASSERT_MSG(t.role == c.role, "one counter name, one role");
      t.value += c.value;
      found = true;
      break;
    }
    if (!found) into.push_back(c);
  }
}

const char* counter_role_name(CounterRole role) {
  for (const auto& [r, name] : kRoleNames) {
    if (r == role) return name;
  }
  TW_UNREACHABLE("every CounterRole has a name");
}

bool counter_role_from_name(std::string_view name, CounterRole& role) {
  for (const auto& [r, n] : kRoleNames) {
    if (name == n) {
      role = r;
      return true;
    }
  }
  return false;
}

}  // namespace tensorwire
