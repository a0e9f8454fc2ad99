#include "core/protocols/oneflow_commnet/commnet_invariants.h"

#include <algorithm>

#include "core/assert.h"

namespace tensorwire::oneflow {
namespace {

// Each violation repeats on every step a planted bug runs: the first few say it.
constexpr size_t kMaxViolations = 64;

std::string where(RankId rank) { return "invariant: rank " + std::to_string(rank) + ": "; }

std::string token_name(RankId sender, uint32_t token) {
  return "token " + std::to_string(token) + " of rank " + std::to_string(sender);
}

}  // namespace

CommNetInvariants::CommNetInvariants(const std::vector<const CommNetRendezvous*>& ranks) {
  for (const CommNetRendezvous* r : ranks) {
    TW_ASSERT(r != nullptr);
    r->set_audit_sink(this);
  }
}

void CommNetInvariants::on_remote_write_landed(RankId target, uint64_t addr, uint64_t length,
                                               bool /*has_imm*/, uint32_t /*imm*/) {
  if (violations_.size() >= kMaxViolations) return;
  violations_.push_back(where(target) + "an RDMA write of " + std::to_string(length) +
                        " bytes landed at " + std::to_string(addr) + "; CommNet only reads");
}

void CommNetInvariants::on_audit(RankId rank, const AuditEvent& e) {
  const size_t before = violations_.size();
  switch (e.kind) {
    case AuditKind::kTokenRegistered:
      registered_[{rank, e.peer, e.token}] = Range{e.addr, e.length};
      break;
    case AuditKind::kTokenReleased:
      if (!e.failed) token_let_go(rank, {rank, e.peer, e.token}, "released");
      registered_.erase({rank, e.peer, e.token});
      break;
    case AuditKind::kReadPosted: read_posted(rank, e); break;
    case AuditKind::kReadCompleted: {
      uint64_t& n = reads_in_flight_[{e.peer, rank, e.token}];
      TW_ASSERT_MSG(n > 0, "a read completes once");
      --n;
      break;
    }
    case AuditKind::kReadDoneSent:
      token_let_go(rank, {e.peer, rank, e.token}, "READ_DONE sent for");
      break;
    case AuditKind::kRecvCallback:
      if (!callbacks_.insert({rank, e.token}).second) {
        violations_.push_back(where(rank) + "the callback of Recv " + std::to_string(e.token) +
                              " ran twice");
      }
      break;
    case AuditKind::kReceivesPosted:
      if (e.length != e.addr) {
        violations_.push_back(where(rank) + std::to_string(e.length) + " of " +
                              std::to_string(e.addr) + " receives posted for rank " +
                              std::to_string(e.peer) +
                              " after a message was handled: a receive was not posted again");
      }
      break;
  }
  if (violations_.size() > kMaxViolations) violations_.resize(std::max(before, kMaxViolations));
}

void CommNetInvariants::read_posted(RankId reader, const AuditEvent& e) {
  const TokenKey key{e.peer, reader, e.token};
  ++reads_in_flight_[key];
  auto it = registered_.find(key);
  if (it == registered_.end()) {
    violations_.push_back(where(reader) + "a read with " + token_name(e.peer, e.token) +
                          ", which is not registered for this rank");
  } else if (!Buffer{it->second.addr, it->second.length}.contains(e.addr, e.length)) {
    violations_.push_back(where(reader) + "a read of " + std::to_string(e.length) + " bytes at " +
                          std::to_string(e.addr) + " outside the range of " +
                          token_name(e.peer, e.token));
  }
}

void CommNetInvariants::token_let_go(RankId rank, const TokenKey& key, const char* what) {
  auto it = reads_in_flight_.find(key);
  const uint64_t n = it == reads_in_flight_.end() ? 0 : it->second;
  if (n == 0) return;
  violations_.push_back(where(rank) + what + " " + token_name(std::get<0>(key), std::get<2>(key)) +
                        " with " + std::to_string(n) + " of its reads in flight: the sender may " +
                        "reuse the memory they read");
}

}  // namespace tensorwire::oneflow
