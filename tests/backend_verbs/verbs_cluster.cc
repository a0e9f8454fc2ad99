#include "tests/backend_verbs/verbs_cluster.h"

#include <cstdlib>
#include <thread>

#include "backend_verbs/verbs_device.h"

namespace tensorwire::verbs::testing {
namespace {

const char* env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

}  // namespace

const std::string& rdma_unavailable_reason() {
  static const std::string reason = [] {
    const std::string hint =
        "no RDMA device: set TENSORWIRE_RDMA_DEVICE (and TENSORWIRE_RDMA_ADDR) or run under "
        "scripts/with_rdma.sh";
    const char* device = env("TENSORWIRE_RDMA_DEVICE");
    const char* address = env("TENSORWIRE_RDMA_ADDR");
    if (device == nullptr || address == nullptr) return hint;
    Status st = VerbsDevice::check_openable(device);
    if (!st.is_ok()) return hint + " (" + st.message() + ")";
    return std::string();
  }();
  return reason;
}

VerbsNicOptions VerbsCluster::default_options() {
  VerbsNicOptions o;
  const char* device = env("TENSORWIRE_RDMA_DEVICE");
  const char* address = env("TENSORWIRE_RDMA_ADDR");
  o.device_name = device != nullptr ? device : "";
  o.address = address != nullptr ? address : "";
  o.send_queue_depth = 16;
  o.recv_queue_depth = 64;
  o.connect_timeout = std::chrono::seconds(20);
  return o;
}

Result<std::unique_ptr<VerbsCluster>> VerbsCluster::start(uint32_t world,
                                                          const VerbsNicOptions& options) {
  std::unique_ptr<VerbsCluster> cluster(new VerbsCluster());
  cluster->coordinators_.resize(world);
  cluster->nics_.resize(world);
  cluster->completions_.resize(world);
  // Rank 0 takes any free port; the others are told which.
  launch::CoordinatorOptions root{"127.0.0.1:0", 0, world, std::chrono::seconds(20)};
  Result<std::unique_ptr<launch::TcpCoordinator>> c0 = launch::TcpCoordinator::create(root);
  if (!c0.is_ok()) return c0.status();
  const std::string address = "127.0.0.1:" + std::to_string((*c0)->port());
  cluster->coordinators_[0] = std::move(*c0);
  for (RankId r = 1; r < world; ++r) {
    Result<std::unique_ptr<launch::TcpCoordinator>> c =
        launch::TcpCoordinator::create({address, r, world, std::chrono::seconds(20)});
    if (!c.is_ok()) return c.status();
    cluster->coordinators_[r] = std::move(*c);
  }
  std::vector<Status> failures(world);
  std::vector<std::thread> threads;
  for (RankId r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      Result<std::unique_ptr<VerbsNic>> nic =
          connect_verbs_nic(options, *cluster->coordinators_[r]);
      if (nic.is_ok()) {
        cluster->nics_[r] = std::move(*nic);
      } else {
        failures[r] = nic.status();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const Status& st : failures) {
    if (!st.is_ok()) return st;
  }
  for (RankId r = 0; r < world; ++r) {
    VerbsCluster* self = cluster.get();
    cluster->nics_[r]->set_completion_handler(
        [self, r](const Completion& c) { self->completions_[r].push_back(c); });
  }
  return cluster;
}

VerbsCluster::~VerbsCluster() {
  for (auto& nic : nics_) nic.reset();
}

const Completion* VerbsCluster::completion(RankId r, uint64_t wr_id) const {
  for (const Completion& c : completions_[r]) {
    if (c.wr_id == wr_id) return &c;
  }
  return nullptr;
}

MemoryRegion VerbsCluster::region(RankId r, uint64_t bytes, Access access) {
  // At least one byte, so even a zero-length buffer has a unique address.
  memory_.push_back(std::make_unique<std::byte[]>(bytes > 0 ? bytes : 1));
  Buffer buffer{reinterpret_cast<uint64_t>(memory_.back().get()), bytes, MemoryKind::kHostPinned,
                0};
  Result<MemoryRegion> mr = nics_[r]->register_memory(buffer, access);
  EXPECT_TRUE(mr.is_ok()) << mr.status().to_string();
  return mr.is_ok() ? *mr : MemoryRegion{};
}

std::span<std::byte> VerbsCluster::bytes_of(const MemoryRegion& region) {
  return {reinterpret_cast<std::byte*>(region.addr), region.length};
}

bool VerbsCluster::progress_until(const std::function<bool()>& done,
                                  std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    for (auto& nic : nics_) {
      if (nic == nullptr) continue;
      Result<uint32_t> n = nic->progress();
      EXPECT_TRUE(n.is_ok()) << n.status().to_string();
    }
  }
}

bool VerbsCluster::progress_until_count(RankId r, size_t count, std::chrono::milliseconds timeout) {
  return progress_until([&] { return completions_[r].size() >= count; }, timeout);
}

Status VerbsCluster::post(RankId from, RankId to, WorkOpcode opcode, const MemoryRegion& local,
                          uint32_t length, uint64_t wr_id, uint64_t remote_addr, uint32_t rkey,
                          uint32_t imm) {
  SendWorkRequest wr;
  wr.wr_id = wr_id;
  wr.opcode = opcode;
  wr.local = {local.addr, length, local.lkey};
  wr.remote_addr = remote_addr;
  wr.rkey = rkey;
  wr.imm_data = imm;
  return nics_[from]->post_send(nics_[from]->queue_pair_to(to), wr);
}

Status VerbsCluster::post_recv(RankId at, RankId from, const MemoryRegion& local, uint32_t length,
                               uint64_t wr_id) {
  RecvWorkRequest wr;
  wr.wr_id = wr_id;
  wr.local = {local.addr, length, local.lkey};
  return nics_[at]->post_recv(nics_[at]->queue_pair_to(from), wr);
}

std::byte pattern_byte(uint32_t seed, size_t i) {
  uint64_t x = (uint64_t{seed} << 32) ^ (i * 0x9E3779B97F4A7C15ull);
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  return std::byte(static_cast<uint8_t>(x));
}

void fill_pattern(std::span<std::byte> bytes, uint32_t seed) {
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = pattern_byte(seed, i);
}

}  // namespace tensorwire::verbs::testing
