#include "core/protocols/tf_verbs_legacy/legacy_invariants.h"

#include "core/assert.h"

namespace tensorwire::tf_legacy {
namespace {

// Each violation repeats on every step a planted bug runs: the first few say it.
constexpr size_t kMaxViolations = 64;

std::string where(RankId rank) { return "invariant: rank " + std::to_string(rank) + ": "; }

std::string buffer_name(RxBufferKind kind, RankId peer, const std::string& name) {
  const std::string from = " rank " + std::to_string(peer) + " writes";
  switch (kind) {
    case RxBufferKind::kMessage: return "the message buffer" + from;
    case RxBufferKind::kAck: return "the ACK buffer" + from;
    case RxBufferKind::kTensorHeader: return "the header slot of tensor buffer " + name + " that" + from;
    case RxBufferKind::kTensorContent: return "tensor buffer " + name + " that" + from;
  }
  return "?";
}

const char* still(RxBufferKind kind) {
  return kind == RxBufferKind::kMessage || kind == RxBufferKind::kAck
             ? "before this rank parsed the last message in it and sent its ACK"
             : "while this rank still reads the last tensor in it (no BUFFER_IDLE yet)";
}

}  // namespace

LegacyInvariants::LegacyInvariants(const std::vector<const LegacyRendezvous*>& ranks)
    : regions_(ranks.size()) {
  for (const LegacyRendezvous* r : ranks) {
    TW_ASSERT(r != nullptr);
    r->set_audit_sink(this);
  }
}

void LegacyInvariants::violation(std::string line) {
  if (violations_.size() < kMaxViolations) violations_.push_back(std::move(line));
}

LegacyInvariants::Region* LegacyInvariants::region_at(RankId rank, uint64_t addr, uint64_t length) {
  if (rank >= regions_.size()) return nullptr;
  auto& map = regions_[rank];
  auto it = map.upper_bound(addr);
  if (it == map.begin()) return nullptr;
  --it;
  if (addr >= it->second.end || length > it->second.end - addr) return nullptr;
  return &it->second;
}

LegacyInvariants::Region* LegacyInvariants::fixed_region(RankId rank, RankId peer, RxBufferKind kind) {
  TW_ASSERT(kind == RxBufferKind::kMessage || kind == RxBufferKind::kAck);
  for (auto& [addr, r] : regions_.at(rank)) {
    if (r.peer == peer && r.kind == kind) return &r;
  }
  return nullptr;
}

void LegacyInvariants::on_remote_write_landed(RankId target, uint64_t addr, uint64_t length,
                                              bool /*has_imm*/, uint32_t /*imm*/) {
  Region* r = region_at(target, addr, length);
  if (r == nullptr) {
    return violation(where(target) + "an RDMA write of " + std::to_string(length) + " bytes at " +
                     std::to_string(addr) + " landed outside every buffer this rank gave a peer");
  }
  if (r->full) {
    violation(where(target) + buffer_name(r->kind, r->peer, r->name) + " was written " +
              still(r->kind));
  }
  r->full = true;
}

void LegacyInvariants::on_audit(RankId rank, const AuditEvent& e) {
  TW_ASSERT(rank < regions_.size());
  switch (e.kind) {
    case AuditKind::kRxBufferCreated:
      regions_[rank][e.addr] = Region{e.addr + e.length, e.buffer, e.peer, e.name, false};
      break;
    case AuditKind::kRxBufferFreed: regions_[rank].erase(e.addr); break;
    case AuditKind::kRxBufferReleased: {
      const bool fixed = e.buffer == RxBufferKind::kMessage || e.buffer == RxBufferKind::kAck;
      Region* r = fixed ? fixed_region(rank, e.peer, e.buffer) : region_at(rank, e.addr, e.length);
      if (r != nullptr) r->full = false;
      break;
    }
    case AuditKind::kMessagePosted:
      if (!messages_in_flight_.insert({rank, e.peer}).second) {
        violation(where(rank) + "a message posted to rank " + std::to_string(e.peer) +
                  " before the ACK of the previous one: two in flight on one message buffer");
      }
      break;
    case AuditKind::kAckReceived: messages_in_flight_.erase({rank, e.peer}); break;
    case AuditKind::kRecvCallback:
      if (!callbacks_.insert({rank, e.serial}).second) {
        violation(where(rank) + "the callback of Recv " + std::to_string(e.serial) + " ran twice");
      }
      break;
  }
}

}  // namespace tensorwire::tf_legacy
