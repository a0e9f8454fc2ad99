#include "core/protocols/swarm_tensors_scenario.h"

#include <iterator>
#include <sstream>
#include <string_view>

namespace tensorwire {
namespace {

constexpr std::string_view kTypes[] = {"float32", "float16", "float64", "int64", "uint8"};
constexpr std::string_view kOrders[] = {"recv_first", "send_first", "same_time"};
constexpr uint32_t kMaxNodes = 4;
constexpr uint32_t kMaxSteps = 3;

std::string draw_place(SwarmDraw& d, uint32_t gpus) {
  const size_t choice = d.index_below(2 + size_t{gpus});
  if (choice == 0) return "host";
  if (choice == 1) return "host_pageable";
  return "gpu" + std::to_string(choice - 2);
}

// Elements: none, a few (below an eager threshold), or a few hundred (several
// chunks, blocks or buffer growths).
uint64_t draw_elements(SwarmDraw& d) {
  switch (d.index_below(3)) {
    case 0: return d.between(0, 2);
    case 1: return d.up_to_sized(1, 32);
    default: return d.up_to_sized(33, 700);
  }
}

void write_head(SwarmDraw& d, uint32_t nodes, uint32_t gpus, const SwarmProtocolTables& protocol,
                std::ostream& t) {
  t << "seed = " << d.between(1, 1u << 30) << "\n[cluster]\nnodes = " << nodes
    << "\ngpus_per_node = " << gpus << "\ngpu_direct = " << (d.one_in(2) ? "true" : "false")
    << "\nrnr_retry_count = 0\n";
  if (d.one_in(4)) t << "send_queue_depth = " << d.between(1, 4) << "\n";
  protocol(d, t);
}

void write_tensor(SwarmDraw& d, uint32_t index, uint32_t nodes, uint32_t gpus, std::ostream& t) {
  const auto src = static_cast<uint32_t>(d.index_below(nodes));
  const auto dst = static_cast<uint32_t>((src + 1 + d.index_below(nodes - 1)) % nodes);
  t << "[[workload.tensor]]\nname = \"t" << index << "\"\nsrc = " << src << "\ndst = " << dst
    << "\ndtype = \"" << kTypes[d.index_below(std::size(kTypes))] << "\"\nshape = ["
    << draw_elements(d) << "]\nsrc_memory = \"" << draw_place(d, gpus) << "\"\ndst_memory = \""
    << draw_place(d, gpus) << "\"\norder = \"" << kOrders[d.index_below(std::size(kOrders))]
    << "\"\n";
  if (d.one_in(8)) t << "dead = true\n";
}

// Drawn for every step up to kMaxSteps and left out past `steps`, so fewer
// steps leave the other draws as they were (shrinking).
void write_changes(SwarmDraw& d, uint32_t steps, uint32_t index, std::ostream& t) {
  for (uint32_t step = 2; step <= kMaxSteps; ++step) {
    if (!d.one_in(3)) continue;
    const uint64_t elements = draw_elements(d);
    if (step > steps) continue;
    t << "[[workload.change]]\nstep = " << step << "\ntensor = \"t" << index << "\"\nshape = ["
      << elements << "]\n";
  }
}

}  // namespace

std::string draw_channels(SwarmDraw& d) { return d.one_in(4) ? "channels = \"all\"\n" : ""; }

std::string draw_tensors_swarm_scenario(SwarmDraw& d, const SwarmProtocolTables& protocol) {
  const auto nodes = static_cast<uint32_t>(d.up_to_sized(2, kMaxNodes));
  const auto gpus = static_cast<uint32_t>(d.between(0, 2));
  const auto steps = static_cast<uint32_t>(d.up_to_sized(1, kMaxSteps));
  const auto count = static_cast<uint32_t>(d.up_to_sized(1, 4));
  std::ostringstream head;
  write_head(d, nodes, gpus, protocol, head);
  std::ostringstream t;
  t << "[workload]\nkind = \"tensors\"\nsteps = " << steps << "\n";
  std::ostringstream changes;
  for (uint32_t i = 0; i < count; ++i) {
    write_tensor(d, i, nodes, gpus, t);
    write_changes(d, steps, i, changes);
  }
  t << changes.str();
  // Drawn after everything else, so that the draws above (and every scenario
  // drawn before this key existed) stay as they were; written at the end of
  // the protocol's own table, which the head ends with.
  head << draw_channels(d);
  return head.str() + t.str();
}

}  // namespace tensorwire
