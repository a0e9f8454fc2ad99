#include "core/protocols/realm_broadcast/broadcast_account.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/assert.h"
#include "core/units_format.h"

namespace tensorwire::collectives {
namespace {

std::string ratio(double a, double b) {
  if (b <= 0) return "-";
  std::ostringstream s;
  s << std::fixed << std::setprecision(2) << a / b << "x";
  return s.str();
}

// A scenario name is free text from a file: keep it on one line of the DOT comment.
std::string one_line(std::string s) {
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return s;
}

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

// The links that were busiest, by their busy time.
std::string busiest_links(const BroadcastResult& r) {
  std::vector<BroadcastLinkResult> links = r.links;
  std::stable_sort(links.begin(), links.end(),
                   [](const auto& a, const auto& b) { return a.busy_ns > b.busy_ns; });
  std::ostringstream out;
  out << "\n" << pad("busiest links", 26) << pad("bytes", 12) << "busy\n";
  for (size_t i = 0; i < links.size() && i < 8; ++i) {
    out << pad(links[i].link, 26) << pad(format_bytes(links[i].bytes), 12)
        << format_duration_ns(links[i].busy_ns) << "\n";
  }
  if (links.size() > 8) out << "(" << links.size() - 8 << " more links carried bytes)\n";
  return out.str();
}

// Every planner's plan bound against the physical bound; `ran` marks the
// algorithm this run used, with its achieved time.
std::string planner_table(const BroadcastResult& r) {
  const double physical = static_cast<double>(r.physical.total_ns);
  std::ostringstream out;
  out << "physical bound  " << format_duration_ns(r.physical.total_ns) << " (" << r.physical.what
      << ")\n"
      << "vs physical     " << ratio(static_cast<double>(r.finish_ns), physical) << "\n\n"
      << pad("planner", 26) << pad("plan bound", 14) << "vs physical\n";
  for (const PlannerBound& p : r.planners) {
    std::string name = broadcast_algorithm_name(p.algorithm);
    if (p.algorithm == r.options.algorithm) name += " (ran)";
    if (p.plan_bound_ns < 0) {
      out << pad(name, 26) << "cannot plan: " << p.error << "\n";
      continue;
    }
    out << pad(name, 26) << pad(format_duration_ns(p.plan_bound_ns), 14)
        << ratio(static_cast<double>(p.plan_bound_ns), physical) << "\n";
  }
  return out.str();
}

}  // namespace

std::optional<CollectiveTimeBound> BroadcastAccount::time_bound() const {
  const BroadcastResult& r = result_;
  if (r.bound.total_ns <= 0 || r.destinations_done() != r.destinations.size()) return std::nullopt;
  return CollectiveTimeBound{r.bound.total_ns, r.finish_ns,
                             "the plan's pipelined bound: busiest link + depth x chunk"};
}

std::string BroadcastAccount::summary_section() const {
  const BroadcastResult& r = result_;
  TW_ASSERT(r.destinations_done() <= r.destinations.size());
  std::ostringstream out;
  const auto& o = r.options;
  out << "broadcast  " << format_bytes(r.bytes) << " to " << r.destinations.size()
      << " destinations, " << r.algorithm << " (algorithm " << static_cast<uint32_t>(o.algorithm)
      << ", radix_inter " << o.radix_inter << ", radix_intra " << o.radix_intra << ")\n"
      << "plan       " << r.graph.buffers.size() << " buffers (" << r.graph.ib_buffer_count()
      << " IB), " << r.graph.copies.size() << " copies, depth " << r.graph.depth() << "\n"
      << "pipeline   chunks " << format_bytes(o.min_chunk_bytes) << " .. "
      << format_bytes(o.max_chunk_bytes) << ", " << o.max_inflight_chunks
      << " in flight per copy, IB buffers up to " << format_bytes(o.ib_buffer_max_bytes)
      << ", pool " << format_bytes(o.ib_pool_bytes) << " per memory\n";
  if (o.registration_window_bytes > 0) {
    out << "windows    instances the network writes into registered in windows of "
        << format_bytes(o.registration_window_bytes) << "\n";
  }
  out << "\n";

  out << pad("destination", 16) << pad("depth", 7) << "done at\n";
  const size_t rows = r.destinations.size();
  for (size_t i = 0; i < rows; ++i) {
    if (rows > 24 && i == 10) {
      out << "  ... " << rows - 20 << " more\n";
      i = rows - 10;
    }
    const auto& d = r.destinations[i];
    out << pad(d.memory, 16) << pad(std::to_string(d.depth), 7)
        << (d.done_ns < 0 ? std::string("never") : format_duration_ns(d.done_ns)) << "\n";
  }
  out << busiest_links(r);
  out << "\nfinished        " << format_duration_ns(r.finish_ns)
      << (r.measured ? " (measured)\n" : " (simulated)\n")
      << "lower bound     " << format_duration_ns(r.bound.total_ns) << " = busiest link "
      << format_duration_ns(r.bound.busiest_link_ns) << " ("
      << (r.bound.busiest_link.value < r.link_names.size() ? r.link_names[r.bound.busiest_link.value]
                                                             : std::string("-"))
      << ") + depth x chunk " << format_duration_ns(r.bound.startup_ns) << "\n"
      << "vs lower bound  " << ratio(static_cast<double>(r.finish_ns), static_cast<double>(r.bound.total_ns))
      << "\n"
      << planner_table(r) << "\n";
  return out.str();
}

std::string BroadcastAccount::pass_line(bool payload) const {
  // One process per rank: each rank checked its own destinations; the
  // invariants that need the whole cluster's events are the simulator's.
  if (result_.measured) {
    return "PASS: every destination holds exactly the source bytes (each checked on its rank)\n";
  }
  return payload ? "PASS: every destination holds exactly the source bytes; every invariant held\n"
                 : "PASS: every destination completed; every invariant held\n";
}

void BroadcastAccount::add_results(nlohmann::ordered_json& j,
                                   std::string_view workload_kind) const {
  const BroadcastResult& r = result_;
  const size_t done = r.destinations_done();
  TW_ASSERT(done <= r.destinations.size());
  j["workload"] = {{"kind", workload_kind},
                   {"finished", done == r.destinations.size() && !r.destinations.empty()},
                   {"destinations", r.destinations.size()},
                   {"destinations_done", done}};
  const auto& o = r.options;
  j["broadcast"] = {{"bytes", r.bytes},
                    {"algorithm", static_cast<uint32_t>(o.algorithm)},
                    {"algorithm_name", r.algorithm},
                    {"radix_inter", o.radix_inter},
                    {"radix_intra", o.radix_intra},
                    {"ib_buffer_bytes", o.ib_buffer_max_bytes},
                    {"ib_pool_bytes", o.ib_pool_bytes},
                    {"min_chunk_bytes", o.min_chunk_bytes},
                    {"max_chunk_bytes", o.max_chunk_bytes},
                    {"max_inflight_chunks", o.max_inflight_chunks}};
  // Only when set: results of whole registration keep their shape.
  if (o.registration_window_bytes > 0) {
    j["broadcast"]["registration_window_bytes"] = o.registration_window_bytes;
  }
  j["plan"] = {{"buffers", r.graph.buffers.size()},
               {"ib_buffers", r.graph.ib_buffer_count()},
               {"copies", r.graph.copies.size()},
               {"depth", r.graph.depth()}};
  auto& dests = j["destinations"] = nlohmann::ordered_json::array();
  for (const auto& d : r.destinations) {
    dests.push_back({{"memory", d.memory}, {"depth", d.depth}, {"done_ns", d.done_ns}});
    // Measured wall times under the key the verbs runner's tensors use.
    if (r.measured && d.done_ns >= 0) dests.back()["measured_ns"] = d.done_ns;
  }
  auto& links = j["links"] = nlohmann::ordered_json::array();
  for (const auto& l : r.links) {
    links.push_back({{"link", l.link}, {"bytes", l.bytes}, {"busy_ns", l.busy_ns}});
  }
  j["finish_ns"] = r.finish_ns;
  if (r.measured && done == r.destinations.size() && done > 0) j["measured_ns"] = r.finish_ns;
  j["lower_bound"] = {{"total_ns", r.bound.total_ns},
                      {"busiest_link_ns", r.bound.busiest_link_ns},
                      {"startup_ns", r.bound.startup_ns}};
  j["physical_bound"] = {{"total_ns", r.physical.total_ns}, {"what", r.physical.what}};
  auto& planners = j["planner_bounds"] = nlohmann::ordered_json::array();
  for (const PlannerBound& p : r.planners) {
    planners.push_back({{"algorithm", static_cast<uint32_t>(p.algorithm)},
                        {"algorithm_name", broadcast_algorithm_name(p.algorithm)},
                        {"plan_bound_ns", p.plan_bound_ns}});
  }
}

std::string BroadcastAccount::graph_dot(std::string_view title) const {
  const BroadcastResult& r = result_;
  const TransferGraph& g = r.graph;
  std::ostringstream out;
  out << "// tensorwire plan: " << one_line(std::string(title)) << ", " << r.algorithm << ", "
      << format_bytes(r.bytes) << "\n"
      << "digraph transfer_graph {\n  rankdir=LR;\n  node [fontname=\"Helvetica\"];\n";
  std::map<uint32_t, std::vector<const TransferBuffer*>> by_node;
  for (const auto& b : g.buffers) by_node[b.memory.node].push_back(&b);
  for (const auto& [node, buffers] : by_node) {
    out << "  subgraph cluster_node" << node << " {\n    label=\"node" << node << "\";\n";
    for (const auto* b : buffers) {
      const char* shape = b->role == BufferRole::kIB ? "box" : "ellipse";
      const char* style = b->role == BufferRole::kSource        ? ",style=filled,fillcolor=gold"
                          : b->role == BufferRole::kDestination ? ",style=filled,fillcolor=lightblue"
                                                                : "";
      std::string label = std::string(buffer_role_name(b->role)) + "\\n" + b->memory.name();
      if (b->role == BufferRole::kIB) label += "\\nring " + format_bytes(b->ring_bytes);
      if (b->serves_as_ib()) label += "\\n(entry buffer)";
      out << "    b" << b->id << " [shape=" << shape << style << ",label=\"" << label << "\"];\n";
    }
    out << "  }\n";
  }
  for (const auto& c : g.copies) {
    std::string label = "c" + std::to_string(c.id) + " " + format_bytes(g.bytes) +
                        (c.hop.network ? " rdma" : " copy");
    if (auto it = r.copy_first_busy_ns.find(c.id); it != r.copy_first_busy_ns.end()) {
      label += "\\nbusy from " + format_duration_ns(it->second);
    }
    out << "  b" << c.from << " -> b" << c.to << " [label=\"" << label << "\""
        << (c.hop.network ? ",penwidth=2" : "") << "];\n";
  }
  out << "}\n";
  return out.str();
}

const BroadcastResult* broadcast_result_of(const CollectiveAccount* account) {
  const auto* broadcast = dynamic_cast<const BroadcastAccount*>(account);
  return broadcast == nullptr ? nullptr : &broadcast->result();
}

}  // namespace tensorwire::collectives
