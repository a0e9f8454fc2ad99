#include "backend_sim/simulator.h"

#include <algorithm>

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "backend_sim/memory_registry.h"
#include "backend_sim/rc_transport.h"
#include "backend_sim/scheduler.h"
#include "backend_sim/sim_clock.h"
#include "backend_sim/sim_context.h"
#include "backend_sim/sim_copy_engine.h"
#include "backend_sim/sim_memory.h"
#include "backend_sim/sim_nic.h"
#include "backend_sim/sim_observer.h"
#include "core/assert.h"

namespace tensorwire::sim {
namespace {

// The topology's shape (the scenario loader says which key is wrong).
void validate_topology(const Cluster& c) {
  const ClusterTopology& t = c.topology;
  auto fail = [](const std::string& what) {
    throw std::invalid_argument("simulated cluster: " + what);
  };
  if (t.kind == TopologyKind::kLeafSpine) {
    if (t.leaf_nodes == 0 || c.nodes % t.leaf_nodes != 0) fail("leaf_nodes must divide nodes");
    if (t.spines == 0) fail("a leaf_spine topology needs at least one spine");
    if (!(t.oversubscription >= 1)) fail("oversubscription must be at least 1");
    if (t.link_latency_ns < 0) fail("link_latency must not be negative");
  }
  if (t.kind == TopologyKind::kRail && t.rails == 0) fail("a rail topology needs at least one rail");
}

// A configuration the simulator cannot run is a programming error of the
// caller (the scenario loader validates files before this point).
void validate(const Cluster& c) {
  auto fail = [](const std::string& what) {
    throw std::invalid_argument("simulated cluster: " + what);
  };
  if (c.nodes < 1 || c.nodes > 4096) fail("nodes must be in [1, 4096]");
  if (c.gpus_per_node > 64) fail("gpus_per_node must be at most 64");
  if (!(c.nic_bandwidth_bytes_per_s > 0) || !(c.pcie_bandwidth_bytes_per_s > 0) ||
      !(c.host_memcpy_bandwidth_bytes_per_s > 0)) {
    fail("bandwidths must be positive");
  }
  if (c.nvlink_bandwidth_bytes_per_s < 0) fail("nvlink_bandwidth must not be negative");
  if (c.nic_latency_ns < 0 || c.pcie_latency_ns < 0 || c.nvlink_latency_ns < 0 || c.registration_base_ns < 0 ||
      c.registration_per_page_ns < 0 || c.rnr_delay_ns < 0) {
    fail("latencies and costs must not be negative");
  }
  if (c.send_queue_depth == 0) fail("send_queue_depth must be positive");
  for (const JitterSpec* j : {&c.jitter.message_latency, &c.jitter.copy_engine}) {
    if (j->mean_ns < 0 || j->stddev_ns < 0 || j->median_ns < 0 || j->min_ns < 0 ||
        j->max_ns < j->min_ns || !(j->sigma >= 0 && j->sigma <= 10)) {
      fail("jitter parameters must be non-negative, uniform's max at least its min, sigma in [0, 10]");
    }
  }
  if (!c.gpu_direct.empty()) {
    if (c.gpu_direct.size() != c.nodes) fail("gpu_direct needs one entry per node");
    for (const auto& node : c.gpu_direct) {
      if (node.size() != c.gpus_per_node) fail("gpu_direct needs one entry per GPU");
    }
  }
  validate_topology(c);
}

}  // namespace

class Simulator::Impl {
 public:
  Impl(Cluster cluster, SimOptions options, TraceSink& trace)
      : context((validate(cluster), std::move(cluster)), options, trace,
                dynamic_cast<NullTraceSink*>(&trace) == nullptr) {
    const uint32_t n = context.cluster.nodes;
    std::vector<SimMemorySpace*> memory_ptrs;
    std::vector<MemoryRegistry*> registry_ptrs;
    for (uint32_t r = 0; r < n; ++r) {
      memories.push_back(std::make_unique<SimMemorySpace>(context, r));
      registries.push_back(std::make_unique<MemoryRegistry>(r));
      memory_ptrs.push_back(memories.back().get());
      registry_ptrs.push_back(registries.back().get());
    }
    transport = std::make_unique<RcTransport>(context, memory_ptrs, registry_ptrs);
    for (uint32_t r = 0; r < n; ++r) {
      nics.push_back(std::make_unique<SimNic>(context, *transport, *memories[r], *registries[r], r));
      clocks.push_back(std::make_unique<SimClock>(context, r));
      copy_engines.push_back(std::make_unique<SimCopyEngine>(context, *memories[r], r));
    }
    TW_ASSERT(memories.size() == n && registries.size() == n && nics.size() == n &&
              clocks.size() == n && copy_engines.size() == n);
  }

  // The workload driver's hook for the transfer it works for (one for every
  // rank: the simulator runs one rank's code at a time).
  class Attribution final : public TransferAttribution {
   public:
    explicit Attribution(SimContext& c) : context_(c) {}
    uint64_t swap_current_transfer(uint64_t tag) override {
      return std::exchange(context_.transfer_tag, tag);
    }
    void transfer_done(uint64_t tag) override { context_.ledger.on_transfer_done(tag); }

   private:
    SimContext& context_;
  };

  SimContext context;
  Attribution attribution{context};
  std::vector<std::unique_ptr<SimMemorySpace>> memories;
  std::vector<std::unique_ptr<MemoryRegistry>> registries;
  std::unique_ptr<RcTransport> transport;
  std::vector<std::unique_ptr<SimNic>> nics;
  std::vector<std::unique_ptr<SimClock>> clocks;
  std::vector<std::unique_ptr<SimCopyEngine>> copy_engines;
};

Simulator::Simulator(Cluster cluster, SimOptions options, TraceSink& trace)
    : impl_(std::make_unique<Impl>(std::move(cluster), options, trace)) {}

Simulator::~Simulator() = default;

uint32_t Simulator::world_size() const { return impl_->context.cluster.nodes; }

RankEnv Simulator::env(RankId r) {
  if (r >= world_size()) throw std::out_of_range("Simulator::env: no rank " + std::to_string(r));
  return RankEnv{*impl_->nics[r], *impl_->clocks[r], *impl_->copy_engines[r], *impl_->memories[r],
                 impl_->context.trace, &impl_->attribution};
}

TransferBreakdown Simulator::transfer_breakdown(uint64_t tag, RankId src, RankId dst,
                                                TimeNs from_ns, TimeNs to_ns) const {
  const TransferLedger& ledger = impl_->context.ledger;
  TransferLedger::Share share = ledger.share_of(tag, src, dst, from_ns, to_ns);
  return partition_transfer_time(std::move(share.activities), from_ns, to_ns,
                                 share.control_messages);
}

TimeNs Simulator::now_ns() const { return impl_->context.now(); }
bool Simulator::step() { return impl_->context.events.run_next(); }

void Simulator::run() {
  impl_->context.events.run_until_empty();
  // The queue's count of live events agrees with its heap: none is left.
  TW_ASSERT(impl_->context.events.empty());
}

void Simulator::run_until(TimeNs t) {
  EventQueue& events = impl_->context.events;
  TimeNs next = 0;
  while (events.next_time(next) && next <= t) events.run_next();
  events.advance_to(t);
}

bool Simulator::idle() const { return impl_->context.events.empty(); }
uint64_t Simulator::events_processed() const { return impl_->context.events.processed(); }

const TransportStats& Simulator::stats(RankId r) const { return impl_->context.stats.at(r); }

std::vector<ResourceUsage> Simulator::resource_usage() const { return impl_->context.meter.usage(); }

TransportStats Simulator::total_stats() const {
  TransportStats total;
  for (const TransportStats& s : impl_->context.stats) total += s;
  return total;
}

void Simulator::crash_rank(RankId r) { impl_->transport->crash(r); }
void Simulator::fail_next_registration(RankId r) {
  if (r < impl_->context.failing_registrations.size()) ++impl_->context.failing_registrations[r];
}
std::optional<RankId> Simulator::fire_timeout_now() {
  return impl_->context.events.bring_forward(SimClock::kTimeoutKind);
}
bool Simulator::timeout_pending() const {
  return impl_->context.events.has_later(SimClock::kTimeoutKind);
}
const std::vector<Problem>& Simulator::dma_problems() const {
  return impl_->context.sanitizer.problems();
}
uint64_t Simulator::state_digest() const {
  const SimContext& c = impl_->context;
  StateDigest d;
  d.add(c.events.pending_digest());
  impl_->transport->digest(d);
  for (const auto& memory : impl_->memories) memory->digest(d);
  for (TimeNs free_ns : c.cpu_free_ns) d.add(static_cast<uint64_t>(std::max<TimeNs>(free_ns - c.events.now_ns(), 0)));
  for (uint32_t failing : c.failing_registrations) d.add(failing);
  for (bool dead : c.crashed) d.add(dead ? 1 : 0);
  c.jitter.digest(d);
  return d.value();
}
void Simulator::break_queue_pair(RankId a, RankId b) {
  if (a == b || a >= world_size() || b >= world_size()) return;
  impl_->transport->break_pair(a, b);
}

void Simulator::set_scheduler(std::unique_ptr<Scheduler> scheduler) {
  impl_->context.events.set_scheduler(std::move(scheduler));
}

void Simulator::report_taken() {
  impl_->context.events.stop_reporting_uses();
  impl_->context.tearing_down = true;
}

void Simulator::set_observer(SimObserver* observer) { impl_->context.observer = observer; }

}  // namespace tensorwire::sim
