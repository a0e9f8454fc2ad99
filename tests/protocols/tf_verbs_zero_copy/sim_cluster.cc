#include "tests/protocols/tf_verbs_zero_copy/sim_cluster.h"

#include <gtest/gtest.h>

#include "core/splitmix64.h"

namespace tensorwire::tf_verbs::testing {

std::vector<std::byte> pattern_bytes(uint64_t seed, uint64_t bytes) {
  std::vector<std::byte> out(bytes);
  uint64_t state = seed;
  for (uint64_t i = 0; i < bytes; ++i) out[i] = static_cast<std::byte>(splitmix64(state));
  return out;
}

std::vector<std::string> pattern_strings(uint64_t seed, uint64_t count) {
  std::vector<std::string> out;
  uint64_t state = seed;
  for (uint64_t i = 0; i < count; ++i) {
    std::string s(splitmix64(state) % 40, 'x');
    for (char& c : s) c = static_cast<char>(splitmix64(state));  // any byte, NULs included
    out.push_back(std::move(s));
  }
  return out;
}

SimCluster::SimCluster(Cluster config, TfVerbsOptions options, bool payload,
                       uint64_t seed) {
  sim::SimOptions sim_options;
  sim_options.seed = seed;
  sim_options.payload = payload;
  sim_ = std::make_unique<sim::Simulator>(config, sim_options, trace_);
  for (RankId r = 0; r < sim_->world_size(); ++r) {
    rdv_.push_back(std::make_unique<RdmaRendezvous>(sim_->env(r), options));
    Status st = rdv_.back()->start();
    EXPECT_TRUE(st.is_ok()) << st.to_string();
  }
}

SimCluster::~SimCluster() {
  rdv_.clear();  // before the simulator: they deregister and free through it
  for (auto& [r, buffer] : sources_) sim_->env(r).memory.free(buffer);
}

Tensor SimCluster::make_tensor(RankId r, MemoryKind kind, uint32_t device, DataType dtype,
                               TensorShape shape, uint64_t content_seed) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  uint64_t bytes = t.total_bytes();
  MemorySpace& memory = sim_->env(r).memory;
  Result<Buffer> buffer = memory.allocate(kind, device, bytes);
  EXPECT_TRUE(buffer.is_ok()) << buffer.status().to_string();
  if (!buffer.is_ok()) return t;
  t.buffer = *buffer;
  sources_.emplace_back(r, *buffer);
  if (memory.holds_payload() && bytes > 0) {
    Status st = memory.write_bytes(t.buffer, 0, pattern_bytes(content_seed, bytes));
    EXPECT_TRUE(st.is_ok()) << st.to_string();
  }
  return t;
}

Tensor SimCluster::make_string_tensor(TensorShape shape, uint64_t content_seed) {
  Tensor t;
  t.dtype = DataType::kString;
  t.shape = std::move(shape);
  t.strings = pattern_strings(content_seed, t.shape.num_elements().value_or(0));
  return t;
}

Tensor SimCluster::make_dead_tensor(DataType dtype, TensorShape shape) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.is_dead = true;
  return t;
}

Status SimCluster::check_same(RankId r, const Tensor& got, const Tensor& sent,
                              uint64_t content_seed) {
  auto fail = [](std::string why) { return Status(StatusCode::kInternal, std::move(why)); };
  if (got.is_dead != sent.is_dead) return fail("is_dead differs");
  if (sent.is_dead) return Status::ok();
  if (got.dtype != sent.dtype) return fail("dtype differs");
  if (!(got.shape == sent.shape)) {
    return fail("shape " + got.shape.to_string() + " != " + sent.shape.to_string());
  }
  MemorySpace& memory = sim_->env(r).memory;
  if (sent.dtype == DataType::kString) {
    if (!memory.holds_payload()) return Status::ok();
    if (got.strings != sent.strings) return fail("strings differ");
    return Status::ok();
  }
  uint64_t bytes = sent.total_bytes();
  if (got.buffer.length < bytes) return fail("result buffer too short");
  if (!memory.holds_payload() || bytes == 0) return Status::ok();
  std::vector<std::byte> data(bytes);
  Status st = memory.read_bytes(got.buffer, 0, data);
  if (!st.is_ok()) return st;
  if (data != pattern_bytes(content_seed, bytes)) return fail("content differs");
  return Status::ok();
}

void SimCluster::recv(RankId dst, RankId src, const std::string& name, uint64_t step_id,
                      RecvArgs args, RecvRecord& record) {
  rdv_[dst]->recv(src, name, step_id, args, [&record](Status st, Tensor t) {
    ++record.calls;
    record.status = std::move(st);
    record.tensor = std::move(t);
  });
}

}  // namespace tensorwire::tf_verbs::testing
