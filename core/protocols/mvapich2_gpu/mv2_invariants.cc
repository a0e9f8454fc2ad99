#include "core/protocols/mvapich2_gpu/mv2_invariants.h"

#include "core/assert.h"

namespace tensorwire::mvapich2 {
namespace {

// Each violation repeats on every block a planted bug touches: the first few say it.
constexpr size_t kMaxViolations = 64;

std::string block_name(RankId sender, uint32_t transfer, uint32_t block) {
  return "block " + std::to_string(block) + " of transfer " + std::to_string(transfer) +
         " from rank " + std::to_string(sender);
}

bool overlaps(uint64_t a, uint64_t a_len, uint64_t b, uint64_t b_len) {
  return a < b + b_len && b < a + a_len;
}

}  // namespace

Mv2Invariants::Mv2Invariants(const std::vector<const Mv2Rendezvous*>& ranks) {
  for (const Mv2Rendezvous* r : ranks) {
    TW_ASSERT(r != nullptr);
    r->set_audit_sink(this);
  }
}

void Mv2Invariants::violation(RankId rank, const std::string& what) {
  if (violations_.size() >= kMaxViolations) return;
  violations_.push_back("invariant: rank " + std::to_string(rank) + ": " + what);
}

void Mv2Invariants::on_remote_write_landed(RankId target, uint64_t addr, uint64_t length,
                                           bool /*has_imm*/, uint32_t /*imm*/) {
  for (auto& [key, offer] : offers_) {
    if (std::get<1>(key) != target || !Buffer{offer.addr, offer.length}.contains(addr, length)) {
      continue;
    }
    if (offer.landed) {
      violation(target, "an RDMA write of " + std::to_string(length) + " bytes overwrote " +
                            block_name(std::get<0>(key), std::get<2>(key), std::get<3>(key)) +
                            " before it was copied out of its vbuf");
    }
    offer.landed = true;
    return;
  }
  violation(target, "an RDMA write of " + std::to_string(length) + " bytes landed at " +
                        std::to_string(addr) + ", outside every range a CTS offered");
}

void Mv2Invariants::on_audit(RankId rank, const AuditEvent& e) {
  switch (e.kind) {
    case AuditKind::kBlockOffered:
      offers_[{e.peer, rank, e.transfer, e.block}] = Offer{e.addr, e.length, false};
      break;
    case AuditKind::kBlockCopiedOut: offers_.erase({e.peer, rank, e.transfer, e.block}); break;
    case AuditKind::kStagingFilled: staging_filled(rank, e); break;
    case AuditKind::kWritePosted: write_posted(rank, e); break;
    case AuditKind::kWriteCompleted: write_completed(rank, e); break;
    case AuditKind::kFinSent: fin_sent(rank, e); break;
    case AuditKind::kSendReleased: released(rank, e); break;
  }
}

void Mv2Invariants::staging_filled(RankId sender, const AuditEvent& e) {
  for (const auto& [key, w] : writes_in_flight_) {
    if (std::get<0>(key) == sender && overlaps(w.addr, w.length, e.addr, e.length)) {
      violation(sender, "a copy into the vbuf at " + std::to_string(e.addr) +
                            " while the RDMA write of " +
                            block_name(sender, std::get<2>(key), std::get<3>(key)) +
                            " from it is in flight: the vbuf was reused before the write completed");
      return;
    }
  }
}

void Mv2Invariants::write_posted(RankId sender, const AuditEvent& e) {
  const BlockKey key{sender, e.peer, e.transfer, e.block};
  auto it = offers_.find(key);
  if (it == offers_.end()) {
    violation(sender, "the RDMA write of " + block_name(sender, e.transfer, e.block) +
                          " was posted before its CTS offered a destination");
  } else if (!Buffer{it->second.addr, it->second.length}.contains(e.remote_addr, e.length)) {
    violation(sender, "the RDMA write of " + block_name(sender, e.transfer, e.block) +
                          " targets " + std::to_string(e.remote_addr) +
                          ", outside the range its CTS offered");
  }
  if (writes_in_flight_.count(key) != 0 || written_.count(key) != 0) {
    violation(sender, "a second RDMA write of " + block_name(sender, e.transfer, e.block));
  }
  writes_in_flight_[key] = Write{e.addr, e.length};
}

void Mv2Invariants::write_completed(RankId sender, const AuditEvent& e) {
  const BlockKey key{sender, e.peer, e.transfer, e.block};
  TW_ASSERT_MSG(writes_in_flight_.count(key) == 1, "a write completes once, after it was posted");
  writes_in_flight_.erase(key);
  written_[key] = !e.failed;
}

void Mv2Invariants::fin_sent(RankId sender, const AuditEvent& e) {
  const BlockKey key{sender, e.peer, e.transfer, e.block};
  if (++fins_[key] > 1) {
    violation(sender, "a second FIN for " + block_name(sender, e.transfer, e.block));
  }
  auto it = written_.find(key);
  if (it == written_.end() || !it->second) {
    violation(sender, "the FIN of " + block_name(sender, e.transfer, e.block) +
                          " was sent before its RDMA write completed");
  }
}

void Mv2Invariants::released(RankId sender, const AuditEvent& e) {
  for (const auto& [key, w] : writes_in_flight_) {
    if (std::get<0>(key) == sender && std::get<2>(key) == e.transfer) {
      violation(sender, "the user's buffer of transfer " + std::to_string(e.transfer) +
                            " was released with the write of block " +
                            std::to_string(std::get<3>(key)) + " in flight");
      break;
    }
  }
  for (uint32_t b = 0; b < e.block && !e.failed; ++b) {
    if (fins_.count({sender, e.peer, e.transfer, b}) == 0) {
      violation(sender, "the user's buffer of transfer " + std::to_string(e.transfer) +
                            " was released before the FIN of block " + std::to_string(b));
      break;
    }
  }
  // The transfer is over: forget its blocks (ids are never reused).
  const auto mine = [&](const BlockKey& k) {
    return std::get<0>(k) == sender && std::get<2>(k) == e.transfer;
  };
  std::erase_if(fins_, [&](const auto& kv) { return mine(kv.first); });
  std::erase_if(written_, [&](const auto& kv) { return mine(kv.first); });
}

}  // namespace tensorwire::mvapich2
