// Property: over random step sequences (random meta-data changes, dead, empty
// and string tensors, memory kinds, call orders and seeds) every Recv
// completes exactly once with the bytes that were sent, and every RDMA write
// with immediate lands entirely inside destination_of(imm) at that moment.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>
#include <vector>

#include "backend_sim/sim_observer.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_rendezvous.h"
#include "tests/protocols/tf_verbs_zero_copy/sim_cluster.h"

namespace tensorwire::tf_verbs {
namespace {

using testing::RecvRecord;
using testing::SimCluster;

struct TransferSpec {
  RankId src = 0;
  RankId dst = 1;
  DataType dtype = DataType::kFloat32;
  std::vector<int64_t> dims;
  bool dead = false;
  int src_kind = 0;  // index into kKinds
  int dst_kind = 0;
  bool recv_first = false;
  int send_delay_us = 0;
  int recv_delay_us = 0;
};

// (kind, device) pairs: the simulated nodes have GPU 0 with GPUDirect, GPU 1 without.
constexpr std::pair<MemoryKind, uint32_t> kKinds[] = {
    {MemoryKind::kHostPinned, 0},
    {MemoryKind::kHostPageable, 0},
    {MemoryKind::kDeviceGpuDirect, 0},
    {MemoryKind::kDeviceNoGpuDirect, 1},
};

class LandingChecker final : public sim::SimObserver {
 public:
  explicit LandingChecker(SimCluster& cluster) : cluster_(cluster) {}
  void on_remote_write_landed(RankId target, uint64_t addr, uint64_t length, bool has_imm,
                              uint32_t imm) override {
    ++writes;
    if (!has_imm) {
      ++violations;  // this protocol never writes without an immediate
      return;
    }
    std::optional<Buffer> dest = cluster_.rdv(target).destination_of(imm);
    if (!dest || !dest->contains(addr, length)) {
      ++violations;
      if (first_violation.empty()) {
        first_violation = "write of " + std::to_string(length) + " bytes with imm " +
                          std::to_string(imm) + " on rank " + std::to_string(target) +
                          (dest ? " outside its destination" : " for no outstanding request");
      }
    }
  }
  int writes = 0;
  int violations = 0;
  std::string first_violation;

 private:
  SimCluster& cluster_;
};

rc::Gen<TransferSpec> gen_transfer(uint32_t nodes) {
  return rc::gen::exec([nodes] {
    TransferSpec t;
    t.src = *rc::gen::inRange<uint32_t>(0, nodes);
    t.dst = (t.src + *rc::gen::inRange<uint32_t>(1, nodes)) % nodes;
    t.dtype = *rc::gen::element(DataType::kFloat32, DataType::kUInt8, DataType::kInt64,
                                DataType::kString);
    int ndims = *rc::gen::inRange(0, 3);
    for (int i = 0; i < ndims; ++i) {
      // Mostly small, sometimes zero (empty tensors), sometimes a few KiB.
      t.dims.push_back(*rc::gen::weightedElement<int64_t>(
          {{1, 0}, {6, *rc::gen::inRange<int64_t>(1, 9)}, {1, *rc::gen::inRange<int64_t>(100, 700)}}));
    }
    t.dead = *rc::gen::weightedElement<bool>({{7, false}, {1, true}});
    t.src_kind = *rc::gen::inRange(0, 4);
    t.dst_kind = *rc::gen::inRange(0, 4);
    t.recv_first = *rc::gen::arbitrary<bool>();
    t.send_delay_us = *rc::gen::inRange(0, 30);
    t.recv_delay_us = *rc::gen::inRange(0, 30);
    return t;
  });
}

RC_GTEST_PROP(RdmaRendezvousProperty,
              EveryRecvCompletesOnceWithTheSentBytesAndEveryWriteLandsInItsDestination, ()) {
  const uint32_t nodes = *rc::gen::inRange<uint32_t>(2, 4);
  const uint64_t seed = *rc::gen::inRange<uint64_t>(1, 1000);
  const int steps = *rc::gen::inRange(1, 5);
  Cluster config;
  config.nodes = nodes;
  config.gpus_per_node = 2;
  config.gpu_direct.assign(nodes, std::vector<bool>{true, false});
  TfVerbsOptions options;
  options.control_ring_size = *rc::gen::element<uint32_t>(2, 8, 64);
  SimCluster c(config, options, /*payload=*/true, seed);
  LandingChecker checker(c);
  c.sim().set_observer(&checker);
  int content_writes = 0;
  int string_writes = 0;

  for (int step = 0; step < steps; ++step) {
    const int count = *rc::gen::inRange(1, 5);
    std::vector<TransferSpec> specs;
    for (int i = 0; i < count; ++i) specs.push_back(*gen_transfer(nodes));
    std::vector<RecvRecord> recs(count);
    std::vector<Tensor> sent(count);
    std::vector<uint64_t> content(count);
    for (int i = 0; i < count; ++i) {
      const TransferSpec& s = specs[i];
      // Names repeat across steps, so meta-data changes (shape, type, dead) happen.
      std::string name = "t" + std::to_string(i);
      content[i] = seed * 1000003 + step * 101 + i;
      TensorShape shape{s.dims};
      if (s.dead) {
        sent[i] = SimCluster::make_dead_tensor(s.dtype, shape);
      } else if (s.dtype == DataType::kString) {
        sent[i] = SimCluster::make_string_tensor(shape, content[i]);
      } else {
        sent[i] = c.make_tensor(s.src, kKinds[s.src_kind].first, kKinds[s.src_kind].second,
                                s.dtype, shape, content[i]);
      }
      RecvArgs args{kKinds[s.dst_kind].first, kKinds[s.dst_kind].second};
      auto do_send = [&c, &sent, i, s, name, step] {
        Status st = c.rdv(s.src).send(name, step, sent[i]);
        RC_ASSERT(st.is_ok());
      };
      auto do_recv = [&c, &recs, i, s, name, step, args] {
        c.recv(s.dst, s.src, name, step, args, recs[i]);
      };
      TimeNs send_at = TimeNs{s.send_delay_us} * 1000 + (s.recv_first ? 1 : 0);
      TimeNs recv_at = TimeNs{s.recv_delay_us} * 1000 + (s.recv_first ? 0 : 1);
      c.env(s.src).clock.schedule_after(send_at, do_send);
      c.env(s.dst).clock.schedule_after(recv_at, do_recv);
    }
    c.sim().run();
    for (int i = 0; i < count; ++i) {
      RC_ASSERT(recs[i].calls == 1);
      RC_ASSERT(recs[i].status.is_ok());
      Status same = c.check_same(specs[i].dst, recs[i].tensor, sent[i], content[i]);
      if (!same.is_ok()) RC_FAIL("step " + std::to_string(step) + " t" + std::to_string(i) +
                                 ": " + same.message());
      if (!recs[i].tensor.is_dead && recs[i].tensor.dtype != DataType::kString) {
        RC_ASSERT(recs[i].tensor.buffer.kind == kKinds[specs[i].dst_kind].first);
      }
      // A live DMA-able tensor with bytes is exactly one write; a live string
      // tensor is one write of its serialization (which may be 0 bytes).
      if (!sent[i].is_dead && sent[i].dtype != DataType::kString && sent[i].total_bytes() > 0) {
        ++content_writes;
      }
      if (!sent[i].is_dead && sent[i].dtype == DataType::kString) ++string_writes;
      c.rdv(specs[i].dst).release(recs[i].tensor);
    }
    for (RankId r = 0; r < nodes; ++r) {
      RC_ASSERT(c.rdv(r).outstanding_requests() == 0u);
      RC_ASSERT(c.rdv(r).pending_responses() == 0u);
    }
  }
  c.sim().set_observer(nullptr);
  if (checker.violations != 0) RC_FAIL(checker.first_violation);
  // The checker saw every content write (0-byte writes land nothing and are not reported).
  RC_ASSERT(checker.writes >= content_writes);
  RC_ASSERT(checker.writes <= content_writes + string_writes);
}

RC_GTEST_PROP(RdmaRendezvousProperty,
              WithAbortsAndTimeoutsEveryRecvCompletesOnceAndNoWriteLandsOutsideItsDestination,
              ()) {
  const uint32_t nodes = *rc::gen::inRange<uint32_t>(2, 4);
  const uint64_t seed = *rc::gen::inRange<uint64_t>(1, 1000);
  const int steps = *rc::gen::inRange(1, 4);
  Cluster config;
  config.nodes = nodes;
  config.gpus_per_node = 2;
  config.gpu_direct.assign(nodes, std::vector<bool>{true, false});
  TfVerbsOptions options;
  options.control_ring_size = *rc::gen::element<uint32_t>(2, 64);
  // Sometimes short enough to fire in the middle of a transfer.
  options.request_timeout_ns = *rc::gen::element<TimeNs>(0, 5'000, 20'000, 1'000'000);
  SimCluster c(config, options, /*payload=*/true, seed);
  LandingChecker checker(c);
  c.sim().set_observer(&checker);

  for (int step = 0; step < steps; ++step) {
    const int count = *rc::gen::inRange(1, 5);
    std::vector<TransferSpec> specs;
    for (int i = 0; i < count; ++i) specs.push_back(*gen_transfer(nodes));
    std::vector<RecvRecord> recs(count);
    std::vector<Tensor> sent(count);
    std::vector<uint64_t> content(count);
    for (int i = 0; i < count; ++i) {
      const TransferSpec& s = specs[i];
      std::string name = "t" + std::to_string(i);
      content[i] = seed * 7919 + step * 31 + i;
      TensorShape shape{s.dims};
      if (s.dead) {
        sent[i] = SimCluster::make_dead_tensor(s.dtype, shape);
      } else if (s.dtype == DataType::kString) {
        sent[i] = SimCluster::make_string_tensor(shape, content[i]);
      } else {
        sent[i] = c.make_tensor(s.src, kKinds[s.src_kind].first, kKinds[s.src_kind].second,
                                s.dtype, shape, content[i]);
      }
      RecvArgs args{kKinds[s.dst_kind].first, kKinds[s.dst_kind].second};
      c.env(s.src).clock.schedule_after(TimeNs{s.send_delay_us} * 1000, [&c, &sent, i, s, name,
                                                                          step] {
        Status st = c.rdv(s.src).send(name, step, sent[i]);
        RC_ASSERT(st.is_ok() || st.code() == StatusCode::kAborted);
      });
      c.env(s.dst).clock.schedule_after(TimeNs{s.recv_delay_us} * 1000,
                                        [&c, &recs, i, s, name, step, args] {
                                          c.recv(s.dst, s.src, name, step, args, recs[i]);
                                        });
    }
    if (*rc::gen::arbitrary<bool>()) {
      RankId who = *rc::gen::inRange<uint32_t>(0, nodes);
      TimeNs when = *rc::gen::inRange<TimeNs>(0, 40'000);
      c.env(who).clock.schedule_after(when, [&c, who, step] {
        c.rdv(who).abort_step(step, Status(StatusCode::kAborted, "test abort"));
      });
    }
    c.sim().run();
    for (int i = 0; i < count; ++i) {
      RC_ASSERT(recs[i].calls == 1);
      if (!recs[i].status.is_ok()) {
        RC_ASSERT(recs[i].status.code() == StatusCode::kAborted);
        continue;
      }
      Status same = c.check_same(specs[i].dst, recs[i].tensor, sent[i], content[i]);
      if (!same.is_ok()) RC_FAIL("step " + std::to_string(step) + " t" + std::to_string(i) +
                                 ": " + same.message());
      c.rdv(specs[i].dst).release(recs[i].tensor);
    }
    for (RankId r = 0; r < nodes; ++r) {
      RC_ASSERT(c.rdv(r).outstanding_requests() == 0u);
      RC_ASSERT(c.rdv(r).pending_responses() == 0u);
      RC_ASSERT(c.rdv(r).stats().protocol_errors == 0u);
    }
  }
  c.sim().set_observer(nullptr);
  if (checker.violations != 0) RC_FAIL(checker.first_violation);
}

// Sums one counter of RendezvousStats over every rank.
template <typename Field>
uint64_t total(SimCluster& c, Field field) {
  uint64_t sum = 0;
  for (RankId r = 0; r < c.size(); ++r) sum += c.rdv(r).stats().*field;
  return sum;
}

// Property: once the receivers' meta-data caches hold a tensor's meta-data
// (after its first step), a step that sends the same tensors again costs each
// tensor exactly one control message (its TENSOR_REQUEST) and one content
// write, and tensors whose source and destination the NIC reaches (host, or
// GPU with GPUDirect) cost zero copies. Only the GPU-without-GPUDirect ends pay
// their staging copy.
RC_GTEST_PROP(RdmaRendezvousProperty,
              InSteadyStateEachTensorCostsOneControlMessageOneWriteAndNoCopies, ()) {
  const uint32_t nodes = *rc::gen::inRange<uint32_t>(2, 4);
  const uint64_t seed = *rc::gen::inRange<uint64_t>(1, 1000);
  const int steady_steps = *rc::gen::inRange(1, 4);
  Cluster config;
  config.nodes = nodes;
  config.gpus_per_node = 2;
  config.gpu_direct.assign(nodes, std::vector<bool>{true, false});
  TfVerbsOptions options;
  options.control_ring_size = *rc::gen::element<uint32_t>(2, 8, 64);
  SimCluster c(config, options, /*payload=*/true, seed);

  const int count = *rc::gen::inRange(1, 6);
  std::vector<TransferSpec> specs;
  for (int i = 0; i < count; ++i) {
    TransferSpec t = *gen_transfer(nodes);
    t.dead = false;
    if (t.dtype == DataType::kString) t.dtype = DataType::kFloat32;  // DMA-able only
    specs.push_back(t);
  }
  // Every tensor is one write-with-imm (an empty tensor's is 0 bytes long);
  // only tensors with bytes need a staging copy.
  const uint64_t expected_writes = static_cast<uint64_t>(count);
  uint64_t expected_device_copies = 0;
  for (const TransferSpec& s : specs) {
    if (TensorShape{s.dims}.num_elements().value_or(0) == 0) continue;
    if (kKinds[s.src_kind].first == MemoryKind::kDeviceNoGpuDirect) ++expected_device_copies;
    if (kKinds[s.dst_kind].first == MemoryKind::kDeviceNoGpuDirect) ++expected_device_copies;
  }

  // Step 0 fills the caches; steps 1.. are the steady state being measured.
  for (int step = 0; step <= steady_steps; ++step) {
    const uint64_t requests0 = total(c, &RendezvousStats::tensor_requests_sent);
    const uint64_t updates0 = total(c, &RendezvousStats::meta_data_updates_sent);
    const uint64_t re_requests0 = total(c, &RendezvousStats::re_requests_sent);
    const uint64_t errors0 = total(c, &RendezvousStats::error_statuses_sent);
    const uint64_t writes0 = total(c, &RendezvousStats::content_writes);
    const uint64_t cpu0 = total(c, &RendezvousStats::cpu_copies);
    const uint64_t device0 = total(c, &RendezvousStats::device_copies);

    std::vector<RecvRecord> recs(count);
    std::vector<Tensor> sent(count);
    std::vector<uint64_t> content(count);
    for (int i = 0; i < count; ++i) {
      const TransferSpec& s = specs[i];
      std::string name = "t" + std::to_string(i);
      content[i] = seed * 65537 + step * 13 + i;  // new bytes every step, same meta-data
      sent[i] = c.make_tensor(s.src, kKinds[s.src_kind].first, kKinds[s.src_kind].second,
                              s.dtype, TensorShape{s.dims}, content[i]);
      RecvArgs args{kKinds[s.dst_kind].first, kKinds[s.dst_kind].second};
      c.env(s.src).clock.schedule_after(TimeNs{s.send_delay_us} * 1000,
                                        [&c, &sent, i, s, name, step] {
                                          RC_ASSERT(c.rdv(s.src).send(name, step, sent[i]).is_ok());
                                        });
      c.env(s.dst).clock.schedule_after(TimeNs{s.recv_delay_us} * 1000,
                                        [&c, &recs, i, s, name, step, args] {
                                          c.recv(s.dst, s.src, name, step, args, recs[i]);
                                        });
    }
    c.sim().run();
    for (int i = 0; i < count; ++i) {
      RC_ASSERT(recs[i].calls == 1);
      RC_ASSERT(recs[i].status.is_ok());
      Status same = c.check_same(specs[i].dst, recs[i].tensor, sent[i], content[i]);
      if (!same.is_ok()) RC_FAIL("step " + std::to_string(step) + ": " + same.message());
      c.rdv(specs[i].dst).release(recs[i].tensor);
    }
    if (step == 0) continue;
    const uint64_t control_messages =
        (total(c, &RendezvousStats::tensor_requests_sent) - requests0) +
        (total(c, &RendezvousStats::meta_data_updates_sent) - updates0) +
        (total(c, &RendezvousStats::re_requests_sent) - re_requests0) +
        (total(c, &RendezvousStats::error_statuses_sent) - errors0);
    RC_ASSERT(control_messages == static_cast<uint64_t>(count));
    RC_ASSERT(total(c, &RendezvousStats::meta_data_updates_sent) == updates0);
    RC_ASSERT(total(c, &RendezvousStats::content_writes) - writes0 == expected_writes);
    RC_ASSERT(total(c, &RendezvousStats::cpu_copies) == cpu0);
    RC_ASSERT(total(c, &RendezvousStats::device_copies) - device0 == expected_device_copies);
  }
}

}  // namespace
}  // namespace tensorwire::tf_verbs
