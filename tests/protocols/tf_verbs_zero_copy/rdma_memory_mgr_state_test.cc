// Stateful property tests (rc::state): RdmaMemoryMgr's registered-buffer pool
// and its meta-data cache against a simple model, over random command
// sequences. What must hold after every command:
//   - a buffer handed out has the length asked for, the kind asked for, and a
//     region covering it with exactly the rights asked for;
//   - buffers in use never overlap;
//   - a free buffer of the same class is reused: no new registration;
//   - release and discard answer true exactly for buffers in use, and a
//     discarded buffer's region is gone;
//   - the meta-data cache answers what was last set per (rank, name).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <rapidcheck/state.h>

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/protocols/tf_verbs_zero_copy/rdma_memory_mgr.h"
#include "tests/protocols/tf_verbs_zero_copy/fake_rank.h"

namespace tensorwire::tf_verbs {
namespace {

struct PoolClass {
  MemoryKind kind;
  uint32_t access;
  uint64_t size_class;
  auto tie() const { return std::tie(kind, access, size_class); }
  bool operator<(const PoolClass& o) const { return tie() < o.tie(); }
};

struct InUse {
  PoolClass cls;
  Access access;
};

struct Model {
  std::vector<InUse> in_use;
  std::map<PoolClass, size_t> free;  // free buffers per class (at most kMaxFreePerClass)
  std::map<std::pair<RankId, std::string>, RdmaTensorMetaData> meta;
};

// The system, and the buffers it handed out, in the model's in_use order (the
// model cannot know the addresses the system will choose).
struct Sut {
  testing::FakeNic nic;
  testing::FakeMemory memory;
  RdmaMemoryMgr mgr{nic, memory};
  std::vector<Buffer> live;
};

using Cmd = rc::state::Command<Model, Sut>;

Access access_of(uint32_t i) {
  static const Access kChoices[] = {Access::kNone, Access::kLocalWrite,
                                    Access::kLocalWrite | Access::kRemoteWrite};
  return kChoices[i % 3];
}

struct Allocate : Cmd {
  MemoryKind kind = *rc::gen::element(MemoryKind::kHostPinned, MemoryKind::kDeviceGpuDirect);
  uint64_t bytes = *rc::gen::element<uint64_t>(1, 100, 4000, 4096, 4097, 65536, 70000);
  Access access = access_of(*rc::gen::inRange<uint32_t>(0, 3));

  PoolClass cls() const {
    return {kind, static_cast<uint32_t>(access), RdmaMemoryMgr::size_class(bytes)};
  }
  void apply(Model& m) const override {
    auto it = m.free.find(cls());
    if (it != m.free.end() && it->second > 0) --it->second;
    m.in_use.push_back({cls(), access});
  }
  void run(const Model& m, Sut& s) const override {
    const uint64_t registrations = s.mgr.registrations();
    auto got = s.mgr.allocate_registered(kind, 0, bytes, access);
    RC_ASSERT(got.is_ok());
    RC_ASSERT(got->buffer.length == bytes);
    RC_ASSERT(got->buffer.kind == kind);
    RC_ASSERT(got->region.has_value());
    RC_ASSERT(got->region->access == access);
    RC_ASSERT(got->region->contains(got->buffer.addr, got->buffer.length));
    auto covering = s.mgr.find_region(got->buffer.addr, got->buffer.length);
    RC_ASSERT(covering.has_value());
    for (const Buffer& other : s.live) {
      const bool apart = got->buffer.addr + got->buffer.length <= other.addr ||
                         other.addr + other.length <= got->buffer.addr;
      RC_ASSERT(apart);
    }
    auto it = m.free.find(cls());
    const bool reusable = it != m.free.end() && it->second > 0;
    RC_ASSERT(s.mgr.registrations() == registrations + (reusable ? 0 : 1));
    s.live.push_back(got->buffer);
  }
  void show(std::ostream& os) const override {
    os << "Allocate(" << memory_kind_name(kind) << ", " << bytes << ", access "
       << static_cast<uint32_t>(access) << ")";
  }
};

struct Release : Cmd {
  size_t pick = *rc::gen::inRange<size_t>(0, 1000);
  bool discard = *rc::gen::arbitrary<bool>();

  void checkPreconditions(const Model& m) const override { RC_PRE(!m.in_use.empty()); }
  void apply(Model& m) const override {
    const size_t i = pick % m.in_use.size();
    if (!discard) {
      size_t& n = m.free[m.in_use[i].cls];
      if (n < RdmaMemoryMgr::kMaxFreePerClass) ++n;
    }
    m.in_use.erase(m.in_use.begin() + static_cast<ptrdiff_t>(i));
  }
  void run(const Model& m, Sut& s) const override {
    const size_t i = pick % m.in_use.size();
    RC_ASSERT(s.live.size() == m.in_use.size());
    const Buffer b = s.live[i];
    s.live.erase(s.live.begin() + static_cast<ptrdiff_t>(i));
    const size_t before = s.mgr.buffers_in_use();
    RC_ASSERT((discard ? s.mgr.discard(b) : s.mgr.release_registered(b)));
    RC_ASSERT(s.mgr.buffers_in_use() == before - 1);
    if (discard) RC_ASSERT(!s.mgr.find_region(b.addr, b.length).has_value());
    // Releasing it again is refused, not a double free.
    RC_ASSERT(!s.mgr.release_registered(b));
  }
  void show(std::ostream& os) const override {
    os << (discard ? "Discard(" : "Release(") << pick << ")";
  }
};

struct ReleaseUnknown : Cmd {
  void run(const Model&, Sut& s) const override {
    RC_ASSERT(!s.mgr.release_registered(Buffer{0xdead0000, 64, MemoryKind::kHostPinned, 0}));
    RC_ASSERT(!s.mgr.discard(Buffer{0xdead0000, 64, MemoryKind::kHostPinned, 0}));
  }
  void show(std::ostream& os) const override { os << "ReleaseUnknown"; }
};

RdmaTensorMetaData any_meta() {
  RdmaTensorMetaData meta;
  meta.data_type = *rc::gen::element(DataType::kFloat32, DataType::kInt64, DataType::kUInt8);
  meta.tensor_shape = TensorShape{{*rc::gen::inRange<int64_t>(0, 64), *rc::gen::inRange<int64_t>(1, 8)}};
  meta.is_dead = *rc::gen::arbitrary<bool>();
  return meta;
}

struct SetMeta : Cmd {
  RankId rank = *rc::gen::inRange<RankId>(0, 3);
  std::string name = *rc::gen::element<std::string>("w", "b", "conv1/kernel");
  RdmaTensorMetaData meta = any_meta();
  void apply(Model& m) const override { m.meta[{rank, name}] = meta; }
  void run(const Model&, Sut& s) const override { s.mgr.set_tensor_meta_data(rank, name, meta); }
  void show(std::ostream& os) const override { os << "SetMeta(" << rank << ", " << name << ")"; }
};

struct EraseMeta : Cmd {
  RankId rank = *rc::gen::inRange<RankId>(0, 3);
  std::string name = *rc::gen::element<std::string>("w", "b", "conv1/kernel");
  void apply(Model& m) const override { m.meta.erase({rank, name}); }
  void run(const Model&, Sut& s) const override { s.mgr.erase_tensor_meta_data(rank, name); }
  void show(std::ostream& os) const override { os << "EraseMeta(" << rank << ", " << name << ")"; }
};

struct GetMeta : Cmd {
  RankId rank = *rc::gen::inRange<RankId>(0, 3);
  std::string name = *rc::gen::element<std::string>("w", "b", "conv1/kernel");
  void run(const Model& m, Sut& s) const override {
    auto got = s.mgr.get_tensor_meta_data(rank, name);
    auto it = m.meta.find({rank, name});
    RC_ASSERT(got.has_value() == (it != m.meta.end()));
    if (got) RC_ASSERT(*got == it->second);
    RC_ASSERT(s.mgr.meta_data_cache_size() == m.meta.size());
  }
  void show(std::ostream& os) const override { os << "GetMeta(" << rank << ", " << name << ")"; }
};

RC_GTEST_PROP(RdmaMemoryMgrState, PoolAndMetaDataCacheBehaveLikeTheModel, ()) {
  Model model;
  Sut sut;
  rc::state::check(model, sut,
                   rc::state::gen::execOneOfWithArgs<Allocate, Release, ReleaseUnknown, SetMeta,
                                                     EraseMeta, GetMeta>());
  RC_ASSERT(sut.mgr.buffers_in_use() == sut.live.size());
}

}  // namespace
}  // namespace tensorwire::tf_verbs
