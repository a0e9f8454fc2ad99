// A protocol's named counters: what it did (messages of each type, writes,
// copies, registrations) and what it survived (malformed or stale messages),
// for the summary, the results JSON and the ranks' all-gather. Values, in the
// order the protocol declares them, so every output is deterministic; the
// layers above read them by name and never by a protocol's own struct.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tensorwire {

// What a counter counts, so protocol-neutral code can total like with like.
enum class CounterRole : uint8_t {
  kControlMessage,  // a control message sent (summed into "control messages")
  kContentTransfer, // an RDMA write or read of tensor content
  kCopy,            // a copy made by the CPU or a copy engine
  kRegistration,    // a memory registration
  kProblem,         // a problem seen and survived (malformed input, protocol errors)
  kOther,
};

struct ProtocolCounter {
  std::string name;  // snake_case; the results JSON key
  CounterRole role = CounterRole::kOther;
  uint64_t value = 0;
};

using ProtocolCounters = std::vector<ProtocolCounter>;

// The value of the counter named `name`; 0 when there is none.
uint64_t counter_value(const ProtocolCounters& counters, std::string_view name);
// Sum of every counter with `role`.
uint64_t counter_total(const ProtocolCounters& counters, CounterRole role);
// Adds `from` into `into` by name; a name `into` lacks is appended, so the
// first rank's order is kept.
void add_counters(ProtocolCounters& into, const ProtocolCounters& from);

const char* counter_role_name(CounterRole role);
// false for a name that is none of the roles'.
bool counter_role_from_name(std::string_view name, CounterRole& role);

}  // namespace tensorwire
