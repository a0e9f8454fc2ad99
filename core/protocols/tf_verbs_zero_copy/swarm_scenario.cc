#include "core/protocols/tf_verbs_zero_copy/swarm_scenario.h"

#include <algorithm>
#include <sstream>
#include <string_view>
#include <vector>

#include "core/assert.h"
#include "core/protocols/swarm_tensors_scenario.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_memory_mgr.h"

namespace tensorwire::tf_verbs {
namespace {

struct NumericType {
  std::string_view name;
  uint64_t bytes;
};
constexpr NumericType kNumericTypes[] = {{"float32", 4}, {"float16", 2}, {"bfloat16", 2},
                                         {"float64", 8}, {"int32", 4},   {"int64", 8},
                                         {"uint8", 1},   {"bool", 1}};
constexpr std::string_view kOrders[] = {"recv_first", "send_first", "same_time"};
constexpr uint32_t kMaxNodes = 4;
constexpr uint32_t kMaxSteps = 4;

// A tensor's meta-data as it stands at some step.
struct MetaData {
  std::string dtype;  // a kNumericTypes name, or "string"
  uint64_t elements = 0;
  uint64_t string_bytes = 16;
  bool dead = false;
};

struct DrawnTensor {
  uint32_t src = 0;
  uint32_t dst = 0;
  std::string src_memory;
  std::string dst_memory;
  bool host_only = false;  // both ends in host memory: may become a string tensor
  MetaData meta;
};

uint64_t element_bytes(std::string_view dtype) {
  for (const NumericType& t : kNumericTypes) {
    if (t.name == dtype) return t.bytes;
  }
  TW_ASSERT_MSG(dtype == "string", "a drawn dtype is numeric or string");
  return 16;  // a string element's proto bytes, roughly: keeps string tensors small
}

// Elements for `dtype`: a few, or a buffer on a pool size class, or one
// element past it (the next class): reallocation and pool reuse both show.
uint64_t draw_elements(SwarmDraw& d, std::string_view dtype) {
  switch (d.index_below(4)) {
    case 0: return d.between(0, 8);
    case 1: return d.up_to_sized(0, 96);
    default: break;
  }
  const uint64_t size_class = RdmaMemoryMgr::size_class(d.up_to_sized(1, 16384));
  const uint64_t on_class = std::max<uint64_t>(1, size_class / element_bytes(dtype));
  return on_class + d.between(0, 1);
}

std::string shape_text(SwarmDraw& d, uint64_t elements) {
  if (elements == 1 && d.one_in(3)) return "[]";
  if (elements == 0 && d.one_in(2)) return "[3, 0]";
  if (elements % 2 == 0 && elements > 0 && d.one_in(4)) {
    return "[2, " + std::to_string(elements / 2) + "]";
  }
  return "[" + std::to_string(elements) + "]";
}

std::string draw_place(SwarmDraw& d, uint32_t gpus, bool host_only) {
  const size_t choice = d.index_below(host_only ? 2 : 2 + 2 * size_t{gpus});
  if (choice == 0) return "host";
  if (choice == 1) return "host_pageable";
  return "gpu" + std::to_string((choice - 2) / 2);
}

MetaData draw_meta_data(SwarmDraw& d, bool host_only) {
  MetaData m;
  if (host_only && d.one_in(4)) {
    m.dtype = "string";
    m.string_bytes = d.between(0, 40);
  } else {
    m.dtype = std::string(kNumericTypes[d.index_below(std::size(kNumericTypes))].name);
  }
  m.elements = draw_elements(d, m.dtype);
  m.dead = d.one_in(8);
  return m;
}

DrawnTensor draw_tensor(SwarmDraw& d, uint32_t nodes, uint32_t gpus) {
  DrawnTensor t;
  t.src = static_cast<uint32_t>(d.index_below(nodes));
  t.dst = static_cast<uint32_t>((t.src + 1 + d.index_below(nodes - 1)) % nodes);
  t.src_memory = draw_place(d, gpus, false);
  t.dst_memory = draw_place(d, gpus, false);
  t.host_only = t.src_memory.starts_with("host") && t.dst_memory.starts_with("host");
  t.meta = draw_meta_data(d, t.host_only);
  TW_ASSERT(t.src != t.dst);
  return t;
}

// Changes `m` into the meta-data of a later step and returns the change's
// keys as TOML lines.
std::string draw_change(SwarmDraw& d, const DrawnTensor& t, MetaData& m) {
  std::ostringstream keys;
  const size_t kind = d.index_below(m.dtype == "string" ? 4 : 3);
  if (kind == 0) {
    m.elements = draw_elements(d, m.dtype);
    keys << "shape = " << shape_text(d, m.elements) << "\n";
  } else if (kind == 1) {
    const bool to_string = t.host_only && m.dtype != "string" && d.one_in(3);
    m.dtype = to_string ? "string"
                        : std::string(kNumericTypes[d.index_below(std::size(kNumericTypes))].name);
    keys << "dtype = \"" << m.dtype << "\"\n";
    if (to_string) m.string_bytes = 16;
  } else if (kind == 2) {
    m.dead = !m.dead;
    keys << "dead = " << (m.dead ? "true" : "false") << "\n";
  } else {
    m.string_bytes = d.between(0, 64);
    keys << "string_bytes = " << m.string_bytes << "\n";
  }
  return keys.str();
}

void write_cluster(SwarmDraw& d, uint32_t nodes, uint32_t gpus, std::ostream& t) {
  t << "[cluster]\nnodes = " << nodes << "\ngpus_per_node = " << gpus << "\ngpu_direct = ";
  // As many picks whatever `nodes` is: a smaller cluster leaves later draws as they were.
  const bool per_node = d.one_in(3) && gpus > 0;
  bool direct[kMaxNodes];
  for (bool& b : direct) b = d.one_in(2);
  if (per_node) {
    // Per node: some GPUs the NIC reaches, some it does not (the proxy path).
    t << "[";
    for (uint32_t n = 0; n < nodes; ++n) t << (n > 0 ? ", " : "") << (direct[n] ? "true" : "false");
    t << "]\n";
  } else {
    t << (direct[0] ? "true" : "false") << "\n";
  }
  if (d.one_in(4)) t << "send_queue_depth = " << d.between(1, 4) << "\n";
}

void write_protocol(SwarmDraw& d, std::ostream& t) {
  t << "[protocol]\nname = \"tf_verbs_zero_copy\"\n[protocol.tf_verbs_zero_copy]\n";
  if (d.one_in(3)) t << "control_ring_size = " << d.between(1, 8) << "\n";
  // Far above a drawn scenario's run time: it fires only where a Recv hangs.
  if (d.one_in(4)) t << "request_timeout = \"" << d.between(1, 20) << "ms\"\n";
}

void write_tensor(SwarmDraw& d, uint32_t index, const DrawnTensor& x, std::ostream& t) {
  t << "[[workload.tensor]]\nname = \"t" << index << "\"\nsrc = " << x.src << "\ndst = " << x.dst
    << "\ndtype = \"" << x.meta.dtype << "\"\nshape = " << shape_text(d, x.meta.elements)
    << "\nsrc_memory = \"" << x.src_memory << "\"\ndst_memory = \"" << x.dst_memory << "\"\n";
  if (x.meta.dtype == "string") t << "string_bytes = " << x.meta.string_bytes << "\n";
  if (x.meta.dead) t << "dead = true\n";
  if (d.one_in(6)) {
    t << "send_offset = \"" << d.between(0, 8) << "us\"\nrecv_offset = \"" << d.between(0, 8)
      << "us\"\n";
  } else {
    t << "order = \"" << kOrders[d.index_below(std::size(kOrders))] << "\"\n";
  }
}

// Tensor `index`'s changes: at each step from 2 on, with probability 1/3.
// Drawn for every step up to kMaxSteps and left out past `steps`, and right
// after the tensor, so that fewer steps or fewer tensors leave the other
// tensors' draws as they were (how shrinking finds a smaller scenario).
void write_changes(SwarmDraw& d, uint32_t steps, uint32_t index, DrawnTensor& x,
                   std::ostream& t) {
  for (uint32_t step = 2; step <= kMaxSteps; ++step) {
    if (!d.one_in(3)) continue;
    const std::string keys = draw_change(d, x, x.meta);
    if (step > steps) continue;
    t << "[[workload.change]]\nstep = " << step << "\ntensor = \"t" << index << "\"\n" << keys;
  }
}

std::string draw_scenario(SwarmDraw& d) {
  const auto nodes = static_cast<uint32_t>(d.up_to_sized(2, kMaxNodes));
  const auto gpus = static_cast<uint32_t>(d.between(0, 2));
  const auto steps = static_cast<uint32_t>(d.up_to_sized(1, kMaxSteps));
  const auto count = static_cast<uint32_t>(d.up_to_sized(1, 5));
  std::ostringstream head;
  head << "seed = " << d.between(1, 1u << 30) << "\n";
  write_cluster(d, nodes, gpus, head);
  write_protocol(d, head);
  std::ostringstream t;
  t << "[workload]\nkind = \"tensors\"\nsteps = " << steps << "\n";
  if (d.one_in(4)) t << "compute = \"" << d.between(1, 5) << "us\"\n";
  std::ostringstream changes;
  for (uint32_t i = 0; i < count; ++i) {
    DrawnTensor x = draw_tensor(d, nodes, gpus);
    write_tensor(d, i, x, t);
    write_changes(d, steps, i, x, changes);
  }
  t << changes.str();
  // Last of the draws (the others stay as they were), at the end of the
  // protocol's table.
  head << draw_channels(d);
  return head.str() + t.str();
}

}  // namespace

std::string draw_swarm_scenario(SwarmDraw& d) { return draw_scenario(d); }

}  // namespace tensorwire::tf_verbs
