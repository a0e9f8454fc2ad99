// A small simulated cluster plus helpers to post raw verbs-style work
// requests and record completions, for tests of the simulator itself.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "backend_sim/simulator.h"
#include "core/trace_sink.h"

namespace tensorwire::sim::testing {

struct Recorded {
  TimeNs at_ns = 0;
  Completion completion;
};

// Keeps every slice and instant, to compare two runs byte for byte.
class RecordingTraceSink final : public TraceSink {
 public:
  void slice(std::string_view track, std::string_view name, TimeNs start_ns, TimeNs duration_ns,
             std::string_view detail) override {
    log += std::string(track) + "|" + std::string(name) + "|" + std::to_string(start_ns) + "|" +
           std::to_string(duration_ns) + "|" + std::string(detail) + "\n";
  }
  void instant(std::string_view track, std::string_view name, TimeNs at_ns,
               std::string_view detail) override {
    log += std::string(track) + "|" + std::string(name) + "|@" + std::to_string(at_ns) + "|" +
           std::string(detail) + "\n";
  }
  std::string log;
};

class SimFixture {
 public:
  explicit SimFixture(Cluster cluster, bool payload = true, TraceSink* trace = nullptr)
      : SimFixture(std::move(cluster), options_of(payload), trace) {}
  SimFixture(Cluster cluster, SimOptions options, TraceSink* trace = nullptr)
      : sim_(std::make_unique<Simulator>(cluster, options,
                                         trace != nullptr ? *trace : null_trace_)),
        completions_(cluster.nodes) {
    for (RankId r = 0; r < cluster.nodes; ++r) {
      sim_->env(r).nic.set_completion_handler([this, r](const Completion& c) {
        completions_[r].push_back({sim_->now_ns(), c});
      });
    }
  }

  Simulator& sim() { return *sim_; }
  RankEnv env(RankId r) { return sim_->env(r); }
  std::vector<Recorded>& completions(RankId r) { return completions_[r]; }

  // A registered buffer of `bytes` on rank r.
  MemoryRegion region(RankId r, uint64_t bytes, Access access,
                      MemoryKind kind = MemoryKind::kHostPinned, uint32_t device = 0) {
    Result<Buffer> b = env(r).memory.allocate(kind, device, bytes);
    EXPECT_TRUE(b.is_ok()) << b.status().to_string();
    Result<MemoryRegion> mr = env(r).nic.register_memory(*b, access);
    EXPECT_TRUE(mr.is_ok()) << mr.status().to_string();
    return *mr;
  }
  Buffer buffer_of(const MemoryRegion& mr) { return Buffer{mr.addr, mr.length, mr.kind, mr.device}; }

  Status write(RankId from, RankId to, const MemoryRegion& src, const MemoryRegion& dst,
               uint32_t bytes, uint64_t wr_id = 1, bool with_imm = false, uint32_t imm = 0) {
    SendWorkRequest wr;
    wr.wr_id = wr_id;
    wr.opcode = with_imm ? WorkOpcode::kRdmaWriteWithImm : WorkOpcode::kRdmaWrite;
    wr.local = {src.addr, bytes, src.lkey};
    wr.remote_addr = dst.addr;
    wr.rkey = dst.rkey;
    wr.imm_data = imm;
    return env(from).nic.post_send(env(from).nic.queue_pair_to(to), wr);
  }
  Status send(RankId from, RankId to, const MemoryRegion& src, uint32_t bytes, uint64_t wr_id = 1) {
    SendWorkRequest wr;
    wr.wr_id = wr_id;
    wr.opcode = WorkOpcode::kSend;
    wr.local = {src.addr, bytes, src.lkey};
    return env(from).nic.post_send(env(from).nic.queue_pair_to(to), wr);
  }
  Status recv(RankId at, RankId from, const MemoryRegion& dst, uint32_t bytes, uint64_t wr_id = 1) {
    RecvWorkRequest wr;
    wr.wr_id = wr_id;
    wr.local = {dst.addr, bytes, dst.lkey};
    return env(at).nic.post_recv(env(at).nic.queue_pair_to(from), wr);
  }

 private:
  static SimOptions options_of(bool payload) {
    SimOptions options;
    options.payload = payload;
    return options;
  }
  NullTraceSink null_trace_;
  std::unique_ptr<Simulator> sim_;
  std::vector<std::vector<Recorded>> completions_;
};

// Within 1% of the expected value (the issue's accuracy bar).
inline void expect_within_1_percent(double got, double expected, const std::string& what) {
  EXPECT_NEAR(got, expected, expected * 0.01) << what;
}

}  // namespace tensorwire::sim::testing
