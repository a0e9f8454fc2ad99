// A RunReport built by hand, so the report/ tests do not need a run.
#pragma once

#include "runner/simulation_run.h"

namespace tensorwire::testing_support {

// 2 ranks, 2 steps of 2 transfers each (1 MiB + 512 KiB per step), seed 42.
// Protocol: 4 requests + 1 meta-data update + 1 re-request over 4 tensors.
inline RunReport sample_report() {
  RunReport r;
  r.scenario_name = "sample";
  r.scenario_path = "scenarios/sample.toml";
  r.backend = "sim";
  r.seed = 42;
  r.payload = true;
  r.ranks = 2;
  r.end_ns = 1'234'567;
  r.events_processed = 321;
  r.workload.finished = true;
  for (uint64_t step = 0; step < 2; ++step) {
    StepResult s;
    s.step_id = step;
    s.start_ns = static_cast<TimeNs>(step) * 500'000;
    s.end_ns = s.start_ns + (step == 0 ? 12'345 : 8'100);
    TransferResult a;
    a.step_id = step;
    a.phase = "tensors";
    a.name = "weights";
    a.src = 0;
    a.dst = 1;
    a.bytes = 1 << 20;
    a.recv_called_ns = s.start_ns;
    a.done_ns = s.start_ns + 10'000;
    a.done = true;
    a.verified = true;
    TransferResult b = a;
    b.name = "bias";
    b.src = 1;
    b.dst = 0;
    b.bytes = 512 << 10;
    b.done_ns = s.start_ns + 4'000;
    s.transfers = {a, b};
    r.workload.steps.push_back(s);
  }
  TransportStats rank0;
  rank0.bytes_on_wire_tx = 2 << 20;
  rank0.sends = 3;
  rank0.rdma_writes_with_imm = 2;
  rank0.registrations = 5;
  rank0.registered_bytes = 4 << 20;
  rank0.cpu_copy_bytes = 512 << 10;
  rank0.cpu_copies = 1;
  TransportStats rank1;
  rank1.bytes_on_wire_tx = 1 << 20;
  rank1.sends = 3;
  rank1.rdma_writes_with_imm = 2;
  rank1.registrations = 4;
  rank1.copy_engine_bytes = 3 << 20;
  rank1.copy_engine_copies = 3;
  r.step_wire_bytes = {2 << 20, 1 << 20};
  r.rank_stats = {rank0, rank1};
  r.total_stats = rank0;
  r.total_stats += rank1;
  // The zero-copy protocol's counters, as its Rendezvous names them.
  auto counters = [](uint64_t requests, uint64_t updates, uint64_t re_requests) {
    using R = CounterRole;
    return ProtocolCounters{{"tensor_requests", R::kControlMessage, requests},
                            {"meta_data_updates", R::kControlMessage, updates},
                            {"re_requests", R::kControlMessage, re_requests},
                            {"error_statuses", R::kControlMessage, 0},
                            {"content_writes", R::kContentTransfer, 2},
                            {"recvs_completed", R::kOther, 2}};
  };
  r.protocol_counters = {counters(2, 1, 0), counters(2, 0, 1)};
  return r;
}

}  // namespace tensorwire::testing_support
