// The abstract NIC: verbs semantics, nothing more (see docs/ARCHITECTURE.md).
//
// One Nic per rank. Queue pairs are reliable-connected, in order per QP, and
// are connected to every peer before the protocol starts. Posting is bounded:
// a full send queue answers kNoResource and the protocol keeps its own pending
// queue. Completions (successes and errors) are delivered to the one handler
// set with set_completion_handler, from the rank's single progress loop.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "core/memory.h"
#include "core/status.h"

namespace tensorwire {

using RankId = uint32_t;

struct QpHandle {
  uint32_t id = 0;
  friend bool operator==(QpHandle, QpHandle) = default;
};

enum class QpState : uint8_t { kReadyToSend, kError };

// A scatter/gather element: local memory named by an lkey.
struct Sge {
  uint64_t addr = 0;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

enum class WorkOpcode : uint8_t {
  kSend,              // lands in a receive buffer the peer posted in advance
  kRdmaWrite,         // one-sided write into remote memory (rkey, remote_addr)
  kRdmaWriteWithImm,  // write plus a 32-bit immediate; consumes a posted receive at the peer
  kRdmaRead,          // one-sided read from remote memory into `local`
};

struct SendWorkRequest {
  uint64_t wr_id = 0;  // chosen by the protocol, returned in the completion
  WorkOpcode opcode = WorkOpcode::kSend;
  Sge local;               // source for send/write, destination for read
  uint64_t remote_addr = 0;  // write/read
  uint32_t rkey = 0;         // write/read
  uint32_t imm_data = 0;     // kRdmaWriteWithImm only
};

struct RecvWorkRequest {
  uint64_t wr_id = 0;
  Sge local;  // where an incoming send lands (unused by write-with-imm, which
              // writes to remote_addr and only consumes the receive)
};

enum class CompletionOpcode : uint8_t {
  kSend,
  kRdmaWrite,
  kRdmaRead,
  kRecv,              // an incoming send landed in a posted receive
  kRecvRdmaWithImm,   // an incoming write-with-imm finished; imm_data is valid
};

enum class CompletionStatus : uint8_t {
  kSuccess,
  kLocalLengthError,      // incoming send larger than the posted receive buffer
  kLocalProtectionError,  // local sge not covered by a region with the lkey / rights
  kRemoteAccessError,     // bad rkey, out of bounds, missing right, deregistered
  kRnrRetryExceeded,      // receiver not ready: no receive posted at the peer
  kRetryExceeded,         // peer gone (transport retries exhausted)
  kWorkRequestFlushed,    // QP moved to error; outstanding work flushed
};

// "send", "rdma write", "rdma write with imm", "rdma read": the names both
// backends use in traces and error messages.
const char* work_opcode_name(WorkOpcode opcode);
const char* completion_status_name(CompletionStatus status);
const char* completion_opcode_name(CompletionOpcode opcode);

struct Completion {
  uint64_t wr_id = 0;
  QpHandle qp;
  RankId peer = 0;  // the rank at the other end of qp
  CompletionOpcode opcode = CompletionOpcode::kSend;
  CompletionStatus status = CompletionStatus::kSuccess;
  uint32_t byte_len = 0;  // bytes received (kRecv) or written (kRecvRdmaWithImm)
  bool has_imm = false;
  uint32_t imm_data = 0;
};

using CompletionHandler = std::function<void(const Completion&)>;

class Nic {
 public:
  virtual ~Nic() = default;

  virtual RankId rank() const = 0;
  virtual uint32_t world_size() const = 0;

  // The connected RC queue pair to `peer` (peer != rank()).
  virtual QpHandle queue_pair_to(RankId peer) const = 0;
  virtual QpState queue_pair_state(QpHandle qp) const = 0;
  // Work requests a QP's send queue holds; a post beyond it is kNoResource.
  virtual uint32_t send_queue_depth() const = 0;

  // Register `buffer` with exactly `access` (plus local read, always implied).
  virtual Result<MemoryRegion> register_memory(const Buffer& buffer, Access access) = 0;
  // Invalidates the rkey: later remote accesses are remote access errors.
  virtual Status deregister_memory(const MemoryRegion& region) = 0;

  // kOk: posted, a completion will follow. kNoResource: send queue full, retry
  // after a completion. Other codes: not posted (QP in error, bad argument).
  virtual Status post_send(QpHandle qp, const SendWorkRequest& wr) = 0;
  virtual Status post_recv(QpHandle qp, const RecvWorkRequest& wr) = 0;
  // Posts `wrs` in order, as ibv_post_recv posts a chained list: at the
  // first one that fails, the rest are not posted and its status is returned
  // (those before it stay posted). A channel filling its receive ring posts
  // it whole. Backends may do it in one step; the default posts one by one.
  virtual Status post_recv_list(QpHandle qp, std::span<const RecvWorkRequest> wrs) {
    for (const RecvWorkRequest& wr : wrs) {
      if (Status st = post_recv(qp, wr); !st.is_ok()) return st;
    }
    return Status::ok();
  }

  // The rank's progress loop calls this for each completion, in order.
  virtual void set_completion_handler(CompletionHandler handler) = 0;
};

}  // namespace tensorwire
